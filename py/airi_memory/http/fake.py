"""An HTTP transport in process (httpx's ``MockTransport`` idea): a handler answers each
request, so a test of a provider swaps the transport instead of opening a socket. It
honours the timeout as the real transports do: a handler that answers too late is a
``ProviderError``. Requests are kept in ``requests`` for the test to read."""

import asyncio
import json
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from ..errors import ProviderError
from .transport import HttpReply, HttpTransport


@dataclass(frozen=True)
class HttpRequest:
    url: str
    headers: dict[str, str]
    body: str | None
    method: str = "POST"

    def json(self) -> Any:
        return json.loads(self.body or "null")


Handler = Callable[[HttpRequest], Awaitable[HttpReply]]


class FakeTransport(HttpTransport):
    def __init__(self, handler: Handler) -> None:
        self.handler = handler
        self.requests: list[HttpRequest] = []

    async def request(
        self, method: str, url: str, headers: dict[str, str], body: str | None, timeout_s: float
    ) -> HttpReply:
        request = HttpRequest(url, dict(headers), body, method)
        self.requests.append(request)
        try:
            async with asyncio.timeout(timeout_s):
                return await self.handler(request)
        except TimeoutError:
            raise ProviderError(f"no reply from {url} within {timeout_s:g} s") from None

"""Port: one HTTP request with JSON text, for the providers and the sync endpoint a user
configures.

Implementations: ``native.http`` (urllib) for CPython, ``browser.http`` (``fetch`` in
the worker) for the browser, ``http.fake`` in process for tests. Each turns a network
failure or a timeout into a ``ProviderError`` and returns any HTTP reply, whatever its
status, for the caller to judge.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class HttpReply:
    status: int
    text: str


class HttpTransport(ABC):
    @abstractmethod
    async def request(
        self, method: str, url: str, headers: dict[str, str], body: str | None, timeout_s: float
    ) -> HttpReply: ...

    async def post_json(
        self, url: str, headers: dict[str, str], body: str, timeout_s: float
    ) -> HttpReply:
        return await self.request("POST", url, headers, body, timeout_s)

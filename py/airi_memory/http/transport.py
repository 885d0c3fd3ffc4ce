"""Port: one JSON POST over HTTP, for providers that speak OpenAI's protocol.

Implementations: ``native.http`` (urllib) for CPython, ``browser.http`` (``fetch`` in
the worker) for the browser, ``http.fake`` in process for tests. Each turns a network
failure or a timeout into a ``ProviderError`` and returns any HTTP reply, whatever its
status, for the provider to judge.
"""

from abc import ABC, abstractmethod
from dataclasses import dataclass


@dataclass(frozen=True)
class HttpReply:
    status: int
    text: str


class HttpTransport(ABC):
    @abstractmethod
    async def post_json(
        self, url: str, headers: dict[str, str], body: str, timeout_s: float
    ) -> HttpReply: ...

"""Port: one JSON POST over HTTP, for providers that speak OpenAI's protocol.

Implementations: ``urllib_transport`` for CPython, ``fetch_transport`` for the browser
(``fetch`` in the worker). Both turn a network failure or a timeout into a
``ProviderError`` and return any HTTP reply, whatever its status, for the provider to judge.
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

"""The sync runner's browser ports: one runner across tabs (Web Locks), and whether the
browser is online, from the worker's ``network`` host object (web/worker/network.mjs)."""

from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class BrowserNetwork:
    def __init__(self, network: Any) -> None:
        self._network = network

    def online(self) -> bool:
        return bool(self._network.online())

    async def exclusive(self, name: str, job: Callable[[], Awaitable[T]]) -> T:
        """``job`` while this tab holds the lock ``name``; other tabs wait their turn."""
        release = await self._network.acquire(name)
        try:
            return await job()
        finally:
            release()

"""The ``memory`` driver: unstorage's default root, a dict that dies with the page."""

from collections.abc import Iterable
from typing import Any

from .driver import Driver


class MemoryDriver(Driver):
    name = "memory"

    def __init__(self) -> None:
        self._data: dict[str, Any] = {}

    async def has_item(self, key: str) -> bool:
        return key in self._data

    async def get_item(self, key: str) -> Any:
        return self._data.get(key)

    async def set_item(self, key: str, value: Any) -> None:
        self._data[key] = value

    async def set_items(self, items: Iterable[tuple[str, Any]]) -> None:
        self._data.update(items)

    async def remove_item(self, key: str) -> None:
        self._data.pop(key, None)

    async def get_keys(self, base: str) -> list[str]:
        return [key for key in self._data if key.startswith(base)]

    async def clear(self, base: str) -> None:
        for key in await self.get_keys(base):
            del self._data[key]

    async def dispose(self) -> None:
        self._data.clear()

"""The storage API the app sees: unstorage's methods over the same mounts, except that
nothing may be written, removed or cleared inside a key space the library owns.

The library keeps its own records (sessions, messages, journal, snapshots) under
``local:memory:``; one stray ``setItem`` there could stop start-up or hide history, and
``clear("local")`` would wipe it all. Reads stay open: they are how an app inspects.
"""

from collections.abc import Iterable
from typing import Any

from ..errors import InvalidKeyError
from .keys import base_key, item_key
from .storage import Storage


class PublicStorage:
    def __init__(self, storage: Storage, reserved: Iterable[str]) -> None:
        self._storage = storage
        self._reserved = [base_key(base) for base in reserved]
        self.get_item = storage.get_item
        self.get_item_raw = storage.get_item_raw
        self.get_items = storage.get_items
        self.has_item = storage.has_item
        self.get_keys = storage.get_keys

    def _writable(self, key: str) -> str:
        normalized = item_key(key)
        for base in self._reserved:
            if normalized.startswith(base):
                raise InvalidKeyError(
                    f"storage key {key!r} is inside {base.rstrip(':')!r}, which airi-memory "
                    "keeps for its own records; use its methods, or another key"
                )
        return normalized

    async def set_item(self, key: str, value: Any) -> None:
        await self._storage.set_item(self._writable(key), value)

    async def set_item_raw(self, key: str, value: Any) -> None:
        await self._storage.set_item_raw(self._writable(key), value)

    async def set_items(self, items: Iterable[tuple[str, Any]]) -> None:
        checked = [(self._writable(key), value) for key, value in items]
        await self._storage.set_items(checked)

    async def remove_item(self, key: str) -> None:
        await self._storage.remove_item(self._writable(key))

    async def clear(self, base: str = "") -> None:
        normalized = base_key(base)
        for reserved in self._reserved:
            if reserved.startswith(normalized) or normalized.startswith(reserved):
                raise InvalidKeyError(
                    f"clear({base!r}) would remove airi-memory's own records under "
                    f"{reserved.rstrip(':')!r}; clear a base outside it (or delete sessions)"
                )
        await self._storage.clear(normalized)

"""The driver interface: unstorage's ``Driver`` (src/types.ts), async, in Python.

Drivers see keys already normalised and relative to their mount point; the ``Storage``
does routing and key rules once, for every driver. Only ``has_item`` and ``get_item``
are essential; the batch and raw methods fall back to the simple ones.
"""

import json
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from typing import Any


class Driver(ABC):
    name: str = "driver"

    @abstractmethod
    async def has_item(self, key: str) -> bool: ...

    @abstractmethod
    async def get_item(self, key: str) -> Any:
        """The stored value, or ``None`` when there is none."""

    @abstractmethod
    async def set_item(self, key: str, value: Any) -> None: ...

    @abstractmethod
    async def remove_item(self, key: str) -> None: ...

    @abstractmethod
    async def get_keys(self, base: str) -> list[str]:
        """Keys of this driver only (never another mount's), starting with ``base``."""

    @abstractmethod
    async def clear(self, base: str) -> None:
        """Remove this driver's keys starting with ``base`` (never another mount's)."""

    async def get_item_raw(self, key: str) -> Any:
        return await self.get_item(key)

    async def get_item_raw_native(self, key: str) -> Any:
        """Stored bytes in the host's own form, to hand to another port without a copy
        into Python (a JS Uint8Array in the browser: a 60 MB snapshot would otherwise
        grow Python's heap for good). Plain bytes where Python is the host."""
        return await self.get_item_raw(key)

    async def set_item_raw(self, key: str, value: Any) -> None:
        await self.set_item(key, value)

    async def get_items(self, keys: Sequence[str]) -> list[Any]:
        return [await self.get_item(key) for key in keys]

    async def set_items(self, items: Iterable[tuple[str, Any]]) -> None:
        """Write several items; drivers that can do it in one transaction should."""
        for key, value in items:
            await self.set_item(key, value)

    async def apply(
        self,
        sets: Sequence[tuple[str, Any]],
        removes: Sequence[str] = (),
        remove_prefixes: Sequence[str] = (),
        patches: Sequence[tuple[str, str]] = (),
    ) -> None:
        """Prefix removals, removals, sets, then patches, as one unit where the driver can
        (IndexedDB: one transaction, so a crash or a full disk leaves all of it or none).

        A patch is JSON text of an object merged into the stored JSON object at its key (a
        missing or non-object record is left alone): two tabs changing different fields
        of one record both win, where rewriting the whole record would lose one.
        """
        for prefix in remove_prefixes:
            await self.clear(prefix)
        for key in removes:
            await self.remove_item(key)
        await self.set_items(sets)
        for key, patch in patches:
            merged = merge_json_object(await self.get_item(key), patch)
            if merged is not None:
                await self.set_item(key, merged)

    async def get_all(self, prefix: str, raw: bool = False) -> list[tuple[str, Any]]:
        """Every (key, value) under ``prefix`` in key order; one read where the driver can.
        ``raw`` values are as ``get_item_raw`` gives them (bytes stay bytes)."""
        keys = sorted(await self.get_keys(prefix))
        if raw:
            return [(key, await self.get_item_raw(key)) for key in keys]
        return list(zip(keys, await self.get_items(keys), strict=True))

    async def get_all_raw_native(self, prefix: str) -> list[tuple[str, Any]]:
        """``get_all(prefix, raw=True)`` with bytes in the host's own form (see
        ``get_item_raw_native``): a caller converts one value at a time (``native_bytes``)
        instead of holding every one in Python's heap at once."""
        return await self.get_all(prefix, raw=True)

    async def dispose(self) -> None:
        """Release resources; the default driver holds none."""


def merge_json_object(stored: Any, patch: str) -> str | None:
    """``stored`` (JSON text of an object) with ``patch``'s fields over it, or None."""
    try:
        current = json.loads(stored) if isinstance(stored, str) else None
    except ValueError:
        return None
    if not isinstance(current, dict):
        return None
    return json.dumps({**current, **json.loads(patch)}, ensure_ascii=False, separators=(",", ":"))


def native_bytes(value: Any) -> bytes:
    """Bytes of a value from a ``*_native`` read: a host buffer (``to_bytes``) or bytes."""
    return value.to_bytes() if hasattr(value, "to_bytes") else bytes(value)

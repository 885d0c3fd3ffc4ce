"""The driver interface: unstorage's ``Driver`` (src/types.ts), async, in Python.

Drivers see keys already normalised and relative to their mount point; the ``Storage``
does routing and key rules once, for every driver. Only ``has_item`` and ``get_item``
are essential; the batch and raw methods fall back to the simple ones.
"""

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import WriteConflictError
from .values import loads

LOG_DIGITS = 16
_LOG_NUMBER = re.compile(rf"^\d{{{LOG_DIGITS}}}$")


@dataclass(frozen=True)
class Guard:
    """A condition checked inside a write's transaction, before anything is written.
    Without ``field``: the record at ``key`` exists. With it: the stored JSON object's
    ``field`` equals ``equals`` (a missing record or field reads as None). When one fails
    the whole write is refused with ``WriteConflictError``."""

    key: str
    field: str | None = None
    equals: Any = None

    def holds(self, stored: Any) -> bool:
        if self.field is None:
            return stored is not None
        try:
            value = loads(stored) if isinstance(stored, str) else None
        except ValueError:
            value = None
        found = value.get(self.field) if isinstance(value, dict) else None
        return found == self.equals and type(found) is type(self.equals)


@dataclass(frozen=True)
class LogAppend:
    """The write's entry in a log numbered in commit order, in the same transaction.

    The driver reads the head record (``{"last": n, "pruned": p}``) inside the transaction,
    stores ``entry`` at ``<prefix>:<n + 1>`` (16 digits) and the new head, and returns
    ``n + 1``. Because writes to one store commit one after another, numbers follow commit
    order with no gaps: a reader that has applied up to ``n`` knows exactly what it lacks.
    ``prune_through`` removes entries up to that number and records it as ``pruned``.
    """

    prefix: str
    head: str
    entry: str | None = None
    prune_through: int = 0


def log_key(prefix: str, number: int) -> str:
    return f"{prefix}:{number:0{LOG_DIGITS}d}"


def log_number(key: str, prefix: str) -> int | None:
    """The number of a log entry's key, or None for anything else under the prefix."""
    suffix = key[len(prefix) + 1 :] if key.startswith(prefix + ":") else ""
    return int(suffix) if _LOG_NUMBER.match(suffix) else None


def parse_head(stored: Any) -> dict[str, int] | None:
    """A log head record as ``{"last", "pruned"}``; None when there is none; a damaged
    field reads as 0."""
    if stored is None:
        return None
    try:
        value = loads(stored) if isinstance(stored, str) else stored
    except ValueError:
        value = None
    head = {"last": 0, "pruned": 0}
    if isinstance(value, dict):
        for name in head:
            if isinstance(value.get(name), int) and not isinstance(value.get(name), bool):
                head[name] = value[name]
    return head


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
        guards: Sequence[Guard] = (),
        log: LogAppend | None = None,
    ) -> int | None:
        """Guards, then prefix removals, removals, sets, patches and the log entry, as one
        unit where the driver can (IndexedDB: one transaction, so a crash or a full disk
        leaves all of it or none). Returns the log entry's number (or the head's, when no
        entry is appended), None without a log.

        A patch is JSON text of an object merged into the stored JSON object at its key (a
        missing or non-object record is left alone): two tabs changing different fields
        of one record both win, where rewriting the whole record would lose one.

        This default suits drivers whose methods never yield to the event loop (memory,
        files), so nothing else runs between its steps within one process.
        """
        for guard in guards:
            if not guard.holds(await self.get_item(guard.key)):
                raise WriteConflictError(guard.key)
        for prefix in remove_prefixes:
            await self.clear(prefix)
        for key in removes:
            await self.remove_item(key)
        await self.set_items(sets)
        for key, patch in patches:
            merged = merge_json_object(await self.get_item(key), patch)
            if merged is not None:
                await self.set_item(key, merged)
        if log is None:
            return None
        head = parse_head(await self.get_item(log.head)) or {"last": 0, "pruned": 0}
        # A damaged or missing head must not number entries again from 1.
        numbers = [log_number(key, log.prefix) for key in await self.get_keys(log.prefix + ":")]
        head["last"] = max([head["last"], *(n for n in numbers if n is not None)])
        if log.prune_through > head["pruned"]:
            for key in await self.get_keys(log.prefix + ":"):
                number = log_number(key, log.prefix)
                if number is not None and number <= log.prune_through:
                    await self.remove_item(key)
            head["pruned"] = log.prune_through
        if log.entry is not None:
            head["last"] += 1
            await self.set_item(log_key(log.prefix, head["last"]), log.entry)
        await self.set_item(log.head, json.dumps(head))
        return head["last"]

    async def read_log(
        self, prefix: str, head: str, after: int
    ) -> tuple[dict[str, int] | None, list]:
        """The head (None if there is none) and every entry numbered above ``after`` as
        (number, text), in order, read together (IndexedDB: one transaction). Other keys
        under ``prefix`` are left out: entries of an older layout are not in the log."""
        found = parse_head(await self.get_item(head))
        keys = sorted(await self.get_keys(prefix + ":"))
        entries = []
        for key in keys:
            number = log_number(key, prefix)
            if number is not None and number > after:
                entries.append((number, await self.get_item(key)))
        return found, entries

    async def get_all(self, prefix: str, raw: bool = False) -> list[tuple[str, Any]]:
        """Every (key, value) under ``prefix`` in key order; one read where the driver can.
        ``raw`` values are as ``get_item_raw`` gives them (bytes stay bytes)."""
        keys = sorted(await self.get_keys(prefix))
        if raw:
            return [(key, await self.get_item_raw(key)) for key in keys]
        return list(zip(keys, await self.get_items(keys), strict=True))

    async def get_all_raw_native(self, prefix: str) -> list[tuple[str, Any]]:
        """``get_all(prefix, raw=True)`` with bytes in the host's own form (see
        ``get_item_raw_native``): a caller converts one value at a time (``native_bytes``),
        or only the parts it reads (``native_slice``), instead of holding every one in
        Python's heap at once."""
        return await self.get_all(prefix, raw=True)

    def within(self) -> tuple["Driver", str] | None:
        """(a driver over the whole store this mount lives in, this mount's key prefix
        there) when other mounts share that store, else None. Mounts with the same store
        driver can be written in one ``apply`` (IndexedDB: one transaction), which is how
        a write and its sync operation in the ``outbox`` mount commit together."""
        return None

    async def dispose(self) -> None:
        """Release resources; the default driver holds none."""


def merge_json_object(stored: Any, patch: str) -> str | None:
    """``stored`` (JSON text of an object) with ``patch``'s fields over it, or None."""
    try:
        current = loads(stored) if isinstance(stored, str) else None
    except ValueError:
        return None
    if not isinstance(current, dict):
        return None
    return json.dumps({**current, **loads(patch)}, ensure_ascii=False, separators=(",", ":"))


def native_bytes(value: Any) -> bytes:
    """Bytes of a value from a ``*_native`` read: a host buffer (``to_bytes``) or bytes."""
    return value.to_bytes() if hasattr(value, "to_bytes") else bytes(value)


def native_slice(value: Any, start: int, end: int) -> Any:
    """Bytes ``start`` to ``end`` of a value from a ``*_native`` read, not copied: a host
    buffer's ``subarray``, else a memoryview."""
    if hasattr(value, "subarray"):
        return value.subarray(start, end)
    return memoryview(value)[start:end]

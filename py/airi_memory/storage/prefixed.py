"""A mount's share of a store that several mounts share: its keys under ``<base>:``.

unstorage gives each mount its own driver with a ``base``; where two mounts live in one
store (the ``local`` and ``outbox`` mounts in one IndexedDB database), a batch that
touches both can still commit as one unit, through the shared driver (``within``). This
is the CPython form of that; the browser's ``IndexedDbDriver.view`` is the other.
"""

from collections.abc import Iterable, Sequence
from typing import Any

from .driver import Driver, Guard, LogAppend


class PrefixedDriver(Driver):
    def __init__(self, store: Driver, base: str) -> None:
        self.store = store
        self.prefix = f"{base}:"
        self.name = f"{store.name}:{base}"

    def _key(self, key: str) -> str:
        return self.prefix + key

    def _cut(self, pairs: Iterable[tuple[str, Any]]) -> list[tuple[str, Any]]:
        return [(key[len(self.prefix) :], value) for key, value in pairs]

    def within(self) -> tuple[Driver, str]:
        return self.store, self.prefix

    async def has_item(self, key: str) -> bool:
        return await self.store.has_item(self._key(key))

    async def get_item(self, key: str) -> Any:
        return await self.store.get_item(self._key(key))

    async def get_item_raw(self, key: str) -> Any:
        return await self.store.get_item_raw(self._key(key))

    async def set_item(self, key: str, value: Any) -> None:
        await self.store.set_item(self._key(key), value)

    async def set_item_raw(self, key: str, value: Any) -> None:
        await self.store.set_item_raw(self._key(key), value)

    async def remove_item(self, key: str) -> None:
        await self.store.remove_item(self._key(key))

    async def get_items(self, keys: Sequence[str]) -> list[Any]:
        return await self.store.get_items([self._key(key) for key in keys])

    async def set_items(self, items: Iterable[tuple[str, Any]]) -> None:
        await self.store.set_items((self._key(key), value) for key, value in items)

    async def get_keys(self, base: str) -> list[str]:
        return [key[len(self.prefix) :] for key in await self.store.get_keys(self._key(base))]

    async def clear(self, base: str) -> None:
        await self.store.clear(self._key(base))

    async def apply(
        self,
        sets: Sequence[tuple[str, Any]],
        removes: Sequence[str] = (),
        remove_prefixes: Sequence[str] = (),
        patches: Sequence[tuple[str, str]] = (),
        guards: Sequence[Guard] = (),
        log: LogAppend | None = None,
    ) -> int | None:
        return await self.store.apply(
            [(self._key(key), value) for key, value in sets],
            [self._key(key) for key in removes],
            [self._key(prefix) for prefix in remove_prefixes],
            [(self._key(key), patch) for key, patch in patches],
            [Guard(self._key(g.key), g.field, g.equals) for g in guards],
            None
            if log is None
            else LogAppend(
                self._key(log.prefix), self._key(log.head), log.entry, log.prune_through
            ),
        )

    async def read_log(
        self, prefix: str, head: str, after: int
    ) -> tuple[dict[str, int] | None, list]:
        return await self.store.read_log(self._key(prefix), self._key(head), after)

    async def get_all(self, prefix: str, raw: bool = False) -> list[tuple[str, Any]]:
        return self._cut(await self.store.get_all(self._key(prefix), raw))

    async def get_all_raw_native(self, prefix: str) -> list[tuple[str, Any]]:
        return self._cut(await self.store.get_all_raw_native(self._key(prefix)))

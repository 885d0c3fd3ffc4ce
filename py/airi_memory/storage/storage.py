"""``Storage``: unstorage's ``createStorage`` (mount table, routing, values) in Python.

Routing and key rules live here once; drivers only store. Deliberate
differences from unstorage: ``get_keys`` and ``clear`` of a mount touch that mount's keys
only, because our drivers honour their base (unstorage's IndexedDB driver does not), and
``clear("local:chat")`` clears the keys under that prefix (unstorage clears nothing when
the base lies inside a mount).
"""

from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidKeyError, UnknownMountError
from .driver import Driver, Guard, LogAppend
from .keys import base_key, item_key, key_in_base, normalize_key
from .memory import MemoryDriver
from .values import destr, stringify


@dataclass(frozen=True)
class Mount:
    base: str
    driver: Driver


@dataclass(frozen=True)
class _Route:
    base: str
    relative_key: str
    driver: Driver


class Storage:
    def __init__(self, driver: Driver | None = None) -> None:
        self._mounts: dict[str, Driver] = {"": driver or MemoryDriver()}
        self._mountpoints: list[str] = [""]

    # --- mounts -------------------------------------------------------------------
    def mount(self, base: str, driver: Driver) -> "Storage":
        base = base_key(base)
        if base and base in self._mounts:
            raise InvalidKeyError(f"a driver is already mounted at {base!r}")
        if base:
            self._mountpoints.append(base)
            self._mountpoints.sort(key=len, reverse=True)
        self._mounts[base] = driver
        return self

    async def unmount(self, base: str, dispose: bool = True) -> None:
        base = base_key(base)
        if not base or base not in self._mounts:
            raise UnknownMountError(f"no mount named {base.rstrip(':')!r} to unmount")
        driver = self._mounts.pop(base)
        self._mountpoints.remove(base)
        if dispose:
            await driver.dispose()

    def get_mount(self, key: str = "") -> Mount:
        route = self._route(normalize_key(key) + ":")
        return Mount(route.base, route.driver)

    def get_mounts(self, base: str = "", parents: bool = False) -> list[Mount]:
        return [Mount(m, d) for m, d, _ in self._mounts_under(normalize_key(base), parents)]

    def mount_names(self) -> list[str]:
        return sorted(m.rstrip(":") for m in self._mountpoints)

    def _route(self, key: str) -> _Route:
        for base in self._mountpoints:
            if key.startswith(base):
                return _Route(base, key[len(base) :], self._mounts[base])
        return _Route("", key, self._mounts[""])

    def _mounts_under(self, base: str, parents: bool) -> list[tuple[str, Driver, str]]:
        """Mount points inside ``base`` (and, with ``parents``, the one holding it)."""
        found = []
        for mountpoint in self._mountpoints:
            if mountpoint.startswith(base) or (parents and base.startswith(mountpoint)):
                relative = base[len(mountpoint) :] if len(base) > len(mountpoint) else ""
                found.append((mountpoint, self._mounts[mountpoint], relative))
        return found

    # --- items --------------------------------------------------------------------
    async def has_item(self, key: str) -> bool:
        route = self._route(item_key(key))
        return await route.driver.has_item(route.relative_key)

    async def get_item(self, key: str) -> Any:
        route = self._route(item_key(key))
        return destr(await route.driver.get_item(route.relative_key))

    async def get_item_raw(self, key: str) -> Any:
        route = self._route(item_key(key))
        return await route.driver.get_item_raw(route.relative_key)

    async def get_item_raw_native(self, key: str) -> Any:
        """Bytes to pass on to another port as they are (see Driver); None if absent."""
        route = self._route(item_key(key))
        return await route.driver.get_item_raw_native(route.relative_key)

    async def set_item(self, key: str, value: Any) -> None:
        normalized = item_key(key)
        text = stringify(value, normalized)
        route = self._route(normalized)
        await route.driver.set_item(route.relative_key, text)

    async def set_item_raw(self, key: str, value: Any) -> None:
        route = self._route(item_key(key))
        await route.driver.set_item_raw(route.relative_key, value)

    async def remove_item(self, key: str) -> None:
        route = self._route(item_key(key))
        await route.driver.remove_item(route.relative_key)

    async def get_items(self, keys: Sequence[str]) -> list[dict[str, Any]]:
        """Values of several keys, in the order asked, one driver call per mount."""
        routes = [self._route(item_key(key)) for key in keys]
        values: dict[int, Any] = {}
        for driver, indexes in _group_by_driver(routes).items():
            found = await driver.get_items([routes[i].relative_key for i in indexes])
            values.update(zip(indexes, found, strict=True))
        return [
            {"key": route.base + route.relative_key, "value": destr(values[i])}
            for i, route in enumerate(routes)
        ]

    async def set_items(self, items: Iterable[tuple[str, Any]]) -> None:
        """Validate every key and value first, then write each mount's share in one batch."""
        prepared = []
        for key, value in items:
            normalized = item_key(key)
            prepared.append((self._route(normalized), stringify(value, normalized)))
        for driver, indexes in _group_by_driver([r for r, _ in prepared]).items():
            await driver.set_items((prepared[i][0].relative_key, prepared[i][1]) for i in indexes)

    async def write_batch(
        self,
        sets: Iterable[tuple[str, Any]] = (),
        removes: Iterable[str] = (),
        remove_prefixes: Iterable[str] = (),
        patches: Iterable[tuple[str, dict[str, Any]]] = (),
        raw_sets: Iterable[tuple[str, bytes]] = (),
        guards: Iterable[Guard] = (),
        log: LogAppend | None = None,
    ) -> int | None:
        """Several writes to one mount as a single unit (one IndexedDB transaction).

        ``sets`` are stored as ``set_item`` stores them, ``raw_sets`` as bytes (like
        ``set_item_raw``), ``patches`` are merged into stored JSON objects. ``guards``
        must hold inside the transaction or nothing is written (``WriteConflictError``);
        ``log`` appends the write's entry to a commit-ordered log (see ``LogAppend``)
        and its number is returned.

        Every key and value is checked before anything is written. Keys in different
        mounts are refused unless those mounts share one store (``Driver.within``), as
        ``local`` and ``outbox`` do: then the batch is one unit across them too.
        """
        prepared = [self._prepare(k, v) for k, v in sets]
        # Raw values pass as they are: bytes, or a port's native bytes (a JS typed array).
        prepared += [
            (self._route(item_key(k)), bytes(v) if isinstance(v, bytearray | memoryview) else v)
            for k, v in raw_sets
        ]
        removed = [self._route(item_key(key)) for key in removes]
        prefixes = [self._route(base_key(prefix)) for prefix in remove_prefixes]
        texts: dict[int, str] = {}  # one patch object shared by many keys is encoded once
        merges = [self._prepare(k, p, texts) for k, p in patches]
        checks = [(self._route(item_key(g.key)), g) for g in guards]
        logs = [self._route(item_key(log.head)), self._route(item_key(log.prefix))] if log else []
        routes = [route for route, _ in prepared] + removed + prefixes + [r for r, _ in merges]
        routes += [route for route, _ in checks] + logs
        if not routes:
            return None
        driver, key_of = _one_store(routes)
        relative_log = None
        if log is not None:
            relative_log = LogAppend(key_of(logs[1]), key_of(logs[0]), log.entry, log.prune_through)
        return await driver.apply(
            [(key_of(route), text) for route, text in prepared],
            [key_of(route) for route in removed],
            [key_of(route) for route in prefixes],
            [(key_of(route), text) for route, text in merges],
            [Guard(key_of(route), g.field, g.equals) for route, g in checks],
            relative_log,
        )

    async def read_log(
        self, prefix: str, head: str, after: int
    ) -> tuple[dict[str, int] | None, list[tuple[int, Any]]]:
        """A commit-ordered log's head (None before its first write) and its entries
        numbered above ``after``, parsed, read in one transaction (see ``LogAppend``)."""
        head_route, prefix_route = self._route(item_key(head)), self._route(item_key(prefix))
        if head_route.driver is not prefix_route.driver:
            raise InvalidKeyError("a log and its head must live in one mount")
        found, entries = await prefix_route.driver.read_log(
            prefix_route.relative_key, head_route.relative_key, after
        )
        if found is not None and entries:  # a damaged head never hides the entries there
            found["last"] = max(found["last"], entries[-1][0])
        return found, [(number, destr(text)) for number, text in entries]

    def _prepare(self, key: str, value: Any, texts: dict[int, str] | None = None) -> Any:
        """(route, stored text) of one value; ``texts`` remembers values already encoded."""
        normalized = item_key(key)
        if texts is None:
            return self._route(normalized), stringify(value, normalized)
        if id(value) not in texts:
            texts[id(value)] = stringify(value, normalized)
        return self._route(normalized), texts[id(value)]

    async def get_all(self, prefix: str, raw: bool = False) -> list[tuple[str, Any]]:
        """Every (key, value) under ``prefix`` (inside one mount), in key order; parsed as
        ``get_item`` would, or with ``raw`` the stored text itself."""
        route = self._route(base_key(prefix))
        found = await route.driver.get_all(route.relative_key, raw)
        if raw:
            return [(route.base + key, value) for key, value in found]
        return [(route.base + key, destr(value)) for key, value in found]

    async def get_all_raw_native(self, prefix: str) -> list[tuple[str, Any]]:
        """Every (key, raw value) under ``prefix``, values in the host's own form."""
        route = self._route(base_key(prefix))
        found = await route.driver.get_all_raw_native(route.relative_key)
        return [(route.base + key, value) for key, value in found]

    # --- keys ---------------------------------------------------------------------
    async def get_keys(self, base: str = "", max_depth: int | None = None) -> list[str]:
        base = base_key(base)
        masked: list[str] = []
        keys: list[str] = []
        for mountpoint, driver, relative in self._mounts_under(base, parents=True):
            for raw_key in await driver.get_keys(relative):
                full_key = mountpoint + normalize_key(raw_key)
                if not any(full_key.startswith(prefix) for prefix in masked):
                    keys.append(full_key)
            masked = [mountpoint, *(p for p in masked if not p.startswith(mountpoint))]
        return [
            key
            for key in keys
            if key_in_base(key, base) and (max_depth is None or key.count(":") <= max_depth)
        ]

    async def clear(self, base: str = "") -> None:
        base = base_key(base)
        for _, driver, relative in self._mounts_under(base, parents=True):
            await driver.clear(relative)

    async def dispose(self) -> None:
        for driver in self._mounts.values():
            await driver.dispose()


def _one_store(routes: Sequence[_Route]) -> tuple[Driver, Callable[[_Route], str]]:
    """The driver that can write every route in one unit, and each route's key there."""
    drivers = {id(route.driver): route.driver for route in routes}
    if len(drivers) == 1:
        return routes[0].driver, lambda route: route.relative_key
    shared = [driver.within() for driver in drivers.values()]
    found = [pair for pair in shared if pair is not None]
    if len(found) < len(shared) or len({id(store) for store, _ in found}) != 1:
        bases = sorted({route.base or "(root)" for route in routes})
        raise InvalidKeyError(f"one write batch must stay in one mount, got {bases}")
    prefix_of = {key: prefix for key, (_, prefix) in zip(drivers, found, strict=True)}
    return found[0][0], lambda route: prefix_of[id(route.driver)] + route.relative_key


def _group_by_driver(routes: Sequence[_Route]) -> dict[Driver, list[int]]:
    groups: dict[Driver, list[int]] = {}
    for index, route in enumerate(routes):
        groups.setdefault(route.driver, []).append(index)
    return groups

"""The IndexedDB driver (browser): unstorage's ``indexedb`` driver layout, our key scoping.

Records live where unstorage's driver puts them: database ``keyval-store``, object store
``keyval``, key ``<base>:<key>``, values as unstorage writes them (JSON text from
``set_item``, structured clones from ``set_item_raw``). The JS side
(``web/worker/idb-store.mjs``, built on idb-keyval) lists and clears by key range, so
one mount never sees or wipes another's records.
"""

from collections.abc import Awaitable, Iterable, Sequence
from typing import Any

from pyodide.ffi import JsException, JsProxy, to_js

from ..errors import StorageQuotaError, StorageWriteError, WriteConflictError
from ..storage import BROWSER_DB_NAME, BROWSER_STORE_NAME
from ..storage.driver import Driver, Guard, LogAppend, log_number, parse_head
from .ffi import to_javascript, to_python

# Why IndexedDB aborts a transaction on its own: the write was not stored, and trying
# again later may work. Other errors (a value it cannot clone ...) are our bugs: raised.
_ABORTED = frozenset(
    {"AbortError", "UnknownError", "InvalidStateError", "TransactionInactiveError"}
)


async def _committed(write: Awaitable[Any]) -> Any:
    """A write's result, with IndexedDB's refusals raised as our named errors."""
    try:
        return await write
    except JsException as error:
        name = getattr(error, "name", "")
        if name == "WriteConflictError":
            raise WriteConflictError(str(error.message)) from None
        if name == "QuotaExceededError" or "QuotaExceededError" in str(error):
            raise StorageQuotaError(
                "the browser's storage quota is exhausted; nothing of this write was "
                "stored (free space: delete or export old sessions, or ask for "
                "persistent storage)"
            ) from None
        if name in _ABORTED:
            raise StorageWriteError(
                f"IndexedDB did not commit this write ({name}: {error.message}); "
                "nothing of it was stored"
            ) from None
        raise


class IndexedDbDriver(Driver):
    name = "indexeddb"

    def __init__(
        self,
        idb_host: Any,
        base: str = "",
        db_name: str = BROWSER_DB_NAME,
        store_name: str = BROWSER_STORE_NAME,
        durability: str = "strict",
        copy_within: Sequence[str] = (),
        copy_except: Sequence[str] = (),
    ) -> None:
        # What the store's second copy (OPFS, in a worker: web/worker/opfs-copy.mjs) holds,
        # as prefixes of this store's full keys: the keys under one of `copy_within`
        # (every key without any), but not under one of `copy_except` (derived records).
        copied = {"within": list(copy_within), "except": list(copy_except)}
        options = to_javascript({"durability": durability, "copied": copied})
        self._store = idb_host.open(db_name, store_name, options)
        self._prefix = f"{base}:" if base else ""
        self._whole: IndexedDbDriver | None = None  # the store's driver, for a mount's view

    def view(self, base: str) -> "IndexedDbDriver":
        """A mount's driver over this same store, its keys under ``<base>:``: mounts made
        this way can be written together in one transaction (``within``)."""
        mount = object.__new__(IndexedDbDriver)
        mount._store, mount._prefix, mount._whole = self._store, f"{base}:", self
        return mount

    def within(self) -> tuple[Driver, str] | None:
        return None if self._whole is None else (self._whole, self._prefix)

    def _key(self, key: str) -> str:
        return self._prefix + key

    async def has_item(self, key: str) -> bool:
        return bool(await self._store.has(self._key(key)))

    async def get_item(self, key: str) -> Any:
        return to_python(await self._store.get(self._key(key)))

    async def get_item_raw_native(self, key: str) -> Any:
        value = await self._store.get(self._key(key))
        typed_array = isinstance(value, JsProxy) and hasattr(value, "to_bytes")
        return value if typed_array else to_python(value)

    async def set_item(self, key: str, value: Any) -> None:
        await _committed(self._store.set(self._key(key), value))

    async def set_item_raw(self, key: str, value: Any) -> None:
        await _committed(self._store.set(self._key(key), to_javascript(value)))

    async def get_items(self, keys: Sequence[str]) -> list[Any]:
        found = await self._store.getMany(to_js([self._key(k) for k in keys]))
        return [to_python(value) for value in found]

    async def set_items(self, items: Iterable[tuple[str, Any]]) -> None:
        entries = [[self._key(key), value] for key, value in items]
        await _committed(self._store.setMany(to_js(entries)))

    async def remove_item(self, key: str) -> None:
        await _committed(self._store.delete(self._key(key)))

    async def apply(
        self,
        sets: Sequence[tuple[str, Any]],
        removes: Sequence[str] = (),
        remove_prefixes: Sequence[str] = (),
        patches: Sequence[tuple[str, str]] = (),
        guards: Sequence[Guard] = (),
        log: LogAppend | None = None,
    ) -> int | None:
        entries = to_js(
            [
                [self._key(key), value if isinstance(value, str) else to_js(value)]
                for key, value in sets
            ]
        )
        deleted = to_js([self._key(key) for key in removes])
        prefixes = to_js([self._key(prefix) for prefix in remove_prefixes])
        merges = to_js([[self._key(key), patch] for key, patch in patches])
        checks = to_js([[self._key(g.key), g.field, g.equals] for g in guards])
        appended = None
        if log is not None:
            appended = to_javascript(
                {
                    "prefix": self._key(log.prefix),
                    "head": self._key(log.head),
                    "entry": log.entry,
                    "pruneThrough": log.prune_through,
                }
            )
        try:
            number = await _committed(
                self._store.apply(entries, deleted, prefixes, merges, checks, appended)
            )
        except WriteConflictError as conflict:
            raise WriteConflictError(conflict.key[len(self._prefix) :]) from None
        return None if number is None else int(number)

    async def read_log(
        self, prefix: str, head: str, after: int
    ) -> tuple[dict[str, int] | None, list]:
        full_prefix = self._key(prefix)
        found = await self._store.readLog(full_prefix, self._key(head), after)
        numbers = [log_number(key, full_prefix) for key in found.keys]
        numbered = zip(numbers, found.values.to_py(), strict=True)
        entries = [(number, value) for number, value in numbered if number is not None]
        return parse_head(to_python(found.head)), entries

    async def get_all(self, prefix: str, raw: bool = False) -> list[tuple[str, Any]]:
        """Text and bytes come back as stored, whatever ``raw`` says: one read."""
        found = await self._store.getAll(self._key(prefix))
        cut = len(self._prefix)
        return list(zip((key[cut:] for key in found.keys), found.values.to_py(), strict=True))

    async def get_all_raw_native(self, prefix: str) -> list[tuple[str, Any]]:
        found = await self._store.getAll(self._key(prefix))
        cut = len(self._prefix)
        return list(zip((key[cut:] for key in found.keys), found.values, strict=True))

    async def get_keys(self, base: str) -> list[str]:
        keys = await self._store.keys(self._key(base))
        return [key[len(self._prefix) :] for key in keys]

    async def clear(self, base: str) -> None:
        await _committed(self._store.clear(self._key(base)))

"""The contracts' ``open_system`` on CPython: memory or fs drivers, native DuckDB."""

from airi_memory.api import MemorySystem
from airi_memory.native.fs import FsDriver
from airi_memory.native.sql import NativeDuckDb
from airi_memory.storage import MemoryDriver, Storage


def system_factory(kind: str, tmp_path):
    """``open_system`` for the contract: same durable drivers every time, fresh DuckDB."""
    drivers = {"local": MemoryDriver(), "outbox": MemoryDriver()}

    async def open_system(clock=None, separate_engine=False, **options):
        storage = Storage(MemoryDriver())
        if kind == "memory":
            storage.mount("local", drivers["local"]).mount("outbox", drivers["outbox"])
        else:
            storage.mount("local", FsDriver(tmp_path / "airi-local"))
            storage.mount("outbox", FsDriver(tmp_path / "airi-sync-queue"))
        extra = {"clock": clock} if clock else {}
        return await MemorySystem.open(
            storage, NativeDuckDb(), {"userId": "tester", **options}, **extra
        )

    return open_system

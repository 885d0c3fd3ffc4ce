"""Wiring for CPython: the same core over files (or memory) and the duckdb package."""

from pathlib import Path
from typing import Any

from ..api import MemorySystem
from ..sql.native import NativeDuckDb
from ..storage import LOCAL_BASE, LOCAL_MOUNT, OUTBOX_BASE, OUTBOX_MOUNT, MemoryDriver, Storage
from ..storage.fs import FsDriver


async def open_memory_system(folder: Path | None = None, **options: Any) -> MemorySystem:
    """Files under ``folder`` stand in for IndexedDB; ``None`` keeps everything in memory."""
    storage = Storage(MemoryDriver())
    if folder is None:
        storage.mount(LOCAL_MOUNT, MemoryDriver())
        storage.mount(OUTBOX_MOUNT, MemoryDriver())
    else:
        storage.mount(LOCAL_MOUNT, FsDriver(Path(folder) / LOCAL_BASE))
        storage.mount(OUTBOX_MOUNT, FsDriver(Path(folder) / OUTBOX_BASE))
    return await MemorySystem.open(storage, NativeDuckDb(), options)

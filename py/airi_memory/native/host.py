"""Wiring for CPython: the same core over files (or memory), the duckdb package and urllib.

CPython has no exact tokenizer port (token counts use the seed's estimate) and no app
functions to call: Python callers register providers and LLMs as Python objects.
"""

from pathlib import Path
from typing import Any

from ..api import HostPorts, MemorySystem
from ..storage import LOCAL_BASE, LOCAL_MOUNT, OUTBOX_BASE, OUTBOX_MOUNT, MemoryDriver, Storage
from .fs import FsDriver
from .http import UrllibTransport
from .sql import NativeDuckDb


async def open_memory_system(folder: Path | None = None, **options: Any) -> MemorySystem:
    """Files under ``folder`` stand in for IndexedDB; ``None`` keeps everything in memory."""
    storage = Storage(MemoryDriver())
    if folder is None:
        storage.mount(LOCAL_MOUNT, MemoryDriver())
        storage.mount(OUTBOX_MOUNT, MemoryDriver())
    else:
        storage.mount(LOCAL_MOUNT, FsDriver(Path(folder) / LOCAL_BASE))
        storage.mount(OUTBOX_MOUNT, FsDriver(Path(folder) / OUTBOX_BASE))
    ports = HostPorts(http=UrllibTransport())
    return await MemorySystem.open(storage, NativeDuckDb(), options, ports=ports)

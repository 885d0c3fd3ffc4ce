"""Wiring for CPython: the same core over files (or memory), the duckdb package and urllib.

``open_native_system`` is the one way to open a system in a Python process, for
production and tests alike. CPython has no exact tokenizer port (token counts use the
seed's estimate) and no app functions to call: Python callers register providers and
LLMs as Python objects.
"""

import asyncio
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..api import HostPorts, MemorySystem
from ..http import HttpTransport
from ..models import now_ms
from ..storage import LOCAL_BASE, LOCAL_MOUNT, OUTBOX_BASE, OUTBOX_MOUNT, MemoryDriver, Storage
from ..storage.prefixed import PrefixedDriver
from .fs import FsDriver
from .http import UrllibTransport
from .sql import NativeDuckDb


@dataclass
class InMemory:
    """The durable store kept in memory: open a system over the same one again to restart
    it (what a reload is in the browser), with every record still there."""

    store: MemoryDriver = field(default_factory=MemoryDriver)


async def open_native_system(
    place: str | Path | InMemory | None = None,
    options: Mapping[str, Any] | None = None,
    *,
    clock: Callable[[], int] = now_ms,
    sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    http: HttpTransport | None = None,
    wait_for_load: bool = True,
) -> MemorySystem:
    """Files under a folder ``place`` stand in for IndexedDB; ``None`` keeps everything in
    memory for this system only. ``clock`` and ``sleep`` are the system's time (tests pass
    a hand-moved one); ``http`` reaches providers (urllib unless given). Without
    ``wait_for_load``, returned once the sessions are read (``MemorySystem.open``)."""
    storage = Storage(MemoryDriver())
    # One store for both mounts, as IndexedDB is in the browser: a write and its sync
    # operation commit together. Files: <place>/airi-local/... and <place>/airi-sync-queue/...
    store = FsDriver(place) if isinstance(place, str | Path) else (place or InMemory()).store
    storage.mount(LOCAL_MOUNT, PrefixedDriver(store, LOCAL_BASE))
    storage.mount(OUTBOX_MOUNT, PrefixedDriver(store, OUTBOX_BASE))
    ports = HostPorts(http=http or UrllibTransport())
    return await MemorySystem.open(
        storage,
        NativeDuckDb(),
        dict(options or {}),
        clock=clock,
        sleep=sleep,
        ports=ports,
        wait_for_load=wait_for_load,
    )

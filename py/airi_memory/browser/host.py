"""Wiring for the browser: IndexedDB mounts and DuckDB-WASM from the worker's JS host.

This and the port implementations it names are the only modules that touch Pyodide's
FFI; the worker calls ``boot`` once and then ``BrowserApi.dispatch`` for every call.
"""

import json
from typing import Any

from ..api import AppCall, HostPorts, MemorySystem
from ..options import parse_options
from ..storage import LOCAL_BASE, LOCAL_MOUNT, OUTBOX_BASE, OUTBOX_MOUNT, MemoryDriver, Storage
from ..storage.values import loads
from .embedder import LocalEmbedder
from .ffi import to_javascript, to_python
from .http import FetchTransport
from .indexeddb import IndexedDbDriver
from .sql import WasmDuckDb
from .tokenizer import GptTokenizer


class BrowserApi:
    def __init__(self, system: MemorySystem) -> None:
        self._system = system

    async def dispatch(self, method: str, args: Any) -> Any:
        """The reply as JSON text (exact: null stays null, one string crosses the bridge),
        or converted by Pyodide when it holds what JSON cannot (bytes from a raw read)."""
        reply = await self._system.dispatch(method, to_python(args) or [])
        try:
            return json.dumps(reply, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return to_javascript(reply)


def _app_caller(call_app: Any) -> AppCall:
    """The app's functions (JS callbacks on the page), called by name with JSON both ways."""

    async def call(name: str, payload: Any) -> Any:
        reply = await call_app(name, json.dumps(payload, ensure_ascii=False))
        return None if reply is None else loads(reply)

    return call


async def boot(
    host: Any, options: Any, publish: Any = None, call_app: Any = None, emit: Any = None
) -> BrowserApi:
    """``publish(journalNumber)`` (from the worker) hints other tabs that we wrote;
    ``call_app(name, json)`` runs a function the app registered on the page;
    ``emit(event, json)`` sends the page a progress event."""
    raw_options = to_python(options) or {}
    durability = parse_options(raw_options).durability
    storage = Storage(MemoryDriver())
    storage.mount(LOCAL_MOUNT, IndexedDbDriver(host.idb, base=LOCAL_BASE, durability=durability))
    storage.mount(OUTBOX_MOUNT, IndexedDbDriver(host.idb, base=OUTBOX_BASE, durability=durability))
    ports = HostPorts(
        tokens=GptTokenizer(host.tokens),
        http=FetchTransport(host.http),
        call_app=_app_caller(call_app) if call_app is not None else None,
        local_embedder=lambda config: LocalEmbedder(config, host.embedder),
        emit=(lambda event, detail: emit(event, json.dumps(detail))) if emit else None,
    )
    system = await MemorySystem.open(
        storage, WasmDuckDb(host.sql), raw_options, publish=publish, ports=ports
    )
    return BrowserApi(system)

"""Wiring for the browser: IndexedDB mounts and DuckDB-WASM from the worker's JS host.

The worker calls ``boot`` once and then ``BrowserApi.dispatch`` for every call; tests
open systems through ``open_browser_system``, as ``boot`` does.
"""

import asyncio
import json
from collections.abc import Callable
from typing import Any

from ..api import AppCall, HostPorts, MemorySystem, Sleep
from ..models import now_ms
from ..options import parse_options
from ..sessions.snapshots import SNAPSHOT
from ..storage import LOCAL_BASE, LOCAL_MOUNT, OUTBOX_BASE, OUTBOX_MOUNT, MemoryDriver, Storage
from ..storage.values import loads
from .doc_scope import js_doc_scope
from .embedder import LocalEmbedder
from .ffi import to_javascript, to_python
from .http import FetchTransport
from .indexeddb import IndexedDbDriver
from .network import BrowserNetwork
from .sql import WasmDuckDb
from .term_index import js_term_index
from .tokenizer import GptTokenizer
from .vector_scan import simd_vector_scan


class BrowserApi:
    def __init__(self, system: MemorySystem) -> None:
        self._system = system
        self._answering: set[asyncio.Task[None]] = set()  # held until each has answered

    def start(self, method: str, args: Any, resolve: Any, reject: Any) -> None:
        """``dispatch``, begun before this returns and answered by ``resolve(reply)``.
        A coroutine handed to JS instead starts at the loop's next turn and settles its
        promise one turn after it ends: two macrotasks per call, 0.4 ms of a 0.7 ms ping
        (bench: the facade's trivial call). ``reject(name, message)`` only if answering
        itself fails; a failing call is an ``{ok: false}`` reply."""

        async def answer() -> None:
            try:
                resolve(await self.dispatch(method, args))
            except BaseException as error:  # whatever it is, the caller's promise settles
                reject(type(error).__name__, str(error))

        # Called from JS, outside any of the loop's callbacks: a task's step needs the
        # loop registered as running on this thread state, as Pyodide's loop does before
        # each callback (WebLoop._install_running_loop).
        loop = asyncio.get_event_loop()
        if asyncio._get_running_loop() is not loop:
            asyncio._set_running_loop(loop)
        task = asyncio.Task(answer(), loop=loop, eager_start=True)
        if not task.done():
            self._answering.add(task)
            task.add_done_callback(self._answering.discard)

    async def dispatch(self, method: str, args: Any) -> Any:
        """The reply as JSON text (exact: null stays null, one string crosses the bridge),
        or converted by Pyodide when it holds what JSON cannot (bytes from a raw read)."""
        reply = await self._system.dispatch(method, to_python(args) or [])
        try:
            return json.dumps(reply, ensure_ascii=False, allow_nan=False)
        except (TypeError, ValueError):
            return to_javascript(reply)

    async def loaded(self) -> str:
        """``info()`` as JSON once start-up has loaded the history into DuckDB; raises
        what stopped it (DuckDB did not start)."""
        return json.dumps(await self._system.loaded(), ensure_ascii=False)


def _app_caller(call_app: Any) -> AppCall:
    """The app's functions (JS callbacks on the page), called by name with JSON both ways."""

    async def call(name: str, payload: Any) -> Any:
        reply = await call_app(name, json.dumps(payload, ensure_ascii=False))
        return None if reply is None else loads(reply)

    return call


async def open_browser_system(
    host: Any,
    raw_options: Any,
    *,
    clock: Callable[[], int] = now_ms,
    sleep: Sleep = asyncio.sleep,
    publish: Any = None,
    call_app: Any = None,
    emit: Any = None,
    local_model: bool = True,
    wait_for_load: bool = True,
) -> MemorySystem:
    """The one way to open a system in the browser, for the worker and tests alike: the
    JS ``host``'s IndexedDB, DuckDB-WASM, gpt-tokenizer, fetch and (with
    ``local_model``) embedding model. ``clock`` and ``sleep`` are the system's time.
    Without ``wait_for_load`` the system is returned once the sessions are read
    (``MemorySystem.open``), and loads the rest in the background."""
    durability = parse_options(raw_options).durability
    storage = Storage(MemoryDriver())
    # Both mounts in one database, which other code of the page may share (AIRI's own
    # unstorage uses the same default names). The store's second copy holds the mounts'
    # records but the snapshots: those are derived (rebuilt from the records), and the
    # largest records.
    snapshots = f"{LOCAL_BASE}:{SNAPSHOT.removeprefix(LOCAL_MOUNT + ':')}:"
    database = IndexedDbDriver(
        host.idb,
        durability=durability,
        copy_within=[f"{LOCAL_BASE}:", f"{OUTBOX_BASE}:"],
        copy_except=[snapshots],
    )
    storage.mount(LOCAL_MOUNT, database.view(LOCAL_BASE))
    storage.mount(OUTBOX_MOUNT, database.view(OUTBOX_BASE))
    local = (lambda config: LocalEmbedder(config, host.embedder)) if local_model else None
    network = BrowserNetwork(host.network)
    ports = HostPorts(
        tokens=GptTokenizer(host.tokens),
        http=FetchTransport(host.http),
        call_app=_app_caller(call_app) if call_app is not None else None,
        local_embedder=local,
        emit=(lambda event, detail: emit(event, json.dumps(detail))) if emit else None,
        exclusive=network.exclusive,
        online=network.online,
        vector_scan=simd_vector_scan(host.vectorScan),
        term_index=js_term_index(host.termIndex),
        doc_scope=js_doc_scope(host.docScope),
    )
    sql = WasmDuckDb(host.sql)
    return await MemorySystem.open(
        storage,
        sql,
        raw_options,
        clock=clock,
        publish=publish,
        ports=ports,
        sleep=sleep,
        wait_for_load=wait_for_load,
    )


async def boot(
    host: Any, options: Any, publish: Any = None, call_app: Any = None, emit: Any = None
) -> BrowserApi:
    """``publish(journalNumber)`` (from the worker) hints other tabs that we wrote;
    ``call_app(name, json)`` runs a function the app registered on the page;
    ``emit(event, json)`` sends the page a progress event. Returns once the sessions
    are read; ``BrowserApi.loaded`` tells when the rest of start-up is done."""
    system = await open_browser_system(
        host,
        to_python(options) or {},
        publish=publish,
        call_app=call_app,
        emit=emit,
        wait_for_load=False,
    )
    return BrowserApi(system)

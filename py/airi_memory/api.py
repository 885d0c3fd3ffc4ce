"""``MemorySystem``: the one object the JS facade talks to.

``dispatch`` is the whole bridge contract: a facade method name (one of the table in
``api_methods``, which names its handler here) and a list of plain arguments in,
``{"ok": True, "value": ...}`` or ``{"ok": False, "error": {...}}`` out.
Expected errors carry our message; anything else carries its type and message, so a JS
caller always gets one clear ``Error``.
"""

import asyncio
import contextlib
import functools
import sys
import traceback
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any

from . import __version__, diagnostics, transfer
from .api_methods import BEFORE_LOAD, METHODS
from .context import ComposeOptions, Composer, ContextStore, TokenCounter, Tokens
from .errors import AiriMemoryError, InvalidValueError, UnknownMethodError
from .http import HttpTransport
from .llm import LlmConfig, make_provider
from .models import MessageRetentionPolicy, RetentionPolicy, json_schemas, now_ms, validate_or_raise
from .options import SystemOptions, parse_options
from .policy import (
    RetentionScheduler,
    Summarizer,
    apply_message_retention,
    apply_retention_policy,
    scheduled_retention,
)
from .recall import recall_memories
from .search.doc_scope import DocScopeFactory, python_doc_scope
from .search.embeddings import Embedder, EmbeddingConfig, make_embedder
from .search.live_embeddings import LiveEmbeddings
from .search.semantic import VectorIndex
from .search.service import Searcher
from .search.tables import SearchTables
from .search.term_index import TermIndexFactory, python_term_index
from .search.vector_scan import ScanFactory, python_vector_scan
from .sessions import SessionStore
from .sessions.analytics import message_analytics
from .sessions.mirror import SessionMirror
from .sessions.records import LIBRARY_KEYS
from .sql import SqlEngine
from .storage import Storage
from .storage.public import PublicStorage
from .sync.client import Exclusive, SyncClient

AppCall = Callable[[str, Any], Awaitable[Any]]
Sleep = Callable[[float], Awaitable[None]]


@dataclass
class HostPorts:
    """What a host offers beyond storage and SQL; each part may be missing."""

    tokens: TokenCounter | None = None  # exact token counts (gpt-tokenizer in the browser)
    http: HttpTransport | None = None  # for providers the user configures
    call_app: AppCall | None = None  # the app's own functions (JS callbacks), by name
    # The local embedding model, where the host has one (the browser's worker).
    local_embedder: Callable[[EmbeddingConfig], Embedder] | None = None
    emit: Callable[[str, dict[str, Any]], None] | None = None  # progress events for the page
    # One holder across tabs of a named lock (Web Locks), for the sync runner.
    exclusive: Exclusive | None = None
    online: Callable[[], bool] | None = None  # whether the host has a network (navigator.onLine)
    vector_scan: ScanFactory = python_vector_scan  # the browser's is WebAssembly SIMD
    term_index: TermIndexFactory = python_term_index  # the browser's is typed arrays in JS
    doc_scope: DocScopeFactory = python_doc_scope  # the browser's is typed arrays in JS


class MemorySystem:
    def __init__(
        self,
        storage: Storage,
        sql: SqlEngine,
        options: SystemOptions,
        sessions: SessionStore,
        ports: HostPorts,
        search_tables: SearchTables,
        sleep: Sleep = asyncio.sleep,
    ) -> None:
        """``search_tables``: what the session mirror keeps for search beside DuckDB."""
        self.storage = storage
        self.sql = sql
        self.options = options
        self.sessions = sessions
        self.ports = ports
        self.sleep = sleep  # background work waits on the system's time (tests: a fake one)
        public = PublicStorage(storage, [LIBRARY_KEYS])  # the app's view: ours is read-only
        self._public = public
        self.context = ContextStore(
            storage,
            options.user_id,
            sessions.clock,
            options.context.max_per_source,
            options.context.timezone,
        )
        self.context.use_builtin_providers(options.context.datetime, options.context.user_profile)
        self.tokens = Tokens(ports.tokens)
        self.composer = Composer(self.tokens, options.models)
        self.summarizer = Summarizer(sessions, storage, None, sessions.clock)
        self._configure_summarizer(options.summarizer)
        self.searcher = Searcher(
            sessions,
            sql,
            options.retrieval,
            search_tables.index,
            search_tables.doc_scope,
            self._until_loaded,
        )
        self.embeddings = LiveEmbeddings(
            self.searcher,
            lambda config: make_embedder(config, ports.local_embedder, ports.http, ports.call_app),
            lambda embedder: VectorIndex(
                sessions, sql, storage, embedder, ports.emit, sleep, ports.vector_scan
            ),
        )
        sessions.write_listeners.append(self.embeddings.wake)
        self.scheduler = RetentionScheduler(
            self._scheduled_retention, options.retention.interval_ms, sleep
        )
        self.sync = SyncClient(
            sessions, ports.http, ports.emit, sleep, ports.exclusive, ports.online
        )
        self._loading: asyncio.Future[None] | None = None  # start-up's second stage
        self._methods: dict[str, Callable[..., Awaitable[Any]]] = {
            method.name: _handler(self, method.handler) for method in METHODS
        }

    @classmethod
    async def open(
        cls,
        storage: Storage,
        sql: SqlEngine,
        raw_options: object,
        clock: Callable[[], int] = now_ms,
        publish: Callable[[int], None] | None = None,
        ports: HostPorts | None = None,
        sleep: Sleep = asyncio.sleep,
        wait_for_load: bool = True,
    ) -> "MemorySystem":
        """A system fully loaded, or (without ``wait_for_load``) one that answers the
        methods marked ``before_load`` (sessions' metadata, the app's storage, context) as
        soon as the sessions are read, without SQL, while the rest of start-up (the DuckDB
        mirror, embeddings, summaries, sync, retention) runs in the background; every other
        method waits for it (``loaded``)."""
        options = parse_options(raw_options)
        ports = ports or HostPorts()
        search_tables = SearchTables(ports.term_index(), ports.doc_scope())
        sessions = await SessionStore.read(
            storage,
            SessionMirror(sql, [search_tables]),
            options.user_id,
            options.cache,
            clock,
            publish,
        )
        system = cls(storage, sql, options, sessions, ports, search_tables, sleep)
        # The vector index first: it reads its stored vectors while the mirror loads, and
        # answers semantic searches from them before it is there.
        system.embeddings.use(options.embeddings)
        system._loading = asyncio.ensure_future(system._load())
        if wait_for_load:
            await system.loaded()
        return system

    async def _load(self) -> None:
        await self.sessions.load()
        if self.ports.emit:  # records found damaged from now on; start-up's are in info()
            emit = self.ports.emit
            self.sessions.on_quarantine = lambda key, reason: emit(
                "quarantine", {"records": [{"key": key, "reason": reason}]}
            )
        await self.summarizer.load()
        await self.sync.open(self.options.sync)
        if self.options.retention.enabled:
            self.scheduler.start(run_now=self.options.retention.run_at_start)

    async def loaded(self) -> dict[str, Any]:
        """``info()`` once start-up is done; its error if it failed (DuckDB did not start)."""
        await self._until_loaded()
        return await self.info()

    async def _until_loaded(self) -> None:
        """Every call but the ``before_load`` ones passes here: once loaded, at no cost."""
        assert self._loading is not None, "a system is made by open()"
        await asyncio.shield(self._loading)  # a done task answers at once

    async def dispatch(self, method: str, args: list[Any]) -> dict[str, Any]:
        try:
            handler = self._methods.get(method)
            if handler is None:
                raise UnknownMethodError(f"airi-memory has no method {method!r}")
            if not isinstance(args, list):
                raise InvalidValueError(f"arguments of {method!r} must be a list")
            if method not in BEFORE_LOAD:
                await self._until_loaded()
            return {"ok": True, "value": await handler(*args)}
        except AiriMemoryError as error:
            return _error_reply(error)
        except Exception as error:  # one clear error for the caller, with the trace kept
            return _error_reply(error, detail=traceback.format_exc(limit=8))

    async def info(self) -> dict[str, Any]:
        python = sys.version.split()[0]
        return {
            "userId": self.options.user_id,
            "activeSessionId": await self.sessions.get_active_session_id(),
            "versions": {
                "airiMemory": __version__,
                "python": python,
                "duckdb": await self.sql.version() if self._is_loaded() else None,
            },
            "mounts": self.storage.mount_names(),
            # Records start-up could not read: kept in place, left out, reported.
            "quarantined": self.sessions.stats()["quarantined"],
        }

    def _is_loaded(self) -> bool:
        loading = self._loading
        return loading is not None and loading.done() and loading.exception() is None

    async def ping(self) -> str:
        return "pong"

    async def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        await self.sessions.flush()
        return (await self.sql.read_only_query(sql, params or [])).rows()

    async def close(self) -> None:
        """Background work stops and queued writes finish, within ``timeouts.closeMs``: a
        task waiting on a hung worker must not keep the system open. DuckDB and storage
        are released either way; writes still queued then fail with the closing system."""
        if self._loading is not None and self._loading.cancel():
            with contextlib.suppress(BaseException):  # its error is every waiting call's
                await self._loading
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self.options.timeouts.close_ms / 1000):
                await self.scheduler.stop()
                await self.sync.close()
                await self.embeddings.stop()
                await self.sessions.queue.drain()
        await self.sql.close()
        await self.storage.dispose()

    async def schemas(self) -> dict[str, Any]:
        return json_schemas()

    async def analytics(self) -> dict[str, Any]:
        await self.sessions.flush()
        return await message_analytics(self.sql, self.options.user_id)

    async def export_sessions(self, session_ids: list[str] | None = None) -> dict[str, Any]:
        return await transfer.export_sessions(self.sessions, session_ids)

    async def import_sessions(self, data: Any, options: Any = None) -> dict[str, Any]:
        max_bytes = self.options.import_.max_bytes
        return await transfer.import_sessions(self.sessions, data, options, max_bytes)

    # --- context and composition ------------------------------------------------
    async def register_app_provider(self, source_type: str) -> list[str]:
        """A provider the app registered (a JS function), asked before each composition."""
        call_app = self.ports.call_app
        if call_app is None:
            raise InvalidValueError("this host cannot call the app's functions")

        async def provide() -> Any:
            return await call_app(f"context:{source_type}", None)

        self.context.register_provider(source_type, provide)
        return self.context.providers()

    async def compose_messages(self, session_id: str, options: Any = None) -> dict[str, Any]:
        await self.sessions.ensure_session(session_id)
        parsed = validate_or_raise(ComposeOptions, options or {}, "composeMessages")
        errors = await self.context.refresh()
        contexts = await self.context.current()
        messages = await self.sessions.load_session_messages(session_id)
        composed = await self.composer.compose(session_id, messages, contexts, parsed)
        recalled: list[dict[str, Any]] = []
        if parsed.retrieval is not None:
            text, recalled = await recall_memories(
                self.searcher, self.tokens, session_id, messages, composed, parsed
            )
            if text:
                composed = await self.composer.compose(
                    session_id, messages, contexts, parsed, recall=text
                )
        return {
            **composed,
            "sessionId": session_id,
            "context": contexts,
            "contextErrors": errors,
            "recalled": recalled,
        }

    async def count_tokens(self, texts: list[str], encoding: str = "estimate") -> list[int]:
        if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
            raise InvalidValueError("countTokens expects a list of strings")
        return await self.tokens.count(encoding, texts)

    async def _token_stats(self) -> dict[str, Any]:
        return {"encodings": self.tokens.encodings(), **self.tokens.stats()}

    # --- retention and summarisation ----------------------------------------------
    def _configure_summarizer(self, config: LlmConfig | None) -> None:
        call_app = self.ports.call_app

        async def summarize(request: dict[str, Any]) -> Any:
            assert call_app is not None
            return await call_app("summarize", request)

        self.summarizer.provider = make_provider(
            config, self.ports.http, summarize if call_app else None
        )

    async def configure_summarizer(self, config: Any) -> dict[str, Any]:
        """Set (or, with null, remove) the LLM that writes summaries; the key stays here."""
        parsed = None if config is None else validate_or_raise(LlmConfig, config, "summarizer")
        self._configure_summarizer(parsed)
        return await self._summarizer_status()

    async def _summarizer_status(self) -> dict[str, Any]:
        provider = self.summarizer.provider
        return {
            "configured": provider is not None,
            "config": provider.config.public() if provider else None,
            "failures": self.summarizer.failures,
        }

    async def apply_retention_policy(self, policy: Any = None) -> dict[str, Any]:
        chosen = self._policy(RetentionPolicy, policy, self.options.retention.policy)
        return await self.scheduler.exclusive(lambda: apply_retention_policy(self.sessions, chosen))

    async def apply_message_retention(self, session_id: str, policy: Any = None) -> dict[str, Any]:
        default = self.options.retention.message_policy or MessageRetentionPolicy()
        chosen = self._policy(MessageRetentionPolicy, policy, default)
        await self.sessions.ensure_session(session_id)
        return await apply_message_retention(self.sessions, self.summarizer, session_id, chosen)

    @staticmethod
    def _policy(model: Any, raw: Any, default: Any) -> Any:
        if raw is None:
            return default
        return validate_or_raise(model, {**default.to_wire(), **raw}, model.__name__)

    async def _scheduled_retention(self) -> dict[str, Any]:
        retention = self.options.retention
        return await scheduled_retention(
            self.sessions, self.summarizer, retention.policy, retention.message_policy
        )

    async def _retention_status(self) -> dict[str, Any]:
        return self.scheduler.status()

    async def _retention_start(self, run_now: bool = False) -> dict[str, Any]:
        self.scheduler.start(run_now=bool(run_now))
        return self.scheduler.status()

    async def _set_items(self, items: list[dict[str, Any]]) -> None:
        if not isinstance(items, list) or not all(
            isinstance(i, dict) and "key" in i for i in items
        ):
            raise InvalidValueError("setItems expects a list of {key, value} objects")
        await self._public.set_items((item["key"], item.get("value")) for item in items)

    async def _mounts(self) -> list[dict[str, str]]:
        return [
            {"base": mount.base, "driver": mount.driver.name} for mount in self.storage.get_mounts()
        ]

    async def _session_stats(self) -> dict[str, Any]:
        return self.sessions.stats()

    def _require_diagnostics(self, method: str) -> None:
        if not self.options.diagnostics:
            raise InvalidValueError(
                f"{method} is a benchmark tool: open the memory system with "
                "{diagnostics: true} to use it"
            )

    async def _bulk_insert(self, rows: int) -> dict[str, float | int]:
        self._require_diagnostics("diagnostics.bulkInsert")
        return await diagnostics.bulk_insert(self.sql, rows)

    async def _sql_round_trips(self, count: int) -> list[float]:
        self._require_diagnostics("diagnostics.sqlRoundTrips")
        return await diagnostics.sql_round_trips(self.sql, count)

    async def _stored_vectors(self, batch: int) -> dict[str, Any]:
        self._require_diagnostics("diagnostics.storedVectors")
        return await diagnostics.stored_vectors(self.embeddings.require_vectors(), batch)

    async def _fill_vectors(self) -> dict[str, float | int]:
        """Random vectors stored as the live model's, for good: benchmarks only."""
        self._require_diagnostics("diagnostics.fillVectors")
        return await diagnostics.fill_vectors(self.embeddings.require_vectors())


def _handler(system: MemorySystem, path: str) -> Callable[..., Awaitable[Any]]:
    """The bound method at ``path`` (``"sessions.add_message"``) from the system."""
    return functools.reduce(getattr, path.split("."), system)


def _error_reply(error: BaseException, detail: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {"name": type(error).__name__, "message": str(error)}
    if detail:
        reply["detail"] = detail
    return {"ok": False, "error": reply}

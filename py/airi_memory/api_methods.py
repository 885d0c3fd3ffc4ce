"""The method table: every call a JS app can make, in one place.

Each ``Method`` names its wire name, which IS the path on the JS facade
(``"context.ingestContext"`` is ``memory.context.ingestContext``), the handler that
answers it (an attribute path from ``MemorySystem``, resolved when a system opens), its
parameters with their types and defaults, its result type and one line of doc.
``MemorySystem.dispatch`` answers exactly these names; the build generates the facade's
method map (``airi-memory-methods.mjs``) and the TypeScript declarations
(``airi-memory.d.ts``) from this table, so the three cannot drift apart.

A declarative module of its own, rather than a dict built in ``MemorySystem.__init__``:
the build and the tests read it without opening a system (no storage, no DuckDB), and a
newcomer finds every method, its Python home and its types in one list.

Types are pydantic models where the input is validated by one (their JSON Schemas become
named TypeScript types), ``TypedDict``s from ``api_shapes`` for other shapes, plain types
otherwise. What the facade does on the page alone (the app's functions, an async
iterator, the browser's storage estimate) is written by hand: see ``JS_ONLY_MEMBERS``.
"""

from dataclasses import dataclass
from typing import Any

from .api_shapes import (
    ComposedMessages,
    CreateSessionOptions,
    DeletedSessions,
    DeleteOldSessionsOptions,
    EmbeddingsStatus,
    ForkSessionOptions,
    FoundMessage,
    ImportReport,
    ImportSessionsOptions,
    ListSessionsOptions,
    PersistedMessages,
    RetentionReport,
    RetentionStatus,
    SearchMessagesOptions,
    SearchResults,
    SessionsExport,
    StorageItem,
    StorageMount,
    SummarizerStatus,
    SyncReport,
    SyncStatus,
    SystemInfo,
    TokenStats,
)
from .context.compose import ComposeOptions
from .llm import LlmConfig
from .models import (
    ChatHistoryItem,
    ChatSessionMeta,
    ContextMessage,
    MessageRetentionPolicy,
    RetentionPolicy,
)
from .search.embeddings import EmbeddingConfig
from .search.service import SearchQuery
from .sync.config import SyncConfig


class _Required:
    def __repr__(self) -> str:
        return "REQUIRED"


REQUIRED: Any = _Required()  # a parameter without a default


@dataclass(frozen=True)
class Param:
    name: str  # as the .d.ts names it (camelCase)
    type: Any
    default: Any = REQUIRED

    @property
    def required(self) -> bool:
        return self.default is REQUIRED


@dataclass(frozen=True)
class Method:
    name: str  # the wire name and the facade path
    handler: str  # attribute path from MemorySystem: "sessions.add_message"
    doc: str
    result: Any
    params: tuple[Param, ...] = ()
    # The facade's own parameters differ (it takes the app's functions): its TypeScript
    # signature is written by hand in web/airi-memory.handwritten.d.ts.
    declared_by_hand: bool = False
    # Answered while start-up still fills DuckDB (``MemorySystem.open`` without
    # ``wait_for_load``): it needs only the sessions' metadata, the app's storage, the
    # context or the stored vectors (or waits for the load itself). The rest wait for it.
    before_load: bool = False


def _method(
    name: str,
    handler: str,
    doc: str,
    result: Any,
    *params: Param,
    by_hand: bool = False,
    early: bool = False,
) -> Method:
    return Method(name, handler, doc, result, params, by_hand, early)


_P = Param
_SESSION = _P("sessionId", str)
_JSON = dict[str, Any]
_META = ChatSessionMeta
_MESSAGES = list[ChatHistoryItem]

METHODS: tuple[Method, ...] = (
    _method("info", "info", "Who, which versions, which mounts, what start-up quarantined.",
            SystemInfo, early=True),
    _method("ping", "ping", "Answers 'pong': the worker is alive.", str, early=True),
    _method("close", "close", "Let queued writes finish, then end the worker.", None,
            by_hand=True, early=True),
    _method("query", "query", "Read-only SQL for diagnostics; parameters are bound.",
            list[_JSON], _P("sql", str), _P("params", list[Any] | None, None)),
    _method("schemas", "schemas", "JSON Schema of the contract's models (camelCase).", _JSON,
            early=True),
    _method("analytics", "analytics", "Messages per day, role, session, character; totals.",
            _JSON),
    # --- storage: unstorage's methods over the same mounts -----------------------
    _method("storage.getItem", "_public.get_item", "The value at a key, or null.", Any,
            _P("key", str), early=True),
    _method("storage.getItemRaw", "_public.get_item_raw", "The value as stored (bytes kept).",
            Any, _P("key", str), early=True),
    _method("storage.getItems", "_public.get_items", "Several values, in the order asked.",
            list[StorageItem], _P("keys", list[str]), early=True),
    _method("storage.setItem", "_public.set_item", "Store a JSON value (undefined removes it).",
            None, _P("key", str), _P("value", Any), by_hand=True, early=True),
    _method("storage.setItemRaw", "_public.set_item_raw", "Store a value as it is (bytes too).",
            None, _P("key", str), _P("value", Any), early=True),
    _method("storage.setItems", "_set_items", "Store several values at once.", None,
            _P("items", list[StorageItem]), early=True),
    _method("storage.hasItem", "_public.has_item", "Whether a key holds a value.", bool,
            _P("key", str), early=True),
    _method("storage.removeItem", "_public.remove_item", "Remove a key.", None, _P("key", str),
            early=True),
    _method("storage.getKeys", "_public.get_keys", "Keys under a base ('' for all).",
            list[str], _P("base", str, ""), early=True),
    _method("storage.clear", "_public.clear", "Remove every key under a base.", None,
            _P("base", str, ""), early=True),
    _method("storage.getMounts", "_mounts", "The mounts: base and driver name.",
            list[StorageMount], early=True),
    # --- sessions: the seed's session store; each write resolves once durable ----
    _method("sessions.createSession", "sessions.create_session", "A new session.", _META,
            _P("options", CreateSessionOptions | None, None)),
    _method("sessions.getSession", "sessions.get_session", "A session's meta, or null.",
            _META | None, _SESSION, early=True),
    _method("sessions.listSessions", "sessions.list_sessions", "Newest first, filtered, paged.",
            list[_META], _P("options", ListSessionsOptions | None, None), early=True),
    _method("sessions.getAllSessions", "sessions.get_all_sessions", "Every session of this user.",
            list[_META], early=True),
    _method("sessions.renameSession", "sessions.rename_session", "Change a session's title.",
            _META, _SESSION, _P("title", str)),
    _method("sessions.pinSession", "sessions.pin_session", "Pin (or unpin) a session.", _META,
            _SESSION, _P("pinned", bool, True)),
    _method("sessions.tagSession", "sessions.tag_session", "Replace a session's tags.", _META,
            _SESSION, _P("tags", list[str])),
    _method("sessions.archiveSession", "sessions.archive_session", "Archive a session.", _META,
            _SESSION),
    _method("sessions.unarchiveSession", "sessions.unarchive_session", "Bring a session back.",
            _META, _SESSION),
    _method("sessions.deleteSession", "sessions.delete_session",
            "Delete a session and its messages; false when there was none.", bool, _SESSION),
    _method("sessions.deleteOldSessions", "sessions.delete_old_sessions",
            "Delete sessions not updated for olderThan ms (pinned ones kept).", DeletedSessions,
            _P("options", DeleteOldSessionsOptions)),
    _method("sessions.getActiveSessionId", "sessions.get_active_session_id",
            "The active session of a character.", str | None,
            _P("characterId", str, "default"), by_hand=True, early=True),
    _method("sessions.setActiveSessionId", "sessions.set_active_session_id",
            "Make a session the active one (null: none).", str | None,
            _P("sessionId", str | None), by_hand=True),
    _method("sessions.addMessage", "sessions.add_message",
            "Append a message (id and createdAt filled in when missing).", ChatHistoryItem,
            _SESSION, _P("message", ChatHistoryItem)),
    _method("sessions.updateMessage", "sessions.update_message", "Change fields of a message.",
            ChatHistoryItem, _SESSION, _P("messageId", str), _P("patch", _JSON)),
    _method("sessions.deleteMessage", "sessions.delete_message",
            "Delete a message; false when there was none.", bool, _SESSION, _P("messageId", str)),
    _method("sessions.loadSessionMessages", "sessions.load_session_messages",
            "Every message of a session, oldest first.", _MESSAGES, _SESSION),
    _method("sessions.getSessionMessages", "sessions.get_session_messages",
            "Every message of a session, oldest first.", _MESSAGES, _SESSION),
    _method("sessions.messagesPage", "sessions.messages_page",
            "Messages [offset, offset + limit) of a session, oldest first.", _MESSAGES,
            _SESSION, _P("offset", int), _P("limit", int)),
    _method("sessions.latestMessages", "sessions.latest_messages",
            "The last messages of a session, oldest first.", _MESSAGES, _SESSION,
            _P("limit", int, 50)),
    _method("sessions.persistSessionMessages", "sessions.persist_session_messages",
            "Wait until every queued write is durable.", PersistedMessages, _SESSION),
    _method("sessions.forkSession", "sessions.fork_session",
            "A new session with the first atIndex messages of another.", _META,
            _P("options", ForkSessionOptions)),
    _method("sessions.snapshot", "sessions.snapshot",
            "Fold the journal into a snapshot (faster start-up).", _JSON),
    _method("sessions.sync", "sessions.sync", "Catch up with other tabs' writes now.", _JSON),
    _method("sessions.stats", "_session_stats",
            "Cache, queue, journal, problems and quarantined records.", _JSON),
    # --- context: working memory for the next LLM call ----------------------------
    _method("context.ingestContext", "context.ingest", "Add or replace a module's context.",
            ContextMessage, _P("message", ContextMessage), early=True),
    _method("context.getContextsSnapshot", "context.current",
            "{sourceType: content}, highest priority first, expired entries gone.", _JSON,
            early=True),
    _method("context.getContexts", "context.entries", "Every live entry in full.",
            list[ContextMessage], early=True),
    _method("context.removeContext", "context.remove",
            "Forget one source's context, or a whole type's; the count removed.", int,
            _P("sourceType", str), _P("sourceId", str | None, None), early=True),
    _method("context.clearContexts", "context.clear", "Forget all context; the count.", int,
            early=True),
    _method("context.registerProvider", "register_app_provider",
            "An app function asked for context before each composition.", list[str],
            _P("sourceType", str), by_hand=True, early=True),
    _method("context.unregisterProvider", "context.unregister_provider",
            "Stop asking a provider; false when there was none.", bool, _P("sourceType", str),
            by_hand=True, early=True),
    _method("context.setUserProfile", "context.set_user_profile",
            "The user's profile, in every composition (null removes).", _JSON | None,
            _P("profile", _JSON | None), early=True),
    _method("context.getUserProfile", "context.get_user_profile", "The user's profile.",
            _JSON | None, early=True),
    _method("context.setModuleState", "context.set_module_state",
            "A module's state as context (null removes).", _JSON | None, _P("module", str),
            _P("state", _JSON | None), early=True),
    # --- composition, search, embeddings, tokens ----------------------------------
    _method("composeMessages", "compose_messages",
            "The messages for the next LLM call within a token budget.", ComposedMessages,
            _SESSION, _P("options", ComposeOptions | None, None)),
    # Early: a semantic search answers from the stored vectors before the load (only
    # filters by session or character); any other waits for the load itself.
    _method("search", "searcher.search", "Memories by keyword, meaning, recency or all fused.",
            SearchResults, _P("query", SearchQuery), early=True),
    _method("searchMessages", "searcher.search_messages",
            "The seed's searchMessages: case-insensitive substring.", list[FoundMessage],
            _P("query", str), _P("options", SearchMessagesOptions | None, None)),
    _method("embeddingsStatus", "embeddings.status", "The embedding index's state.",
            EmbeddingsStatus, early=True),
    _method("indexEmbeddings", "embeddings.index_now", "Embed what is pending now.",
            EmbeddingsStatus),
    _method("configureEmbeddings", "embeddings.configure",
            "Another embedding model or provider.", EmbeddingsStatus,
            _P("config", EmbeddingConfig | None), by_hand=True),
    _method("countTokens", "count_tokens", "Token counts of texts (estimated or exact).",
            list[int], _P("texts", list[str]), _P("encoding", str, "estimate"), early=True),
    _method("tokenStats", "_token_stats", "The encodings known and the counts made.",
            TokenStats, early=True),
    # --- retention, summaries, transfer -------------------------------------------
    _method("applyRetentionPolicy", "apply_retention_policy",
            "The seed's session retention (the options' policy by default).", RetentionReport,
            _P("policy", RetentionPolicy | None, None)),
    _method("applyMessageRetention", "apply_message_retention",
            "The seed's message retention for one session.", _JSON, _SESSION,
            _P("policy", MessageRetentionPolicy | None, None)),
    _method("retention.status", "_retention_status", "The retention scheduler's state.",
            RetentionStatus),
    _method("retention.start", "_retention_start", "Run retention on its interval.",
            RetentionStatus, _P("runNow", bool, False)),
    _method("retention.stop", "scheduler.stop", "Stop scheduled retention.", RetentionStatus),
    _method("summarizeOldContext", "summarizer.summarize_old_context",
            "Summarise all but the last threshold turns into one system message.", _JSON,
            _SESSION, _P("threshold", int, 50)),
    _method("configureSummarizer", "configure_summarizer",
            "The LLM that writes summaries (null removes it).", SummarizerStatus,
            _P("config", LlmConfig | None), by_hand=True),
    _method("summarizerStatus", "_summarizer_status", "The summariser and its failures.",
            SummarizerStatus),
    _method("exportSessions", "export_sessions", "The seed's export envelope.", SessionsExport,
            _P("sessionIds", list[str] | None, None)),
    _method("importSessions", "import_sessions",
            "Seed or AIRI files (parsed or as text); all or nothing.", ImportReport,
            _P("data", Any), _P("options", ImportSessionsOptions | None, None)),
    # --- cloud sync ---------------------------------------------------------------
    _method("configureSync", "sync.configure",
            "Turn sync on or off, or change endpoint, key or interval; the status.", SyncStatus,
            _P("config", SyncConfig)),
    _method("sync.processSyncQueue", "sync.process_sync_queue",
            "Push the outbox, then pull other devices' changes; the report.", SyncReport),
    _method("sync.status", "sync.status", "Pending, in flight, failed, last success and error.",
            SyncStatus),
    _method("sync.deadLetters", "sync.dead_letters",
            "Operations refused or failed too often, with why.", list[_JSON]),
    _method("sync.retry", "sync.retry", "Dead letters back into the outbox; how many.", int,
            _P("ids", list[str])),
    _method("sync.discard", "sync.discard", "Drop dead letters for good; how many.", int,
            _P("ids", list[str])),
    # --- benchmark tools (the diagnostics option) ---------------------------------
    _method("diagnostics.bulkInsert", "_bulk_insert", "Time a bulk insert of rows into DuckDB.",
            dict[str, float], _P("rows", int)),
    _method("diagnostics.fillVectors", "_fill_vectors",
            "Random vectors for every message without one.", dict[str, float]),
    _method("diagnostics.storedVectors", "_stored_vectors",
            "One stored batch of the live model's vectors: texts and int8 codes.", dict[str, Any],
            _P("batch", int)),
    _method("diagnostics.sqlRoundTrips", "_sql_round_trips",
            "Time trivial statements sent to DuckDB as searches send theirs.", list[float],
            _P("count", int)),
)  # fmt: skip

BY_NAME: dict[str, Method] = {method.name: method for method in METHODS}
BEFORE_LOAD: frozenset[str] = frozenset(m.name for m in METHODS if m.before_load)

# Facade members that exist on the page only, written by hand in web/airi-memory.mjs (and
# declared in web/airi-memory.handwritten.d.ts): no Python method answers them.
JS_ONLY_MEMBERS: tuple[str, ...] = (
    "whenReady",
    "whenLoaded",
    "ready",
    "loaded",
    "userId",
    "versions",
    "bootMs",
    "bootPhases",
    "startupSnapshot",
    "mounts",
    "quarantined",
    "restored",
    "addEventListener",
    "removeEventListener",
    "estimateStorage",
    "requestPersistence",
    "sessions.activeSessionId",
    "sessions.activeSessionIdSaved",
    "sessions.streamMessages",
    "_test.crash",
    "_test.block",
    "_test.failCommits",
    "_test.failCopies",
)

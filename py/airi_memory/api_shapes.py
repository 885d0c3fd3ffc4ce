"""The shapes of facade arguments and results that no pydantic model describes, as
``TypedDict``s with the camelCase keys JS sees.

They exist for the method table (``api_methods``), from which the build writes the
TypeScript declarations; the handlers build plain dicts of these shapes. A result that
grows a field gets it here too, or the app's types do not show it.
"""

from typing import Any, Literal, NotRequired

# pydantic reads TypedDicts from typing_extensions on Python < 3.12 (a pydantic dependency).
from typing_extensions import TypedDict

from .models import ChatHistoryItem, ChatSessionMeta
from .search.filters import SearchFilters


class CreateSessionOptions(TypedDict, total=False):
    title: str
    characterId: str
    userId: str
    tags: list[str]
    pinned: bool
    systemPrompt: str  # stored as the session's first message, role "system"


class ListSessionsOptions(TypedDict, total=False):
    limit: int  # 20 by default
    offset: int
    userId: str
    characterId: str
    archived: bool
    pinned: bool
    tags: list[str]  # sessions carrying all of them


class ForkSessionOptions(TypedDict):
    fromSessionId: str
    atIndex: int  # messages [0, atIndex) are copied
    reason: NotRequired[str]
    title: NotRequired[str]


class DeleteOldSessionsOptions(TypedDict):
    olderThan: int  # milliseconds since the last update; pinned sessions are kept


class DeletedSessions(TypedDict):
    deleted: list[str]


class PersistedMessages(TypedDict):
    sessionId: str
    messages: int


class StorageItem(TypedDict):
    key: str
    value: Any


class StorageMount(TypedDict):
    base: str
    driver: str


class QuarantinedRecord(TypedDict):
    key: str
    reason: str


class Versions(TypedDict):
    airiMemory: str
    python: str
    duckdb: str | None  # null until start-up has DuckDB up (the facade's whenLoaded)


class SystemInfo(TypedDict):
    userId: str
    activeSessionId: str | None
    versions: Versions
    mounts: list[str]
    quarantined: list[QuarantinedRecord]


class SearchHitSession(TypedDict):
    title: str
    characterId: str


class SearchResult(TypedDict):
    sessionId: str
    session: SearchHitSession | None
    message: ChatHistoryItem
    score: float
    scores: dict[str, float]  # each retriever's own score
    retrievers: list[str]
    matchedTerms: list[str]


class SearchResults(TypedDict):
    strategy: Literal["hybrid", "relevant", "keyword", "semantic", "recent"]
    results: list[SearchResult]
    retrievers: list[str]  # the retrievers this system has
    tookMs: float


class SearchMessagesOptions(TypedDict, total=False):
    limit: int  # 100 by default
    filters: SearchFilters


class FoundMessage(TypedDict):
    sessionId: str
    message: ChatHistoryItem


class ComposedPart(TypedDict):
    kind: str  # "system", "context", "summary", "recall", "history"
    messageId: str | None
    tokens: int


class ComposedMessages(TypedDict):
    sessionId: str
    messages: list[dict[str, Any]]  # as sent to the LLM: {role, content, ...}
    tokens: dict[str, int]  # per part, total, budget, maxTokens, reserveTokens
    model: str | None
    encoding: str
    exact: bool  # counted by the model's tokenizer, not estimated
    contextPlacement: Literal["after-system", "last-user", "none"]
    droppedMessages: int
    summaryId: str | None
    coveredBySummary: int
    messageIds: list[str]
    parts: NotRequired[list[ComposedPart]]  # with the option details: true
    context: dict[str, Any]  # the context snapshot used
    contextErrors: dict[str, str]  # provider source type -> its error
    recalled: list[dict[str, Any]]


class EmbeddingsStatus(TypedDict, total=False):
    state: str  # "off", "loading", "indexing", "ready", "failed" ...
    note: str | None  # why embeddings are off
    provider: str
    model: str
    dimensions: int | None
    indexed: int
    pending: int
    ratePerSecond: float | None
    loadMs: float | None
    queryEmbeddingMs: float | None
    searchable: bool  # semantic search answers (before the load too: from the stored vectors)
    lastError: str | None


class TokenStats(TypedDict):
    encodings: list[str]


class SummarizerStatus(TypedDict):
    configured: bool
    config: dict[str, Any] | None  # the provider's settings, without its key
    failures: dict[str, Any]  # session id -> {attempts, retryAt, error}


class SyncReport(TypedDict):
    pushed: int  # operations the server acknowledged
    pulled: int  # operations pulled (other devices' and this one's echoed)
    failed: int  # operations moved to the dead letters in this run
    skipped: list[str]  # pulled changes that could not apply here, and why
    pending: int  # operations still in the outbox
    durationMs: int
    error: NotRequired[str]  # why the run stopped early (redacted)


class SyncStatus(TypedDict):
    enabled: bool
    endpoint: str | None
    apiKey: str | None  # "set" or null: never the key
    autoSync: bool
    syncInterval: int
    timeoutMs: int
    recording: bool  # writes record operations (from the first enable on, for good)
    device: str | None
    running: bool  # the automatic runner
    online: bool
    pending: int
    inFlight: int
    failed: int  # dead letters
    lastAttemptAt: int | None
    lastSuccessAt: int | None
    lastError: str | None
    lastReport: SyncReport | None


class RetentionStatus(TypedDict):
    scheduled: bool
    intervalMs: int
    inProgress: bool
    runs: int
    skipped: int
    lastReport: dict[str, Any] | None
    lastError: str | None


class RetentionReport(TypedDict):
    ranAt: int
    policy: dict[str, Any]
    archivedInactive: list[str]
    deletedExpired: list[str]
    archivedOverLimit: list[str]
    activeSessions: int
    durationMs: float


class ExportedSession(TypedDict):
    meta: ChatSessionMeta
    messages: list[ChatHistoryItem]


class SessionsExport(TypedDict):
    """The seed's ``ChatSessionsExport``."""

    version: str
    exportedAt: int
    sessions: list[ExportedSession]


class ImportSessionsOptions(TypedDict, total=False):
    keepIds: bool  # keep the file's session ids (refused where one exists)


class ImportReport(TypedDict):
    format: str
    sessions: int
    messages: int
    skippedDuplicates: int
    sessionIds: list[str]

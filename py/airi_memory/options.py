"""Options a JS app passes to ``createMemorySystem``, validated on the way in."""

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .context.tokens import ModelPreset
from .errors import InvalidValueError
from .llm import LlmConfig
from .models import CacheConfig, MessageRetentionPolicy, RetentionPolicy
from .search.embeddings import EmbeddingConfig
from .search.service import RetrievalConfig
from .sync.config import SyncConfig


class _Options(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)


class ContextOptions(_Options):
    max_per_source: int = Field(default=20, alias="maxPerSource", ge=1, le=1000)
    datetime: bool = True  # the built-in module:datetime provider
    user_profile: bool = Field(default=True, alias="userProfile")
    timezone: str = Field(default="UTC", min_length=1, max_length=64)


class RetentionOptions(_Options):
    enabled: bool = True
    policy: RetentionPolicy = Field(default_factory=RetentionPolicy)
    # Off unless given: deleting messages is the app's choice, not a default.
    message_policy: MessageRetentionPolicy | None = Field(default=None, alias="messagePolicy")
    interval_ms: int = Field(default=3_600_000, alias="intervalMs", ge=10)
    run_at_start: bool = Field(default=True, alias="runAtStart")


class ImportOptions(_Options):
    # An import file's size as JSON text (UTF-8 bytes); larger files are refused whole.
    max_bytes: int = Field(default=64 * 2**20, alias="maxBytes", ge=1, le=2**30)


class TimeoutOptions(_Options):
    """How long the system waits on the workers it depends on (milliseconds), so that every
    call settles, with an error naming what stopped, even when a worker hangs or dies."""

    # One DuckDB call: past this, DuckDB's worker counts as hung and is stopped for good
    # (SqlEngineStoppedError). Generous: the slowest real call (a 100k-row snapshot on a
    # slow machine) takes seconds, and a call may wait behind others in DuckDB's worker.
    sql_ms: int = Field(default=120_000, alias="sqlMs", ge=1000, le=3_600_000)
    # A local-model embedding call that must first start the model's worker and load it
    # (23 MB model, onnxruntime's WASM compiled); warm calls are bounded by
    # ``embeddings.timeoutMs``.
    embedding_load_ms: int = Field(default=120_000, alias="embeddingLoadMs", ge=100, le=3_600_000)
    # close(): how long queued writes may take to finish before the workers are ended.
    close_ms: int = Field(default=10_000, alias="closeMs", ge=100, le=600_000)


class SystemOptions(_Options):
    user_id: str = Field(default="local", alias="userId", min_length=1, max_length=256)
    cache: CacheConfig = Field(default_factory=CacheConfig)
    context: ContextOptions = Field(default_factory=ContextOptions)
    retention: RetentionOptions = Field(default_factory=RetentionOptions)
    summarizer: LlmConfig | None = None
    models: dict[str, ModelPreset] = Field(default_factory=dict)
    retrieval: RetrievalConfig = Field(default_factory=RetrievalConfig)
    embeddings: EmbeddingConfig = Field(default_factory=EmbeddingConfig)
    # "strict": a write resolves once IndexedDB flushed it to disk (survives an OS crash);
    # "relaxed": once the browser has it (survives a tab crash, faster).
    durability: Literal["strict", "relaxed"] = "strict"
    # How often a tab catches up with other tabs' writes when no hint arrives (ms).
    tab_poll_ms: int = Field(default=5000, alias="tabPollMs", ge=100, le=3_600_000)
    import_: ImportOptions = Field(default_factory=ImportOptions, alias="import")
    # The benchmarks' probes (diagnostics.fillVectors, diagnostics.bulkInsert): off, since
    # one stores random vectors under the live model for good and the other is heavy.
    diagnostics: bool = False
    timeouts: TimeoutOptions = Field(default_factory=TimeoutOptions)
    # Cloud sync (the seed's SyncConfig); also set later with configureSync.
    sync: SyncConfig | None = None


def parse_options(raw: object) -> SystemOptions:
    try:
        return SystemOptions.model_validate(raw or {})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "options"
        raise InvalidValueError(f"invalid option {field!r}: {first['msg']}") from None

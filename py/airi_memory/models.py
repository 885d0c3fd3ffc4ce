"""The data contract: pydantic models for sessions and messages, camelCase on the wire.

Field names follow the seed (``ChatSessionMeta``, ``ChatHistoryItem``) and AIRI's real
records. Unknown fields are kept, never dropped: AIRI and other apps add their own.
``validate_or_raise`` turns pydantic's report into one error naming the first bad field.
"""

import secrets
import time
from typing import Any, ClassVar, Literal, TypeVar

from pydantic import BaseModel, ConfigDict, Field, ValidationError, ValidationInfo, model_validator

from .errors import InvalidValueError

MAX_CONTENT_CHARS = 1_000_000
MAX_TITLE_CHARS = 500
MAX_ID_CHARS = 128
# Session ids become storage key segments: URL-safe characters only (nanoid's alphabet).
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]+$"

Role = Literal["system", "user", "assistant", "tool", "error"]
# The validation context of what this library itself wrote (the summariser's messages,
# copies of its own records): the one input whose ``summary.trusted`` is kept.
WRITTEN_HERE: dict[str, str] = {"writer": "airi-memory"}


def new_id() -> str:
    """URL-safe and random, like AIRI's nanoid (21 characters)."""
    return secrets.token_urlsafe(16)[:21]


def now_ms() -> int:
    return int(time.time() * 1000)


class _Wire(BaseModel):
    """camelCase aliases on the wire, snake_case in Python, unknown fields kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)
    # Fields written out even when the caller left them to their defaults.
    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ()

    def model_post_init(self, context: Any, /) -> None:
        self.__pydantic_fields_set__.update(self.ALWAYS_WRITTEN)

    def to_wire(self) -> dict[str, Any]:
        """The JSON object stored and returned to JS: what was given (nulls included) plus
        the defaults we assign, never optional fields nobody set."""
        return self.model_dump(by_alias=True, mode="json", exclude_unset=True)


class ContentPart(_Wire):
    """One part of multi-part content: ``{type: 'text', text}``, ``{type: 'image_url', ...}``."""

    type: str = Field(min_length=1, max_length=64)
    text: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)


class Categorization(_Wire):
    speech: str = Field(max_length=MAX_CONTENT_CHARS)
    reasoning: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)


class SummaryInfo(_Wire):
    """Marks a message as a summary of older turns and says which ones it covers, so
    they are never summarised twice and composition sends the summary instead.

    ``trusted`` is what makes it act (``context.summaries``), and validation drops it
    unless told the input is ``WRITTEN_HERE``: a ``summary`` given to addMessage or
    updateMessage, or read from an import file, is kept as data but covers nothing."""

    ALWAYS_WRITTEN = ("covers", "method", "provider")
    covers: list[str] = Field(min_length=1)
    method: Literal["llm", "extractive"]
    provider: str = Field(max_length=MAX_ID_CHARS)
    model: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    supersedes: str | None = Field(default=None, max_length=MAX_ID_CHARS)
    trusted: bool = False

    @model_validator(mode="before")
    @classmethod
    def _trusted_only_from_the_summarizer(cls, data: Any, info: ValidationInfo) -> Any:
        if isinstance(data, dict) and "trusted" in data and info.context is not WRITTEN_HERE:
            return {key: value for key, value in data.items() if key != "trusted"}
        return data


class ChatHistoryItem(_Wire):
    ALWAYS_WRITTEN = ("id", "role", "content", "created_at")
    id: str = Field(default_factory=new_id, min_length=1, max_length=MAX_ID_CHARS)
    role: Role
    content: str | list[ContentPart] = Field(default="", max_length=MAX_CONTENT_CHARS)
    created_at: int = Field(default_factory=now_ms, alias="createdAt", ge=0)
    slices: list[dict[str, Any]] | None = None
    tool_results: list[dict[str, Any]] | None = Field(default=None, alias="tool_results")
    categorization: Categorization | None = None
    summary: SummaryInfo | None = None

    def text(self) -> str:
        """The words of the message, whatever its content shape (for search and tokens)."""
        if isinstance(self.content, str):
            return self.content
        return "\n".join(part.text for part in self.content if part.text)


class ChatSessionMeta(_Wire):
    ALWAYS_WRITTEN = (
        "session_id", "title", "created_at", "updated_at", "user_id", "character_id",
        "pinned", "archived", "tags",
    )  # fmt: skip
    session_id: str = Field(
        default_factory=new_id,
        alias="sessionId",
        pattern=SESSION_ID_PATTERN,
        max_length=MAX_ID_CHARS,
    )
    title: str = Field(default="New Conversation", max_length=MAX_TITLE_CHARS)
    created_at: int = Field(default_factory=now_ms, alias="createdAt", ge=0)
    updated_at: int = Field(default_factory=now_ms, alias="updatedAt", ge=0)
    user_id: str = Field(default="local", alias="userId", min_length=1, max_length=MAX_ID_CHARS)
    character_id: str = Field(
        default="default", alias="characterId", min_length=1, max_length=MAX_ID_CHARS
    )
    pinned: bool = False
    archived: bool = False
    tags: list[str] = Field(default_factory=list, max_length=100)
    # Forking: where this session branched from (None for an original).
    parent_session_id: str | None = Field(default=None, alias="parentSessionId")
    fork_index: int | None = Field(default=None, alias="forkIndex", ge=0)
    fork_reason: str | None = Field(default=None, alias="forkReason", max_length=MAX_TITLE_CHARS)


class CacheConfig(_Wire):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = ("max_size", "ttl", "strategy")

    max_size: int = Field(default=100, alias="maxSize", ge=1, le=100_000)
    ttl: int = Field(default=3_600_000, ge=1)
    strategy: Literal["lru", "lfu"] = "lru"


DAY_MS = 24 * 60 * 60 * 1000


class ContextMessage(_Wire):
    """Context a module provides for the next LLM call (the seed's ``ContextMessage``)."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = ("source_type", "source_id", "content", "strategy", "created_at")
    source_type: str = Field(alias="sourceType", min_length=1, max_length=MAX_ID_CHARS)
    source_id: str = Field(alias="sourceId", min_length=1, max_length=MAX_ID_CHARS)
    content: dict[str, Any]
    strategy: Literal["replace-self", "append-self"] = "replace-self"
    priority: int = Field(default=0, ge=-1_000_000, le=1_000_000)
    expires_at: int | None = Field(default=None, alias="expiresAt", ge=0)
    created_at: int = Field(default_factory=now_ms, alias="createdAt", ge=0)


class RetentionPolicy(_Wire):
    """The seed's session retention; times in milliseconds."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = ("max_sessions", "max_age", "archive_after", "delete_archived")
    max_sessions: int = Field(default=1000, alias="maxSessions", ge=0)
    max_age: int = Field(default=90 * DAY_MS, alias="maxAge", ge=0)
    archive_after: int = Field(default=30 * DAY_MS, alias="archiveAfter", ge=0)
    delete_archived: bool = Field(default=False, alias="deleteArchived")


class MessageRetentionPolicy(_Wire):
    """The seed's per-session message retention."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = (
        "keep_system_messages", "max_messages_per_session", "summarize_old", "summary_threshold",
    )  # fmt: skip
    keep_system_messages: bool = Field(default=True, alias="keepSystemMessages")
    max_messages_per_session: int = Field(default=200, alias="maxMessagesPerSession", ge=1)
    summarize_old: bool = Field(default=True, alias="summarizeOld")
    summary_threshold: int = Field(default=50, alias="summaryThreshold", ge=1)


Model = TypeVar("Model", bound=BaseModel)


def validate_or_raise(
    model: type[Model], data: Any, where: str = "", context: dict[str, Any] | None = None
) -> Model:
    """Validate ``data``; on failure raise one ``InvalidValueError`` naming the first bad field."""
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        first = error.errors()[0]
        path = where + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
        )
        raise InvalidValueError(
            f"invalid {model.__name__} field {path.lstrip('.') or '(root)'!r}: {first['msg']}"
        ) from None


def json_schemas() -> dict[str, Any]:
    """The contract as JSON Schema (camelCase, as JS sees it), for apps and other tools."""
    return {
        model.__name__: model.model_json_schema(by_alias=True)
        for model in (
            ChatSessionMeta,
            ChatHistoryItem,
            CacheConfig,
            ContextMessage,
            RetentionPolicy,
            MessageRetentionPolicy,
        )
    }

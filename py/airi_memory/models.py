"""The data contract: pydantic models for sessions and messages, camelCase on the wire.

Field names follow the seed (``ChatSessionMeta``, ``ChatHistoryItem``) and AIRI's real
records. Unknown fields are kept, never dropped: AIRI and other apps add their own.
``validate_or_raise`` turns pydantic's report into one error naming the first bad field.

Input from outside (``validate_or_raise``) is held to bounds that a record read back
from storage (``model_validate``) and the library's own writes (``WRITTEN_HERE``) are
not, so that tightening a bound never makes a stored record unreadable: timestamps
within JavaScript's Date range and at most a day ahead of the clock, content parts,
attached fields and unknown fields bounded in bytes and nesting.
"""

import math
import secrets
import time
from collections.abc import Mapping
from typing import Any, ClassVar, Literal, Self, TypeVar

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
    model_validator,
)
from pydantic_core import PydanticCustomError

from .errors import InvalidValueError

MAX_CONTENT_CHARS = 1_000_000
MAX_TITLE_CHARS = 500
MAX_ID_CHARS = 128
MAX_CONTENT_PARTS = 256
# JSON bytes of one message's content parts, its slices, its tool_results, or all of a
# record's unknown fields together; each nested at most MAX_FIELD_DEPTH levels, so that a
# whole export (four levels above a message's fields) stays within an import's depth bound.
MAX_FIELD_BYTES = 2_000_000
MAX_FIELD_DEPTH = 32
JS_MAX_TIME = 8_640_000_000_000_000  # |t| of a JavaScript Date, in ms
DAY_MS = 24 * 60 * 60 * 1000
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


class JsonLimitError(ValueError):
    """A JSON value over a nesting bound, or not JSON; ``path`` names where (``a.b[2]``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class JsonSizeError(JsonLimitError):
    """A JSON value over its bound in bytes: the value as a whole, no one place in it."""


def _text_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def join_path(head: str, tail: str) -> str:
    """``head`` and a path below it: ``a`` + ``b[1]`` is ``a.b[1]``, ``a`` + ``[1]`` is ``a[1]``."""
    if not tail:
        return head
    return head + tail if tail.startswith("[") or not head else f"{head}.{tail}"


def _where(trail: tuple[Any, ...] | None) -> str:
    parts: list[str] = []
    while trail is not None:
        trail, key = trail
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(parts)).lstrip(".")


def json_size(value: Any, max_bytes: int, max_depth: int) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (escapes not counted), measured without
    building the text and given up as soon as ``max_bytes`` is passed; objects and lists
    nested deeper than ``max_depth`` are refused. Iterative: hostile nesting cannot
    exhaust the interpreter's stack."""
    total = 0
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 1, None)]
    while stack:
        item, depth, trail = stack.pop()
        if isinstance(item, str):
            total += _text_bytes(item) + 2
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                raise JsonLimitError(_where(trail), f"nested more than {max_depth} levels deep")
            if isinstance(item, dict):
                total += max(2 * len(item) + 1, 2)  # braces, colons, commas
                for key, child in item.items():
                    total += _text_bytes(str(key)) + 2
                    stack.append((child, depth + 1, (trail, key)))
            else:
                total += max(len(item) + 1, 2)  # brackets, commas
                stack.extend((child, depth + 1, (trail, i)) for i, child in enumerate(item))
        elif item is None or item is True:
            total += 4
        elif item is False:
            total += 5
        elif isinstance(item, int) or (isinstance(item, float) and math.isfinite(item)):
            total += len(repr(item))
        elif isinstance(item, float):  # stored, it would read back as null
            raise JsonLimitError(_where(trail), f"{item} is not a JSON number")
        else:
            raise JsonLimitError(_where(trail), f"{type(item).__name__} is not JSON data")
        if total > max_bytes:
            raise JsonSizeError("", f"more than {max_bytes:,} bytes of JSON")
    return total


def lone_surrogate_path(value: Any) -> str | None:
    """Where JSON data holds a lone surrogate (``a.b[2]``, ``""`` for the value itself), or
    None. JSON escapes allow one and a JS string may hold one, but it has no UTF-8 form:
    DuckDB refuses it and the browser's encoders replace it, so it would not read back."""
    stack: list[tuple[Any, tuple[Any, ...] | None]] = [(value, None)]
    while stack:
        item, trail = stack.pop()
        if isinstance(item, str):
            if _not_text(item):
                return _where(trail)
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _not_text(key):
                    return _where((trail, key))
                stack.append((child, (trail, key)))
        elif isinstance(item, list | tuple):
            stack.extend((child, (trail, index)) for index, child in enumerate(item))
    return None


def _not_text(text: str) -> bool:
    """True when ``text`` holds a lone surrogate."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False


def _limit_error(error: JsonLimitError, reason: str | None = None) -> PydanticCustomError:
    """A pydantic error whose ``path`` (below the field pydantic names) joins the field path."""
    return PydanticCustomError(
        "json_limit", "{reason}", {"path": error.path, "reason": reason or error.reason}
    )


def _input_now(info: ValidationInfo) -> int | None:
    """The clock to judge input by; None for a stored record or the library's own write."""
    return info.context.get("now") if info.context else None


def _bounded_field(value: Any, info: ValidationInfo) -> Any:
    """A field holding arbitrary JSON (slices, tool_results), bounded when it is input."""
    if _input_now(info) is not None:
        try:
            json_size(value, MAX_FIELD_BYTES, MAX_FIELD_DEPTH)
        except JsonLimitError as error:
            raise _limit_error(error) from None
    return value


def _checked_time(value: int, info: ValidationInfo) -> int:
    """An epoch-ms time from outside: a JavaScript Date, and not days ahead of the clock
    (a record stamped in the far future would sort first and never age out)."""
    now = _input_now(info)
    if now is None:
        return value
    if abs(value) > JS_MAX_TIME:
        raise PydanticCustomError("time_range", "outside JavaScript's Date range (±8.64e15 ms)")
    if value > now + DAY_MS:
        raise PydanticCustomError("time_future", "more than a day in the future")
    return value


class _Wire(BaseModel):
    """camelCase aliases on the wire, snake_case in Python, unknown fields kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)
    # Fields written out even when the caller left them to their defaults.
    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ()

    def model_post_init(self, context: Any, /) -> None:
        self.__pydantic_fields_set__.update(self.ALWAYS_WRITTEN)

    @model_validator(mode="after")
    def _bounded_unknown_fields(self, info: ValidationInfo) -> Self:
        """Unknown fields are kept, so from outside they are bounded together."""
        if _input_now(info) is None or not self.__pydantic_extra__:
            return self
        used = 0
        for name, value in self.__pydantic_extra__.items():
            try:
                used += json_size(value, MAX_FIELD_BYTES - used, MAX_FIELD_DEPTH) + len(name)
            except JsonLimitError as error:
                path = join_path(str(name), error.path)
                reason = None if not isinstance(error, JsonSizeError) else (
                    f"unknown fields together are more than {MAX_FIELD_BYTES:,} bytes of JSON"
                )  # fmt: skip
                raise _limit_error(JsonLimitError(path, error.reason), reason) from None
        return self

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


def message_text(message: Mapping[str, Any]) -> str:
    """The words of a message (a stored record or one being composed), whatever the shape
    of its content: a string, or its text parts joined by newlines. The one reading of a
    message's text: search indexes and embeds it, recall quotes it, and token counts add
    the tool calls to it (``context.tokens.message_token_text``)."""
    content = message.get("content", "")
    if isinstance(content, list):
        return "\n".join(
            part["text"]
            for part in content
            if isinstance(part, dict) and isinstance(part.get("text"), str) and part["text"]
        )
    return content if isinstance(content, str) else ""


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

    _bounded_attachments = field_validator("slices", "tool_results", mode="before")(_bounded_field)
    _checked_created_at = field_validator("created_at")(_checked_time)

    @field_validator("content", mode="before")
    @classmethod
    def _bounded_parts(cls, value: Any, info: ValidationInfo) -> Any:
        if _input_now(info) is not None and isinstance(value, list):
            if len(value) > MAX_CONTENT_PARTS:
                raise PydanticCustomError(
                    "too_many_parts",
                    "{count} parts, more than {limit}",
                    {"count": len(value), "limit": MAX_CONTENT_PARTS},
                )
            return _bounded_field(value, info)
        return value


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

    _checked_times = field_validator("created_at", "updated_at")(_checked_time)


class CacheConfig(_Wire):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = ("max_size", "ttl", "strategy")

    max_size: int = Field(default=100, alias="maxSize", ge=1, le=100_000)
    ttl: int = Field(default=3_600_000, ge=1)
    strategy: Literal["lru", "lfu"] = "lru"


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
    model: type[Model],
    data: Any,
    where: str = "",
    context: dict[str, Any] | None = None,
    now: int | None = None,
) -> Model:
    """Validate ``data`` from outside, its times judged against ``now`` (the wall clock
    unless given), or, with ``context=WRITTEN_HERE``, what this library itself wrote; on
    failure raise one ``InvalidValueError`` naming the first bad field. Either way no
    string in it may hold a lone surrogate: it could be stored but never read back."""
    if context is None:
        context = {"now": now_ms() if now is None else now}
    surrogate_at = lone_surrogate_path(data)
    if surrogate_at is not None:
        path = join_path(where, surrogate_at).lstrip(".") or "(root)"
        raise InvalidValueError(
            f"invalid {model.__name__} field {path!r}: holds a lone surrogate "
            "(U+D800 to U+DFFF without its pair), which is not text"
        )
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        first = error.errors()[0]
        below = (first.get("ctx") or {}).get("path", "") if first["type"] == "json_limit" else ""
        path = where + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
        )
        path = join_path(path, below)
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

"""The data contract: pydantic models for sessions and messages, camelCase on the wire.

Field names follow the seed (``ChatSessionMeta``, ``ChatHistoryItem``) and AIRI's real
records. Unknown fields are kept, never dropped: AIRI and other apps add their own.
``validate_or_raise`` turns pydantic's report into one error naming the first bad field.

Input from outside (``validate_or_raise``) is held to bounds that a record read back
from storage (``model_validate``) and the library's own writes (``WRITTEN_HERE``) are
not, so that tightening a bound never makes a stored record unreadable: timestamps
within JavaScript's Date range and at most a day ahead of the clock, content parts,
attached fields and unknown fields bounded in bytes and nesting.

One idea a module: ``json_bounds`` (measuring JSON), ``wire`` (the base model and the
input bounds), ``messages``, ``sessions``, ``context_message``, ``settings`` (the
records and settings), ``validation`` (``validate_or_raise``, ``json_schemas``). The
whole contract is importable from here, which is where the rest of the library and the
build import it from.
"""

from .context_message import ContextMessage
from .json_bounds import JsonLimitError, JsonSizeError, join_path, json_size, lone_surrogate_path
from .messages import (
    MAX_CONTENT_PARTS,
    Categorization,
    ChatHistoryItem,
    ContentPart,
    Role,
    Speakers,
    SummaryInfo,
    message_text,
)
from .sessions import SESSION_ID_PATTERN, ChatSessionMeta
from .settings import CacheConfig, MessageRetentionPolicy, RetentionPolicy
from .validation import json_schemas, validate_or_raise
from .wire import (
    DAY_MS,
    JS_MAX_TIME,
    MAX_CONTENT_CHARS,
    MAX_FIELD_BYTES,
    MAX_FIELD_DEPTH,
    MAX_ID_CHARS,
    MAX_TITLE_CHARS,
    WRITTEN_HERE,
    new_id,
    now_ms,
)

__all__ = [
    "DAY_MS",
    "JS_MAX_TIME",
    "MAX_CONTENT_CHARS",
    "MAX_CONTENT_PARTS",
    "MAX_FIELD_BYTES",
    "MAX_FIELD_DEPTH",
    "MAX_ID_CHARS",
    "MAX_TITLE_CHARS",
    "SESSION_ID_PATTERN",
    "WRITTEN_HERE",
    "CacheConfig",
    "Categorization",
    "ChatHistoryItem",
    "ChatSessionMeta",
    "ContentPart",
    "ContextMessage",
    "JsonLimitError",
    "JsonSizeError",
    "MessageRetentionPolicy",
    "RetentionPolicy",
    "Role",
    "Speakers",
    "SummaryInfo",
    "join_path",
    "json_schemas",
    "json_size",
    "lone_surrogate_path",
    "message_text",
    "new_id",
    "now_ms",
    "validate_or_raise",
]

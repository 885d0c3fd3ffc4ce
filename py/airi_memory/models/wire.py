"""What every wire model shares, and how input from outside is held to bounds.

camelCase aliases on the wire, snake_case in Python, unknown fields kept (AIRI and other
apps add their own). A model validated with a ``now`` in its context is input: its times
must be a JavaScript Date and not days ahead, its JSON-valued fields and unknown fields
are bounded in bytes and nesting. A record read back from storage (no context) and the
library's own writes (``WRITTEN_HERE``) are not held to them, so that tightening a bound
never makes a stored record unreadable.
"""

import secrets
import time
from typing import Any, ClassVar, Self

from pydantic import BaseModel, ConfigDict, ValidationInfo, model_validator
from pydantic_core import PydanticCustomError

from .json_bounds import JsonLimitError, JsonSizeError, join_path, json_size

MAX_CONTENT_CHARS = 1_000_000
MAX_TITLE_CHARS = 500
MAX_ID_CHARS = 128
# JSON bytes of one message's content parts, its slices, its tool_results, or all of a
# record's unknown fields together; each nested at most MAX_FIELD_DEPTH levels, so that a
# whole export (four levels above a message's fields) stays within an import's depth bound.
MAX_FIELD_BYTES = 2_000_000
MAX_FIELD_DEPTH = 32
JS_MAX_TIME = 8_640_000_000_000_000  # |t| of a JavaScript Date, in ms
DAY_MS = 24 * 60 * 60 * 1000

# The validation context of what this library itself wrote (the summariser's messages,
# copies of its own records): the one input whose ``summary.trusted`` is kept.
WRITTEN_HERE: dict[str, str] = {"writer": "airi-memory"}


def new_id() -> str:
    """URL-safe and random, like AIRI's nanoid (21 characters)."""
    return secrets.token_urlsafe(16)[:21]


def now_ms() -> int:
    return int(time.time() * 1000)


def _limit_error(error: JsonLimitError, reason: str | None = None) -> PydanticCustomError:
    """A pydantic error whose ``path`` (below the field pydantic names) joins the field path."""
    return PydanticCustomError(
        "json_limit", "{reason}", {"path": error.path, "reason": reason or error.reason}
    )


def input_now(info: ValidationInfo) -> int | None:
    """The clock to judge input by; None for a stored record or the library's own write."""
    return info.context.get("now") if info.context else None


def bounded_json_field(value: Any, info: ValidationInfo) -> Any:
    """A field holding arbitrary JSON (slices, tool_results), bounded when it is input."""
    if input_now(info) is not None:
        try:
            json_size(value, MAX_FIELD_BYTES, MAX_FIELD_DEPTH)
        except JsonLimitError as error:
            raise _limit_error(error) from None
    return value


def checked_time(value: int, info: ValidationInfo) -> int:
    """An epoch-ms time from outside: a JavaScript Date, and not days ahead of the clock
    (a record stamped in the far future would sort first and never age out)."""
    now = input_now(info)
    if now is None:
        return value
    if abs(value) > JS_MAX_TIME:
        raise PydanticCustomError("time_range", "outside JavaScript's Date range (±8.64e15 ms)")
    if value > now + DAY_MS:
        raise PydanticCustomError("time_future", "more than a day in the future")
    return value


class WireModel(BaseModel):
    """camelCase aliases on the wire, snake_case in Python, unknown fields kept."""

    model_config = ConfigDict(extra="allow", populate_by_name=True, validate_assignment=True)
    # Fields written out even when the caller left them to their defaults.
    ALWAYS_WRITTEN: ClassVar[tuple[str, ...]] = ()

    def model_post_init(self, context: Any, /) -> None:
        self.__pydantic_fields_set__.update(self.ALWAYS_WRITTEN)

    @model_validator(mode="after")
    def _bounded_unknown_fields(self, info: ValidationInfo) -> Self:
        """Unknown fields are kept, so from outside they are bounded together."""
        if input_now(info) is None or not self.__pydantic_extra__:
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

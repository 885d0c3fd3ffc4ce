"""The wire format of /v1/sync (docs/sync-protocol.md): operations, batches, pages.

Field names on the wire are camelCase, as in the seed's SyncOperation. Validation errors
carry the path of the offending field, so a 422 can name it.
"""

from typing import Any, Literal

from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    ValidationError,
    ValidationInfo,
    field_validator,
)
from pydantic.alias_generators import to_camel

from airi_memory.sync import hlc

MAX_ID_CHARS = 128
MAX_FIELD_NAME_CHARS = 128
DEFAULT_MAX_BATCH_OPERATIONS = 500
DEFAULT_MAX_BODY_BYTES = 1024 * 1024
DEFAULT_PULL_LIMIT = 100
MAX_PULL_LIMIT = 1000
# A stamp further ahead of the server's clock than this is refused: it would win every
# later edit of its fields for as long as the difference lasts.
DEFAULT_MAX_CLOCK_AHEAD_MS = 24 * 60 * 60 * 1000

OperationType = Literal["create", "update", "delete"]
Resource = Literal["session", "message"]


class WireModel(BaseModel):
    """camelCase on the wire; unknown keys refused so a client's typo is a 422, not a loss."""

    model_config = ConfigDict(
        alias_generator=to_camel, populate_by_name=True, extra="forbid", frozen=True
    )


class SyncOperation(WireModel):
    """One create, update or delete of a session or a message, as a device made it."""

    id: str = Field(min_length=1, max_length=MAX_ID_CHARS, description="Unique per user.")
    type: OperationType
    resource: Resource
    session_id: str = Field(min_length=1, max_length=MAX_ID_CHARS)
    message_id: str | None = Field(
        default=None,
        max_length=MAX_ID_CHARS,
        validate_default=True,
        description="Required for a message, absent for a session.",
    )
    hlc: str = Field(description="Hybrid logical clock stamp of this edit (docs/sync-protocol.md).")
    data: dict[str, Any] | None = Field(
        default=None,
        validate_default=True,
        description="The fields this operation sets; every one is stamped with `hlc`.",
    )
    timestamp: int = Field(ge=0, description="The device's wall clock (ms); informational.")
    retries: int = Field(default=0, ge=0, description="Client-side count; not stored.")

    @field_validator("message_id")
    @classmethod
    def message_id_matches_resource(cls, value: str | None, info: ValidationInfo) -> str | None:
        """A message operation names its message; a session operation names none."""
        resource = info.data.get("resource")
        if resource == "message" and not value:
            raise ValueError("required for a message operation")
        if resource == "session" and value is not None:
            raise ValueError("must be absent for a session operation")
        return value

    @field_validator("hlc")
    @classmethod
    def hlc_is_a_stamp_not_too_far_ahead(cls, value: str, info: ValidationInfo) -> str:
        """A well-formed stamp, and not further ahead of the server clock than allowed."""
        stamp = hlc.parse(value)
        context = info.context or {}
        now_ms = context.get("now_ms")
        max_ahead_ms = context.get("max_clock_ahead_ms", DEFAULT_MAX_CLOCK_AHEAD_MS)
        if now_ms is not None and stamp.wall_ms > now_ms + max_ahead_ms:
            raise ValueError(f"wall clock more than {max_ahead_ms} ms ahead of the server")
        return value

    @field_validator("data")
    @classmethod
    def data_fits_type(cls, value: dict[str, Any] | None, info: ValidationInfo) -> Any:
        """Creates and updates carry an object of fields, an update at least one; names bounded."""
        kind = info.data.get("type")
        if kind in ("create", "update") and value is None:
            raise ValueError(f"required (an object of fields) for {kind}")
        if kind == "update" and not value:
            raise ValueError("an update sets at least one field")
        for name in value or {}:
            if not 0 < len(name) <= MAX_FIELD_NAME_CHARS:
                raise ValueError(f"field names are 1 to {MAX_FIELD_NAME_CHARS} characters")
        return value

    def content(self) -> dict[str, Any]:
        """What identifies this operation's effect: everything but the client's retry count."""
        return self.model_dump(by_alias=True, exclude={"retries"})


class PushRequest(WireModel):
    """A batch, applied all or nothing, in order."""

    operations: list[SyncOperation]


class Ack(WireModel):
    """Where an operation sits in the user's log; the same on every replay."""

    id: str
    seq: int


class PushResponse(WireModel):
    results: list[Ack]


class PulledOperation(WireModel):
    """An operation as the log holds it: the pushed fields less `retries`, plus its place."""

    seq: int
    id: str
    type: OperationType
    resource: Resource
    session_id: str
    message_id: str | None = None
    hlc: str
    data: dict[str, Any] | None = None
    timestamp: int


class PullResponse(WireModel):
    operations: list[PulledOperation]
    cursor: int = Field(description="Pass it back as `cursor` for the next page.")
    has_more: bool


class ErrorBody(WireModel):
    """Every error answer. `field` names the offending field of a 422 or 409."""

    error: str
    message: str
    field: str | None = None


def field_path(location: tuple[int | str, ...]) -> str:
    """A pydantic error location (aliases, as on the wire) as `operations[3].sessionId`."""
    path = ""
    for part in location:
        if isinstance(part, int):
            path += f"[{part}]"
        else:
            name = to_camel(part) if "_" in part else part  # a default's error has no alias
            path += f".{name}" if path else name
    return path


def first_error_field(error: ValidationError) -> tuple[str, str]:
    """The path and message of the first problem pydantic found; `body` for the whole."""
    detail = error.errors(include_url=False)[0]
    return field_path(tuple(detail["loc"])) or "body", detail["msg"]

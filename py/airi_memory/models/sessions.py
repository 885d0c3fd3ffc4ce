"""A session's record (``ChatSessionMeta``): its title, owner, flags, and where it forked from."""

from pydantic import Field, field_validator

from .wire import MAX_ID_CHARS, MAX_TITLE_CHARS, WireModel, checked_time, new_id, now_ms

# Session ids become storage key segments: URL-safe characters only (nanoid's alphabet).
SESSION_ID_PATTERN = r"^[A-Za-z0-9_-]+$"


class ChatSessionMeta(WireModel):
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

    _checked_times = field_validator("created_at", "updated_at")(checked_time)

"""One context entry as the context store keeps it and composition reads it."""

from typing import Any, Literal

from pydantic import ConfigDict, Field

from .wire import MAX_ID_CHARS, WireModel, now_ms


class ContextMessage(WireModel):
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

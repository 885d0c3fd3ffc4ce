"""A message (``ChatHistoryItem``) and its parts, and the one reading of its text.

Field names follow the seed and AIRI's records. A ``summary`` marks a message that
stands for older turns; only the library's own writes may mark it ``trusted``.
"""

from collections.abc import Mapping
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationInfo, field_validator, model_validator
from pydantic_core import PydanticCustomError

from .wire import (
    MAX_CONTENT_CHARS,
    MAX_ID_CHARS,
    WRITTEN_HERE,
    WireModel,
    bounded_json_field,
    checked_time,
    input_now,
    new_id,
    now_ms,
)

MAX_CONTENT_PARTS = 256

Role = Literal["system", "user", "assistant", "tool", "error"]


class Speakers(BaseModel):
    """Who speaks as each role, by name ("Maya" is the user, "Tom" the character): turns
    carry only their role, and people ask about each other by name."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    user: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)
    assistant: str | None = Field(default=None, min_length=1, max_length=MAX_ID_CHARS)


class ContentPart(WireModel):
    """One part of multi-part content: ``{type: 'text', text}``, ``{type: 'image_url', ...}``."""

    type: str = Field(min_length=1, max_length=64)
    text: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)


class Categorization(WireModel):
    speech: str = Field(max_length=MAX_CONTENT_CHARS)
    reasoning: str | None = Field(default=None, max_length=MAX_CONTENT_CHARS)


class SummaryInfo(WireModel):
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


class ChatHistoryItem(WireModel):
    ALWAYS_WRITTEN = ("id", "role", "content", "created_at")
    id: str = Field(default_factory=new_id, min_length=1, max_length=MAX_ID_CHARS)
    role: Role
    content: str | list[ContentPart] = Field(default="", max_length=MAX_CONTENT_CHARS)
    created_at: int = Field(default_factory=now_ms, alias="createdAt", ge=0)
    slices: list[dict[str, Any]] | None = None
    tool_results: list[dict[str, Any]] | None = Field(default=None, alias="tool_results")
    categorization: Categorization | None = None
    summary: SummaryInfo | None = None

    _bounded_attachments = field_validator("slices", "tool_results", mode="before")(
        bounded_json_field
    )
    _checked_created_at = field_validator("created_at")(checked_time)

    @field_validator("content", mode="before")
    @classmethod
    def _bounded_parts(cls, value: Any, info: ValidationInfo) -> Any:
        if input_now(info) is not None and isinstance(value, list):
            if len(value) > MAX_CONTENT_PARTS:
                raise PydanticCustomError(
                    "too_many_parts",
                    "{count} parts, more than {limit}",
                    {"count": len(value), "limit": MAX_CONTENT_PARTS},
                )
            return bounded_json_field(value, info)
        return value

"""Settings an app passes in: the session cache's, and session and message retention."""

from typing import Literal

from pydantic import ConfigDict, Field

from .wire import DAY_MS, WireModel


class CacheConfig(WireModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = ("max_size", "ttl", "strategy")

    max_size: int = Field(default=100, alias="maxSize", ge=1, le=100_000)
    ttl: int = Field(default=3_600_000, ge=1)
    strategy: Literal["lru", "lfu"] = "lru"


class RetentionPolicy(WireModel):
    """The seed's session retention; times in milliseconds."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = ("max_sessions", "max_age", "archive_after", "delete_archived")
    max_sessions: int = Field(default=1000, alias="maxSessions", ge=0)
    max_age: int = Field(default=90 * DAY_MS, alias="maxAge", ge=0)
    archive_after: int = Field(default=30 * DAY_MS, alias="archiveAfter", ge=0)
    delete_archived: bool = Field(default=False, alias="deleteArchived")


class MessageRetentionPolicy(WireModel):
    """The seed's per-session message retention."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    ALWAYS_WRITTEN = (
        "keep_system_messages", "max_messages_per_session", "summarize_old", "summary_threshold",
    )  # fmt: skip
    keep_system_messages: bool = Field(default=True, alias="keepSystemMessages")
    max_messages_per_session: int = Field(default=200, alias="maxMessagesPerSession", ge=1)
    summarize_old: bool = Field(default=True, alias="summarizeOld")
    summary_threshold: int = Field(default=50, alias="summaryThreshold", ge=1)

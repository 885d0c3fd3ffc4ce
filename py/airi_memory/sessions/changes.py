"""What a write did, in the words sync speaks, and the sync bookkeeping written with it.

Each write of the session store names its ``Change``s (a session or message created,
updated or deleted, with the fields it set). The writer hands them to its ``Recorder``
(the sync layer's outbox), which turns them into operations and per-field clock stamps
written in the same transaction: no write without its operation, no operation without
its write. ``Bookkeeping`` is that extra part of a batch: it is not in the journal,
because no mirror reflects it.
"""

from dataclasses import dataclass, field
from typing import Any, Literal, Protocol

from ..models import ChatHistoryItem, ChatSessionMeta
from ..storage.driver import Guard

ChangeType = Literal["create", "update", "delete"]


@dataclass(frozen=True)
class Change:
    type: ChangeType
    session_id: str
    message_id: str | None = None  # None: the change is to the session itself
    data: dict[str, Any] | None = None  # the fields set (create: all of them)


def created_session(meta: ChatSessionMeta) -> Change:
    data = {k: v for k, v in meta.to_wire().items() if k != "sessionId"}
    return Change("create", meta.session_id, data=data)


def created_message(session_id: str, item: ChatHistoryItem) -> Change:
    data = {k: v for k, v in item.to_wire().items() if k != "id"}
    return Change("create", session_id, item.id, data)


def created(meta: ChatSessionMeta, messages: list[ChatHistoryItem]) -> list[Change]:
    """A new session with its first messages."""
    return [created_session(meta), *(created_message(meta.session_id, m) for m in messages)]


@dataclass
class Bookkeeping:
    sets: list[tuple[str, Any]] = field(default_factory=list)
    removes: list[str] = field(default_factory=list)
    prefixes: list[str] = field(default_factory=list)
    patches: list[tuple[str, Any]] = field(default_factory=list)
    guards: list[Guard] = field(default_factory=list)


class Recorder(Protocol):
    """The writer's view of the outbox (``sync.recorder.OutboxRecorder``)."""

    def bookkeeping(self, changes: list[Change]) -> Bookkeeping:
        """What to write with these changes (nothing while sync is off, but a guard)."""

    async def refresh(self) -> bool:
        """Re-read whether sync records (another tab may have turned it on); whether that
        changed. Called after a write was refused by a guard."""


class NoRecorder:
    """Before the sync layer is attached (start-up): nothing to record."""

    def bookkeeping(self, changes: list[Change]) -> Bookkeeping:
        return Bookkeeping()

    async def refresh(self) -> bool:
        return False

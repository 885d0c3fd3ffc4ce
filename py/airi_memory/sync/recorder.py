"""The outbox: every write's sync operations, recorded in the write's own transaction.

Recording starts the first time sync is turned on for this database and never stops
(turning sync off pauses sending, not recording), so no edit made in between is ever
missing from the outbox. Every write is guarded on the state record: a tab that does not
record yet finds its write refused once another tab turned sync on, re-reads the state
(``refresh``) and writes again with its operations (``Writer.write``).
"""

import contextlib
import secrets
from collections.abc import Callable
from typing import Any

from ..errors import WriteConflictError
from ..sessions.changes import Bookkeeping, Change
from ..storage import Storage
from ..storage.driver import Guard
from . import hlc, layout

INDEX_DIGITS = 7  # an operation's place in its write, padded: key order is creation order


def operation(change: Change, op_id: str, stamp: str, now: int) -> dict[str, Any]:
    """The wire ``SyncOperation`` of one change (docs/sync-protocol.md)."""
    op: dict[str, Any] = {
        "id": op_id,
        "type": change.type,
        "resource": "session" if change.message_id is None else "message",
        "sessionId": change.session_id,
        "hlc": stamp,
        "timestamp": now,
        "retries": 0,
    }
    if change.message_id is not None:
        op["messageId"] = change.message_id
    if change.type != "delete":
        op["data"] = dict(change.data or {})
    return op


def stamp_change(book: Bookkeeping, change: Change, stamp: str) -> None:
    """The per-field stamps or the tombstone a change leaves (merge rules 2 and 3)."""
    sid, mid = change.session_id, change.message_id
    fields = {"hlc": stamp}
    if change.type == "delete" and mid is None:
        book.sets.append((layout.gone_session_key(sid), fields))
        book.removes.append(layout.stamps_key(sid))
        book.prefixes.append(layout.gone_messages_prefix(sid))  # the session's covers them
    elif change.type == "delete":
        book.sets.append((layout.gone_message_key(sid, mid), fields))  # type: ignore[arg-type]
    elif mid is None:
        stamps = {name: stamp for name in change.data or {}}
        if change.type == "create":
            book.sets.append((layout.stamps_key(sid), stamps))
        else:
            book.patches.append((layout.stamps_key(sid), stamps))
    elif change.type == "update":  # a message's create needs no stamp: any edit is later
        named = {layout.message_field(mid, name): stamp for name in change.data or {}}
        book.patches.append((layout.stamps_key(sid), named))


class OutboxRecorder:
    def __init__(self, storage: Storage, now: Callable[[], int], tab: str) -> None:
        self.storage = storage
        self.now = now
        self.tab = tab  # this open system's part of the node id: tabs never share stamps
        self.state: dict[str, Any] | None = None  # the stored state; None: never turned on
        self.last: hlc.Stamp | None = None

    @property
    def recording(self) -> bool:
        return self.state is not None

    @property
    def device(self) -> str:
        return str(self.state["device"]) if self.state else ""

    @property
    def node(self) -> str:
        return f"{self.device}-{self.tab}"

    async def refresh(self) -> bool:
        was = self.recording
        stored = await self.storage.get_item(layout.STATE)
        recording = isinstance(stored, dict) and stored.get("recording") is True
        self.state = stored if recording else None
        if self.state and isinstance(self.state.get("lastHlc"), str):
            # A damaged stamp is passed over: the wall clock alone still orders what comes.
            with contextlib.suppress(ValueError):
                self.receive(self.state["lastHlc"])
        return self.recording != was

    async def start(self) -> dict[str, Any]:
        """Turn recording on for good (idempotent); the state record as stored."""
        await self.refresh()
        if self.state is None:
            state = {"recording": True, "device": secrets.token_urlsafe(9), "cursor": 0}
            # Another tab turning it on at the same moment keeps its device id.
            with contextlib.suppress(WriteConflictError):
                absent = Guard(layout.STATE, "recording", None)
                await self.storage.write_batch([(layout.STATE, state)], guards=[absent])
            await self.refresh()
        assert self.state is not None
        return self.state

    def stamp(self) -> str:
        """A new stamp for a local edit."""
        self.last = hlc.tick(self.last, self.now(), self.node)
        return self.last.encode()

    def receive(self, stamp: str) -> None:
        """Seen another edit's stamp: the next local one orders after it."""
        self.last = hlc.receive(self.last, hlc.parse(stamp), self.now(), self.node)

    def bookkeeping(self, changes: list[Change]) -> Bookkeeping:
        if not self.recording:
            return Bookkeeping(guards=[Guard(layout.STATE, "recording", None)])
        book = Bookkeeping(guards=[Guard(layout.STATE, "recording", True)])
        if changes:
            stamp, now = self.stamp(), self.now()
            for index, change in enumerate(changes):
                op = operation(change, f"{stamp}.{index:0{INDEX_DIGITS}d}", stamp, now)
                book.sets.append((layout.op_key(op["id"]), op))
                stamp_change(book, change, stamp)
            book.patches.append((layout.STATE, {"lastHlc": stamp}))
        return book

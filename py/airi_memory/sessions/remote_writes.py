"""Changes another device made (pulled by sync), applied through this store's one writer.

The sync layer decides which fields win (its clock stamps) and hands over the winning
``Change``s with its bookkeeping (stamps, tombstones, the pull cursor); here they become
one batch of ordinary records, written in one transaction, and reflected in the view by
re-reading what was written, as a catch-up does. So search, embeddings and the mirror
follow a pulled message exactly as they follow one added here. Nothing here is recorded
into the outbox: it came from there.
"""

from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidValueError
from ..models import WRITTEN_HERE, ChatHistoryItem, ChatSessionMeta
from ..models.validation import validate_or_raise
from . import records
from .catch_up import CatchUp
from .changes import Bookkeeping, Change
from .view import SessionView
from .writer import Writer

Decide = Callable[[], Awaitable[tuple[list[Change], Bookkeeping]]]


@dataclass
class _Batch:
    """Records of one pulled page as they will be after it, built change by change."""

    sessions: dict[str, dict[str, Any] | None] = field(default_factory=dict)  # None: deleted
    created: set[str] = field(default_factory=set)  # sessions new to this store
    messages: dict[tuple[str, str], dict[str, Any] | None] = field(default_factory=dict)
    records: dict[tuple[str, str], str | None] = field(default_factory=dict)  # None: new
    stored: dict[str, dict[str, Any]] = field(default_factory=dict)  # bodies as found, by key
    skipped: list[str] = field(default_factory=list)  # why a change could not apply


class RemoteWrites:
    def __init__(self, writer: Writer, view: SessionView, catch_up: CatchUp, user_id: str) -> None:
        self.user_id = user_id  # the owner of a session known so far only by its messages
        self.writer = writer
        self.view = view
        self.mirror = view.mirror
        self.catch_up = catch_up

    async def apply(self, decide: Decide) -> dict[str, Any]:
        """Run ``decide`` in the write queue after catching up (so it judges what the
        store holds now), then write what it returned as one batch."""

        async def task() -> dict[str, Any]:
            await self.catch_up.catch_up()
            changes, book = await decide()
            batch = _Batch()
            await self._read_messages(batch, changes)
            for change in changes:
                await self._fold(batch, change)
            await self._write(batch, book)
            return {"applied": len(changes) - len(batch.skipped), "skipped": batch.skipped}

        return await self.writer.run("applyPulled", task)

    async def _fold(self, batch: _Batch, change: Change) -> None:
        sid, mid = change.session_id, change.message_id
        if sid not in batch.sessions:
            meta = self.view.metas.get(sid)
            batch.sessions[sid] = None if meta is None else meta.to_wire()
            if meta is not None:
                batch.stored[records.session_key(sid)] = meta.to_wire()
        session = batch.sessions[sid]
        if mid is None:
            if change.type == "delete":
                batch.sessions[sid] = None
            elif session is None:
                batch.created.add(sid)
                batch.sessions[sid] = {"sessionId": sid, **(change.data or {})}
            else:
                batch.sessions[sid] = {**session, **(change.data or {})}
            return
        where = (sid, mid)
        body = batch.messages[where]
        if change.type == "delete":
            batch.messages[where] = None
            return
        if session is None:  # its session's own operation comes later: hold the message
            batch.created.add(sid)
            batch.sessions[sid] = {"sessionId": sid, "userId": self.user_id}
        batch.messages[where] = {**(body or {"id": mid}), **(change.data or {})}

    async def _read_messages(self, batch: _Batch, changes: list[Change]) -> None:
        """Every message the page names, as stored here: one read per session, not one
        per message (each is a round trip to DuckDB's worker in the browser)."""
        wanted: dict[str, dict[str, None]] = {}  # in the page's order: new records' order
        for change in changes:
            if change.message_id is not None:
                wanted.setdefault(change.session_id, {})[change.message_id] = None
        for sid, ids in wanted.items():
            found = await self.mirror.messages_by_id(sid, list(ids))
            for mid in ids:
                record, body = found.get(mid, (None, None))
                batch.records[(sid, mid)], batch.messages[(sid, mid)] = record, body
                if record is not None:
                    batch.stored[records.message_key(sid, record)] = body

    async def _write(self, batch: _Batch, book: Bookkeeping) -> None:
        """New records whole; records already here as merge patches of the fields that
        changed, so another tab's edit of another field in the meantime is kept."""
        sets: list[tuple[str, Any]] = []
        patches: list[tuple[str, Any]] = []
        removes: list[str] = []
        prefixes: list[str] = []
        new: dict[str, int] = {}
        for sid, body in batch.sessions.items():
            key = records.session_key(sid)
            existed = sid in self.view.metas
            if body is None:
                if existed:
                    removes.append(key)
                    prefixes.append(records.messages_prefix(sid))
                continue
            meta = self._valid(ChatSessionMeta, body, batch, f"session {sid!r}")
            if meta is not None and existed:
                _patch_or_not(patches, key, batch.stored[key], meta.to_wire())
            elif meta is not None and sid in batch.created:
                sets.append((key, meta.to_wire()))
        for (sid, mid), body in batch.messages.items():
            record = batch.records[(sid, mid)]
            if batch.sessions.get(sid) is None:
                continue  # the session is gone: its messages went with it
            if body is None:
                if record is not None:
                    removes.append(records.message_key(sid, record))
                continue
            item = self._valid(ChatHistoryItem, body, batch, f"message {mid!r}")
            if item is None:
                continue
            if record is not None:
                key = records.message_key(sid, record)
                _patch_or_not(patches, key, batch.stored[key], item.to_wire())
                continue
            [record] = self.writer.sequences.names(sid, new.get(sid, 0) + 1)[-1:]
            new[sid] = new.get(sid, 0) + 1
            sets.append((records.message_key(sid, record), item.to_wire()))
        number = await self.writer.write(
            sets=sets, removes=removes, prefixes=prefixes, patches=patches, bookkeeping=book
        )

        async def apply() -> None:
            for sid, count in new.items():
                self.writer.sequences.took(sid, count)
            written = [key for key, _ in sets + patches] + removes
            await self.catch_up.replay(written, prefixes)

        await self.writer.settle(number, apply)

    @staticmethod
    def _valid(model: Any, body: dict[str, Any], batch: _Batch, what: str) -> Any:
        """The record validated as one this library wrote (another device's copy of it
        did), or None with the reason kept."""
        try:
            return validate_or_raise(model, body, what, context=WRITTEN_HERE)
        except InvalidValueError as error:
            batch.skipped.append(str(error))
            return None


def _patch_or_not(
    patches: list[tuple[str, Any]], key: str, stored: dict[str, Any], merged: dict[str, Any]
) -> None:
    """A merge patch of the fields that differ from the stored record, if any do."""
    changed = {name: value for name, value in merged.items() if stored.get(name) != value}
    if changed:
        patches.append((key, changed))

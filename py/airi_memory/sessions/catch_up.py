"""Catching up with what other tabs (or anything else) committed: replay the journal
entries above this tab's position, or, when they do not bridge the gap, rebuild the
mirror from the records by difference. Both re-read current values, so doing it twice
changes nothing (docs/DESIGN-notes.md, "Catching up and rebuilding").
"""

import asyncio
import json
from collections.abc import Callable
from typing import Any

from ..models import ChatSessionMeta
from ..storage import Storage
from ..storage.values import loads
from . import records
from .journal import JOURNAL, JOURNAL_HEAD, Journal
from .queue import PersistQueue
from .reader import RecordReader, error_text
from .view import SessionView


def _same_json(body: str, stored: Any) -> bool:
    """Whether a mirror row's body holds the same JSON as a stored record."""
    try:
        text = stored.decode("utf-8") if isinstance(stored, bytes) else stored
        return loads(body) == (loads(text) if isinstance(text, str) else text)
    except ValueError:  # not JSON, or nested too deep: not the same
        return False


class CatchUp:
    def __init__(
        self,
        storage: Storage,
        reader: RecordReader,
        view: SessionView,
        journal: Journal,
        queue: PersistQueue,
        problems: dict[str, Any],
        counts: dict[str, int],
        write_listeners: list[Callable[[bool], None]],
    ) -> None:
        self.storage = storage
        self.reader = reader
        self.view = view
        self.mirror = view.mirror
        self.journal = journal
        self.queue = queue
        self.problems = problems
        self.counts = counts
        self.write_listeners = write_listeners  # told of other writers' changes too
        self._sync_waiting: asyncio.Future[dict[str, Any]] | None = None
        # Sessions other writers changed, seen by any catch-up, not yet reported by sync().
        self.unreported: set[str] = set()

    async def sync(self) -> dict[str, Any]:
        """Catch up with what other tabs (or anything else) committed. A broadcast or a
        poll asks for this; calls that arrive while one is waiting share it."""
        if self._sync_waiting is None:
            self._sync_waiting = asyncio.ensure_future(self.queue.run("sync", self._sync_now))
        return await asyncio.shield(self._sync_waiting)

    async def _sync_now(self) -> dict[str, Any]:
        self._sync_waiting = None  # a hint arriving from now on needs another pass
        try:
            report = await self.catch_up()
        except Exception as error:
            self.problems["sync"] = error_text(error)
            raise
        # Every entry up to the head is in the mirror now, one whose update failed too.
        self.problems["sync"] = self.problems["mirror"] = None
        # Catch-ups inside other tasks (a guarded write, retention) applied changes too.
        report["sessionIds"], self.unreported = sorted(self.unreported), set()
        return report

    async def ensure_session(self, session_id: str) -> ChatSessionMeta:
        """The session; looked for in the store first when this tab has not seen it (the
        tab that created it may have written a moment ago), NotFoundError if not there."""
        if isinstance(session_id, str) and session_id not in self.view.metas:
            await self.queue.run("catchUp", self.catch_up)
        return self.view.require(session_id)

    async def session_in_queue(self, session_id: str) -> ChatSessionMeta:
        """``ensure_session`` for a task already inside the write queue."""
        if isinstance(session_id, str) and session_id not in self.view.metas:
            await self.catch_up()
        return self.view.require(session_id)

    async def catch_up(self) -> dict[str, Any]:
        """Apply the journal entries above our position, read in one transaction with the
        head; when they do not bridge the gap (pruned, damaged, cleared), rebuild. For a
        task inside the write queue (``sync`` queues it)."""
        position = self.journal.position
        head, entries = await self.storage.read_log(JOURNAL, JOURNAL_HEAD, position)
        self.journal.pruned_seen = None if head is None else head["pruned"]
        last = 0 if head is None else head["last"]
        numbers = [number for number, _ in entries]
        bridged = (
            last >= position
            and numbers == list(range(position + 1, last + 1))
            and (head is None or head["pruned"] <= position)
        )
        if not bridged:
            return await self.rebuild_from_records()
        self.counts["catchUps"] += 1
        report = await self._replay([entry for n, entry in entries if n not in self.journal.ahead])
        self.journal.reached(last)
        return report

    async def replay(self, keys: list[str], prefixes: list[str]) -> dict[str, Any]:
        """Reflect records this tab just wrote without knowing their rows (a pulled page):
        read back as another tab's write would be."""
        return await self._replay([{"keys": keys, "prefixes": prefixes}])

    async def _replay(self, entries: list[Any]) -> dict[str, Any]:
        """Bring the mirror up to date with journal entries: re-read every record they
        name and put its current state in DuckDB (idempotent: values, not deltas)."""
        keys: set[str] = set()
        prefixes: set[str] = set()
        for entry in entries:
            if isinstance(entry, dict):
                keys.update(k for k in entry.get("keys", []) if isinstance(k, str))
                prefixes.update(p for p in entry.get("prefixes", []) if isinstance(p, str))
        touched: set[str] = set()
        for prefix in sorted(prefixes):
            sid = records.session_of_messages_prefix(prefix)
            if sid is not None:
                await self.view.forget([sid])
                touched.add(sid)
                # What is stored there now, written after that removal (by this tab too,
                # whose own entries are not replayed), comes back: values, not deltas.
                keys.add(records.session_key(sid))
                keys.update(await self.storage.get_keys(prefix))
        session_keys = sorted(k for k in keys if records.session_of_key(k) is not None)
        for found in await self.storage.get_items(session_keys) if session_keys else []:
            sid = records.session_of_key(found["key"])
            touched.add(sid)
            meta = None
            if found["value"] is not None:
                meta = self.reader.session_from_record(found["key"], found["value"])
            if meta is not None:
                self.view.put(meta)
            else:
                await self.view.forget([sid])
        await self._replay_messages(
            sorted(k for k in keys if k.startswith(records.MESSAGES + ":")), touched
        )
        self._changed(touched)
        return {"sessionIds": sorted(touched), "records": len(keys) + len(prefixes)}

    async def _replay_messages(self, keys: list[str], touched: set[str]) -> None:
        message_keys = []
        for key in keys:
            try:
                message_keys.append((key, *records.parse_message_key(key)))
            except ValueError as error:
                self.reader.quarantine(key, error)
        await self.mirror.delete_records([(sid, record) for _, sid, record, _ in message_keys])
        raw = await self.storage.get_items([k for k, *_ in message_keys]) if message_keys else []
        for (key, sid, _, seq), found in zip(message_keys, raw, strict=True):
            touched.add(sid)
            if found["value"] is None:
                continue
            text = found["value"]
            if isinstance(text, dict):
                text = json.dumps(text, ensure_ascii=False)
            row = self.reader.message_row(key, text)
            if row is not None:
                self.mirror.add_row(row)
                self.view.sequences.seen(sid, seq)

    async def rebuild_from_records(self) -> dict[str, Any]:
        """Make the mirror equal the durable records, by difference (rows that did not
        change keep their place, and their vectors): for a tab that fell too far behind."""
        self.counts["rebuilds"] += 1
        head = await self.reader.read_head()  # first: what commits after it, the log replays
        metas = await self.reader.read_sessions()
        found = await self.reader.read_messages()
        known = self.view.metas
        touched = set(known) ^ set(metas)
        touched |= {sid for sid, meta in metas.items() if known.get(sid) != meta}
        await self.view.forget(sorted(set(known) - set(metas)))
        for sid in touched & set(metas):
            self.view.put(metas[sid])
        durable: dict[tuple[str, str], tuple[str, Any]] = {}
        for key, text in found.items():
            try:
                sid, record, _ = records.parse_message_key(key)
            except ValueError as error:
                self.reader.quarantine(key, error)
                continue
            durable[(sid, record)] = (key, text)
        current = await self.mirror.stored_bodies()
        stale = [
            where
            for where, body in current.items()
            if where not in durable or not _same_json(body, durable[where][1])
        ]
        await self.mirror.delete_records(stale)
        for where, (key, text) in durable.items():
            if where not in current or where in stale:
                row = self.reader.message_row(key, text)
                if row is not None:
                    self.mirror.add_row(row)
                touched.add(where[0])
        touched |= {sid for sid, _ in stale}
        self.view.sequences.reset(await self.mirror.max_seqs())
        self.journal.restart(head["last"], head["pruned"])
        self._changed(touched, always=True)
        return {"sessionIds": sorted(touched), "records": len(found), "rebuilt": True}

    def _changed(self, session_ids: set[str], always: bool = False) -> None:
        """Sessions other writers changed: reported by the next sync, read afresh, and
        indexers told (deletes among them, perhaps)."""
        self.unreported |= session_ids
        for sid in session_ids:
            self.view.cache.invalidate(sid)
        if session_ids or always:
            for listener in self.write_listeners:
                listener(True)

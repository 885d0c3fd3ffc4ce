"""``SessionStore``: the seed's session store, durable per message.

Every write goes through one ``PersistQueue`` and is one storage batch: a message record
and its session's ``updatedAt`` commit in the same IndexedDB transaction, so the session
list and the messages agree after a crash at any point. Session fields change by merge
patches applied inside that transaction, so two tabs editing different fields never
undo each other. Only after the commit is the DuckDB mirror fed and the cache
invalidated, and only then does the caller's promise resolve: a resolved ``addMessage``
is on disk.
"""

import asyncio
import json
import secrets
import time
from collections.abc import Callable
from typing import Any

from ..errors import InvalidValueError, NotFoundError
from ..models import (
    CacheConfig,
    ChatHistoryItem,
    ChatSessionMeta,
    now_ms,
    validate_or_raise,
)
from ..storage import Storage
from . import records
from .cache import MessageCache
from .journal import JOURNAL, SNAPSHOT, Journal, snapshot_key
from .mirror import SNAPSHOT_TABLES, SessionMirror, session_row, stored_message_row
from .queue import PersistQueue

SNAPSHOT_AFTER = 2000  # records changed since the last snapshot before a new one is taken

_SESSION_OPTIONS = {"title", "characterId", "userId", "tags", "pinned", "systemPrompt"}
_LIST_OPTIONS = {"limit", "offset", "userId", "characterId", "archived", "pinned", "tags"}


def _options(raw: Any, allowed: set[str], what: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidValueError(f"{what} options must be an object")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidValueError(f"unknown {what} option {unknown[0]!r}; allowed: {sorted(allowed)}")
    return raw


def _count(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidValueError(f"{what} must be a non-negative integer")
    return value


class SessionStore:
    def __init__(
        self,
        storage: Storage,
        mirror: SessionMirror,
        user_id: str,
        cache: MessageCache,
        clock: Callable[[], int] = now_ms,
        publish: Callable[[str], None] | None = None,
    ) -> None:
        self.storage = storage
        self.publish = publish  # tells other tabs a journal record to apply
        # Told of every write (indexers), and whether it may have deleted messages.
        self.write_listeners: list[Callable[[bool], None]] = []
        self.mirror = mirror
        self.user_id = user_id
        self.cache = cache
        self.clock = clock
        self.queue = PersistQueue()
        self.writer = secrets.token_hex(4)  # this open system's mark on the records it adds
        self.journal = Journal(self.writer)
        self.snapshot_after = SNAPSHOT_AFTER
        self._metas: dict[str, ChatSessionMeta] = {}
        self._next_seq: dict[str, int] = {}
        self._background: set[Any] = set()
        self.last_journal_key: str | None = None
        self.load_timings: dict[str, Any] = {}  # start-up breakdown, in ms

    @classmethod
    async def open(
        cls,
        storage: Storage,
        mirror: SessionMirror,
        user_id: str,
        cache_config: CacheConfig | None = None,
        clock: Callable[[], int] = now_ms,
        publish: Callable[[str], None] | None = None,
    ) -> "SessionStore":
        cache = MessageCache(cache_config or CacheConfig())
        store = cls(storage, mirror, user_id, cache, clock, publish)
        await mirror.create()
        await store._load()
        return store

    async def _load(self) -> None:
        """Fill DuckDB: from the snapshot plus the journal when there is one (fast), else
        from every record (two range reads, two columnar inserts), then take a snapshot.

        Records were validated when written; here they are only read, not re-validated.
        """
        started = time.perf_counter()
        lap = started

        def mark(name: str) -> None:
            nonlocal lap
            now = time.perf_counter()
            self.load_timings[name] = round((now - lap) * 1000, 1)
            lap = now

        for _, value in await self.storage.get_all(records.SESSIONS):
            if isinstance(value, dict):
                meta = ChatSessionMeta.model_validate(value)
                self._metas[meta.session_id] = meta
        mark("readSessions")
        await self.mirror.load([session_row(m) for m in self._metas.values()], [])
        mark("loadSessions")
        snapshots = [
            await self.storage.get_item_raw_native(snapshot_key(t)) for t in SNAPSHOT_TABLES
        ]
        mark("readSnapshot")
        restored = all(data is not None and len(data) for data in snapshots)
        if restored:
            try:
                for table, data in zip(SNAPSHOT_TABLES, snapshots, strict=True):
                    await self.mirror.sql.import_table(table, data)
                await self.mirror.resume_numbering()
                mark("importSnapshot")
                await self._replay(await self.storage.get_all(JOURNAL))
                mark("replayJournal")
            except Exception as error:  # a damaged snapshot costs time, never data
                self.load_timings["snapshotFailed"] = f"{type(error).__name__}: {error}"[:200]
                await self.mirror.flush()
                for table in SNAPSHOT_TABLES:
                    await self.mirror.sql.execute(f"DELETE FROM {table}")
                self.journal.applied.clear()
                restored = False
        if not restored:
            rows = []
            for key, text in await self.storage.get_all(records.MESSAGES, raw=True):
                session_id, record, _ = records.parse_message_key(key)
                if isinstance(text, bytes):  # a driver that keeps bytes (files)
                    text = text.decode("utf-8")
                rows.append(stored_message_row(session_id, record, text))
            mark("readMessages")
            await self.mirror.load([], rows)
            mark("loadMessages")
            self.journal.applied.update(k for k in await self.storage.get_keys(JOURNAL))
            if rows:
                self._in_background(self.snapshot)
        self._next_seq = {sid: top + 1 for sid, top in (await self.mirror.max_seqs()).items()}
        mark("sequences")
        self.load_timings["total"] = round((time.perf_counter() - started) * 1000, 1)

    def _in_background(self, job: Callable[[], Any]) -> None:
        """Run ``job`` after the current call returns; keep a reference until it ends."""
        task = asyncio.get_running_loop().create_task(job())
        self._background.add(task)
        task.add_done_callback(self._background.discard)

    async def snapshot(self) -> dict[str, Any]:
        """Save the message tables as bytes and drop the journal records they cover."""

        async def task() -> dict[str, Any]:
            await self._replay(await self.storage.get_all(JOURNAL), skip_applied=True)
            await self.mirror.cluster_terms()
            tables = [
                (snapshot_key(t), await self.mirror.sql.export_table(t)) for t in SNAPSHOT_TABLES
            ]
            covered = sorted(self.journal.applied)
            await self.storage.write_batch(
                raw_sets=tables, removes=covered, remove_prefixes=[SNAPSHOT]
            )
            self.journal.applied.clear()
            self.journal.keys_since_snapshot = 0
            size = sum(len(data) for _, data in tables)
            return {"bytes": size, "journalRecordsCovered": len(covered)}

        return await self.queue.run("snapshot", task)

    async def _replay(
        self, entries: list[tuple[str, Any]], skip_applied: bool = False
    ) -> dict[str, Any]:
        """Bring the mirror up to date with journal records (other tabs', or since the
        snapshot): re-read every record they name and put its current state in DuckDB."""
        if skip_applied:
            entries = [(k, v) for k, v in entries if k not in self.journal.applied]
        keys: set[str] = set()
        prefixes: set[str] = set()
        for key, entry in entries:
            if isinstance(entry, dict):
                keys.update(entry.get("keys", []))
                prefixes.update(entry.get("prefixes", []))
            self.journal.applied.add(key)
        touched: set[str] = set()
        for prefix in sorted(prefixes):
            sid = prefix.rsplit(":", 1)[1]
            await self.mirror.delete_sessions([sid])
            touched.add(sid)
        session_keys = sorted(k for k in keys if k.startswith(records.SESSIONS + ":"))
        for found in await self.storage.get_items(session_keys) if session_keys else []:
            sid = found["key"].rsplit(":", 1)[1]
            touched.add(sid)
            if isinstance(found["value"], dict):
                self._metas[sid] = ChatSessionMeta.model_validate(found["value"])
                self.mirror.put_session(self._metas[sid])
            else:
                self._metas.pop(sid, None)
                await self.mirror.delete_sessions([sid])
        message_keys = sorted(k for k in keys if k.startswith(records.MESSAGES + ":"))
        parsed = [records.parse_message_key(k) for k in message_keys]
        await self.mirror.delete_records([(sid, record) for sid, record, _ in parsed])
        values = await self.storage.get_items(message_keys) if message_keys else []
        for (sid, record, seq), found in zip(parsed, values, strict=True):
            touched.add(sid)
            if isinstance(found["value"], dict):
                text = json.dumps(found["value"], ensure_ascii=False)
                self.mirror.add_stored_message(sid, record, text)
                self._next_seq[sid] = max(self._next_seq.get(sid, 0), seq + 1)
        for sid in touched:
            self.cache.invalidate(sid)
        if touched:  # another tab's writes: deletes among them, perhaps
            for listener in self.write_listeners:
                listener(True)
        return {"sessionIds": sorted(touched), "records": len(keys)}

    async def sync(self, journal_keys: list[str] | None = None) -> dict[str, Any]:
        """Apply other tabs' writes: the named journal records, or every unapplied one."""

        async def task() -> dict[str, Any]:
            if journal_keys is None:
                entries = await self.storage.get_all(JOURNAL)
            else:
                found = await self.storage.get_items(journal_keys)
                entries = [(f["key"], f["value"]) for f in found if f["value"] is not None]
            return await self._replay(entries, skip_applied=True)

        return await self.queue.run("sync", task)

    async def _write(self, *, sets=(), removes=(), prefixes=(), patches=()) -> str:
        """One storage batch plus its journal record, in one transaction; returns the
        journal key (for other tabs), and schedules a snapshot when the journal is long."""
        touched = [k for k, _ in sets] + list(removes) + [k for k, _ in patches]
        journal_key, entry = self.journal.entry(touched, list(prefixes))
        await self.storage.write_batch([*sets, (journal_key, entry)], removes, prefixes, patches)
        self.last_journal_key = journal_key
        if self.publish:
            self.publish(journal_key)
        for listener in self.write_listeners:
            listener(bool(removes or prefixes))
        if self.journal.keys_since_snapshot >= self.snapshot_after and not self._background:
            self._in_background(self.snapshot)
        return journal_key

    # --- sessions -----------------------------------------------------------------
    def require_session(self, session_id: str) -> ChatSessionMeta:
        meta = self._metas.get(session_id) if isinstance(session_id, str) else None
        if meta is None:
            raise NotFoundError(f"no session {session_id!r}")
        return meta

    async def create_session(self, options: Any = None) -> dict[str, Any]:
        opts = _options(options, _SESSION_OPTIONS, "createSession")
        now = self.clock()
        meta = validate_or_raise(
            ChatSessionMeta,
            {
                "title": opts.get("title", "New Conversation"),
                "characterId": opts.get("characterId", "default"),
                "userId": opts.get("userId", self.user_id),
                "tags": opts.get("tags", []),
                "pinned": opts.get("pinned", False),
                "createdAt": now,
                "updatedAt": now,
            },
        )
        first = []
        if opts.get("systemPrompt") is not None:
            first.append(
                validate_or_raise(
                    ChatHistoryItem,
                    {"role": "system", "content": opts["systemPrompt"], "createdAt": now},
                    "systemPrompt",
                )
            )
        await self.queue.run("createSession", lambda: self._write_session(meta, first))
        return meta.to_wire()

    async def _write_session(self, meta: ChatSessionMeta, messages: list[ChatHistoryItem]) -> None:
        sid = meta.session_id
        named = [(records.record_name(seq, self.writer), m) for seq, m in enumerate(messages)]
        sets = [(records.session_key(sid), meta.to_wire())]
        sets += [(records.message_key(sid, record), m.to_wire()) for record, m in named]
        await self._write(sets=sets)
        self._metas[sid] = meta
        self._next_seq[sid] = len(messages)
        self.mirror.put_session(meta)
        for record, message in named:
            self.mirror.add_message(sid, record, message)
        self.cache.invalidate(sid)

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        meta = self._metas.get(session_id) if isinstance(session_id, str) else None
        return meta.to_wire() if meta else None

    async def list_sessions(self, options: Any = None) -> list[dict[str, Any]]:
        """Newest ``updatedAt`` first, filtered; answered from the session metadata held in
        memory (a few thousand at most), which every write and every sync keeps current.
        The same rows are in DuckDB's ``chat_sessions`` for SQL and analytics."""
        opts = _options(options, _LIST_OPTIONS, "listSessions")
        tags = opts.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidValueError("listSessions tags must be a list of strings")
        limit = _count(opts.get("limit", 20), "listSessions limit")
        offset = _count(opts.get("offset", 0), "listSessions offset")
        wanted = {
            "user_id": opts.get("userId", self.user_id),
            "character_id": opts.get("characterId"),
            "archived": opts.get("archived"),
            "pinned": opts.get("pinned"),
        }
        found = [
            meta
            for meta in self._newest_first()
            if all(v is None or getattr(meta, k) == v for k, v in wanted.items())
            and set(tags) <= set(meta.tags)
        ]
        return [meta.to_wire() for meta in found[offset : offset + limit]]

    def has_other_users(self) -> bool:
        """Whether any stored session belongs to someone else (searches must then filter)."""
        return any(meta.user_id != self.user_id for meta in self._metas.values())

    def meta(self, session_id: str) -> ChatSessionMeta | None:
        return self._metas.get(session_id)

    def own_sessions(self) -> list[ChatSessionMeta]:
        """This user's sessions, newest ``updatedAt`` first."""
        return [m for m in self._newest_first() if m.user_id == self.user_id]

    def _newest_first(self) -> list[ChatSessionMeta]:
        return sorted(
            self._metas.values(), key=lambda m: (-m.updated_at, -m.created_at, m.session_id)
        )

    async def get_all_sessions(self) -> list[dict[str, Any]]:
        return [m.to_wire() for m in self.own_sessions()]

    async def _patch_session(self, session_id: str, label: str, **changes: Any) -> dict[str, Any]:
        """Change some fields: validated here, merged into the stored record there."""
        self.require_session(session_id)

        async def task() -> dict[str, Any]:
            current = self.require_session(session_id)
            updated = validate_or_raise(ChatSessionMeta, {**current.to_wire(), **changes})
            patch = {k: v for k, v in updated.to_wire().items() if k in changes}
            await self._write(patches=[(records.session_key(session_id), patch)])
            self._metas[session_id] = updated
            self.mirror.put_session(updated)
            return updated.to_wire()

        return await self.queue.run(label, task)

    async def rename_session(self, session_id: str, title: str) -> dict[str, Any]:
        return await self._patch_session(
            session_id, "renameSession", title=title, updatedAt=self.clock()
        )

    async def pin_session(self, session_id: str, pinned: bool = True) -> dict[str, Any]:
        return await self._patch_session(session_id, "pinSession", pinned=bool(pinned))

    async def tag_session(self, session_id: str, tags: list[str]) -> dict[str, Any]:
        return await self._patch_session(session_id, "tagSession", tags=tags)

    async def archive_session(self, session_id: str) -> dict[str, Any]:
        return await self._patch_session(session_id, "archiveSession", archived=True)

    async def unarchive_session(self, session_id: str) -> dict[str, Any]:
        return await self._patch_session(session_id, "unarchiveSession", archived=False)

    async def delete_session(self, session_id: str) -> bool:
        self.require_session(session_id)
        await self.queue.run("deleteSession", lambda: self._delete_sessions([session_id]))
        return True

    async def _delete_sessions(self, session_ids: list[str]) -> None:
        """One transaction: every named session's meta and message records go together."""
        if not session_ids:
            return
        await self._write(
            removes=[records.session_key(sid) for sid in session_ids],
            prefixes=[records.messages_prefix(sid) for sid in session_ids],
        )
        for sid in session_ids:
            self._metas.pop(sid, None)
            self._next_seq.pop(sid, None)
            self.cache.invalidate(sid)
        await self.mirror.delete_sessions(session_ids)

    async def archive_and_delete(self, archive: list[str], delete: list[str], label: str) -> None:
        """Archive some sessions and delete others in ONE transaction (retention touches
        thousands); archiving is a merge patch, so another tab's edits survive it."""

        async def task() -> None:
            doomed = [sid for sid in delete if sid in self._metas]
            spared = self._metas.keys() - set(doomed)
            archived = {
                sid: self._metas[sid].model_copy(update={"archived": True})
                for sid in archive
                if sid in spared
            }
            if not archived and not doomed:
                return
            patch = {"archived": True}  # one object: encoded once for every key
            await self._write(
                patches=[(records.session_key(sid), patch) for sid in archived],
                removes=[records.session_key(sid) for sid in doomed],
                prefixes=[records.messages_prefix(sid) for sid in doomed],
            )
            for sid, meta in archived.items():
                self._metas[sid] = meta
                self.mirror.put_session(meta)
            for sid in doomed:
                self._metas.pop(sid, None)
                self._next_seq.pop(sid, None)
                self.cache.invalidate(sid)
            if doomed:
                await self.mirror.delete_sessions(doomed)

        await self.queue.run(label, task)

    async def delete_old_sessions(self, options: Any) -> dict[str, Any]:
        """Delete sessions not updated for ``olderThan`` ms; pinned sessions are kept."""
        opts = _options(options, {"olderThan"}, "deleteOldSessions")
        older_than = _count(opts.get("olderThan"), "deleteOldSessions olderThan (ms)")
        cutoff = self.clock() - older_than
        ids = [
            m.session_id
            for m in reversed(self._newest_first())
            if m.user_id == self.user_id and m.updated_at < cutoff and not m.pinned
        ]
        await self.queue.run("deleteOldSessions", lambda: self._delete_sessions(ids))
        return {"deleted": ids}

    # --- active session -----------------------------------------------------------
    async def get_active_session_id(self, character_id: str = "default") -> str | None:
        value = await self.storage.get_item(records.active_key(self.user_id, character_id))
        return value if isinstance(value, str) else None

    async def set_active_session_id(self, session_id: str | None) -> str | None:
        if session_id is None:
            return None
        key = records.active_key(self.user_id, self.require_session(session_id).character_id)
        await self.queue.run(
            "setActiveSessionId", lambda: self.storage.write_batch([(key, json.dumps(session_id))])
        )
        return session_id

    # --- messages -----------------------------------------------------------------
    async def add_message(self, session_id: str, message: Any) -> dict[str, Any]:
        item = validate_or_raise(ChatHistoryItem, message, "message")
        self.require_session(session_id)

        async def task() -> dict[str, Any]:
            meta = self.require_session(session_id)
            seq = self._next_seq.get(session_id, 0)
            record = records.record_name(seq, self.writer)
            now = max(self.clock(), meta.updated_at)
            await self._write(
                sets=[(records.message_key(session_id, record), item.to_wire())],
                patches=[(records.session_key(session_id), {"updatedAt": now})],
            )
            self._next_seq[session_id] = seq + 1
            touched = meta.model_copy(update={"updated_at": now})
            self._metas[session_id] = touched
            self.mirror.add_message(session_id, record, item)
            self.mirror.put_session(touched)
            self.cache.append(session_id, item.to_wire())
            return item.to_wire()

        return await self.queue.run("addMessage", task)

    async def put_summary(
        self, session_id: str, summary: ChatHistoryItem, replaces: str | None
    ) -> dict[str, Any]:
        """Add a summary message and drop the one it supersedes, in one transaction. The
        session's ``updatedAt`` is left alone: summarising is not activity."""

        async def task() -> dict[str, Any]:
            self.require_session(session_id)
            seq = self._next_seq.get(session_id, 0)
            record = records.record_name(seq, self.writer)
            old = await self.mirror.records_of(session_id, [replaces] if replaces else [])
            await self._write(
                sets=[(records.message_key(session_id, record), summary.to_wire())],
                removes=[records.message_key(session_id, r) for r in old],
            )
            self._next_seq[session_id] = seq + 1
            if old:
                await self.mirror.delete_records([(session_id, r) for r in old])
            self.mirror.add_message(session_id, record, summary)
            self.cache.invalidate(session_id)
            return summary.to_wire()

        return await self.queue.run("summarize", task)

    async def _message(self, session_id: str, message_id: str) -> tuple[str, dict[str, Any]]:
        found = await self.mirror.message(session_id, message_id)
        if found is None:
            raise NotFoundError(f"no message {message_id!r} in session {session_id!r}")
        return found

    async def update_message(self, session_id: str, message_id: str, patch: Any) -> dict[str, Any]:
        if not isinstance(patch, dict):
            raise InvalidValueError("updateMessage patch must be an object")
        if patch.get("id", message_id) != message_id:
            raise InvalidValueError("updateMessage cannot change a message's id")

        async def task() -> dict[str, Any]:
            record, body = await self._message(session_id, message_id)
            item = validate_or_raise(ChatHistoryItem, {**body, **patch}, "patch")
            key = records.message_key(session_id, record)
            await self._write(sets=[(key, item.to_wire())])
            await self.mirror.replace_message(session_id, record, item)
            self.cache.invalidate(session_id)
            return item.to_wire()

        return await self.queue.run("updateMessage", task)

    async def delete_message(self, session_id: str, message_id: str) -> bool:
        async def task() -> bool:
            record, _ = await self._message(session_id, message_id)
            await self._write(removes=[records.message_key(session_id, record)])
            await self.mirror.delete_message(session_id, record)
            self.cache.invalidate(session_id)
            return True

        return await self.queue.run("deleteMessage", task)

    async def delete_messages(self, session_id: str, message_ids: list[str], label: str) -> int:
        """Delete many messages of a session in one transaction; returns how many."""

        async def task() -> int:
            found = await self.mirror.records_of(session_id, message_ids)
            if not found:
                return 0
            await self._write(removes=[records.message_key(session_id, r) for r in found])
            await self.mirror.delete_records([(session_id, r) for r in found])
            self.cache.invalidate(session_id)
            return len(found)

        return await self.queue.run(label, task)

    async def load_session_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order; held in the cache only once asked for."""
        cached = self.cache.get(session_id)
        if cached is not None:
            return cached
        self.require_session(session_id)
        generation = self.cache.generation(session_id)
        messages = await self.mirror.messages(session_id)
        self.cache.put(session_id, messages, generation)
        return messages

    async def get_session_messages(self, session_id: str) -> list[dict[str, Any]]:
        return await self.load_session_messages(session_id)

    async def messages_page(self, session_id: str, offset: int, limit: int) -> list[dict[str, Any]]:
        """One batch for ``streamMessages``: ``limit`` messages from ``offset``."""
        if not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidValueError("batchSize must be an integer from 1 to 10000")
        return await self.mirror.messages(session_id, _count(offset, "offset"), limit)

    async def latest_messages(self, session_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The last ``limit`` messages: from the cache when the session is there, else one
        DuckDB query (which does not fill the cache: a window is not the whole session)."""
        limit = _count(limit, "limit")
        cached = self.cache.get(session_id)
        if cached is not None:
            return cached[-limit:] if limit else []
        return await self.mirror.latest_messages(session_id, limit)

    async def persist_session_messages(self, session_id: str) -> dict[str, Any]:
        """Messages are written as they arrive; this waits until every queued write is done."""
        await self.queue.drain()
        return {"sessionId": session_id, "messages": await self.mirror.message_count(session_id)}

    async def fork_session(self, options: Any) -> dict[str, Any]:
        opts = _options(options, {"fromSessionId", "atIndex", "reason", "title"}, "forkSession")
        parent_id = opts.get("fromSessionId")
        at_index = opts.get("atIndex")
        if not isinstance(parent_id, str):
            raise InvalidValueError("forkSession fromSessionId must be a session id")
        parent = self.require_session(parent_id)
        messages = await self.load_session_messages(parent_id)
        if not isinstance(at_index, int) or isinstance(at_index, bool):
            raise InvalidValueError("forkSession atIndex must be an integer")
        if not 0 <= at_index <= len(messages):
            raise InvalidValueError(
                f"forkSession atIndex {at_index} is outside 0..{len(messages)} for {parent_id!r}"
            )
        now = self.clock()
        fork = validate_or_raise(
            ChatSessionMeta,
            {
                "title": opts.get("title", f"{parent.title} (fork)"),
                "characterId": parent.character_id,
                "userId": parent.user_id,
                "tags": parent.tags,
                "createdAt": now,
                "updatedAt": now,
                "parentSessionId": parent_id,
                "forkIndex": at_index,
                "forkReason": opts.get("reason"),
            },
        )
        copies = [ChatHistoryItem.model_validate(m) for m in messages[:at_index]]
        await self.queue.run("forkSession", lambda: self._write_session(fork, copies))
        return fork.to_wire()

    async def import_batch(
        self, sessions: list[tuple[ChatSessionMeta, list[ChatHistoryItem]]]
    ) -> int:
        """Write whole sessions in ONE storage batch (all or nothing); returns messages."""
        sets, session_rows, message_rows = [], [], []
        for meta, messages in sessions:
            sid = meta.session_id
            sets.append((records.session_key(sid), meta.to_wire()))
            session_rows.append(session_row(meta))
            for seq, message in enumerate(messages):
                record = records.record_name(seq, self.writer)
                text = json.dumps(message.to_wire(), ensure_ascii=False)
                sets.append((records.message_key(sid, record), text))
                message_rows.append(stored_message_row(sid, record, text))
        await self._write(sets=sets)
        for meta, messages in sessions:
            self._metas[meta.session_id] = meta
            self._next_seq[meta.session_id] = len(messages)
        await self.mirror.load(session_rows, message_rows)
        return len(message_rows)

    def stats(self) -> dict[str, Any]:
        return {
            "cache": self.cache.stats(),
            "queue": self.queue.stats(),
            "journalSinceSnapshot": len(self.journal.applied),
            "loadMs": self.load_timings,
        }

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
import random
import secrets
import time
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

from pydantic import ValidationError

from ..errors import InvalidValueError, NotFoundError, WriteConflictError
from ..models import (
    WRITTEN_HERE,
    CacheConfig,
    ChatHistoryItem,
    ChatSessionMeta,
    now_ms,
    validate_or_raise,
)
from ..storage import Storage
from ..storage.driver import Guard, LogAppend, log_number, parse_head
from ..storage.values import loads
from . import records
from .cache import MessageCache
from .journal import JOURNAL, JOURNAL_HEAD, SNAPSHOT, SNAPSHOT_COVERS, Journal, snapshot_key
from .mirror import MessageRow, SessionMirror, session_row
from .queue import PersistQueue

SNAPSHOT_AFTER = 2000  # records changed since the last snapshot before a new one is taken
MAX_CONFLICTS = 40  # guarded write attempts before giving up (each one follows a catch-up)
CONFLICT_BACKOFF_MS = 2.0  # first wait after a conflict; doubled, randomised, capped at 128
SNAPSHOT_BACKOFF_MS = (1_000, 600_000)  # after a failed snapshot: first and longest wait

_SESSION_OPTIONS = {"title", "characterId", "userId", "tags", "pinned", "systemPrompt"}
_LIST_OPTIONS = {"limit", "offset", "userId", "characterId", "archived", "pinned", "tags"}
T = TypeVar("T")


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


def _same_json(body: str, stored: Any) -> bool:
    """Whether a mirror row's body holds the same JSON as a stored record."""
    try:
        text = stored.decode("utf-8") if isinstance(stored, bytes) else stored
        return loads(body) == (loads(text) if isinstance(text, str) else text)
    except ValueError:  # not JSON, or nested too deep: not the same
        return False


def _error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:300]


class SessionStore:
    def __init__(
        self,
        storage: Storage,
        mirror: SessionMirror,
        user_id: str,
        cache: MessageCache,
        clock: Callable[[], int] = now_ms,
        publish: Callable[[int], None] | None = None,
    ) -> None:
        self.storage = storage
        self.publish = publish  # hints other tabs that the journal moved (to this number)
        # Told of every write (indexers), and whether it may have deleted messages.
        self.write_listeners: list[Callable[[bool], None]] = []
        self.mirror = mirror
        mirror.on_refused = self._refused_by_mirror
        self.user_id = user_id
        self.cache = cache
        self.clock = clock
        self.queue = PersistQueue()
        self.writer = secrets.token_hex(4)  # this open system's mark on the records it adds
        self.journal = Journal()
        self.snapshot_after = SNAPSHOT_AFTER
        self._metas: dict[str, ChatSessionMeta] = {}
        self._next_seq: dict[str, int] = {}
        self._background: set[Any] = set()
        self._sync_waiting: asyncio.Future[dict[str, Any]] | None = None
        # Sessions other writers changed, seen by any catch-up, not yet reported by sync().
        self._unreported: set[str] = set()
        self._snapshot_running = False
        self._snapshot_backoff_ms = 0
        self._snapshot_retry_at = 0.0  # time.monotonic() before which none is started
        # Records that could not be read (damaged, or written by something else): kept
        # where they are, never deleted, left out of the mirror and reported.
        self.quarantined: dict[str, str] = {}
        # Told of each record newly quarantined after start-up (the page's event).
        self.on_quarantine: Callable[[str, str], None] | None = None
        self.problems: dict[str, Any] = {"snapshot": None, "sync": None, "mirror": None}
        self.counts = {
            "snapshots": 0, "snapshotFailures": 0, "catchUps": 0, "rebuilds": 0, "conflicts": 0,
        }  # fmt: skip
        self.load_timings: dict[str, Any] = {}  # start-up breakdown, in ms

    @classmethod
    async def open(
        cls,
        storage: Storage,
        mirror: SessionMirror,
        user_id: str,
        cache_config: CacheConfig | None = None,
        clock: Callable[[], int] = now_ms,
        publish: Callable[[int], None] | None = None,
    ) -> "SessionStore":
        cache = MessageCache(cache_config or CacheConfig())
        store = cls(storage, mirror, user_id, cache, clock, publish)
        await mirror.create()
        await store._load()
        return store

    # --- reading the durable records ----------------------------------------------
    def _quarantine(self, key: str, error: BaseException | str) -> None:
        reason = error if isinstance(error, str) else _error_text(error)
        if self.quarantined.get(key) != reason and self.on_quarantine is not None:
            self.on_quarantine(key, reason)
        self.quarantined[key] = reason

    def _refused_by_mirror(self, session_id: str, record: str | None, error: BaseException) -> None:
        """A row DuckDB would not take: its record stays in the store, untouched, out of
        the mirror, and is reported like a record that cannot be read."""
        key = records.session_key(session_id)
        if record is not None:
            key = records.message_key(session_id, record)
        self._quarantine(key, f"DuckDB refused its row: {_error_text(error)}")

    def _session_from_record(self, key: str, value: Any) -> ChatSessionMeta | None:
        """The session a stored record holds, or None (quarantined) when it cannot be read."""
        try:
            meta = ChatSessionMeta.model_validate(value)
        except ValidationError as error:
            self._quarantine(key, f"not a session: {error.errors()[0]['msg']}")
            return None
        if records.session_key(meta.session_id) != key:
            self._quarantine(key, f"holds session {meta.session_id!r}, not the one its key names")
            return None
        self.quarantined.pop(key, None)
        return meta

    async def _read_sessions(self) -> dict[str, ChatSessionMeta]:
        metas = {}
        for key, value in await self.storage.get_all(records.SESSIONS):
            meta = self._session_from_record(key, value)
            if meta is not None:
                metas[meta.session_id] = meta
        return metas

    def _message_row(self, key: str, text: Any) -> MessageRow | None:
        """A mirror row from a stored message record, or None (quarantined)."""
        try:
            session_id, record, _ = records.parse_message_key(key)
            if isinstance(text, bytes):  # a driver that keeps bytes (files)
                text = text.decode("utf-8")
            row = self.mirror.row(session_id, record, text)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            self._quarantine(key, error)
            return None
        self.quarantined.pop(key, None)
        return row

    async def _recheck_quarantined(self, keys: Any) -> None:
        """Quarantine again the message records a snapshot left out, if still unreadable
        (session records are all read at start-up anyway)."""
        for key in keys if isinstance(keys, list) else []:
            if isinstance(key, str) and records.session_of_key(key) is None:
                text = await self.storage.get_item_raw_native(key)
                if text is not None:
                    self._message_row(key, text)

    async def _read_messages(self) -> dict[str, Any]:
        return dict(await self.storage.get_all(records.MESSAGES, raw=True))

    async def _read_head(self) -> dict[str, int]:
        return parse_head(await self.storage.get_item(JOURNAL_HEAD)) or {"last": 0, "pruned": 0}

    # --- start-up -----------------------------------------------------------------
    async def _load(self) -> None:
        """Fill DuckDB: from the snapshot plus the journal after it when there is one
        (fast), else from every record (two range reads, two columnar inserts), then take
        a snapshot. A record that cannot be read is quarantined; start-up goes on.

        Records were validated when written; here they are only read, not re-validated.
        """
        started = time.perf_counter()
        lap = started

        def mark(name: str) -> None:
            nonlocal lap
            now = time.perf_counter()
            self.load_timings[name] = round((now - lap) * 1000, 1)
            lap = now

        # Order matters: whatever commits after a read, a later step replays. The snapshot
        # is read before the sessions (a session written after it has a journal number
        # above ``through``), the journal head before the sessions and messages.
        snapshots = [
            await self.storage.get_item_raw_native(snapshot_key(t))
            for t in self.mirror.saved_tables
        ]
        covers = await self.storage.get_item(SNAPSHOT_COVERS)
        mark("readSnapshot")
        through = covers.get("through") if isinstance(covers, dict) else None
        restored = isinstance(through, int) and all(d is not None and len(d) for d in snapshots)
        head = None if restored else await self._read_head()
        self._metas = await self._read_sessions()
        mark("readSessions")
        await self.mirror.load([session_row(m) for m in self._metas.values()], [])
        mark("loadSessions")
        if restored:
            await self._recheck_quarantined(covers.get("quarantined"))
            try:
                for table, data in zip(self.mirror.saved_tables, snapshots, strict=True):
                    await self.mirror.sql.import_table(table, data)
                await self.mirror.resume_numbering()
                mark("importSnapshot")
                self.journal.position = through
                await self._catch_up()  # rebuilds from the records if the log cannot bridge
                mark("replayJournal")
            except Exception as error:  # a damaged snapshot costs time, never data
                self.load_timings["snapshotFailed"] = _error_text(error)[:200]
                await self.mirror.create()
                self.journal = Journal()
                head = await self._read_head()
                self._metas = await self._read_sessions()
                await self.mirror.load([session_row(m) for m in self._metas.values()], [])
                restored = False
        if not restored:
            assert head is not None
            found = await self._read_messages()
            mark("readMessages")
            rows = [row for key, text in found.items() if (row := self._message_row(key, text))]
            await self.mirror.load([], rows)
            mark("loadMessages")
            self.journal.reached(head["last"])
            self.journal.pruned_seen = head["pruned"] if head["last"] else None
            if rows:
                self._start_snapshot()
        self._next_seq = {sid: top + 1 for sid, top in (await self.mirror.max_seqs()).items()}
        mark("sequences")
        self._unreported.clear()  # the page reads everything after start-up anyway
        self.load_timings["total"] = round((time.perf_counter() - started) * 1000, 1)

    def _in_background(self, job: Callable[[], Any]) -> None:
        """Run ``job`` after the current call returns; keep a reference until it ends."""
        task = asyncio.get_running_loop().create_task(job())
        self._background.add(task)
        task.add_done_callback(self._background_done)

    def _background_done(self, task: "asyncio.Task[Any]") -> None:
        """Forget a finished background job; its failure is already in ``problems``
        (snapshot, sync), so it is only collected here, not raised into the void."""
        self._background.discard(task)
        if not task.cancelled():
            task.exception()

    # --- snapshots ----------------------------------------------------------------
    async def snapshot(self) -> dict[str, Any]:
        """Save the message tables as bytes, with the journal number they cover. When
        another tab pruned the journal meanwhile, catch up and take it again."""

        async def task() -> dict[str, Any]:
            try:
                report = await self._guarded(self._take_snapshot)
            except Exception as error:
                self.counts["snapshotFailures"] += 1
                self.problems["snapshot"] = _error_text(error)
                low, high = SNAPSHOT_BACKOFF_MS
                self._snapshot_backoff_ms = min(max(self._snapshot_backoff_ms * 2, low), high)
                self._snapshot_retry_at = time.monotonic() + self._snapshot_backoff_ms / 1000
                raise
            self.counts["snapshots"] += 1
            self.problems["snapshot"] = None
            self._snapshot_backoff_ms = 0
            return report

        return await self.queue.run("snapshot", task)

    async def _take_snapshot(self) -> dict[str, Any]:
        await self._catch_up()  # the tables then reflect exactly the journal up to here
        through = self.journal.position
        await self.mirror.before_snapshot()
        tables = [
            (snapshot_key(t), await self.mirror.sql.export_table(t))
            for t in self.mirror.saved_tables
        ]
        previous = await self.storage.get_item(SNAPSHOT_COVERS)
        covered_before = previous.get("through") if isinstance(previous, dict) else 0
        prune = min(covered_before if isinstance(covered_before, int) else 0, through)
        older_layout = [
            key for key in await self.storage.get_keys(JOURNAL) if log_number(key, JOURNAL) is None
        ]
        await self.storage.write_batch(
            sets=[
                (
                    SNAPSHOT_COVERS,
                    # Records left out of these tables: a start-up from them reports them
                    # again (it reads no message records of its own).
                    {
                        "through": through,
                        "at": self.clock(),
                        "quarantined": sorted(self.quarantined),
                    },
                )
            ],
            raw_sets=tables,
            removes=older_layout,
            remove_prefixes=[SNAPSHOT],
            # Nobody pruned since our catch-up: else entries this snapshot lacks are gone.
            guards=[Guard(JOURNAL_HEAD, "pruned", self.journal.pruned_seen)],
            log=LogAppend(JOURNAL, JOURNAL_HEAD, None, prune_through=prune),
        )
        self.journal.pruned_seen = max(prune, self.journal.pruned_seen or 0)
        self.journal.records_since_snapshot = 0
        size = sum(len(data) for _, data in tables)
        return {"bytes": size, "through": through, "prunedThrough": prune}

    def _start_snapshot(self) -> None:
        """A snapshot in the background, unless one runs or the last failed too recently."""
        if self._snapshot_running or time.monotonic() < self._snapshot_retry_at:
            return
        self._snapshot_running = True

        async def job() -> None:
            try:
                await self.snapshot()
            except Exception:  # recorded in problems["snapshot"]; retried after a pause
                pass
            finally:
                self._snapshot_running = False

        self._in_background(job)

    # --- catching up with the durable store ---------------------------------------
    async def sync(self) -> dict[str, Any]:
        """Catch up with what other tabs (or anything else) committed. A broadcast or a
        poll asks for this; calls that arrive while one is waiting share it."""
        if self._sync_waiting is None:
            self._sync_waiting = asyncio.ensure_future(self.queue.run("sync", self._sync_now))
        return await asyncio.shield(self._sync_waiting)

    async def _sync_now(self) -> dict[str, Any]:
        self._sync_waiting = None  # a hint arriving from now on needs another pass
        try:
            report = await self._catch_up()
        except Exception as error:
            self.problems["sync"] = _error_text(error)
            raise
        # Every entry up to the head is in the mirror now, one whose update failed too.
        self.problems["sync"] = self.problems["mirror"] = None
        # Catch-ups inside other tasks (a guarded write, retention) applied changes too.
        report["sessionIds"], self._unreported = sorted(self._unreported), set()
        return report

    async def catch_up(self) -> dict[str, Any]:
        """``sync`` for a task already inside the write queue (decisions on durable state)."""
        return await self._catch_up()

    async def _catch_up(self) -> dict[str, Any]:
        """Apply the journal entries above our position, read in one transaction with the
        head; when they do not bridge the gap (pruned, damaged, cleared), rebuild."""
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
            return await self._rebuild_from_records()
        self.counts["catchUps"] += 1
        report = await self._replay([entry for n, entry in entries if n not in self.journal.ahead])
        self.journal.reached(last)
        return report

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
                await self.mirror.delete_sessions([sid])
                touched.add(sid)
        session_keys = sorted(k for k in keys if records.session_of_key(k) is not None)
        for found in await self.storage.get_items(session_keys) if session_keys else []:
            sid = records.session_of_key(found["key"])
            touched.add(sid)
            meta = None
            if found["value"] is not None:
                meta = self._session_from_record(found["key"], found["value"])
            if meta is not None:
                self._metas[sid] = meta
                self.mirror.put_session(meta)
            else:
                self._metas.pop(sid, None)
                await self.mirror.delete_sessions([sid])
        message_keys = []
        for key in sorted(k for k in keys if k.startswith(records.MESSAGES + ":")):
            try:
                message_keys.append((key, *records.parse_message_key(key)))
            except ValueError as error:
                self._quarantine(key, error)
        await self.mirror.delete_records([(sid, record) for _, sid, record, _ in message_keys])
        raw = await self.storage.get_items([k for k, *_ in message_keys]) if message_keys else []
        for (key, sid, _, seq), found in zip(message_keys, raw, strict=True):
            touched.add(sid)
            if found["value"] is None:
                continue
            text = found["value"]
            if isinstance(text, dict):
                text = json.dumps(text, ensure_ascii=False)
            row = self._message_row(key, text)
            if row is not None:
                self.mirror.add_row(row)
                self._next_seq[sid] = max(self._next_seq.get(sid, 0), seq + 1)
        self._unreported |= touched
        for sid in touched:
            self.cache.invalidate(sid)
        if touched:  # another tab's writes: deletes among them, perhaps
            for listener in self.write_listeners:
                listener(True)
        return {"sessionIds": sorted(touched), "records": len(keys) + len(prefixes)}

    async def _rebuild_from_records(self) -> dict[str, Any]:
        """Make the mirror equal the durable records, by difference (rows that did not
        change keep their place, and their vectors): for a tab that fell too far behind."""
        self.counts["rebuilds"] += 1
        head = await self._read_head()  # first: what commits after it, the log replays
        metas = await self._read_sessions()
        found = await self._read_messages()
        touched = set(self._metas) ^ set(metas)
        touched |= {sid for sid, meta in metas.items() if self._metas.get(sid) != meta}
        gone = sorted(set(self._metas) - set(metas))
        self._metas = metas
        if gone:
            await self.mirror.delete_sessions(gone)
        for sid in touched - set(gone):
            self.mirror.put_session(metas[sid])
        durable: dict[tuple[str, str], tuple[str, Any]] = {}
        for key, text in found.items():
            try:
                sid, record, _ = records.parse_message_key(key)
            except ValueError as error:
                self._quarantine(key, error)
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
                row = self._message_row(key, text)
                if row is not None:
                    self.mirror.add_row(row)
                touched.add(where[0])
        touched |= {sid for sid, _ in stale}
        self._next_seq = {sid: top + 1 for sid, top in (await self.mirror.max_seqs()).items()}
        self.journal = Journal(position=head["last"], pruned_seen=head["pruned"])
        self._unreported |= touched
        for sid in touched:
            self.cache.invalidate(sid)
        for listener in self.write_listeners:
            listener(True)
        return {"sessionIds": sorted(touched), "records": len(found), "rebuilt": True}

    # --- the one write primitive --------------------------------------------------
    async def _write(self, *, sets=(), removes=(), prefixes=(), patches=(), guards=()) -> int:
        """One storage batch plus its journal entry, in one transaction; returns the
        entry's number. Schedules a snapshot when the journal has grown long."""
        touched = [k for k, _ in sets] + list(removes) + [k for k, _ in patches]
        log = self.journal.append(touched, list(prefixes))
        number = await self.storage.write_batch(
            [*sets], removes, prefixes, patches, guards=guards, log=log
        )
        assert number is not None
        if self.publish:
            self.publish(number)
        for listener in self.write_listeners:
            listener(bool(removes or prefixes))
        if self.journal.records_since_snapshot >= self.snapshot_after:
            self._start_snapshot()
        return number

    async def _settle(self, number: int, apply: Callable[[], Awaitable[None] | None]) -> None:
        """Reflect our committed write ``number`` in memory and in the mirror. The write is
        durable whatever happens here: if this fails, the entry stays unapplied and the
        next catch-up (started now) re-reads its records from the store."""
        try:
            pending = apply()
            if pending is not None:
                await pending
        except Exception as error:
            self.problems["mirror"] = _error_text(error)
            self._in_background(self.sync)
            return
        self.journal.applied(number)

    async def _guarded(self, attempt: Callable[[], Awaitable[T]]) -> T:
        """Run a write that guards what it decided on; when another tab changed that
        first, catch up from the store and decide again. Tabs that keep colliding back
        off for a random, growing while (as Ethernet does), so each gets its turn."""
        for tries in range(MAX_CONFLICTS - 1):
            try:
                return await attempt()
            except WriteConflictError:
                self.counts["conflicts"] += 1
                wait = random.uniform(0, min(CONFLICT_BACKOFF_MS * 2**tries, 128.0))
                await asyncio.sleep(wait / 1000)
                await self._catch_up()
        return await attempt()

    # --- sessions -----------------------------------------------------------------
    async def ensure_session(self, session_id: str) -> ChatSessionMeta:
        """The session; looked for in the store first when this tab has not seen it (the
        tab that created it may have written a moment ago), NotFoundError if not there."""
        if isinstance(session_id, str) and session_id not in self._metas:
            await self.queue.run("catchUp", self._catch_up)
        return self.require_session(session_id)

    async def _session_in_queue(self, session_id: str) -> ChatSessionMeta:
        """``ensure_session`` for a task already inside the write queue."""
        if isinstance(session_id, str) and session_id not in self._metas:
            await self._catch_up()
        return self.require_session(session_id)

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
        key = records.session_key(sid)
        sets = [(key, meta.to_wire())]
        sets += [(records.message_key(sid, record), m.to_wire()) for record, m in named]
        number = await self._write(sets=sets, guards=[Guard(key, "sessionId", None)])

        def apply() -> None:
            self._metas[sid] = meta
            self._next_seq[sid] = len(messages)
            self.mirror.put_session(meta)
            for record, message in named:
                self.mirror.add_message(sid, record, message)
            self.cache.invalidate(sid)

        await self._settle(number, apply)

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

    def session_ids(self) -> set[str]:
        """Every stored session's id, whoever it belongs to, and the ids of session
        records in quarantine (an import must not write over them)."""
        held = {records.session_of_key(key) for key in self.quarantined}
        return set(self._metas) | {sid for sid in held if sid is not None}

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
        await self.ensure_session(session_id)

        async def attempt() -> dict[str, Any]:
            current = await self._session_in_queue(session_id)
            fields = {k: v(current) if callable(v) else v for k, v in changes.items()}
            updated = validate_or_raise(ChatSessionMeta, {**current.to_wire(), **fields})
            patch = {k: v for k, v in updated.to_wire().items() if k in fields}
            key = records.session_key(session_id)
            number = await self._write(patches=[(key, patch)], guards=[Guard(key)])

            def apply() -> None:
                self._metas[session_id] = updated
                self.mirror.put_session(updated)

            await self._settle(number, apply)
            return updated.to_wire()

        return await self.queue.run(label, lambda: self._guarded(attempt))

    async def rename_session(self, session_id: str, title: str) -> dict[str, Any]:
        return await self._patch_session(
            session_id, "renameSession", title=title, updatedAt=self._next_updated_at
        )

    def _next_updated_at(self, meta: ChatSessionMeta) -> int:
        """A new ``updatedAt``: now, and always above the last one, because it is also
        the session's version: a write guarded on it fails if another tab wrote first."""
        return max(self.clock(), meta.updated_at + 1)

    async def pin_session(self, session_id: str, pinned: bool = True) -> dict[str, Any]:
        return await self._patch_session(session_id, "pinSession", pinned=bool(pinned))

    async def tag_session(self, session_id: str, tags: list[str]) -> dict[str, Any]:
        return await self._patch_session(session_id, "tagSession", tags=tags)

    async def archive_session(self, session_id: str) -> dict[str, Any]:
        return await self._patch_session(session_id, "archiveSession", archived=True)

    async def unarchive_session(self, session_id: str) -> dict[str, Any]:
        return await self._patch_session(session_id, "unarchiveSession", archived=False)

    async def delete_session(self, session_id: str) -> bool:
        await self.ensure_session(session_id)
        await self.queue.run("deleteSession", lambda: self._delete_sessions([session_id]))
        return True

    async def _delete_sessions(self, session_ids: list[str]) -> None:
        """One transaction: every named session's meta and message records go together."""
        if not session_ids:
            return
        number = await self._write(
            removes=[records.session_key(sid) for sid in session_ids],
            prefixes=[records.messages_prefix(sid) for sid in session_ids],
        )

        async def apply() -> None:
            for sid in session_ids:
                self._metas.pop(sid, None)
                self._next_seq.pop(sid, None)
                self.cache.invalidate(sid)
            await self.mirror.delete_sessions(session_ids)

        await self._settle(number, apply)

    async def archive_and_delete(
        self, decide: Callable[[], tuple[list[str], list[str]]], label: str
    ) -> tuple[list[str], list[str]]:
        """Archive some sessions and delete others in ONE transaction (retention touches
        thousands). ``decide`` names them; it runs inside the write queue after catching
        up with the store, and a deleted session must still be as old as it was then
        (guarded on its ``updatedAt``), so a message another tab just added to it saves
        it. Archiving is a merge patch, so another tab's edits survive it."""

        async def attempt() -> tuple[list[str], list[str]]:
            archive, delete = decide()
            doomed = [sid for sid in delete if sid in self._metas]
            spared = self._metas.keys() - set(doomed)
            archived = {
                sid: self._metas[sid].model_copy(update={"archived": True})
                for sid in archive
                if sid in spared
            }
            if not archived and not doomed:
                return archive, delete
            patch = {"archived": True}  # one object: encoded once for every key
            number = await self._write(
                patches=[(records.session_key(sid), patch) for sid in archived],
                removes=[records.session_key(sid) for sid in doomed],
                prefixes=[records.messages_prefix(sid) for sid in doomed],
                guards=[
                    Guard(records.session_key(sid), "updatedAt", self._metas[sid].updated_at)
                    for sid in doomed
                ],
            )

            async def apply() -> None:
                for sid, meta in archived.items():
                    self._metas[sid] = meta
                    self.mirror.put_session(meta)
                for sid in doomed:
                    self._metas.pop(sid, None)
                    self._next_seq.pop(sid, None)
                    self.cache.invalidate(sid)
                if doomed:
                    await self.mirror.delete_sessions(doomed)

            await self._settle(number, apply)
            return archive, delete

        async def task() -> tuple[list[str], list[str]]:
            await self._catch_up()  # decide on what the store holds now
            return await self._guarded(attempt)

        return await self.queue.run(label, task)

    async def delete_old_sessions(self, options: Any) -> dict[str, Any]:
        """Delete sessions not updated for ``olderThan`` ms; pinned sessions are kept."""
        opts = _options(options, {"olderThan"}, "deleteOldSessions")
        older_than = _count(opts.get("olderThan"), "deleteOldSessions olderThan (ms)")

        def decide() -> tuple[list[str], list[str]]:
            cutoff = self.clock() - older_than
            old = [
                m.session_id
                for m in reversed(self._newest_first())
                if m.user_id == self.user_id and m.updated_at < cutoff and not m.pinned
            ]
            return [], old

        _, deleted = await self.archive_and_delete(decide, "deleteOldSessions")
        return {"deleted": deleted}

    # --- active session -----------------------------------------------------------
    async def get_active_session_id(self, character_id: str = "default") -> str | None:
        value = await self.storage.get_item(records.active_key(self.user_id, character_id))
        return value if isinstance(value, str) else None

    async def set_active_session_id(self, session_id: str | None) -> str | None:
        if session_id is None:
            return None
        key = records.active_key(self.user_id, (await self.ensure_session(session_id)).character_id)
        await self.queue.run(
            "setActiveSessionId", lambda: self.storage.write_batch([(key, json.dumps(session_id))])
        )
        return session_id

    # --- messages -----------------------------------------------------------------
    async def add_message(self, session_id: str, message: Any) -> dict[str, Any]:
        item = validate_or_raise(ChatHistoryItem, message, "message")
        # Only an id the caller chose can repeat one; ours are 126 random bits, and
        # looking costs a DuckDB round trip that appending otherwise never pays.
        chosen_id = isinstance(message, dict) and "id" in message
        await self.ensure_session(session_id)

        async def attempt() -> dict[str, Any]:
            # Guarded on the session's updatedAt: if another tab added a message (or
            # deleted the session) since we last looked, we catch up and number again,
            # so messages are numbered in the order they commit, in every tab.
            meta = await self._session_in_queue(session_id)
            if chosen_id and await self.mirror.records_of(session_id, [item.id]):
                raise InvalidValueError(
                    f"invalid ChatHistoryItem field 'message.id': {item.id!r} already exists "
                    f"in session {session_id!r}"
                )
            seq = self._next_seq.get(session_id, 0)
            record = records.record_name(seq, self.writer)
            now = self._next_updated_at(meta)
            key = records.session_key(session_id)
            number = await self._write(
                sets=[(records.message_key(session_id, record), item.to_wire())],
                patches=[(key, {"updatedAt": now})],
                guards=[Guard(key, "updatedAt", meta.updated_at)],
            )

            def apply() -> None:
                self._next_seq[session_id] = seq + 1
                touched = meta.model_copy(update={"updated_at": now})
                self._metas[session_id] = touched
                self.mirror.add_message(session_id, record, item)
                self.mirror.put_session(touched)
                self.cache.append(session_id, item.to_wire())

            await self._settle(number, apply)
            return item.to_wire()

        return await self.queue.run("addMessage", lambda: self._guarded(attempt))

    async def put_summary(
        self, session_id: str, summary: ChatHistoryItem, replaces: str | None
    ) -> dict[str, Any]:
        """Add a summary message and drop the one it supersedes, in one transaction. The
        session's ``updatedAt`` is left alone: summarising is not activity."""

        async def attempt() -> dict[str, Any]:
            await self._session_in_queue(session_id)
            seq = self._next_seq.get(session_id, 0)
            record = records.record_name(seq, self.writer)
            old = await self.mirror.records_of(session_id, [replaces] if replaces else [])
            number = await self._write(
                sets=[(records.message_key(session_id, record), summary.to_wire())],
                removes=[records.message_key(session_id, r) for r in old],
                guards=[Guard(records.session_key(session_id))],
            )

            async def apply() -> None:
                self._next_seq[session_id] = seq + 1
                if old:
                    await self.mirror.delete_records([(session_id, r) for r in old])
                self.mirror.add_message(session_id, record, summary)
                self.cache.invalidate(session_id)

            await self._settle(number, apply)
            return summary.to_wire()

        return await self.queue.run("summarize", lambda: self._guarded(attempt))

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

        async def attempt() -> dict[str, Any]:
            record, body = await self._message(session_id, message_id)
            item = validate_or_raise(ChatHistoryItem, {**body, **patch}, "patch")
            key = records.message_key(session_id, record)
            number = await self._write(sets=[(key, item.to_wire())], guards=[Guard(key)])

            async def apply() -> None:
                await self.mirror.replace_message(session_id, record, item)
                self.cache.invalidate(session_id)

            await self._settle(number, apply)
            return item.to_wire()

        return await self.queue.run("updateMessage", lambda: self._guarded(attempt))

    async def delete_message(self, session_id: str, message_id: str) -> bool:
        async def task() -> bool:
            record, _ = await self._message(session_id, message_id)
            number = await self._write(removes=[records.message_key(session_id, record)])

            async def apply() -> None:
                await self.mirror.delete_records([(session_id, record)])
                self.cache.invalidate(session_id)

            await self._settle(number, apply)
            return True

        return await self.queue.run("deleteMessage", task)

    async def delete_messages(self, session_id: str, message_ids: list[str], label: str) -> int:
        """Delete many messages of a session in one transaction; returns how many."""

        async def task() -> int:
            found = await self.mirror.records_of(session_id, message_ids)
            if not found:
                return 0
            number = await self._write(removes=[records.message_key(session_id, r) for r in found])

            async def apply() -> None:
                await self.mirror.delete_records([(session_id, r) for r in found])
                self.cache.invalidate(session_id)

            await self._settle(number, apply)
            return len(found)

        return await self.queue.run(label, task)

    async def load_session_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order; held in the cache only once asked for."""
        cached = self.cache.get(session_id)
        if cached is not None:
            return cached
        await self.ensure_session(session_id)
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
        parent = await self.ensure_session(parent_id)
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
        # A fork is written here from messages stored here: their summaries stay trusted.
        copies = [
            ChatHistoryItem.model_validate(m, context=WRITTEN_HERE) for m in messages[:at_index]
        ]
        await self.queue.run("forkSession", lambda: self._write_session(fork, copies))
        return fork.to_wire()

    async def import_batch(
        self, sessions: list[tuple[ChatSessionMeta, list[ChatHistoryItem]]]
    ) -> int:
        """Write whole sessions in ONE storage batch (all or nothing); returns messages.
        Runs inside the write queue; a session id that exists already (any user's) is
        refused inside the transaction, so an import never overwrites a session."""
        sets, session_rows, message_rows = [], [], []
        for meta, messages in sessions:
            sid = meta.session_id
            sets.append((records.session_key(sid), meta.to_wire()))
            session_rows.append(session_row(meta))
            for seq, message in enumerate(messages):
                record = records.record_name(seq, self.writer)
                text = json.dumps(message.to_wire(), ensure_ascii=False)
                sets.append((records.message_key(sid, record), text))
                message_rows.append(self.mirror.row(sid, record, text))
        guards = [Guard(records.session_key(m.session_id), "sessionId", None) for m, _ in sessions]
        number = await self._write(sets=sets, guards=guards)

        async def apply() -> None:
            for meta, messages in sessions:
                self._metas[meta.session_id] = meta
                self._next_seq[meta.session_id] = len(messages)
            await self.mirror.load(session_rows, message_rows)

        await self._settle(number, apply)
        return len(message_rows)

    def stats(self) -> dict[str, Any]:
        return {
            "cache": self.cache.stats(),
            "queue": self.queue.stats(),
            "journal": {**self.journal.stats(), **self.counts},
            "journalSinceSnapshot": self.journal.records_since_snapshot,
            "problems": dict(self.problems),
            "quarantined": [{"key": k, "reason": r} for k, r in sorted(self.quarantined.items())],
            "loadMs": self.load_timings,
        }

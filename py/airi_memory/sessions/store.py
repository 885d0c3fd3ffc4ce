"""``SessionStore``: the seed's session store, durable per message; composes the parts.

Every write goes through one ``Writer`` (one queue, one write primitive, the message
numbers) and is one storage batch, reflected in this tab's ``SessionView`` only after it
committed, so a resolved ``addMessage`` is on disk. The parts, one idea each:

    restore.py         start-up: the sessions, then the mirror (snapshot + journal, or all)
    catch_up.py        other writers' changes: journal replay, or rebuild by difference
    writer.py          the queue, guarded retries, sequences, the one write primitive
    snapshots.py       the mirror's tables saved with the journal number they cover
    session_writes.py  create, fork, import, patches, deletes of sessions
    message_writes.py  add, summarise, update, delete messages
    remote_writes.py   other devices' changes, pulled by sync
    changes.py         what a write did, for the sync outbox recorded with it
    queries.py         reads (sessions from memory, messages from cache or DuckDB)
    reader.py          durable records into sessions and rows, and the quarantine
    view.py            this tab's session metadata, mirror and cache, kept together

The public methods are the parts' own, bound here under the names the facade
(``sessions.*`` in api.py) and the other packages call.
"""

import asyncio
import secrets
from collections.abc import Callable
from typing import Any

from ..models import CacheConfig, now_ms
from ..storage import Storage
from .cache import MessageCache
from .catch_up import CatchUp
from .journal import Journal
from .message_writes import MessageWrites
from .mirror import SessionMirror
from .queries import Queries
from .queue import Background, PersistQueue
from .reader import RecordReader
from .remote_writes import RemoteWrites
from .restore import SessionsRead, fill_mirror, read_sessions
from .session_writes import SessionWrites
from .snapshots import Snapshots
from .view import SessionView
from .writer import Sequences, Writer


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
        self.mirror = mirror
        self.user_id = user_id
        self.cache = cache
        self.clock = clock
        self.writer_id = secrets.token_hex(4)  # this open system's mark on the records it adds
        self.queue = PersistQueue()
        self.journal = Journal()
        # Told of every write, here or by another writer (indexers), and whether it may
        # have deleted messages.
        self.write_listeners: list[Callable[[bool], None]] = []
        self.problems: dict[str, Any] = {"snapshot": None, "sync": None, "mirror": None}
        self.counts = {
            "snapshots": 0, "snapshotFailures": 0, "catchUps": 0, "rebuilds": 0, "conflicts": 0,
        }  # fmt: skip
        self.load_timings: dict[str, Any] = {}  # start-up breakdown, in ms
        self._read: SessionsRead | None = None  # start-up's first stage, for its second
        # Set once ``load`` has filled the mirror: what joins to it at start-up waits here.
        self.mirrored = asyncio.Event()
        background = Background()
        self.reader = RecordReader(storage, mirror)
        self.view = SessionView(mirror, cache, Sequences(self.writer_id), clock)
        self.catching_up = CatchUp(
            storage, self.reader, self.view, self.journal, self.queue, self.problems,
            self.counts, self.write_listeners,
        )  # fmt: skip
        self.snapshots = Snapshots(
            storage, mirror, self.reader, self.journal, self.queue, background,
            self.catching_up, clock, self.problems, self.counts,
        )  # fmt: skip
        self.writer = Writer(
            storage, self.journal, self.queue, background, self.catching_up,
            self.view.sequences, self.problems, self.counts, self.snapshots.start,
            self.write_listeners, publish,
        )  # fmt: skip
        self.queries = Queries(
            storage, self.view, self.catching_up, self.reader, self.queue, user_id
        )
        self.session_writes = SessionWrites(
            self.writer, self.view, self.catching_up, self.queries, user_id
        )
        self.message_writes = MessageWrites(self.writer, self.view, self.catching_up)
        self.remote_writes = RemoteWrites(self.writer, self.view, self.catching_up, user_id)
        self._bind_public_methods()

    def _bind_public_methods(self) -> None:
        catching_up, snapshots, queries = self.catching_up, self.snapshots, self.queries
        sessions, messages = self.session_writes, self.message_writes
        # Catching up and snapshots; buffered mirror rows in (before reading DuckDB).
        self.flush = self.mirror.flush
        self.sync = catching_up.sync
        self.catch_up = catching_up.catch_up  # for a task already in the write queue
        self.ensure_session = catching_up.ensure_session
        self.snapshot = snapshots.snapshot
        # Reads.
        self.require_session = self.view.require
        self.get_session = queries.get_session
        self.list_sessions = queries.list_sessions
        self.get_all_sessions = queries.get_all_sessions
        self.own_sessions = queries.own_sessions
        self.has_other_users = queries.has_other_users
        self.session_ids = queries.session_ids
        self.meta = queries.meta
        self.get_active_session_id = queries.get_active_session_id
        self.load_session_messages = queries.load_session_messages
        self.get_session_messages = queries.load_session_messages
        self.messages_page = queries.messages_page
        self.latest_messages = queries.latest_messages
        self.persist_session_messages = queries.persist_session_messages
        self.message_counts = queries.message_counts
        # Session writes.
        self.create_session = sessions.create_session
        self.fork_session = sessions.fork_session
        self.import_batch = sessions.import_batch
        self.rename_session = sessions.rename_session
        self.pin_session = sessions.pin_session
        self.tag_session = sessions.tag_session
        self.archive_session = sessions.archive_session
        self.unarchive_session = sessions.unarchive_session
        self.set_active_session_id = sessions.set_active_session_id
        self.delete_session = sessions.delete_session
        self.archive_and_delete = sessions.archive_and_delete
        self.delete_old_sessions = sessions.delete_old_sessions
        # Message writes.
        self.add_message = messages.add_message
        self.put_summary = messages.put_summary
        self.update_message = messages.update_message
        self.delete_message = messages.delete_message
        self.delete_messages = messages.delete_messages
        # Other devices' changes (sync's pull).
        self.apply_remote = self.remote_writes.apply

    @classmethod
    async def read(
        cls,
        storage: Storage,
        mirror: SessionMirror,
        user_id: str,
        cache_config: CacheConfig | None = None,
        clock: Callable[[], int] = now_ms,
        publish: Callable[[int], None] | None = None,
    ) -> "SessionStore":
        """Start-up's first stage: the session metadata, from the durable store alone (no
        SQL), so sessions can be listed while DuckDB starts. Nothing else may run on the
        store until ``load`` is done."""
        cache = MessageCache(cache_config or CacheConfig())
        store = cls(storage, mirror, user_id, cache, clock, publish)
        store._read = await read_sessions(store.reader, store.view, store.load_timings)
        return store

    async def load(self) -> None:
        """Start-up's second stage: the DuckDB mirror and the message numbers."""
        if self._read is None:
            raise RuntimeError("SessionStore.load runs once, after SessionStore.read")
        read, self._read = self._read, None
        await fill_mirror(read, self.reader, self.view, self.catching_up, self.snapshots)
        self.mirrored.set()

    @property
    def quarantined(self) -> dict[str, str]:
        """Records that could not be read, by key: kept, left out of the mirror, reported."""
        return self.reader.quarantined

    @property
    def on_quarantine(self) -> Callable[[str, str], None] | None:
        return self.reader.on_quarantine

    @on_quarantine.setter
    def on_quarantine(self, listener: Callable[[str, str], None] | None) -> None:
        """Told of each record newly quarantined after start-up (the page's event)."""
        self.reader.on_quarantine = listener

    @property
    def snapshot_after(self) -> int:
        """Records changed since the last snapshot before a new one is started."""
        return self.writer.snapshot_after

    @snapshot_after.setter
    def snapshot_after(self, records: int) -> None:
        self.writer.snapshot_after = records

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

"""Snapshots: the mirror's message tables saved as bytes with the journal number they
cover (``through``), so a start-up imports them instead of reading every record.

A snapshot runs in the write queue right after a catch-up, so its tables reflect exactly
the journal up to ``through``. It prunes only the entries the snapshot before it covered,
and is refused (then retaken after a catch-up) if another tab pruned meanwhile
(docs/DESIGN-notes.md, "Snapshots"). The public name is ``memory.sessions.snapshot()``.
"""

import time
from collections.abc import Callable
from typing import Any

from ..models import new_id
from ..storage import Storage
from ..storage.driver import Guard, LogAppend, log_number
from .journal import JOURNAL, JOURNAL_HEAD, Journal
from .mirror import SessionMirror
from .queue import Background, PersistQueue
from .reader import RecordReader, error_text
from .writer import CatchingUp, retry_on_conflict

SNAPSHOT = "local:memory:snapshot"
# Bumped when a snapshotted table changes shape, or what a snapshot means: an older
# snapshot is then not read (the mirror is rebuilt from the records once) and the next
# snapshot removes it. v4: snapshots record the journal number they cover. v5: search's
# text analysis in its own table (``search_text``), out of ``chat_messages``.
SNAPSHOT_VERSION = "v5"
SNAPSHOT_BACKOFF_MS = (1_000, 600_000)  # after a failed snapshot: first and longest wait


def snapshot_key(table: str) -> str:
    return f"{SNAPSHOT}:{SNAPSHOT_VERSION}:{table}"


SNAPSHOT_COVERS = snapshot_key("covers")  # {"through": journal number, "at": ms, ...}


class Snapshots:
    def __init__(
        self,
        storage: Storage,
        mirror: SessionMirror,
        reader: RecordReader,
        journal: Journal,
        queue: PersistQueue,
        background: Background,
        catch_up: CatchingUp,
        clock: Callable[[], int],
        problems: dict[str, Any],
        counts: dict[str, int],
    ) -> None:
        self.storage = storage
        self.mirror = mirror
        self.reader = reader
        self.journal = journal
        self.queue = queue
        self.background = background
        self.catch_up = catch_up
        self.clock = clock
        self.problems = problems
        self.counts = counts
        self._running = False
        self._backoff_ms = 0
        self._retry_at = 0.0  # time.monotonic() before which none is started

    async def snapshot(self) -> dict[str, Any]:
        """Save the message tables as bytes, with the journal number they cover. When
        another tab pruned the journal meanwhile, catch up and take it again."""

        async def task() -> dict[str, Any]:
            try:
                report = await retry_on_conflict(self._take, self.catch_up, self.counts)
            except Exception as error:
                self.counts["snapshotFailures"] += 1
                self.problems["snapshot"] = error_text(error)
                low, high = SNAPSHOT_BACKOFF_MS
                self._backoff_ms = min(max(self._backoff_ms * 2, low), high)
                self._retry_at = time.monotonic() + self._backoff_ms / 1000
                raise
            self.counts["snapshots"] += 1
            self.problems["snapshot"] = None
            self._backoff_ms = 0
            return report

        return await self.queue.run("snapshot", task)

    async def _take(self) -> dict[str, Any]:
        await self.catch_up.catch_up()  # the tables then reflect exactly the journal up to here
        through = self.journal.position
        saved = await self.mirror.save()
        tables = list(zip(map(snapshot_key, self.mirror.saved_names), saved, strict=True))
        previous = await self.storage.get_item(SNAPSHOT_COVERS)
        covered_before = previous.get("through") if isinstance(previous, dict) else 0
        prune = min(covered_before if isinstance(covered_before, int) else 0, through)
        older_layout = [
            key for key in await self.storage.get_keys(JOURNAL) if log_number(key, JOURNAL) is None
        ]
        covers = {
            "through": through,
            "at": self.clock(),
            # Which snapshot this is: a start-up that read its tables one by one checks
            # that they all came from the one it read this record of, before and after.
            "id": new_id(),
            # Records left out of these tables: a start-up from them reports them again
            # (it reads no message records of its own).
            "quarantined": sorted(self.reader.quarantined),
        }
        await self.storage.write_batch(
            sets=[(SNAPSHOT_COVERS, covers)],
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

    def start(self) -> None:
        """A snapshot in the background, unless one runs or the last failed too recently."""
        if self._running or time.monotonic() < self._retry_at:
            return
        self._running = True

        async def job() -> None:
            try:
                await self.snapshot()
            except Exception:  # recorded in problems["snapshot"]; retried after a pause
                pass
            finally:
                self._running = False

        self.background.start(job)

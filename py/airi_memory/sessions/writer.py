"""The one writer: every write of the session store goes through here.

A write is one ``Driver.apply`` call (``write``): guards, removals, sets, merge patches
and its journal entry in one IndexedDB transaction. Only after it committed is it
reflected in this tab (``settle``), and only then does the caller's promise resolve, so a
resolved ``addMessage`` is on disk. Writes run one at a time through the tab's queue; a
write that guards what it decided on is retried after a catch-up when another tab changed
that first (``guarded``). Message records are named here and nowhere else (``Sequences``).
"""

import asyncio
import random
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Protocol, TypeVar

from ..errors import WriteConflictError
from ..storage import Storage
from ..storage.driver import Guard
from . import records
from .changes import Bookkeeping, Change, NoRecorder, Recorder
from .journal import Journal
from .queue import Background, PersistQueue
from .reader import error_text

SNAPSHOT_AFTER = 2000  # records changed since the last snapshot before a new one is taken
# How long a guarded write keeps deciding again before it is refused. Bounded by time, not
# by count: three tabs catching up on a large import can collide 40 times in a few seconds.
CONFLICT_PATIENCE_S = 30.0
CONFLICT_BACKOFF_MS = 2.0  # first wait after a conflict; doubled and randomised
CONFLICT_BACKOFF_CAP_MS = 128.0  # the longest of those waits
T = TypeVar("T")


class Sequences:
    """The next message number of each session, and the record names made from it. A
    number is taken only once the write that used it committed (``took``). Numbers never
    go down, not even when a session is deleted or rebuilt: this writer's records (a
    quarantined one, one a replayed delete hid for a moment) keep names no later message
    of this writer can take."""

    def __init__(self, writer_id: str) -> None:
        self.writer_id = writer_id  # this open system's mark on the records it adds
        self._next: dict[str, int] = {}

    def names(self, session_id: str, count: int = 1) -> list[str]:
        """Record names for the next ``count`` messages of a session."""
        first = self._next.get(session_id, 0)
        return [records.record_name(seq, self.writer_id) for seq in range(first, first + count)]

    def took(self, session_id: str, count: int = 1) -> None:
        """The names ``names`` gave were written."""
        self._next[session_id] = self._next.get(session_id, 0) + count

    def seen(self, session_id: str, seq: int) -> None:
        """A message numbered ``seq`` is in the store (another tab wrote it)."""
        self._next[session_id] = max(self._next.get(session_id, 0), seq + 1)

    def reset(self, tops: dict[str, int]) -> None:
        """Continue after the highest number of every session (from the mirror)."""
        for sid, top in tops.items():
            self.seen(sid, top)


class CatchingUp(Protocol):
    """What the writer needs of ``CatchUp``."""

    async def catch_up(self) -> dict[str, Any]: ...

    async def sync(self) -> dict[str, Any]: ...


async def retry_on_conflict(
    attempt: Callable[[], Awaitable[T]], catch_up: CatchingUp, counts: dict[str, int]
) -> T:
    """Run a write that guards what it decided on; when another tab changed that first,
    catch up from the store and decide again. Tabs that keep colliding back off for a
    random, growing while (as Ethernet does), so each gets its turn; a write still
    colliding after ``CONFLICT_PATIENCE_S`` is refused with the conflict."""
    give_up_at = time.monotonic() + CONFLICT_PATIENCE_S
    tries = 0
    while True:
        try:
            return await attempt()
        except WriteConflictError:
            counts["conflicts"] += 1
            if time.monotonic() >= give_up_at:
                raise
            cap = min(CONFLICT_BACKOFF_MS * 2**tries, CONFLICT_BACKOFF_CAP_MS)
            await asyncio.sleep(random.uniform(0, cap) / 1000)
            await catch_up.catch_up()
            tries = min(tries + 1, 16)  # the cap is reached long before; keeps 2**tries small


class Writer:
    def __init__(
        self,
        storage: Storage,
        journal: Journal,
        queue: PersistQueue,
        background: Background,
        catch_up: CatchingUp,
        sequences: Sequences,
        problems: dict[str, Any],
        counts: dict[str, int],
        snapshot_due: Callable[[], None],
        write_listeners: list[Callable[[bool], None]],
        publish: Callable[[int], None] | None,
    ) -> None:
        self.storage = storage
        self.journal = journal
        self.queue = queue
        self.background = background
        self.catch_up = catch_up
        self.sequences = sequences
        self.problems = problems
        self.counts = counts
        self.snapshot_due = snapshot_due  # starts a snapshot unless one runs
        self.snapshot_after = SNAPSHOT_AFTER
        self.publish = publish  # hints other tabs that the journal moved (to this number)
        # Told of every write (indexers), and whether it may have deleted messages.
        self.write_listeners = write_listeners
        self.recorder: Recorder = NoRecorder()  # the sync outbox, once it is attached

    async def run(self, label: str, task: Callable[[], Awaitable[T]]) -> T:
        """``task`` in this tab's write queue."""
        return await self.queue.run(label, task)

    async def run_guarded(self, label: str, attempt: Callable[[], Awaitable[T]]) -> T:
        """``attempt`` in the write queue, decided again after a conflict (``guarded``)."""
        return await self.queue.run(label, lambda: self.guarded(attempt))

    async def guarded(self, attempt: Callable[[], Awaitable[T]]) -> T:
        return await retry_on_conflict(attempt, self.catch_up, self.counts)

    async def write(
        self,
        *,
        sets: Sequence[tuple[str, Any]] = (),
        removes: Sequence[str] = (),
        prefixes: Sequence[str] = (),
        patches: Sequence[tuple[str, Any]] = (),
        guards: Sequence[Guard] = (),
        changes: Sequence[Change] = (),
        bookkeeping: Bookkeeping | None = None,
    ) -> int:
        """One storage batch plus its journal entry and the sync operations of its
        ``changes``, in one transaction; returns the entry's number. ``bookkeeping`` is
        sync state written as it is (a pull's stamps and cursor). Schedules a snapshot
        when the journal has grown long."""
        touched = [k for k, _ in sets] + list(removes) + [k for k, _ in patches]
        log = self.journal.append(touched, list(prefixes))
        for attempt in range(2):
            extra = bookkeeping or self.recorder.bookkeeping(list(changes))
            try:
                number = await self.storage.write_batch(
                    [*sets, *extra.sets],
                    [*removes, *extra.removes],
                    [*prefixes, *extra.prefixes],
                    [*patches, *extra.patches],
                    guards=[*guards, *extra.guards],
                    log=log,
                )
                break
            except WriteConflictError:
                # Another tab turned sync on: write again, with this write's operations.
                if attempt or not await self.recorder.refresh():
                    raise
        assert number is not None
        if self.publish:
            self.publish(number)
        for listener in self.write_listeners:
            listener(bool(removes or prefixes))
        if self.journal.records_since_snapshot >= self.snapshot_after:
            self.snapshot_due()
        return number

    async def settle(self, number: int, apply: Callable[[], Awaitable[None] | None]) -> None:
        """Reflect our committed write ``number`` in memory and in the mirror. The write is
        durable whatever happens here: if this fails, the entry stays unapplied and the
        next catch-up (started now) re-reads its records from the store."""
        try:
            pending = apply()
            if pending is not None:
                await pending
        except Exception as error:
            self.problems["mirror"] = error_text(error)
            self.background.start(self.catch_up.sync)
            return
        self.journal.applied(number)

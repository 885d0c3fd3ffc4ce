"""Start-up: fill this tab's view (session metadata, the DuckDB mirror, the message
numbers) from the durable store, from the snapshot plus the journal after it when there
is one (fast), else from every record (two range reads, two columnar inserts).

Two stages, so the sessions can be listed before DuckDB-WASM is up: ``read_sessions``
reads the snapshot, the journal head and the session records (IndexedDB alone);
``fill_mirror`` then fills DuckDB. No write runs between the two (every write waits for
the second), so the view read in the first is still the store's when the second runs.

Order matters: whatever commits after a read, a later step replays. The snapshot is read
before the sessions (a session written after it has a journal number above
``through``), the journal head before the sessions and messages. A damaged snapshot
costs time, never data: start-up then reads every record. A record that cannot be read is
quarantined; start-up goes on.
"""

import asyncio
import time
from dataclasses import dataclass
from typing import Any

from .catch_up import CatchUp
from .mirror import MessageRow, session_row
from .reader import RecordReader, error_text
from .snapshots import SNAPSHOT_COVERS, Snapshots, snapshot_key
from .view import SessionView

SNAPSHOT_READ_TRIES = 3  # snapshots replaced under a start-up before it reads records
TURN_S = 0.1  # the longest start-up analyses messages without letting a call in


class _Laps:
    """Start-up's breakdown, in ms, in ``timings``."""

    def __init__(self, timings: dict[str, Any]) -> None:
        self.timings = timings
        self.started = self.lap = time.perf_counter()

    def mark(self, name: str) -> None:
        now = time.perf_counter()
        self.timings[name] = round((now - self.lap) * 1000, 1)
        self.lap = now

    def total(self) -> None:
        self.timings["total"] = round((time.perf_counter() - self.started) * 1000, 1)


@dataclass
class SessionsRead:
    """What the first stage read, for the second: the snapshot's tables and the journal
    number they cover when they can be used, else the journal head read before the
    sessions."""

    laps: _Laps
    saved: list[bytes | None]
    through: int | None
    head: dict[str, int] | None


async def read_sessions(
    reader: RecordReader, view: SessionView, timings: dict[str, Any]
) -> SessionsRead:
    """Stage one: the snapshot, the head and every session into ``view.metas``."""
    laps = _Laps(timings)
    saved, covers = await _read_snapshot(reader, view.mirror.saved_names)
    laps.mark("readSnapshot")
    through = covers.get("through") if covers is not None else None
    if isinstance(through, int) and all(d is not None and len(d) for d in saved):
        view.metas = await reader.read_sessions()
        assert covers is not None
        await reader.recheck_quarantined(covers.get("quarantined"))
        laps.mark("readSessions")
        return SessionsRead(laps, saved, through, None)
    head = await reader.read_head()
    view.metas = await reader.read_sessions()
    laps.mark("readSessions")
    return SessionsRead(laps, [], None, head)


async def fill_mirror(
    read: SessionsRead,
    reader: RecordReader,
    view: SessionView,
    catch_up: CatchUp,
    snapshots: Snapshots,
) -> None:
    """Stage two: the mirror from the snapshot and the journal after it, or from every
    record; then the message numbers. Takes a snapshot when there was none to start from."""
    mirror, journal, laps = view.mirror, catch_up.journal, read.laps
    laps.lap = time.perf_counter()  # the wait between the stages is no step's
    head = read.head
    if read.through is not None:
        try:
            await mirror.create(read.saved)
            laps.mark("createTables")  # the first statements: waits for DuckDB's start
            await mirror.load([session_row(m) for m in view.metas.values()], [])
            laps.mark("loadSessions")
            await mirror.restore(read.saved)
            laps.mark("importSnapshot")
            journal.position = read.through
            await catch_up.catch_up()  # rebuilds from the records if the log cannot bridge
            laps.mark("replayJournal")
        except Exception as error:  # a damaged snapshot costs time, never data
            laps.timings["snapshotFailed"] = error_text(error)[:200]
            journal.restart()
            head = await reader.read_head()
            view.metas = await reader.read_sessions()
    if head is not None:
        found = await reader.read_messages()
        laps.mark("readMessages")
        rows = await _message_rows(reader, found)
        await mirror.create()
        await mirror.load([session_row(m) for m in view.metas.values()], rows)
        laps.mark("loadMessages")
        journal.reached(head["last"])
        journal.pruned_seen = head["pruned"] if head["last"] else None
        if rows:
            snapshots.start()
    view.sequences.reset(await mirror.max_seqs())
    laps.mark("sequences")
    catch_up.unreported.clear()  # the page reads everything after start-up anyway
    laps.total()


async def _message_rows(reader: RecordReader, found: dict[str, Any]) -> list[MessageRow]:
    """A mirror row for each message record read, its text analysed: about 90 µs a message
    in the browser, 9 s at 100,000 (a start without a usable snapshot). Every ``TURN_S``
    the calls that need no mirror (``info``, sessions' metadata, the app's storage) get
    a turn: ready waits on one, and waited out the whole analysis."""
    rows, turn = [], time.perf_counter()
    for key, text in found.items():
        if (row := reader.message_row(key, text)) is not None:
            rows.append(row)
        if time.perf_counter() - turn >= TURN_S:
            await asyncio.sleep(0)
            turn = time.perf_counter()
    return rows


async def _read_snapshot(
    reader: RecordReader, tables: tuple[str, ...]
) -> tuple[list[bytes | None], dict[str, Any] | None]:
    """The snapshot's tables and what they cover, all from ONE snapshot. Each is its own
    read, so another tab may write a new snapshot in between: the covers record, read
    before and after the tables, must be the same one, else they are read again (and after
    a few tries not used at all: start-up reads every record instead)."""
    storage = reader.storage
    for _ in range(SNAPSHOT_READ_TRIES):
        covers = await storage.get_item(SNAPSHOT_COVERS)
        saved = [await storage.get_item_raw_native(snapshot_key(t)) for t in tables]
        if await storage.get_item(SNAPSHOT_COVERS) == covers:
            return saved, covers if isinstance(covers, dict) else None
    return [None for _ in tables], None

"""Start-up: fill this tab's view (session metadata, the DuckDB mirror, the message
numbers) from the durable store, from the snapshot plus the journal after it when there
is one (fast), else from every record (two range reads, two columnar inserts).

Order matters: whatever commits after a read, a later step replays. The snapshot is read
before the sessions (a session written after it has a journal number above
``through``), the journal head before the sessions and messages. A damaged snapshot
costs time, never data: start-up then reads every record. A record that cannot be read is
quarantined; start-up goes on.
"""

import time
from typing import Any

from .catch_up import CatchUp
from .mirror import session_row
from .reader import RecordReader, error_text
from .snapshots import SNAPSHOT_COVERS, Snapshots, snapshot_key
from .view import SessionView

SNAPSHOT_READ_TRIES = 3  # snapshots replaced under a start-up before it reads records


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


async def restore(
    reader: RecordReader,
    view: SessionView,
    catch_up: CatchUp,
    snapshots: Snapshots,
    timings: dict[str, Any],
) -> None:
    """Fill the view and mirror, then take a snapshot when there was none to start from."""
    mirror, journal = view.mirror, catch_up.journal
    laps = _Laps(timings)
    saved, covers = await _read_snapshot(reader, mirror.saved_names)
    laps.mark("readSnapshot")
    through = covers.get("through") if covers is not None else None
    restored = isinstance(through, int) and all(d is not None and len(d) for d in saved)
    head = None if restored else await reader.read_head()
    await _load_sessions(reader, view, laps)
    if restored:
        await reader.recheck_quarantined(covers.get("quarantined"))
        try:
            await mirror.restore(saved)
            laps.mark("importSnapshot")
            journal.position = through
            await catch_up.catch_up()  # rebuilds from the records if the log cannot bridge
            laps.mark("replayJournal")
        except Exception as error:  # a damaged snapshot costs time, never data
            timings["snapshotFailed"] = error_text(error)[:200]
            await mirror.create()
            journal.restart()
            head = await reader.read_head()
            await _load_sessions(reader, view)
            restored = False
    if not restored:
        assert head is not None
        found = await reader.read_messages()
        laps.mark("readMessages")
        rows = [row for key, text in found.items() if (row := reader.message_row(key, text))]
        await mirror.load([], rows)
        laps.mark("loadMessages")
        journal.reached(head["last"])
        journal.pruned_seen = head["pruned"] if head["last"] else None
        if rows:
            snapshots.start()
    view.sequences.reset(await mirror.max_seqs())
    laps.mark("sequences")
    catch_up.unreported.clear()  # the page reads everything after start-up anyway
    laps.total()


async def _read_snapshot(
    reader: RecordReader, tables: list[str]
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


async def _load_sessions(
    reader: RecordReader, view: SessionView, laps: _Laps | None = None
) -> None:
    view.metas = await reader.read_sessions()
    if laps:
        laps.mark("readSessions")
    await view.mirror.load([session_row(m) for m in view.metas.values()], [])
    if laps:
        laps.mark("loadSessions")

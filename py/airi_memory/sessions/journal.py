"""The journal: a log of which records each write touched, numbered in commit order, so
a restart or another tab brings its DuckDB mirror up to date by re-reading just those.

Every storage batch of the session store appends one entry ``{keys, prefixes}`` in the
same IndexedDB transaction (``LogAppend``): the number comes from a head record read
inside that transaction, and writes to one store commit one at a time, so the numbers
follow commit order with no gaps, whichever tab wrote. Each open system remembers the
number up to which its mirror reflects the log (``position``); catching up is reading
the entries above it from the durable store, so a tab that fell behind for any reason
(busy, frozen, a lost broadcast) lacks nothing it cannot find. A broadcast between tabs
is only a hint to look.

A snapshot (the message tables as bytes) records the number it covers (``through``) in
the same transaction as its tables. It prunes only the entries the snapshot before it
already covered, so a tab lagging by less than one snapshot interval catches up from the
log; a tab that finds entries it needs pruned rebuilds its view from the records
themselves (they are the truth; the journal only says where to look). A snapshot is
written only if no other snapshot pruned past what it covers in the meantime (a guard
on the head's ``pruned``). Replaying re-reads current values, which makes it idempotent.
"""

import json
from dataclasses import dataclass, field
from typing import Any

from ..models import now_ms
from ..storage.driver import LogAppend

JOURNAL = "local:memory:journal"
JOURNAL_HEAD = "local:memory:journal-head"


@dataclass
class Journal:
    position: int = 0  # the mirror reflects every entry up to this number
    ahead: set[int] = field(default_factory=set)  # our own entries above it, applied
    pruned_seen: int | None = None  # the head's ``pruned`` at the last catch-up
    records_since_snapshot: int = 0  # records named by entries since the last snapshot

    def append(self, keys: list[str], prefixes: list[str] = ()) -> LogAppend:
        """The entry for a batch we write."""
        self.records_since_snapshot += len(keys) + len(prefixes)
        entry = {"keys": list(keys), "prefixes": list(prefixes), "at": now_ms()}
        return LogAppend(JOURNAL, JOURNAL_HEAD, json.dumps(entry, ensure_ascii=False))

    def restart(self, position: int = 0, pruned_seen: int | None = None) -> None:
        """Start over at ``position`` (a rebuild read the head there, or nothing is known)."""
        self.position, self.pruned_seen = position, pruned_seen
        self.ahead = set()
        self.records_since_snapshot = 0

    def applied(self, number: int) -> None:
        """Our own entry ``number`` is in the mirror: move the position past every entry
        that is now contiguous."""
        if number > self.position:
            self.ahead.add(number)
        self._advance()

    def reached(self, number: int) -> None:
        """Every entry up to ``number`` is in the mirror (a catch-up or a rebuild)."""
        self.position = max(self.position, number)
        self.ahead = {n for n in self.ahead if n > self.position}
        self._advance()

    def _advance(self) -> None:
        while self.position + 1 in self.ahead:
            self.position += 1
            self.ahead.discard(self.position)

    def stats(self) -> dict[str, Any]:
        return {"position": self.position, "ahead": len(self.ahead)}

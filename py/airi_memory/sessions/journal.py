"""The change journal: which records each write touched, so a restart or another tab can
bring its DuckDB mirror up to date by re-reading just those records.

Every storage batch of the session store carries one journal record in the same
IndexedDB transaction. A snapshot (the message tables as bytes) removes, in one
transaction with its own write, exactly the journal records its mirror had applied, so
what remains in the journal is what the snapshot lacks. Replaying re-reads current
values, which makes it idempotent and independent of order.
"""

import itertools
from dataclasses import dataclass, field
from typing import Any

from ..models import now_ms

JOURNAL = "local:memory:journal"
SNAPSHOT = "local:memory:snapshot"
# Bumped when a snapshotted table changes shape: an older snapshot is then not read (the
# mirror is rebuilt from the records once) and the next snapshot removes it.
SNAPSHOT_VERSION = "v3"


def snapshot_key(table: str) -> str:
    return f"{SNAPSHOT}:{SNAPSHOT_VERSION}:{table}"


@dataclass
class Journal:
    writer: str
    applied: set[str] = field(default_factory=set)  # entries our mirror already reflects
    keys_since_snapshot: int = 0  # records named by journal entries since the last snapshot
    _counter: itertools.count = field(default_factory=itertools.count)

    def entry(self, keys: list[str], prefixes: list[str] = ()) -> tuple[str, dict[str, Any]]:
        """A new journal record for a batch we write (and so have applied ourselves)."""
        key = f"{JOURNAL}:{now_ms():013d}-{self.writer}-{next(self._counter):08d}"
        self.applied.add(key)
        self.keys_since_snapshot += len(keys) + len(prefixes)
        return key, {"keys": list(keys), "prefixes": list(prefixes)}

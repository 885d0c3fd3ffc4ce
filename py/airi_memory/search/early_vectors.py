"""Semantic search before the mirror is loaded: the stored vectors, straight from their
batches into the scan, under provisional ids (their row in the batches as read).

At 100,000 messages the mirror is in DuckDB 1.1-1.4 s after ready (DuckDB's start alone
is most of it), and the vectors' join to it takes longer still. The stored batches are
read and decoded well before that. Each provisional id stands for its key (session id,
record, text hash): a search ranks as usual, then reads its winners' message records
from storage, the truth, and drops one that is gone (deleted) or holds another text
(edited), or repeats a message already found (two tabs stored it), and ranks again.
Scope is kept outside SQL: only sessions of this user, narrowed by the session and
character filters; a role or date filter waits for the mirror.

When the mirror is there, the vectors' join relabels the provisional ids to the
mirror's docs (``VectorScan.relabel``) and retires this: a search in flight then starts
again the usual way (``Retired``).
"""

import hashlib
from array import array
from collections.abc import Collection, Sequence
from typing import Any

from ..models import message_text
from ..sessions.records import message_key
from ..storage import Storage
from .messages import hit
from .text import fold
from .vector_scan import VectorScan

# A search ranks again while its winners held messages that are gone; bounded, as the
# usual path is (semantic.MAX_RERANKS).
MAX_RERANKS = 8


class Retired(Exception):
    """The provisional ids were relabelled while a search used them."""


def text_hash(message: dict[str, Any]) -> str:
    """The hash a stored vector names its text by: DuckDB's ``left(md5(folded), 16)``."""
    return hashlib.md5(fold(message_text(message)).encode()).hexdigest()[:16]


class EarlyVectors:
    def __init__(
        self,
        scan: VectorScan,
        storage: Storage,
        session_ids: Sequence[str],
        records: Sequence[str],
        hashes: Sequence[str],
    ) -> None:
        """The scan holds row ``i`` of these columns as doc ``i``; a hash is "" where its
        batch kept none (taken as it is, as the join does)."""
        self.scan = scan
        self.storage = storage
        self.session_ids = session_ids
        self.records = records
        self.hashes = hashes
        self.retired = False
        self._rows_of: dict[str, array[int]] | None = None  # at the first search, not at start

    def allowed(self, sessions: Collection[str]) -> "array[int] | None":
        """The provisional ids of these sessions' vectors; None when that is every one."""
        if self._rows_of is None:
            self._rows_of = {}
            for row, session_id in enumerate(self.session_ids):
                self._rows_of.setdefault(session_id, array("i")).append(row)
        if all(session_id in sessions for session_id in self._rows_of):
            return None
        allow = array("i")
        for session_id in sessions:
            allow.extend(self._rows_of.get(session_id, ()))
        return allow

    async def nearest(
        self, query: Sequence[float], allow: "array[int] | None", limit: int
    ) -> list[dict[str, Any]]:
        """As ``VectorIndex.nearest_to``, the unit ``query`` ranked among ``allow``, each
        winner checked against its record. Raises ``Retired`` if the ids were relabelled
        meanwhile."""
        found: list[dict[str, Any]] = []
        for _ in range(MAX_RERANKS):
            if self.retired:  # while the query was embedded, say
                raise Retired
            ranked = self.scan.top_k(query, limit, allow)
            found, gone = await self._checked(ranked)
            if not gone:
                break
            self.scan.remove(gone)
        return found

    async def _checked(
        self, ranked: list[tuple[int, float]]
    ) -> tuple[list[dict[str, Any]], list[int]]:
        """The hits whose records still hold the text their vector was made from, and the
        rows whose records do not (or that repeat a message found first)."""
        keys = [message_key(self.session_ids[row], self.records[row]) for row, _ in ranked]
        read = await self.storage.get_items(keys) if keys else []
        if self.retired:
            raise Retired
        found, gone, seen = [], [], {}
        for (row, score), item in zip(ranked, read, strict=True):
            message, stored_hash = item["value"], self.hashes[row]
            key = (self.session_ids[row], self.records[row])
            if key in seen:  # the first row stays, as the join to the mirror keeps it
                gone.append(max(row, seen[key]))
            elif not isinstance(message, dict) or (
                stored_hash and text_hash(message) != stored_hash
            ):
                gone.append(row)
            else:
                seen[key] = row
                found.append(hit(*key, None, score, message=message))
        return found, gone

"""Probes the benchmarks call through the facade: a scratch table of their own, random
vectors standing in for a big store's embeddings (embedding 100k messages for real takes
half an hour here; the scan costs the same whatever the vectors hold), the stored vectors
read back (for a peer to rank the same ones), and the cost of one statement's trip to
DuckDB, the floor under every search."""

from __future__ import annotations

import math
import random
import time
from array import array
from typing import Any

from .search.filters import SESSIONS_JOIN
from .search.semantic import TEXT_HASH, WINDOW_BATCHES, WITH_TEXT, VectorIndex
from .search.vector_batches import decode_batch, rows_of
from .sql import SqlEngine

_SCRATCH = "diagnostics_bulk_insert"


async def bulk_insert(sql: SqlEngine, rows: int) -> dict[str, float | int]:
    """Insert ``rows`` message-sized rows by column; time it from Python's side."""
    if not isinstance(rows, int) or not 0 < rows <= 2_000_000:
        raise ValueError(f"rows must be an integer between 1 and 2,000,000, got {rows!r}")
    await sql.execute(f"DROP TABLE IF EXISTS {_SCRATCH}")
    await sql.execute(
        f"CREATE TABLE {_SCRATCH} (id VARCHAR, session_id VARCHAR, role VARCHAR, "
        "content VARCHAR, created_at BIGINT)"
    )
    text = "The quick brown fox remembers what you said about the garden last spring. " * 3
    columns = {
        "id": [f"msg-{i:07d}" for i in range(rows)],
        "session_id": [f"session-{i % 500:03d}" for i in range(rows)],
        "role": ["user" if i % 2 else "assistant" for i in range(rows)],
        "content": [text] * rows,
        "created_at": [1_767_225_600_000 + i for i in range(rows)],
    }
    started = time.perf_counter()
    await sql.insert_columns(_SCRATCH, columns)
    elapsed = time.perf_counter() - started
    counted = (await sql.query(f"SELECT count(*) AS n FROM {_SCRATCH}")).scalar()
    await sql.execute(f"DROP TABLE {_SCRATCH}")
    return {"rows": int(counted), "insertMs": elapsed * 1000}


async def fill_vectors(index: VectorIndex) -> dict[str, float | int]:
    """Random vectors for every message that has none, stored as background embedding
    stores them (a window at a time, into DuckDB and IndexedDB, merges included), so a
    reload loads them back as it would real ones."""
    started = time.perf_counter()
    await index.sessions.flush()
    missing = await index.sql.query(
        f"SELECT m.doc, m.session_id, m.record, {TEXT_HASH} FROM chat_messages m {WITH_TEXT} "
        "WHERE NOT EXISTS "
        "(SELECT 1 FROM message_vectors v WHERE v.doc = m.doc)"
    )
    rows = missing.tuples()
    dims = index.config.dimensions
    window = index.config.batch_size * WINDOW_BATCHES
    for first in range(0, len(rows), window):
        chunk = rows[first : first + window]
        scales = array("f", [1 / 127 / math.sqrt(dims)]) * len(chunk)
        docs, keys = [row[0] for row in chunk], [row[1:] for row in chunk]
        await index.store(docs, keys, random.randbytes(len(chunk) * dims), scales.tobytes())
    count = (await index.sql.query("SELECT count(*) AS n FROM message_vectors")).scalar()
    return {"vectors": int(count), "fillMs": (time.perf_counter() - started) * 1000}


async def stored_vectors(index: VectorIndex, batch: int) -> dict[str, Any]:
    """The ``batch``-th stored batch of the live model (in key order; past the last, an
    empty one): each vector whose message is still there, as its message's text (folded,
    as search indexed it), role and session's character (what a peer filters on) and its
    int8 codes, row after row. A row's scale only stretches it, so the codes normalised
    are the vector."""
    if not isinstance(batch, int) or batch < 0:
        raise ValueError(f"batch must be a non-negative integer, got {batch!r}")
    await index.sessions.flush()
    keys = sorted(await index.storage.get_keys(index.prefix))
    if batch >= len(keys):
        return {"texts": [], "roles": [], "characterIds": [], "codes": b""}
    stored = decode_batch(await index.storage.get_item_raw(keys[batch]))
    stored_keys, codes, scales, dims = stored.keys, stored.codes, stored.scales, stored.dims
    sessions = sorted({key[0] for key in stored_keys})
    found = await index.sql.query(
        f"SELECT m.session_id, m.record, t.folded, m.role, s.character_id FROM chat_messages m "
        f"{WITH_TEXT} {SESSIONS_JOIN} WHERE m.session_id IN ({', '.join('?' * len(sessions))})",
        sessions,
    )
    about = {(sid, record): rest for sid, record, *rest in found.tuples()}
    rows = [row for row, key in enumerate(stored_keys) if tuple(key[:2]) in about]
    kept = [about[tuple(stored_keys[row][:2])] for row in rows]
    return {
        "texts": [text for text, _, _ in kept],
        "roles": [role for _, role, _ in kept],
        "characterIds": [character for _, _, character in kept],
        "codes": rows_of(codes, scales, rows, dims)[0],
    }


async def sql_round_trips(sql: SqlEngine, count: int) -> list[float]:
    """Milliseconds, from Python's side, of ``count`` trivial statements sent the way
    searches send theirs (prepared, one parameter bound, a one-row result)."""
    if not isinstance(count, int) or not 0 < count <= 10_000:
        raise ValueError(f"count must be an integer between 1 and 10,000, got {count!r}")
    times = []
    for n in range(count):
        started = time.perf_counter()
        await sql.query("SELECT ?::INTEGER AS one", [n])
        times.append((time.perf_counter() - started) * 1000)
    return times

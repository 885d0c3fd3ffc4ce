"""Semantic retrieval: message vectors (int8 codes and a scale, see quantize) held by the
scan beside DuckDB, kept up to date in the background and persisted, so nothing is
embedded twice. DuckDB's ``message_vectors`` says which messages have one, and in which
stored batch: deletes and edits reach it through the mirror, and joins read it.

Indexing never sits on the write path: a write only wakes the indexer, which embeds
new user and assistant messages in batches, adds them to the scan, and stores each
batch as one record under ``local:memory:vectors:<model key>:...`` (``vector_batches``).
At start the stored batches of the configured model are loaded back; a different model
has its own key, so two models' vectors never mix, and changing the model re-embeds in
the background.
A stored vector names its message and the text it was made from (a hash): after an edit
the old text's vector never comes back to the message, which is embedded again instead.
The top-k scan (``vector_scan``: SIMD in the browser) holds the only copy in memory;
filters become the list of docs it may return, read from DuckDB.

Background embedding stores one record per model batch (16 vectors by default), and a
start-up reads, decodes and scans each record: so small stored batches are merged into
records of thousands (``_merge_small``) as they add up, with the prune's rewrite.

Over 350 lines: loading, indexing, pruning, merging and the scan share the stored
batches' bookkeeping (``_stored``, ``_unverified``) and the indexing lock.
"""

import asyncio
import bisect
import contextlib
import math
import time
from array import array
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from itertools import islice
from typing import Any

from ..errors import InvalidValueError
from ..models import message_text
from ..sessions import SessionStore
from ..sql import SqlEngine
from ..storage import Storage
from ..storage.values import loads
from .early_vectors import EarlyVectors
from .embeddings import Embedder
from .messages import hit, messages_of
from .quantize import quantize
from .tables import TEXT_TABLE, VECTORS_SCHEMA, VECTORS_TABLE
from .vector_batches import (
    Buffer,
    StoredBatch,
    VectorKey,
    decode_batch,
    encode_batch,
    rows_of,
)
from .vector_scan import ScanFactory, VectorScan, python_vector_scan

VECTORS = "local:memory:vectors"
TABLE = VECTORS_TABLE
STAGING = "message_vectors_staging"
MATCHED = "message_vectors_matched"
EMBEDDED_ROLES = ("user", "assistant")
SETTLE_S = 0.3  # after a write, wait this long for more before embedding (batches fill up)
RETRY_S = 30.0  # after a provider failure
# Stored vectors joined to their messages per statement at start: one join for 100,000
# (each join reads every message), while the keys held in Python's heap stay bounded.
LOAD_CHUNK = 131072
WINDOW_BATCHES = 32  # pending messages read at once, then batched by length
# Embedding calls in flight: with one, the model's worker idled while each answer
# travelled back to Python and the next request came.
EMBED_AHEAD = 2
# Stored batches merged (``_merge_small``): at 100,000 vectors, 6,250 records of 16 made
# a search at start-up wait 1.65-1.9 s after ready, against 0.3-0.5 s for records of 512
# to 8,192. A live chat stores a record of one or two vectors per exchange; a backfill
# one of a whole window (512 at the default batch size), which is never merged: merging
# those deleted 38 MB, after which the next start was ready 1.25 s later.
MERGE_BELOW = 256  # vectors: a stored batch this small is merged with others
MERGED_MAX = 8192  # vectors in a merged record at most (3.2 MB at 384 dimensions)
# Small stored batches that start a merge. A live chat's 100,000 vectors (two a record,
# simulated with this plan) end as 338 records, each vector written about four times;
# with merging up to 4,096 it was 35 times, in ever larger rewrites.
MERGE_AT = 32
# A search ranks again while the scan held docs DuckDB no longer does (each time with
# those forgotten); bounded, in case a scan cannot forget.
MAX_RERANKS = 8
# The text a vector was made from, as DuckDB sees it in ``search_text`` (64 bits of the
# md5 of the folded text, the same in every version): a vector counts only for the text
# a message has now (an edit of nothing but case or accents keeps its vector).
TEXT_HASH = "left(md5(t.folded), 16)"
WITH_TEXT = f"JOIN {TEXT_TABLE} t ON t.doc = m.doc"  # where TEXT_HASH reads its text


class VectorIndex:
    def __init__(
        self,
        sessions: SessionStore,
        sql: SqlEngine,
        storage: Storage,
        embedder: Embedder,
        emit: Callable[[str, dict[str, Any]], None] | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        new_scan: ScanFactory = python_vector_scan,
    ) -> None:
        """``sleep``: the settle and retry waits, on the system's time (tests move it);
        ``new_scan``: the host's vector scan."""
        self.sessions = sessions
        self.new_scan = new_scan
        self.scan: VectorScan | None = None  # made when the vectors load
        # Searchable before the mirror: the stored vectors under provisional ids, from
        # their decode until the join relabels them (``early_vectors``).
        self.early: EarlyVectors | None = None
        self.sleep = sleep
        self.sql = sql
        self.storage = storage
        self.embedder = embedder
        self.config = embedder.config
        self.emit = emit or (lambda event, detail: None)
        self.prefix = f"{VECTORS}:{self.config.key}"
        self.state = "starting"
        self.indexed = 0
        self.pending = 0
        self.rate: float | None = None
        self.last_error: str | None = None
        self.load_ms: float | None = None
        self.query_embedding_ms: float | None = None
        self._wake = asyncio.Event()
        self._decoded = asyncio.Event()  # the first chunk of stored vectors, or a failure
        self._loaded = asyncio.Event()
        # One indexing run at a time (the background loop and indexNow share the staging
        # table and must not embed the same messages twice).
        self._indexing = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None
        self._run_began = (0.0, 0)  # when this indexing run began, and the count then
        # Stored batches by number (``message_vectors.batch``): storage key, vectors in it.
        self._stored: dict[int, tuple[str, int]] = {}
        # The docs each batch put into the scan: a prune makes the scan forget those
        # DuckDB no longer holds, so deleted vectors neither stay in memory nor crowd a
        # search's top (which would then rank again, up to MAX_RERANKS times).
        self._scanned: dict[int, array[int]] = {}
        self._batches = 0  # the last number given
        self._prune_due = True  # stored batches may hold vectors of deleted or edited messages
        # Stored batches without the text each vector was made from (older versions): taken
        # as they are, then stored again with it, so later edits are caught in them too.
        self._unverified: set[int] = set()

    def start(self) -> None:
        self._task = asyncio.get_running_loop().create_task(self._run())

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError, Exception):
                await self._task
            self._task = None

    def notify(self, deleted: bool = False) -> None:
        """A write happened: there may be something new to embed, or vectors to forget."""
        self._prune_due = self._prune_due or deleted
        self._wake.set()

    async def _run(self) -> None:
        try:
            await self._load()
        except Exception as error:
            self._retire_early()  # searches wait for the load, and get its error
            self._fail(error)
            return
        finally:
            self._decoded.set()
            self._loaded.set()
        while True:
            try:
                if self._prune_due:  # first: deletes are pruned even when embedding fails
                    await self._prune()
                if self.config.background_indexing:
                    await self._index_pending()
                else:
                    await self._count_pending()
                if self._prune_due:  # an edited message embedded again
                    await self._prune()
                self.state = "ready"
                self._progress()
                await self._wake.wait()
                self._wake.clear()
                await self.sleep(SETTLE_S)
            except Exception as error:  # a provider or storage failure (or a bug): shown
                self._fail(error)  # in the status, and tried again later
                await self.sleep(RETRY_S)

    def _fail(self, error: Exception) -> None:
        self.state = "error"
        self.last_error = _error_text(error)
        self._progress()

    async def _load(self) -> None:
        """The vectors stored for this model, back into DuckDB (orphans dropped). Started
        with the mirror's load: the stored batches are read and decoded (storage alone)
        while it runs, then joined to its messages once it is there (``sessions.mirrored``)."""
        self.state = "loading"
        started = time.perf_counter()
        dims = self.config.dimensions
        self.scan = await self.new_scan(dims)
        stored = iter(await self.storage.get_all_raw_native(self.prefix))
        chunk = self._decode_chunk(stored)
        if len(chunk.records) < LOAD_CHUNK:  # every stored vector is in it
            self._search_early(chunk)
        self._decoded.set()
        read_ms = (time.perf_counter() - started) * 1000
        await self.sessions.mirrored.wait()
        joined = time.perf_counter()
        await self.sql.execute(VECTORS_SCHEMA)
        await self.sessions.flush()
        while chunk.records:
            await self._insert(chunk)  # the first relabels the early search's ids
            chunk = self._decode_chunk(stored)
        self._retire_early()  # none was stored: the scan fills from DuckDB's docs now
        self.indexed = int((await self.sql.query(f"SELECT count(*) AS n FROM {TABLE}")).scalar())
        # The vectors' own work: reading them, and their join once the mirror was there.
        self.load_ms = round(read_ms + (time.perf_counter() - joined) * 1000, 1)

    def _decode_chunk(self, stored: Iterator[tuple[str, Any]]) -> "_Chunk":
        """The next stored records of this model's dimensions, until a chunk is full (a
        join for thousands of small batches at once): only the keys come into Python's
        heap (it never gives memory back); the codes stay views of the stored records,
        on their way to the scan."""
        chunk = _Chunk()
        for key, data in stored:
            batch = decode_batch(data)
            if batch.dims == self.config.dimensions:
                number = self._number()
                self._stored[number] = (key, len(batch))
                if batch.hashes is None:
                    self._unverified.add(number)
                chunk.add(number, batch)
            if len(chunk.records) >= LOAD_CHUNK:
                break
        return chunk

    def _search_early(self, chunk: "_Chunk") -> None:
        """The chunk's codes into the scan now, each under its row in the chunk, so
        semantic search answers before the mirror is there; the join relabels them."""
        assert self.scan is not None
        first = 0
        for _, codes, scales in chunk.parts:
            count = len(scales) // 4
            self.scan.add(array("i", range(first, first + count)), codes, scales)
            first += count
        self.early = EarlyVectors(
            self.scan, self.storage, chunk.session_ids, chunk.records, chunk.hashes
        )

    async def early_vectors(self) -> EarlyVectors | None:
        """Once the stored vectors are read: the search over them before the mirror, if
        it is still on (None once they are loaded)."""
        await self._decoded.wait()
        return self.early

    def _retire_early(self) -> "EarlyVectors | None":
        early, self.early = self.early, None
        if early is not None:
            early.retired = True
        return early

    def _number(self) -> int:
        """The next stored batch's number (unique in this tab, so its keys are too)."""
        self._batches += 1
        return self._batches

    async def _insert(self, chunk: "_Chunk") -> None:
        """Stored vectors by (session id, record, text) to their messages' docs, in the
        table and the scan: messages deleted before a reload find no row to join, and
        messages edited no row with their text, so they are embedded again. Only the keys
        go to DuckDB; the codes (``chunk.parts``: codes and scales of consecutive keys,
        one part per stored batch) go to the scan."""
        columns = {
            "session_id": chunk.session_ids,
            "record": chunk.records,
            "text_hash": chunk.hashes,
            "batch": array("i", chunk.batches),
            "row": array("i", range(len(chunk.records))),
        }
        # A new staging table each time, dropped after: an in-memory DuckDB table keeps the
        # memory of deleted rows.
        await self.sql.execute(
            f"CREATE OR REPLACE TABLE {STAGING} (session_id VARCHAR, record VARCHAR, "
            "text_hash VARCHAR, batch INTEGER, row INTEGER)"
        )
        await self.sql.insert_columns(STAGING, columns)
        joined = (
            f"FROM {STAGING} v JOIN chat_messages m "
            f"ON m.session_id = v.session_id AND m.record = v.record {WITH_TEXT}"
        )
        # Joined once (the costly part: strings, and the text's hash); one row per doc, in
        # case two tabs stored the same message's vector and both batches are here.
        await self.sql.execute(
            f"CREATE OR REPLACE TABLE {MATCHED} AS SELECT m.doc, v.row, v.batch {joined} "
            f"WHERE (v.text_hash = '' OR v.text_hash = {TEXT_HASH}) "
            f"AND NOT EXISTS (SELECT 1 FROM {TABLE} t WHERE t.doc = m.doc) "
            "QUALIFY row_number() OVER (PARTITION BY m.doc ORDER BY v.row) = 1"
        )
        # Messages deleted or edited since the join (a write may come between two
        # statements) are not there any more, and get no row.
        await self.sql.execute(
            f"INSERT INTO {TABLE} SELECT doc, batch FROM {MATCHED} "
            "WHERE doc IN (SELECT doc FROM chat_messages)"
        )
        # The rows that went in (each insert's batch numbers are its own), into the scan.
        inserted = await self.sql.query(
            f"SELECT v.doc, v.row FROM {MATCHED} v "
            f"JOIN {TABLE} kept ON kept.doc = v.doc AND kept.batch = v.batch ORDER BY v.row"
        )
        await self.sql.execute(f"DROP TABLE {STAGING}")
        await self.sql.execute(f"DROP TABLE {MATCHED}")
        docs, rows = inserted.column("doc"), inserted.column("row")
        self._scan_add(chunk, array("i", docs), array("i", rows))

    def _scan_add(self, chunk: "_Chunk", docs: array, rows: array) -> None:
        """The codes of ``chunk``'s ``rows`` (ascending) into the scan, as ``docs``; a
        chunk searched early is in it already, and only relabelled."""
        assert self.scan is not None  # made by _load, before any insert
        early = self._retire_early()
        first = taken = 0  # this part's first key, and its first row in ``rows``
        for batch, codes, scales in chunk.parts:
            count = len(scales) // 4
            end = bisect.bisect_left(rows, first + count, taken)
            if end > taken:
                self._scanned.setdefault(batch, array("i")).extend(docs[taken:end])
            if early is None and end - taken == count:  # all of it: the part as it is
                self.scan.add(docs[taken:end], codes, scales)
            elif early is None and end > taken:
                picked = [row - first for row in rows[taken:end]]
                dims = self.config.dimensions
                self.scan.add(docs[taken:end], *rows_of(codes, scales, picked, dims))
            first, taken = first + count, end
        if early is not None:  # unmatched rows out first: their numbers may be docs now
            matched = bytearray(len(chunk.records))
            for row in rows:
                matched[row] = 1
            self.scan.remove([row for row, found in enumerate(matched) if not found])
            self.scan.relabel(rows, docs)

    _PENDING = f"""FROM chat_messages m {WITH_TEXT}
        WHERE t.folded <> '' AND m.role IN {EMBEDDED_ROLES}
        AND NOT EXISTS (SELECT 1 FROM {TABLE} v WHERE v.doc = m.doc)"""

    async def index_now(self) -> None:
        await self._loaded.wait()
        try:
            await self._index_pending()
        except Exception as error:  # the caller gets it, and the status keeps it
            self._fail(error)
            raise
        self.state = "ready"
        self._progress()

    async def _index_pending(self) -> None:
        async with self._indexing:
            await self._embed_pending()

    async def _count_pending(self) -> None:
        await self.sessions.flush()
        count = await self.sql.query(f"SELECT count(*) AS n {self._PENDING}")
        self.pending = int(count.scalar())

    async def _embed_pending(self) -> None:
        await self._count_pending()
        if not self.pending:
            return
        self._prune_due = True  # an edited message among them: its old vector is stored
        self.state = "indexing"
        self._progress()
        self._run_began = (time.perf_counter(), self.indexed)
        while True:
            await self.sessions.flush()
            pending = await self.sql.query(
                f"SELECT m.doc, m.session_id, m.record, {TEXT_HASH} AS text_hash, m.body "
                f"{self._PENDING} "
                "ORDER BY m.created_at DESC LIMIT ?",
                [self.config.batch_size * WINDOW_BATCHES],
            )
            if not len(pending):
                break
            # The words as written (the folded column drops accents some languages need).
            # Batches of similar lengths: a batch is padded to its longest text.
            rows = [
                (doc, (sid, record, text_hash), message_text(loads(body)))
                for doc, sid, record, text_hash, body in pending.tuples()
            ]
            rows.sort(key=lambda row: len(row[2]))
            # The window's vectors are kept as one record once it is embedded (each is
            # searchable as soon as its model batch is). A record per model batch made a
            # backfill of 100,000 store 6,250 records, then merge them away, which slowed
            # the next start by 1.25 s. A crash loses at most a window's vectors, embedded
            # again at the next start.
            number, window = self._number(), _Window()
            try:
                await self._embed_window(number, rows, window)
            finally:
                if window.keys:
                    await self._keep(number, window.keys, window.codes, window.scales)

    async def _embed_window(
        self, number: int, rows: list[tuple[int, VectorKey, str]], window: "_Window"
    ) -> None:
        """``rows`` (doc, key, text) embedded in model batches, each into DuckDB and the
        scan as stored batch ``number`` once it is back, and into ``window``."""
        size = self.config.batch_size
        batches = [rows[first : first + size] for first in range(0, len(rows), size)]
        # The model (in a worker of its own, or a provider) always has the next batch
        # waiting: EMBED_AHEAD calls in flight, and indexing one batch overlaps embedding
        # the next ones.
        calls = (self.embedder.embed([text for *_, text in batch]) for batch in batches)
        ahead = deque(asyncio.ensure_future(call) for call in islice(calls, EMBED_AHEAD))
        indexing: asyncio.Task[None] | None = None
        try:
            for batch in batches:
                vectors = await ahead.popleft()
                ahead.extend(asyncio.ensure_future(call) for call in islice(calls, 1))
                if indexing is not None:
                    await indexing
                docs, keys, _ = zip(*batch, strict=True)
                codes, scales = quantize(vectors, self.config.dimensions)
                window.add(keys, codes, scales)
                indexing = asyncio.ensure_future(
                    self._index_embedded(number, docs, keys, codes, scales)
                )
        finally:
            for call in ahead:  # after a failure: not wanted, and not left unread
                call.cancel()
            await asyncio.gather(*ahead, return_exceptions=True)
            calls.close()
            if indexing is not None:
                await indexing

    async def _index_embedded(
        self, number: int, docs: Sequence[int], keys: Sequence[VectorKey], codes: bytes,
        scales: bytes,
    ) -> None:  # fmt: skip
        await self._index(number, docs, keys, codes, scales)
        began, indexed_before = self._run_began
        self.rate = round((self.indexed - indexed_before) / (time.perf_counter() - began), 1)
        self._progress()

    async def store(
        self, docs: Sequence[int], keys: Sequence[VectorKey], codes: bytes, scales: bytes
    ) -> None:
        """Quantized vectors of the messages ``docs`` (whose keys are (session id, record,
        TEXT_HASH)): into DuckDB and the scan, and kept as one record. A message deleted or
        edited since its text was read is left out, and an edited one stays pending."""
        number = self._number()
        await self._index(number, docs, keys, codes, scales)
        await self._keep(number, keys, codes, scales)

    async def _index(
        self, number: int, docs: Sequence[int], keys: Sequence[VectorKey], codes: bytes,
        scales: bytes,
    ) -> None:  # fmt: skip
        """The vectors into DuckDB and the scan, as stored batch ``number``."""
        await self._loaded.wait()  # the tables exist, and stored vectors are back
        chunk = _Chunk()
        chunk.add(number, _batch_of(keys, codes, scales, self.config.dimensions))
        # One statement, by doc (search_text's index). The seven of a load's join (a staging
        # table joined to every message) took 30-140 ms a batch in the browser, on the CPU
        # the model's worker needs, and delayed the last batch's end. The mirror deletes
        # a message's search_text row before its vector's row, so whenever this runs, no
        # vector's row outlives its message.
        listed = ", ".join("(?, ?)" for _ in docs)
        params = [value for doc, key in zip(docs, keys, strict=True) for value in (doc, key[2])]
        inserted = await self.sql.query(
            f"INSERT INTO {TABLE} SELECT v.doc, {number} FROM (VALUES {listed}) v(doc, hash) "
            f"JOIN {TEXT_TABLE} t ON t.doc = v.doc WHERE {TEXT_HASH} = v.hash "
            f"AND NOT EXISTS (SELECT 1 FROM {TABLE} x WHERE x.doc = v.doc) RETURNING doc",
            params,
        )
        row_of = {doc: row for row, doc in enumerate(docs)}
        picked = sorted((row_of[doc], doc) for doc in inserted.column("doc"))
        self._scan_add(
            chunk, array("i", [doc for _, doc in picked]), array("i", [row for row, _ in picked])
        )
        self.indexed += len(keys)
        self.pending = max(self.pending - len(keys), 0)

    async def _keep(
        self, number: int, keys: Sequence[VectorKey], codes: bytes, scales: bytes
    ) -> None:
        """Stored batch ``number``, indexed already, as one record; then small ones merged."""
        key = self._key(number)
        self._stored[number] = (key, len(keys))
        await self.storage.set_item_raw(
            key, encode_batch(keys, codes, scales, self.config.dimensions)
        )
        await self._merge_small()

    def _key(self, batch: int) -> str:
        """A new stored batch's key: its time, this tab's writer id, and its number."""
        return f"{self.prefix}:{self.sessions.clock():013d}-{self.sessions.writer_id}-{batch:06d}"

    async def _prune(self) -> None:
        """Stored batches forget the vectors of deleted messages and of edited texts (an
        embedding gives away much of its text), and the duplicates two tabs may both
        have stored; then small ones are merged."""
        async with self._indexing:
            self._prune_due = False
            await self.sessions.flush()
            live = await self.sql.query(f"SELECT batch, count(*) AS n FROM {TABLE} GROUP BY 1")
            counts = dict(live.tuples())
            for batch, (_, stored) in list(self._stored.items()):
                if counts.get(batch, 0) < stored or batch in self._unverified:
                    await self._rewrite([batch])
            self.indexed = int(sum(counts.values()))
            await self._merge_small()

    async def _merge_small(self) -> None:
        """Once MERGE_AT stored batches hold fewer than MERGE_BELOW vectors each, they are
        stored again as records of up to MERGED_MAX (batches of older versions are
        rewritten by the prune first)."""
        sizes = {b: n for b, (_, n) in self._stored.items() if b not in self._unverified}
        plan = merge_plan(sizes)
        if plan:
            await self.sessions.flush()
        for group in plan:
            await self._rewrite(group)

    async def _rewrite(self, batches: Sequence[int]) -> None:
        """Stored batches again as one new record (a prune's rewrite of one, a merge of
        several), with only the vectors DuckDB still holds from them, each with the text it
        stands for. The new record is written and the old ones removed in one transaction:
        a crash leaves one or the other. A record another tab removed meanwhile is in that
        tab's new record; one it rewrote has no vector this copy lacks."""
        listed = ", ".join("?" for _ in batches)
        live = (
            await self.sql.query(
                f"SELECT v.batch, m.session_id, m.record, {TEXT_HASH}, v.doc FROM {TABLE} v "
                f"JOIN chat_messages m ON m.doc = v.doc {WITH_TEXT} WHERE v.batch IN ({listed})",
                list(batches),
            )
        ).tuples()
        texts = {(batch, sid, record): text for batch, sid, record, text, _ in live}
        dims = self.config.dimensions
        keys: list[VectorKey] = []
        codes: list[bytes] = []
        scales: list[bytes] = []
        olds = [self._stored[batch][0] for batch in batches]
        for batch, old in zip(batches, olds, strict=True):
            data = await self.storage.get_item_raw(old)
            stored = decode_batch(data) if data else _batch_of([], b"", b"", dims)
            kept = []
            for row, (sid, record, *_) in enumerate(stored.keys):
                text = texts.pop((batch, sid, record), None)  # each live vector once
                if text is not None:
                    kept.append(row)
                    keys.append((sid, record, text))
            kept_codes, kept_scales = rows_of(stored.codes, stored.scales, kept, dims)
            codes.append(kept_codes)
            scales.append(kept_scales)
        number = self._number()
        new = self._key(number)
        record = encode_batch(keys, b"".join(codes), b"".join(scales), dims)
        await self.storage.write_batch(raw_sets=[(new, record)] if keys else [], removes=olds)
        for batch in batches:
            del self._stored[batch]
        if keys:
            self._stored[number] = (new, len(keys))
        self._unverified.difference_update(batches)
        self._forget_in_scan(batches, number, {doc for *_, doc in live})
        await self.sql.execute(
            f"UPDATE {TABLE} SET batch = ? WHERE batch IN ({listed})", [number, *batches]
        )

    def _forget_in_scan(self, batches: Sequence[int], number: int, live: set[int]) -> None:
        """The scan keeps, of the docs ``batches`` put in it, only those still ``live``,
        which batch ``number`` holds from now on."""
        scanned = array("i")
        for batch in batches:
            scanned.extend(self._scanned.pop(batch, array("i")))
        assert self.scan is not None  # batches exist only after the load made it
        self.scan.remove([doc for doc in scanned if doc not in live])
        if live:
            self._scanned[number] = array("i", [doc for doc in scanned if doc in live])

    def _progress(self) -> None:
        self.emit("embedding-progress", self.status())

    async def embed_query(self, text: str) -> list[float]:
        started = time.perf_counter()
        try:
            vectors = await self.embedder.embed([text])
        except Exception as error:  # the search rejects; the status tells what failed
            self.last_error = _error_text(error)
            self._progress()
            raise
        vector = array("f", vectors).tolist()
        self.query_embedding_ms = round((time.perf_counter() - started) * 1000, 1)
        return vector

    async def nearest(
        self, query: str, allow: Sequence[int] | None, limit: int, early: EarlyVectors | None
    ) -> list[dict[str, Any]]:
        return await self.nearest_to(await self.embed_query(query), allow, limit, early)

    async def nearest_to(
        self,
        vector: list[float],
        allow: Sequence[int] | None,
        limit: int,
        early: EarlyVectors | None = None,
    ) -> list[dict[str, Any]]:
        """Top ``limit`` by inner product with the query, normalised here (the stored
        vectors are unit length, so that is cosine similarity), among the docs in
        ``allow`` when it is given (``early``'s provisional ids, with it). The scan ranks;
        DuckDB reads the winners' messages in one statement that also drops a doc whose
        vector or message is gone (a delete or an edit since): the scan forgets those,
        and ranks again."""
        dims = self.config.dimensions
        if len(vector) != dims:
            raise InvalidValueError(
                f"the query vector has {len(vector)} dimensions; {self.config.model!r} has {dims}"
            )
        norm = math.sqrt(sum(x * x for x in vector)) or 1.0
        query = [x / norm for x in vector]
        if early is not None:
            return await early.nearest(query, allow, limit)
        await self._loaded.wait()
        if self.scan is None:  # the load failed before it began
            raise InvalidValueError(
                f"semantic search is unavailable: the vectors did not load ({self.last_error})"
            )
        for _ in range(MAX_RERANKS):
            ranked = self.scan.top_k(query, limit, allow)
            found = await self._messages_of(ranked)
            if len(found) == len(ranked):
                break
            present = {hit["doc"] for hit in found}
            self.scan.remove([doc for doc, _ in ranked if doc not in present])
        return found

    async def _messages_of(self, ranked: list[tuple[int, float]]) -> list[dict[str, Any]]:
        """The ranked docs' messages, best first, in one statement; a doc whose vector or
        message DuckDB no longer holds is left out."""
        found = await messages_of(self.sql, [doc for doc, _ in ranked], also_in=TABLE)
        return [hit(*found[doc], score, doc=doc) for doc, score in ranked if doc in found]

    def status(self) -> dict[str, Any]:
        return {
            **self.config.public(),
            "state": self.state,
            "indexed": self.indexed,
            "pending": self.pending,
            "ratePerSecond": self.rate,
            "loadMs": self.load_ms,
            "queryEmbeddingMs": self.query_embedding_ms,
            # Semantic search answers: from the stored vectors before the mirror is
            # there, or once they are loaded.
            "searchable": self.early is not None or self.load_ms is not None,
            "lastError": self.last_error,
        }


def _error_text(error: Exception) -> str:
    return f"{type(error).__name__}: {error}"[:300]


class _Window:
    """The model batches of one embedding window, kept as one record once it is done."""

    def __init__(self) -> None:
        self.keys: list[VectorKey] = []
        self._codes: list[bytes] = []
        self._scales: list[bytes] = []

    def add(self, keys: Sequence[VectorKey], codes: bytes, scales: bytes) -> None:
        self.keys += keys
        self._codes.append(codes)
        self._scales.append(scales)

    @property
    def codes(self) -> bytes:
        return b"".join(self._codes)

    @property
    def scales(self) -> bytes:
        return b"".join(self._scales)


class _Chunk:
    """Stored batches' keys by column, and their codes' views, to join in one go."""

    def __init__(self) -> None:
        self.session_ids: list[str] = []
        self.records: list[str] = []
        self.hashes: list[str] = []  # "" where a batch kept none
        self.batches: list[int] = []
        self.parts: list[tuple[int, Buffer, Buffer]] = []  # (batch, codes, scales)

    def add(self, batch: int, stored: StoredBatch) -> None:
        self.session_ids += stored.session_ids
        self.records += stored.records
        self.hashes += stored.hashes if stored.hashes is not None else [""] * len(stored)
        self.batches += [batch] * len(stored)
        self.parts.append((batch, stored.codes, stored.scales))


def merge_plan(sizes: dict[int, int]) -> list[list[int]]:
    """The stored batches (number: vectors) to merge now, each group into one record:
    none until MERGE_AT of them are small."""
    small = sorted((count, batch) for batch, count in sizes.items() if count < MERGE_BELOW)
    return merge_groups(small, MERGED_MAX) if len(small) >= MERGE_AT else []


def merge_groups(small: Sequence[tuple[int, int]], most: int) -> list[list[int]]:
    """Stored batches, given as (vectors, batch) from the smallest, in groups of two or
    more holding ``most`` vectors at most."""
    groups: list[list[int]] = [[]]
    total = 0
    for count, batch in small:
        if total + count > most and groups[-1]:
            groups.append([])
            total = 0
        groups[-1].append(batch)
        total += count
    return [group for group in groups if len(group) > 1]


def _batch_of(keys: Sequence[VectorKey], codes: bytes, scales: bytes, dims: int) -> StoredBatch:
    """Keys with their codes, as a stored batch holds them."""
    return StoredBatch(
        [key[0] for key in keys], [key[1] for key in keys], [key[2] for key in keys],
        codes, scales, dims,
    )  # fmt: skip

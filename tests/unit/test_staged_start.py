"""Start-up in two stages (``MemorySystem.open`` without ``wait_for_load``): the sessions
are read from the durable store first, and the methods marked ``before_load`` answer
while DuckDB is still being filled; every other method waits for that, and fails with its error if it fails. DuckDB
here is the real one, its statements held back until the test lets them run."""

import asyncio
import contextlib

import duckdb
import pytest

from airi_memory.api import HostPorts
from airi_memory.api_methods import BEFORE_LOAD
from airi_memory.native.host import InMemory, open_native_system
from airi_memory.native.sql import NativeDuckDb
from airi_memory.search import semantic
from airi_memory.sessions import restore
from airi_memory.sessions.reader import RecordReader
from airi_memory.storage import Storage
from contract.search_contract import settled, toy_vectors

QUIET = {"userId": "u", "retention": {"enabled": False}}

# Arguments for every method that answers before the load, and the error name expected
# (None: it succeeds). The test fails if the table and BEFORE_LOAD part ways.
EARLY_CALLS: dict[str, tuple[list, str | None]] = {
    "info": ([], None),
    "ping": ([], None),
    "schemas": ([], None),
    "storage.setItem": (["local:app:1", {"x": 1}], None),
    "storage.setItemRaw": (["local:app:2", "raw"], None),
    "storage.setItems": ([[{"key": "local:app:3", "value": 3}]], None),
    "storage.getItem": (["local:app:1"], None),
    "storage.getItemRaw": (["local:app:2"], None),
    "storage.getItems": ([["local:app:1"]], None),
    "storage.hasItem": (["local:app:1"], None),
    "storage.getKeys": (["local:app"], None),
    "storage.removeItem": (["local:app:3"], None),
    "storage.clear": (["local:app"], None),
    "storage.getMounts": ([], None),
    "sessions.getSession": (["missing"], None),
    "sessions.listSessions": ([], None),
    "sessions.getAllSessions": ([], None),
    "sessions.getActiveSessionId": ([], None),
    "context.ingestContext": ([{"sourceType": "t", "sourceId": "i", "content": {"a": 1}}], None),
    "context.getContextsSnapshot": ([], None),
    "context.getContexts": ([], None),
    "context.removeContext": (["t"], None),
    "context.clearContexts": ([], None),
    "context.registerProvider": (["weather"], "InvalidValueError"),  # no app functions here
    "context.unregisterProvider": (["weather"], None),
    "context.setUserProfile": ([{"name": "Ada"}], None),
    "context.getUserProfile": ([], None),
    "context.setModuleState": (["mood", {"level": 1}], None),
    "countTokens": ([["hello there"]], None),
    "embeddingsStatus": ([], None),
    # Early only as a semantic search over stored vectors (see below); none here.
    "search": ([{"query": "hello", "strategy": "semantic"}], "InvalidValueError"),
    "tokenStats": ([], None),
}


@pytest.fixture
async def stored():
    """A store holding one session with one message, and its id."""
    place = InMemory()
    first = await open_native_system(place, QUIET)
    sid = (await first.sessions.create_session({"title": "kept"}))["sessionId"]
    await first.sessions.add_message(sid, {"role": "user", "content": "hello"})
    await first.close()
    return place, sid


@pytest.fixture
def held_sql(monkeypatch):
    """DuckDB's statements wait until the event is set (as DuckDB-WASM's start makes them)."""
    gate = asyncio.Event()
    execute = NativeDuckDb.execute

    async def held(self, *args):
        await gate.wait()
        return await execute(self, *args)

    monkeypatch.setattr(NativeDuckDb, "execute", held)
    return gate


async def test_sessions_and_early_methods_answer_before_the_load_and_the_rest_wait(
    stored, held_sql
):
    place, sid = stored
    system = await open_native_system(place, QUIET, wait_for_load=False)
    assert set(EARLY_CALLS) | {"close"} == BEFORE_LOAD
    try:
        listed = await system.dispatch("sessions.listSessions", [])
        assert [s["title"] for s in listed["value"]] == ["kept"]
        assert (await system.dispatch("sessions.getSession", [sid]))["value"]["title"] == "kept"
        for method, (args, error) in EARLY_CALLS.items():
            reply = await asyncio.wait_for(system.dispatch(method, args), 5)
            assert reply["ok"] is (error is None), (method, reply)
            assert error is None or reply["error"]["name"] == error, (method, reply)
        assert (await system.dispatch("info", []))["value"]["versions"]["duckdb"] is None
        messages = asyncio.ensure_future(system.dispatch("sessions.loadSessionMessages", [sid]))
        write = asyncio.ensure_future(
            system.dispatch("sessions.addMessage", [sid, {"role": "user", "content": "after"}])
        )
        await asyncio.sleep(0.1)
        assert not messages.done() and not write.done()
        held_sql.set()
        assert [m["content"] for m in (await messages)["value"]] == ["hello"]
        assert (await write)["value"]["content"] == "after"
        info = await system.loaded()
        assert info["versions"]["duckdb"] == duckdb.__version__
        reread = await system.dispatch("sessions.loadSessionMessages", [sid])
        assert [m["content"] for m in reread["value"]] == ["hello", "after"]
    finally:
        held_sql.set()
        await system.close()


@pytest.fixture
def break_duckdb(monkeypatch):
    """Called: every DuckDB statement from then on fails, as when DuckDB cannot start."""

    async def broken(self, *args):
        raise RuntimeError("DuckDB is not there")

    return lambda: monkeypatch.setattr(NativeDuckDb, "execute", broken)


async def test_a_load_that_fails_fails_the_waiting_calls_not_the_sessions(stored, break_duckdb):
    place, sid = stored
    break_duckdb()
    system = await open_native_system(place, QUIET, wait_for_load=False)
    try:
        messages = await system.dispatch("sessions.loadSessionMessages", [sid])
        assert messages["ok"] is False
        assert messages["error"] == {
            "name": "RuntimeError", "message": "DuckDB is not there", "detail": messages["error"]["detail"],
        }  # fmt: skip
        with pytest.raises(RuntimeError, match="DuckDB is not there"):
            await system.loaded()
        listed = await system.dispatch("sessions.listSessions", [])
        assert [s["title"] for s in listed["value"]] == ["kept"]
    finally:
        await system.close()


async def test_closing_during_the_load_ends_it(stored, held_sql):
    place, _ = stored
    system = await open_native_system(place, QUIET, wait_for_load=False)
    await asyncio.wait_for(system.close(), 5)  # the held load does not hold the close
    assert system._loading is not None and system._loading.cancelled()


async def test_once_loaded_a_call_does_no_start_up_work(stored):
    """Waiting for the load costs nothing once it is done: a call used to run ``info()``
    (a storage read and DuckDB's version) on every dispatch."""
    place, sid = stored
    system = await open_native_system(place, QUIET)
    asked: list[str] = []

    async def counted_info():
        asked.append("info")
        return {}

    system.info = counted_info
    try:
        for _ in range(3):
            reply = await system.dispatch("sessions.latestMessages", [sid, 5])
            assert [m["content"] for m in reply["value"]] == ["hello"]
        assert asked == []
        await system.loaded()
        assert asked == ["info"]
    finally:
        await system.close()


TEXTS = ("frogs sing at night", "the garden needs sun", "tea with lemon")


@pytest.fixture
async def vector_store(monkeypatch):
    """A store with the toy model's vectors of ``TEXTS``, each in a stored batch of its
    own; the options that open it with that model."""
    import airi_memory.native.host as native_host

    async def call_app(name, payload):
        return toy_vectors(payload["texts"], 48)

    monkeypatch.setattr(
        native_host, "HostPorts", lambda **ports: HostPorts(**ports, call_app=call_app)
    )
    options = {**QUIET, "embeddings": {"provider": "custom", "model": "toy", "dimensions": 48}}
    place = InMemory()
    first = await open_native_system(place, options)
    sid = (await first.sessions.create_session({}))["sessionId"]
    for indexed, text in enumerate(TEXTS, 1):
        await first.sessions.add_message(sid, {"role": "user", "content": text})
        assert (await settled(first, indexed=indexed))["indexed"] == indexed
    await first.close()
    return place, options


async def test_stored_vectors_are_read_while_the_mirror_loads(vector_store, monkeypatch, held_sql):
    """The vector index starts with the mirror's load: its stored batches are read from
    storage and decoded while DuckDB is still held, and joined to the messages once it is
    there."""
    place, options = vector_store
    read_while_held: list[bool] = []
    decoded_while_held: list[bool] = []
    get_all, decode = Storage.get_all_raw_native, semantic.decode_batch

    async def watched(self, base):
        if base.startswith("local:memory:vectors"):
            read_while_held.append(not held_sql.is_set())
        return await get_all(self, base)

    def watched_decode(data):
        decoded_while_held.append(not held_sql.is_set())
        return decode(data)

    monkeypatch.setattr(Storage, "get_all_raw_native", watched)
    monkeypatch.setattr(semantic, "decode_batch", watched_decode)
    system = await open_native_system(place, options, wait_for_load=False)
    try:
        for _ in range(100):
            if len(decoded_while_held) == len(TEXTS):
                break
            await asyncio.sleep(0.01)
        assert read_while_held == [True]
        assert decoded_while_held == [True] * len(TEXTS)
        assert not system.sessions.mirrored.is_set()
        held_sql.set()
        await system.loaded()
        status = await settled(system, indexed=3)
        assert (status["indexed"], status["pending"]) == (3, 0)
        [query] = toy_vectors(["the garden needs sun"], 48)
        found = await system.searcher.search(
            {"query": "", "vector": query, "strategy": "semantic", "limit": 1}
        )
        assert [hit["message"]["content"] for hit in found["results"]] == ["the garden needs sun"]
    finally:
        held_sql.set()
        await system.close()


async def test_stored_vectors_are_decoded_a_chunk_at_a_time(vector_store, monkeypatch):
    """Read early, and decoded a chunk at a time, each joined before the next is decoded:
    the keys in Python's heap stay bounded by LOAD_CHUNK, however many vectors are
    stored."""
    place, options = vector_store
    steps: list[str] = []
    decode, insert = semantic.decode_batch, semantic.VectorIndex._insert

    def counted_decode(data):
        steps.append("decode")
        return decode(data)

    async def counted_insert(self, chunk):
        steps.append(f"join {len(chunk.records)}")
        await insert(self, chunk)

    monkeypatch.setattr(semantic, "LOAD_CHUNK", 1)
    monkeypatch.setattr(semantic, "decode_batch", counted_decode)
    monkeypatch.setattr(semantic.VectorIndex, "_insert", counted_insert)
    system = await open_native_system(place, options)
    try:
        assert (await settled(system, indexed=3))["indexed"] == 3
        assert steps == ["decode", "join 1"] * 3
    finally:
        await system.close()


@pytest.fixture
async def snapshotted():
    """A store whose two messages are in a snapshot."""
    place = InMemory()
    first = await open_native_system(place, QUIET)
    sid = (await first.sessions.create_session({"title": "kept"}))["sessionId"]
    for text in ("frogs sing at night", "the garden needs sun"):
        await first.sessions.add_message(sid, {"role": "user", "content": text})
    await first.sessions.snapshot()
    await first.close()
    return place


async def test_the_term_index_is_restored_while_duckdb_starts(snapshotted, held_sql):
    """A start from a snapshot fills the term index from it before DuckDB answers (a
    start-up otherwise idles while DuckDB-WASM starts), and searches with it once loaded."""
    place = snapshotted
    system = await open_native_system(place, QUIET, wait_for_load=False)
    try:
        for _ in range(100):
            if len(system.searcher.terms):
                break
            await asyncio.sleep(0.01)
        assert len(system.searcher.terms) == 2 and not held_sql.is_set()
        held_sql.set()
        await system.loaded()
        found = await system.searcher.search({"query": "garden", "strategy": "keyword"})
        assert [hit["message"]["content"] for hit in found["results"]] == ["the garden needs sun"]
    finally:
        held_sql.set()
        await system.close()


async def test_a_start_that_analyses_every_message_lets_early_calls_in(monkeypatch):
    """Without a snapshot, start-up analyses every message's text (9 s at 100,000 in the
    browser): calls that need no mirror are answered in between, not after it all."""
    place = InMemory()
    first = await open_native_system(place, QUIET)
    sid = (await first.sessions.create_session({"title": "kept"}))["sessionId"]
    for n in range(30):
        await first.sessions.add_message(sid, {"role": "user", "content": f"turn {n}"})
    await first.close()
    built: list[str] = []
    message_row = RecordReader.message_row

    def counted(self, key, text):
        built.append(key)
        return message_row(self, key, text)

    monkeypatch.setattr(RecordReader, "message_row", counted)
    monkeypatch.setattr(restore, "TURN_S", 0)  # a turn after every message
    system = await open_native_system(place, QUIET, wait_for_load=False)
    try:
        for _ in range(10_000):
            if built:
                break
            await asyncio.sleep(0)
        listed = await system.dispatch("sessions.listSessions", [])
        answered_after = len(built)
        assert [s["title"] for s in listed["value"]] == ["kept"]
        assert 0 < answered_after < 30
        await system.loaded()
        messages = await system.sessions.load_session_messages(sid)
        assert [m["content"] for m in messages] == [f"turn {n}" for n in range(30)]
    finally:
        await system.close()


def _toy_query(text: str) -> list[float]:
    [vector] = toy_vectors([text], 48)
    return vector


async def _semantic(system, text: str, **extra) -> list[str]:
    reply = await asyncio.wait_for(
        system.dispatch(
            "search", [{"query": "", "vector": _toy_query(text), "strategy": "semantic", **extra}]
        ),
        5,
    )
    assert reply["ok"], reply
    return [hit["message"]["content"] for hit in reply["value"]["results"]]


@contextlib.asynccontextmanager
async def reopened_held(place, options, held_sql):
    """The store reopened (not waiting for the load) with DuckDB's statements held, until
    the test lets them run; closed at the end."""
    held_sql.clear()
    system = await open_native_system(place, options, wait_for_load=False)
    try:
        yield system
    finally:
        held_sql.set()
        await system.close()


async def test_a_semantic_search_answers_from_the_stored_vectors_before_the_load(
    vector_store, held_sql
):
    """Semantic search needs no mirror: the stored vectors go into the scan under
    provisional ids, and the winners are read from their records. Other strategies, and
    filters the records' sessions cannot answer, wait for the load; once it is there the
    ids are the mirror's docs and the same search answers the same."""
    place, options = vector_store
    async with reopened_held(place, options, held_sql) as system:
        assert await _semantic(system, "the garden needs sun", limit=1) == ["the garden needs sun"]
        assert set(await _semantic(system, "frogs", limit=3)) == set(TEXTS)
        status = (await system.dispatch("embeddingsStatus", []))["value"]
        assert (status["state"], status["searchable"]) == ("loading", True)
        assert not system.sessions.mirrored.is_set()
        waiting = [
            asyncio.ensure_future(system.dispatch("search", [query]))
            for query in (
                {"query": "garden", "strategy": "keyword"},
                {"query": "", "vector": _toy_query("tea"), "strategy": "relevant"},
                {"query": "", "vector": _toy_query("tea"), "strategy": "semantic",
                 "filters": {"roles": ["user"]}},
            )
        ]  # fmt: skip
        await asyncio.sleep(0.1)
        assert not any(call.done() for call in waiting)
        held_sql.set()
        replies = await asyncio.gather(*waiting)
        assert [r["value"]["results"][0]["message"]["content"] for r in replies] == [
            "the garden needs sun", "tea with lemon", "tea with lemon",
        ]  # fmt: skip
        await system.loaded()
        status = await settled(system, indexed=3)
        assert status["searchable"] is True
        assert system.embeddings.vectors.early is None  # relabelled to the mirror's docs
        assert await _semantic(system, "the garden needs sun", limit=1) == ["the garden needs sun"]
        docs = await system.query("SELECT doc FROM message_vectors ORDER BY doc")
        scan = system.embeddings.vectors.scan
        assert sorted(scan.vectors) == [row["doc"] for row in docs]


async def test_an_early_search_drops_what_the_records_no_longer_say(vector_store, held_sql):
    """A stored vector whose message was deleted, or edited to another text, by a writer
    that kept no vectors (another tab, before its prune) is not a hit before the load:
    the records are the truth, the scan forgets it and ranks again."""
    place, options = vector_store
    held_sql.set()
    plain = await open_native_system(place, QUIET)
    [sid] = [s["sessionId"] for s in await plain.sessions.list_sessions()]
    stored = {m["content"]: m["id"] for m in await plain.sessions.load_session_messages(sid)}
    await plain.sessions.delete_message(sid, stored["frogs sing at night"])
    await plain.sessions.update_message(sid, stored["tea with lemon"], {"content": "coffee"})
    await plain.close()
    async with reopened_held(place, options, held_sql) as system:
        assert await _semantic(system, "frogs sing at night tea with lemon", limit=3) == [
            "the garden needs sun"
        ]
        assert len(system.embeddings.vectors.scan) == 1  # both stale vectors forgotten
        assert not system.sessions.mirrored.is_set()


async def test_an_early_search_sees_only_this_users_sessions_and_its_filters(
    vector_store, held_sql
):
    """Scope kept outside SQL: another user's vectors, stored in the same place, and
    sessions the session or character filters leave out are never candidates."""
    place, options = vector_store
    held_sql.set()
    other = await open_native_system(place, {**options, "userId": "someone else"})
    theirs = (await other.sessions.create_session({}))["sessionId"]
    await other.sessions.add_message(theirs, {"role": "user", "content": "frogs in the rain"})
    assert (await settled(other, indexed=4))["indexed"] == 4
    await other.close()
    mine = await open_native_system(place, options)
    neko = (await mine.sessions.create_session({"characterId": "neko"}))["sessionId"]
    await mine.sessions.add_message(neko, {"role": "user", "content": "frogs at dawn"})
    assert (await settled(mine, indexed=5))["indexed"] == 5
    [first] = [
        s["sessionId"] for s in await mine.sessions.list_sessions() if s["sessionId"] != neko
    ]
    await mine.close()
    async with reopened_held(place, options, held_sql) as system:
        everything = await _semantic(system, "frogs", limit=10)
        assert "frogs in the rain" not in everything
        assert set(everything) == {*TEXTS, "frogs at dawn"}
        assert await _semantic(system, "frogs", limit=10, filters={"characterIds": ["neko"]}) == [
            "frogs at dawn"
        ]
        assert set(
            await _semantic(system, "frogs", limit=10, filters={"sessionIds": [first]})
        ) == set(TEXTS)
        assert not system.sessions.mirrored.is_set()


async def test_a_vector_two_tabs_stored_counts_once_early_and_after_the_load(
    vector_store, held_sql
):
    """Two tabs may both store one message's vector. Early, it is one hit (the other row
    leaves the scan and the search ranks again); the row kept is the one the join to the
    mirror keeps, so after the relabel every vector DuckDB holds is in the scan."""
    place, options = vector_store
    held_sql.set()
    plain = await open_native_system(place, QUIET)
    [key, *_] = sorted(await plain.storage.get_keys(semantic.VECTORS))
    await plain.storage.set_item_raw(key + "-copy", await plain.storage.get_item_raw(key))
    await plain.close()
    async with reopened_held(place, options, held_sql) as system:
        found = await _semantic(system, TEXTS[0], limit=3)
        assert sorted(found) == sorted(TEXTS)
        assert len(system.embeddings.vectors.scan) == 3
        held_sql.set()
        await system.loaded()
        await settled(system, indexed=3)
        docs = await system.query("SELECT doc FROM message_vectors ORDER BY doc")
        assert sorted(system.embeddings.vectors.scan.vectors) == [row["doc"] for row in docs]
        assert len(docs) == 3
        assert sorted(await _semantic(system, TEXTS[0], limit=3)) == sorted(TEXTS)


async def test_when_duckdb_cannot_start_semantic_search_still_answers_from_the_records(
    vector_store, break_duckdb
):
    """The stored vectors and the records need no DuckDB: a semantic search answers (each
    winner checked against its record) while every call that needs DuckDB fails with its
    error."""
    place, options = vector_store
    break_duckdb()
    system = await open_native_system(place, options, wait_for_load=False)
    try:
        with pytest.raises(RuntimeError, match="DuckDB is not there"):
            await system.loaded()
        assert await _semantic(system, "tea with lemon", limit=1) == ["tea with lemon"]
        keyword = await system.dispatch("search", [{"query": "tea", "strategy": "keyword"}])
        assert keyword["error"]["message"] == "DuckDB is not there"
    finally:
        await system.close()

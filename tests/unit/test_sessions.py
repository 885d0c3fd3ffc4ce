"""The sessions contract on CPython (memory and fs drivers, duckdb), plus properties."""

import asyncio
from types import SimpleNamespace

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from airi_memory.errors import WriteConflictError
from airi_memory.native.host import InMemory, open_native_system
from airi_memory.search.tables import SearchTables
from airi_memory.sessions import writer
from contract.common import START
from contract.sessions_contract import CASES
from native_systems import system_factory


@pytest.mark.parametrize("kind", ["memory", "fs"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
async def test_sessions_contract(case, kind, tmp_path):
    await case(system_factory(kind, tmp_path))


text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs",)), max_size=40)
json_leaf = st.none() | st.booleans() | st.integers(-(2**53), 2**53) | text
content_part = st.fixed_dictionaries({"type": st.just("text"), "text": text})
message = st.fixed_dictionaries(
    {
        "role": st.sampled_from(["system", "user", "assistant", "tool", "error"]),
        "content": text | st.lists(content_part, max_size=3),
        "createdAt": st.integers(0, START),  # an import refuses times days ahead
    },
    optional={
        "id": st.text("abcdefghijklmnop0123456789_-", min_size=1, max_size=21),
        "extra": st.dictionaries(st.text("abcxyz", min_size=1, max_size=5), json_leaf, max_size=3),
        "categorization": st.fixed_dictionaries({"speech": text}),
    },
)
session = st.fixed_dictionaries(
    {
        "meta": st.fixed_dictionaries(
            {"title": text, "tags": st.lists(text.filter(lambda t: "\x1f" not in t), max_size=3)},
            optional={"pinned": st.booleans(), "characterId": st.sampled_from(["default", "airi"])},
        ),
        # Ids unique within a session (an import refuses duplicates); missing ones assigned.
        "messages": st.lists(message, max_size=6, unique_by=lambda m: m.get("id", id(m))),
    }
)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(st.lists(session, min_size=1, max_size=4))
def test_export_import_round_trip_keeps_every_session_and_message(tmp_path, sessions):
    async def scenario():
        source = await system_factory("memory", tmp_path)()
        report = await source.import_sessions(
            {"version": "1.0.0", "exportedAt": 1, "sessions": sessions}
        )
        assert report["sessions"] == len(sessions)
        exported = await source.export_sessions()
        by_id = {entry["meta"]["sessionId"]: entry for entry in exported["sessions"]}
        for new_id, original in zip(report["sessionIds"], sessions, strict=True):
            entry = by_id[new_id]
            assert entry["meta"]["title"] == original["meta"]["title"]
            assert entry["meta"]["tags"] == original["meta"]["tags"]
            assert len(entry["messages"]) == len(original["messages"])
            for stored, given_message in zip(entry["messages"], original["messages"], strict=True):
                assert stored["id"]  # kept when given, assigned when missing
                assert stored == {**given_message, "id": stored["id"]}
        target = await system_factory("memory", tmp_path)()
        await target.import_sessions(exported, {"keepIds": True})
        again = await target.export_sessions()
        assert sorted(again["sessions"], key=lambda e: e["meta"]["sessionId"]) == sorted(
            exported["sessions"], key=lambda e: e["meta"]["sessionId"]
        )

    asyncio.run(scenario())


async def test_native_host_keeps_sessions_in_a_folder(tmp_path):
    from airi_memory.native.host import open_native_system

    first = await open_native_system(tmp_path, {"userId": "desk"})
    sid = (await first.sessions.create_session({"title": "On disk"}))["sessionId"]
    await first.sessions.add_message(sid, {"role": "user", "content": "still here?"})
    assert (tmp_path / "airi-local" / "memory" / "sessions" / sid).is_file()
    second = await open_native_system(tmp_path, {"userId": "desk"})
    assert [m["content"] for m in await second.sessions.load_session_messages(sid)] == [
        "still here?"
    ]
    assert (await second.sessions.get_session(sid))["title"] == "On disk"


class _Store:
    """Counts catch-ups, as ``CatchUp`` would do them."""

    def __init__(self) -> None:
        self.catch_ups = 0

    async def catch_up(self) -> dict:
        self.catch_ups += 1
        return {}

    async def sync(self) -> dict:
        return {}


def _colliding(times: int):
    """A guarded write another tab beats ``times`` times before it commits."""
    calls = {"n": 0}

    async def attempt() -> str:
        calls["n"] += 1
        if calls["n"] <= times:
            raise WriteConflictError("memory:sessions:s1")
        return "stored"

    return attempt, calls


async def test_a_guarded_write_keeps_its_turn_however_often_it_collides(monkeypatch):
    # Three tabs catching up on a big import once beat one write 40 times in a row, and
    # the write was refused although its tab would have had its turn a moment later.
    monkeypatch.setattr(writer, "CONFLICT_BACKOFF_CAP_MS", 0.01)
    attempt, calls = _colliding(120)
    store, counts = _Store(), {"conflicts": 0}
    assert await writer.retry_on_conflict(attempt, store, counts) == "stored"
    assert (calls["n"], counts["conflicts"], store.catch_ups) == (121, 120, 120)


async def test_a_guarded_write_colliding_past_its_patience_is_refused(monkeypatch):
    # A clock that moves 10 s at each reading: the start, then one reading per conflict.
    readings = iter(range(0, 10**6, 10))
    clock = SimpleNamespace(monotonic=lambda: float(next(readings)))
    monkeypatch.setattr(writer, "time", clock)  # the writer's clock only, not asyncio's
    monkeypatch.setattr(writer, "CONFLICT_BACKOFF_CAP_MS", 0.01)
    attempt, calls = _colliding(10**9)
    store, counts = _Store(), {"conflicts": 0}
    with pytest.raises(WriteConflictError, match="memory:sessions:s1"):
        await writer.retry_on_conflict(attempt, store, counts)
    # Patience 30 s from 0: conflicts read 10 and 20 (retried), then 30 (refused).
    assert (calls["n"], counts["conflicts"], store.catch_ups) == (3, 3, 2)


async def test_a_message_is_acknowledged_before_its_text_is_analysed(monkeypatch):
    """Analysing a message's text for search (0.1 ms a turn in the browser) waits for the
    next read's flush instead of delaying the write's answer."""
    analysed: list[str] = []
    analyse = SearchTables.analyse

    def counted(self, text):
        analysed.append(text)
        return analyse(self, text)

    monkeypatch.setattr(SearchTables, "analyse", counted)
    system = await open_native_system(InMemory(), {"userId": "u", "retention": {"enabled": False}})
    try:
        sid = (await system.sessions.create_session({"title": "t"}))["sessionId"]
        await system.sessions.add_message(sid, {"role": "user", "content": "the quince tart"})
        assert analysed == []
        found = await system.searcher.search({"query": "quince", "strategy": "keyword"})
        assert analysed == ["the quince tart"]
        assert [hit["message"]["content"] for hit in found["results"]] == ["the quince tart"]
    finally:
        await system.close()

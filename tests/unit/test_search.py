"""The search contract on CPython (memory and fs drivers, duckdb)."""

import asyncio

import pytest

from airi_memory.errors import InvalidValueError
from contract.common import QUIET
from contract.search_contract import (
    CASES,
    session_with,
    settled,
    toy_vectors,
    use_toy_embeddings,
)
from native_systems import system_factory


@pytest.mark.parametrize("kind", ["memory", "fs"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
async def test_search_contract(case, kind, tmp_path):
    await case(system_factory(kind, tmp_path))


@pytest.mark.parametrize("enabled", [False, True])
async def test_diagnostics_need_the_diagnostics_option(enabled, tmp_path):
    """fillVectors stores random vectors under the live model for good, storedVectors reads
    them back, bulkInsert fills DuckDB with up to 2M rows, sqlRoundTrips times trivial
    statements: benchmarks' tools, refused unless asked for."""
    options = {"diagnostics": True} if enabled else {}
    system = await system_factory("memory", tmp_path)(**QUIET, **options)
    await use_toy_embeddings(system)
    await system.embeddings.configure(
        {"provider": "custom", "model": "toy", "dimensions": 48, "backgroundIndexing": False}
    )
    await session_with(system, ["one", "two", "three"])
    keys_before = await system.storage.get_keys("local")
    filled = await system.dispatch("diagnostics.fillVectors", [])
    inserted = await system.dispatch("diagnostics.bulkInsert", [10])
    trips = await system.dispatch("diagnostics.sqlRoundTrips", [4])
    read_back = await system.dispatch("diagnostics.storedVectors", [0])
    stored = await system.query("SELECT count(*) AS n FROM message_vectors")
    if enabled:
        assert filled["value"]["vectors"] == 3 and stored == [{"n": 3}]
        assert inserted["value"]["rows"] == 10
        assert len(trips["value"]) == 4 and all(ms >= 0 for ms in trips["value"])
        assert sorted(read_back["value"]["texts"]) == ["one", "three", "two"]
        assert len(read_back["value"]["codes"]) == 3 * 48
        return
    for reply in (filled, inserted, trips, read_back):
        assert reply["error"]["name"] == "InvalidValueError"
        assert "diagnostics: true" in reply["error"]["message"]
    assert stored == [{"n": 0}]
    assert await system.storage.get_keys("local") == keys_before


async def test_semantic_search_says_when_its_vectors_could_not_load(tmp_path):
    """A host whose vector scan cannot be made: the status says why, and a semantic search
    is refused with that reason instead of failing on a missing scan."""
    system = await system_factory("memory", tmp_path)(**QUIET)

    async def no_scan(dims):
        raise RuntimeError(f"no scan for {dims} dimensions")

    system.ports.vector_scan = no_scan
    await use_toy_embeddings(system)
    status = await settled(system, state="error")
    assert "no scan for 48 dimensions" in status["lastError"]
    with pytest.raises(InvalidValueError, match=r"vectors did not load .*no scan for 48"):
        await system.searcher.search({"query": "frog", "strategy": "semantic"})


async def test_the_model_always_has_the_next_batch_waiting(tmp_path):
    """Two embedding calls in flight, never more: the model's worker does not idle while
    an answer travels back to Python and the next request comes. A failed call stops
    the run with the error in the status, and the next run embeds what is left once."""
    system = await system_factory("memory", tmp_path)(**QUIET)
    await session_with(system, [f"turn {n} about frogs" for n in range(10)])
    calls: list[int] = []
    in_flight, peak, fail_at = 0, 0, 3

    async def call_app(name, payload):
        nonlocal in_flight, peak
        in_flight += 1
        peak = max(peak, in_flight)
        try:
            await asyncio.sleep(0.01)
            calls.append(len(payload["texts"]))
            if len(calls) == fail_at:
                raise RuntimeError("the model's worker crashed")
            return toy_vectors(payload["texts"], 48)
        finally:
            in_flight -= 1

    system.ports.call_app = call_app
    await system.embeddings.configure(
        {"provider": "custom", "model": "toy", "dimensions": 48, "batchSize": 2,
         "backgroundIndexing": False}
    )  # fmt: skip
    with pytest.raises(Exception, match="worker crashed"):
        await system.embeddings.index_now()
    # The third call failed with the fourth in flight; the fourth's answer, not wanted,
    # was dropped, and the first two batches were stored.
    assert peak == 2 and calls == [2, 2, 2, 2]
    assert "worker crashed" in (await system.embeddings.status())["lastError"]
    status = await system.embeddings.index_now()
    assert status["indexed"] == 10 and status["pending"] == 0
    assert calls[4:] == [2, 2, 2] and peak == 2  # the six texts left, once each


def test_merge_groups_pack_the_smallest_batches_up_to_the_bound():
    """Batches (vectors, number) from the smallest: groups stay within the bound, and a
    batch left alone in its group is not written again."""
    from airi_memory.search.semantic import merge_groups

    small = [(1, 7), (2, 3), (3, 9), (4, 1), (6, 2), (9, 5)]
    assert merge_groups(small, 6) == [[7, 3, 9]]  # then 4, 6 and 9 each alone
    assert merge_groups(small, 10) == [[7, 3, 9, 1]]  # then 6 and 9 each alone
    assert merge_groups(small, 15) == [[7, 3, 9, 1], [2, 5]]
    assert merge_groups(small, 100) == [[7, 3, 9, 1, 2, 5]]
    assert merge_groups([(5, 1)], 100) == []


def test_a_backfills_full_windows_are_never_merged():
    """Records of a whole embedding window stay as they are (merging them deleted tens of
    megabytes, and slowed the next start); a live chat's small ones are merged."""
    from airi_memory.search.semantic import MERGE_AT, WINDOW_BATCHES, merge_plan

    window = 16 * WINDOW_BATCHES  # the default batch size
    assert merge_plan(dict.fromkeys(range(200), window)) == []
    live = merge_plan(dict.fromkeys(range(MERGE_AT), 2))
    assert live == [list(range(MERGE_AT))]

"""The search contract: BM25 against hand-computed scores, every filter, thresholds,
substring search, CJK, and an index that follows deletes and restarts. Run on CPython
and in Pyodide; self-contained like the other contracts."""

import math

from airi_memory.errors import InvalidValueError
from airi_memory.search.filters import SearchFilters
from airi_memory.search.keyword import bm25

QUIET = {"retention": {"enabled": False}, "context": {"datetime": False}}
START = 1_767_225_600_000
DAY = 24 * 60 * 60 * 1000


async def expect_error(kind, coroutine, *words):
    try:
        await coroutine
    except kind as error:
        for word in words:
            assert word in str(error), f"{word!r} not in {error}"
        return error
    raise AssertionError(f"expected {kind.__name__}")


async def session_with(system, texts, **meta):
    sid = (await system.sessions.create_session(meta))["sessionId"]
    added = []
    for i, text in enumerate(texts):
        role, text = text if isinstance(text, tuple) else ("user", text)
        message = {"role": role, "content": text, "createdAt": START + i * DAY}
        added.append(await system.sessions.add_message(sid, message))
    return sid, added


def contents(result):
    return [hit["message"]["content"] for hit in result["results"]]


async def case_bm25_matches_hand_computed_scores(open_system):
    system = await open_system(**QUIET)
    await session_with(system, ["apple banana", "Apple apples cherry", "banana"])
    await system.sessions.mirror.flush()  # bm25 reads DuckDB directly; search() flushes itself
    hits = await bm25(system.sql, "apple", SearchFilters(), "tester", 10)
    # N = 3 messages, average length 2 terms; "apple" is in 2 of them (stemmed: "appl").
    idf = math.log(1 + (3 - 2 + 0.5) / (2 + 0.5))

    def expected(tf, dl):
        return idf * tf * 2.2 / (tf + 1.2 * (1 - 0.75 + 0.75 * dl / 2))

    assert [h["matchedTerms"] for h in hits] == [["appl"], ["appl"]]
    assert abs(hits[0]["score"] - expected(2, 3)) < 1e-9  # "Apple apples cherry"
    assert abs(hits[1]["score"] - expected(1, 2)) < 1e-9  # "apple banana"
    ranked = await system.searcher.search({"query": "apple", "strategy": "keyword"})
    assert contents(ranked) == ["Apple apples cherry", "apple banana"]
    assert ranked["results"][0]["score"] == 1.0
    assert abs(ranked["results"][1]["score"] - expected(1, 2) / expected(2, 3)) < 1e-6
    assert ranked["results"][0]["retrievers"] == ["keyword"]
    # Two terms: both matter; a message with the whole phrase is boosted above one with
    # the same terms apart.
    await session_with(system, ["cherry banana split", "banana and a cherry"])
    both = await system.searcher.search({"query": "cherry banana", "strategy": "keyword"})
    assert contents(both)[0] == "cherry banana split"
    assert sorted(both["results"][0]["matchedTerms"]) == ["banana", "cherri"]
    nothing = await system.searcher.search({"query": "the of and", "strategy": "keyword"})
    assert nothing["results"] == []  # stop words only


async def case_analysis_folds_accents_case_stems_and_cjk(open_system):
    system = await open_system(**QUIET)
    await session_with(system, [
        "Configuring the PROVIDERS took a while",
        "Le café était très bon",
        "東京タワーに行きたい",
        "서울에 가고 싶어요",
        "nothing relevant here",
    ])  # fmt: skip
    search = system.searcher.search
    assert contents(await search({"query": "how to configure a provider", "strategy": "keyword"})) == [
        "Configuring the PROVIDERS took a while"
    ]  # fmt: skip
    assert contents(await search({"query": "CAFE ETAIT", "strategy": "keyword"})) == [
        "Le café était très bon"
    ]
    assert contents(await search({"query": "東京", "strategy": "keyword"})) == [
        "東京タワーに行きたい"
    ]
    assert contents(await search({"query": "서울", "strategy": "keyword"})) == [
        "서울에 가고 싶어요"
    ]
    # The seed's searchMessages: case-insensitive substring, every session.
    found = await system.searcher.search_messages("CAFÉ")
    assert [f["message"]["content"] for f in found] == ["Le café était très bon"]
    assert await system.searcher.search_messages("zebra") == []
    await expect_error(InvalidValueError, system.searcher.search_messages(""), "query")


async def case_every_filter_applies_before_ranking(open_system):
    system = await open_system(**QUIET)
    airi, _ = await session_with(
        system, ["garden tomatoes", ("assistant", "garden roses"), "kitchen garden"],
        characterId="airi",
    )  # fmt: skip
    neko, _ = await session_with(
        system, ["garden cats", ("assistant", "garden fish")], characterId="neko"
    )
    search = system.searcher.search

    async def titles(**filters):
        result = await search({"query": "garden", "strategy": "keyword", "limit": 10,
                               "filters": filters})  # fmt: skip
        return sorted(contents(result))

    assert len(await titles()) == 5
    assert await titles(sessionIds=[neko]) == ["garden cats", "garden fish"]
    assert await titles(characterIds=["airi"]) == [
        "garden roses",
        "garden tomatoes",
        "kitchen garden",
    ]
    assert await titles(roles=["assistant"]) == ["garden fish", "garden roses"]
    assert await titles(dateRange=[START + DAY, START + DAY]) == ["garden fish", "garden roses"]
    assert await titles(roles=["assistant"], characterIds=["neko"]) == ["garden fish"]
    assert await titles(sessionIds=[]) == []
    # The filter comes first: the top of a filtered search is not the top overall.
    limited = await search({"query": "garden", "strategy": "keyword", "limit": 1,
                            "filters": {"sessionIds": [neko]}})  # fmt: skip
    assert contents(limited)[0] in ("garden cats", "garden fish")
    recent = await search({"strategy": "recent", "limit": 2, "filters": {"sessionIds": [airi]}})
    assert contents(recent) == ["kitchen garden", "garden roses"]
    filtered = await system.searcher.search_messages(
        "garden", {"filters": {"roles": ["assistant"]}}
    )
    assert sorted(f["message"]["content"] for f in filtered) == ["garden fish", "garden roses"]
    other_user = await open_system(userId="someone-else", **QUIET)
    assert (await other_user.searcher.search({"query": "garden", "strategy": "keyword"}))[
        "results"
    ] == []
    await expect_error(
        InvalidValueError, search({"query": "x", "filters": {"dateRange": [5, 1]}}), "dateRange"
    )
    await expect_error(
        InvalidValueError, search({"query": "x", "filters": {"roles": ["cat"]}}), "roles"
    )
    await expect_error(InvalidValueError, search({"query": "x", "colour": 1}), "colour")
    await expect_error(InvalidValueError, search({"query": "", "strategy": "keyword"}), "query")
    await expect_error(
        InvalidValueError, search({"query": "x", "strategy": "semantic"}), "embeddings"
    )


async def case_thresholds_and_strategies(open_system):
    system = await open_system(**QUIET)
    await session_with(system, ["river boat trip", "boat", "river", "mountain"])
    search = system.searcher.search
    every = await search({"query": "river boat", "strategy": "keyword"})
    assert contents(every)[0] == "river boat trip" and len(every["results"]) == 3
    strict = await search({"query": "river boat", "strategy": "keyword", "threshold": 0.99})
    assert contents(strict) == ["river boat trip"]
    assert all(0 <= hit["score"] <= 1 for hit in every["results"])
    hybrid = await search({"query": "river boat", "strategy": "hybrid"})
    assert contents(hybrid)[0] == "river boat trip"
    assert set(hybrid["results"][0]["scores"]) >= {"keyword", "relevance", "recency"}
    default = await search({"query": "river boat"})
    assert default["strategy"] == "hybrid"
    excluded = await search({"query": "river boat", "strategy": "keyword",
                             "excludeIds": [every["results"][0]["message"]["id"]]})  # fmt: skip
    assert "river boat trip" not in contents(excluded)


async def case_index_follows_edits_deletes_and_restarts(open_system):
    system = await open_system(**QUIET)
    sid, added = await session_with(system, ["violin lesson today", "piano lesson", "violin again"])
    other, _ = await session_with(system, ["violin concert"])
    search = system.searcher.search
    await system.sessions.delete_message(sid, added[2]["id"])
    await system.sessions.update_message(sid, added[1]["id"], {"content": "violin practice"})
    found = sorted(contents(await search({"query": "violin", "strategy": "keyword"})))
    assert found == ["violin concert", "violin lesson today", "violin practice"]
    await system.sessions.snapshot()
    await system.sessions.add_message(sid, {"role": "user", "content": "violin strings"})
    restarted = await open_system(**QUIET)  # snapshot plus journal
    found = sorted(
        contents(await restarted.searcher.search({"query": "violin", "strategy": "keyword"}))
    )
    assert found == ["violin concert", "violin lesson today", "violin practice", "violin strings"]
    await restarted.sessions.delete_session(other)
    found = contents(await restarted.searcher.search({"query": "concert", "strategy": "keyword"}))
    assert found == []
    rows = await restarted.query(
        "SELECT count(*) AS n FROM search_terms WHERE session_id = ?", [other]
    )
    assert rows == [{"n": 0}]


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]

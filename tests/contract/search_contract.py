"""The search contract: BM25 against hand-computed scores, every filter, thresholds,
substring search, CJK, and an index that follows deletes and restarts. Run on CPython
and in Pyodide; self-contained like the other contracts."""

import json
import math
from array import array

from airi_memory.errors import InvalidValueError
from airi_memory.search.filters import SearchFilters, scope
from airi_memory.search.keyword import bm25
from contract.common import DAY, QUIET, START, Clock, eventually, expect_error


async def session_with(system, texts, embed_each=False, **meta):
    """A session with one message a day from START; ``(role, text)`` pairs or user texts.
    ``embed_each``: each embedded once added, as in a live chat (one stored record each)."""
    sid = (await system.sessions.create_session(meta))["sessionId"]
    added = []
    for i, text in enumerate(texts):
        role, text = text if isinstance(text, tuple) else ("user", text)
        message = {"role": role, "content": text, "createdAt": START + i * DAY}
        added.append(await system.sessions.add_message(sid, message))
        if embed_each:
            await system.embeddings.index_now()
    return sid, added


def contents(result):
    return [hit["message"]["content"] for hit in result["results"]]


async def allow_of(system, **filters):
    """The docs ``system``'s doc scope lets a search with ``filters`` rank (None: every
    doc), as the search itself asks it."""
    await system.sessions.mirror.flush()
    return system.searcher.allowed_docs(SearchFilters(**filters))


async def selected_by_sql(system, **filters):
    """The docs the filters' SQL selects from DuckDB's tables: what the scope answers as."""
    sessions = system.sessions
    where = scope(SearchFilters(**filters), sessions.user_id, sessions.has_other_users())
    found = await system.sql.query(
        f"SELECT m.doc FROM chat_messages m {where.join} WHERE {where.condition} ORDER BY 1",
        where.params,
    )
    return [int(doc) for doc in found.column("doc")]


async def case_bm25_matches_hand_computed_scores(open_system):
    system = await open_system(**QUIET)
    sid, _ = await session_with(system, ["apple banana", "Apple apples cherry", "banana"])
    allow = await allow_of(system, sessionIds=[sid])  # flushed: bm25 reads DuckDB directly
    assert list(allow) == [1, 2, 3]
    hits = await bm25(system.sql, system.searcher.terms, "apple", allow, 10)
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


async def case_filtered_keyword_search_uses_the_statistics_of_what_it_searches(open_system):
    """Within one character's chats, "maya" is common and "biscuit" rare, though across
    the store it is the other way round: the filtered ranking follows the chats searched."""
    system = await open_system(**QUIET)
    await session_with(system, ["maya maya walked", "biscuit jar", "maya phoned"],
                       characterId="a")  # fmt: skip
    await session_with(system, ["biscuit tin"] * 10, characterId="b")
    search = system.searcher.search
    within = await search({"query": "maya biscuit", "strategy": "keyword",
                           "filters": {"characterIds": ["a"]}})  # fmt: skip
    assert contents(within)[0] == "biscuit jar"
    allow = await allow_of(system, characterIds=["a"])
    terms = system.searcher.terms
    store_wide = await bm25(system.sql, terms, "maya biscuit", allow, 10, scoped_stats=False)
    assert len(store_wide) == 3  # what the whole store's statistics would rank first:
    assert "maya maya walked" in store_wide[0]["body"]


# BM25 in one statement, over the postings analysed again from the messages themselves
# (``oracle_terms``) and the lengths DuckDB keeps: the oracle the term index is checked by.
_ORACLE = """
    WITH q(term, qtf) AS (VALUES {values}),
    searched AS (SELECT m.doc FROM chat_messages m {join} WHERE {condition}),
    stats AS (SELECT count(*) AS n, greatest(avg(t.terms), 1) AS avgdl
              FROM search_text t JOIN searched USING (doc) WHERE t.terms > 0),
    hits AS (SELECT doc, term, tf FROM oracle_terms JOIN searched USING (doc)
             WHERE term IN (SELECT term FROM q)),
    df AS (SELECT term, count(*) AS df FROM hits GROUP BY term)
    SELECT h.doc, sum(q.qtf * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5)) * h.tf * 2.2
        / (h.tf + 1.2 * (1 - 0.75 + 0.75 * t.terms / stats.avgdl))) AS score
    FROM hits h JOIN q USING (term) JOIN df USING (term) JOIN search_text t ON t.doc = h.doc,
    stats GROUP BY h.doc ORDER BY score DESC, h.doc"""


async def case_the_term_index_ranks_as_duckdbs_tables_say(open_system):
    """The term index beside DuckDB follows every insert, edit, delete, snapshot and
    restart: its BM25 ranking is the one SQL computes from the messages DuckDB holds,
    filtered or not."""
    import json
    import random

    from airi_memory.models import message_text
    from airi_memory.search.text import term_counts, term_id, terms

    words = [
        "maya",
        "biscuit",
        "river",
        "apple",
        "walk",
        "phone",
        "garden",
        "violin",
        "rain",
        "night",
        "tea",
        "map",
    ]
    rng = random.Random(7)

    def text():
        return " ".join(rng.choice(words) for _ in range(rng.randint(1, 7)))

    async def analysed_again(system):
        columns = {"doc": [], "term": [], "tf": []}
        for row in await system.query("SELECT doc, body FROM chat_messages"):
            for term, tf in term_counts(message_text(json.loads(row["body"]))).items():
                columns["doc"].append(row["doc"])
                columns["term"].append(term_id(term))
                columns["tf"].append(tf)
        create = "CREATE OR REPLACE TABLE oracle_terms (doc INTEGER, term BIGINT, tf INTEGER)"
        await system.sql.execute(create)
        await system.sql.insert_columns("oracle_terms", columns)

    async def agrees(system, stage):
        await system.sessions.mirror.flush()
        await analysed_again(system)
        index = system.searcher.terms
        counted = await system.query("SELECT count(*) AS n FROM search_text")
        assert len(index) == counted[0]["n"], stage
        for query in ("maya", "biscuit river", "tea tea night map", "walk rain apple garden"):
            counts = {}
            for term in terms(query):
                counts[term_id(term)] = counts.get(term_id(term), 0) + 1
            values = ", ".join(f"({t}::BIGINT, {n})" for t, n in counts.items())
            for filters in ({}, {"characterIds": ["a"]}, {"roles": ["assistant"]}):
                where = scope(SearchFilters(**filters), "tester", False)
                sql = _ORACLE.format(values=values, join=where.join, condition=where.condition)
                expected = (await system.sql.query(sql, where.params)).tuples()
                allow = await allow_of(system, **filters)
                got = index.top_k(list(counts), list(counts.values()), 1000, allow, True)
                assert [d for d, _, _ in got] == [d for d, _ in expected], (stage, query, filters)
                for (_, score, _), (_, oracle) in zip(got, expected, strict=True):
                    assert abs(score - oracle) < 1e-9 * max(1.0, abs(oracle)), (stage, query)

    system = await open_system(**QUIET)
    made = []
    for character in "abab":
        roles = [(rng.choice(["user", "assistant"]), text()) for _ in range(12)]
        made.append(await session_with(system, roles, characterId=character))
    await agrees(system, "added")
    sid, added = made[0]
    for message in added[:3]:
        await system.sessions.delete_message(sid, message["id"])
    for message in added[3:6]:
        await system.sessions.update_message(sid, message["id"], {"content": text()})
    await system.sessions.delete_session(made[1][0])
    await agrees(system, "edited and deleted")
    await system.sessions.snapshot()
    await session_with(system, [text() for _ in range(5)], characterId="a")  # the journal
    restarted = await open_system(**QUIET)
    assert "snapshotFailed" not in restarted.sessions.stats()["loadMs"]  # from the snapshot
    await agrees(restarted, "restarted from a snapshot and the journal")
    sid, added = made[2]
    await restarted.sessions.delete_message(sid, added[0]["id"])
    await session_with(restarted, [text() for _ in range(5)], characterId="b")
    await agrees(restarted, "written after the restart")


async def case_the_doc_scope_allows_what_the_filters_sql_selects(open_system):
    """Filters are answered beside DuckDB (``doc_scope``): the docs allowed are the ones the
    filters' SQL selects from DuckDB's tables, for every kind of filter, after adds,
    edits, deletes, a fork, a restart from a snapshot and its journal, writes after it,
    and with another user's sessions in the store."""
    filters = [
        {}, {"sessionIds": []}, {"characterIds": []}, {"roles": []}, {"characterIds": ["a"]},
        {"characterIds": ["a", "b"]}, {"characterIds": ["nobody"]}, {"roles": ["user"]},
        {"roles": ["assistant", "tool"]}, {"dateRange": [START + 2 * DAY, START + 5 * DAY]},
        {"dateRange": [START + 3 * DAY, START + 3 * DAY]},
        {"characterIds": ["b"], "roles": ["assistant"], "dateRange": [START, START + 6 * DAY]},
    ]  # fmt: skip

    async def agrees(system, stage):
        sessions = [meta["sessionId"] for meta in await system.sessions.get_all_sessions()]
        asked = [
            *filters,
            {"sessionIds": sessions[:2]},
            {"sessionIds": [sessions[0], "not-a-session"], "roles": ["user"]},
            {"sessionIds": sessions[:1], "characterIds": ["b"]},
        ]
        await system.sessions.mirror.flush()
        found = await system.sql.query("SELECT doc FROM chat_messages ORDER BY 1")
        every = [int(doc) for doc in found.column("doc")]
        assert len(system.searcher.doc_scope) == len(every), stage
        for given in asked:
            allow = await allow_of(system, **given)
            found = every if allow is None else list(allow)
            assert found == await selected_by_sql(system, **given), (stage, given)

    system = await open_system(**QUIET)
    made = []
    for character in "abab":
        roles = [("user", "hi"), ("assistant", "hello"), ("tool", "{}"), ("user", "again")]
        made.append(await session_with(system, roles * 2, characterId=character))
    await agrees(system, "added")
    assert len(await allow_of(system, characterIds=["a"], roles=["user"])) == 8
    sid, added = made[0]
    await system.sessions.delete_message(sid, added[0]["id"])
    await system.sessions.update_message(sid, added[1]["id"], {"content": "changed"})
    await system.sessions.delete_session(made[1][0])
    await system.sessions.fork_session({"fromSessionId": made[2][0], "atIndex": 3})
    await agrees(system, "edited, deleted, forked")
    await system.sessions.snapshot()
    await session_with(system, [("assistant", "after the snapshot")] * 3, characterId="a")
    restarted = await open_system(**QUIET)
    assert "snapshotFailed" not in restarted.sessions.stats()["loadMs"]  # from the snapshot
    await agrees(restarted, "restarted from a snapshot and the journal")
    await restarted.sessions.delete_message(made[3][0], made[3][1][2]["id"])
    await session_with(restarted, ["written after the restart"] * 2, characterId="b")
    await agrees(restarted, "written after the restart")
    other = await open_system(userId="someone-else", **QUIET)
    await session_with(other, ["not yours"] * 3, characterId="a")
    shared = await open_system(**QUIET)
    assert shared.sessions.has_other_users()
    await agrees(shared, "beside another user's sessions")
    assert (
        len(await allow_of(shared))
        == len(await selected_by_sql(shared))
        < len(shared.searcher.doc_scope)
    )


async def case_stop_words_are_nltks_and_names_and_numbers_stay(open_system):
    system = await open_system(**QUIET)
    await session_with(system, [
        "We met where the river bends, because Maya insisted",
        "Room 214 on Rua Augusta costs 1200 a month",
    ])  # fmt: skip
    search = system.searcher.search
    for word in ("where", "because", "through", "yourself", "don't"):  # NLTK's, not ours before
        assert (await search({"query": word, "strategy": "keyword"}))["results"] == [], word
    assert contents(await search({"query": "where did Maya insist", "strategy": "keyword"})) == [
        "We met where the river bends, because Maya insisted"
    ]
    for query in ("214", "Augusta", "1200"):
        found = await search({"query": query, "strategy": "keyword"})
        assert contents(found) == ["Room 214 on Rua Augusta costs 1200 a month"], query


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
    # Exclusions that fill the first page: the search looks further instead of coming
    # back empty.
    top_two = [hit["message"]["id"] for hit in every["results"][:2]]
    third = await search({"query": "river boat", "strategy": "keyword", "limit": 1,
                          "excludeIds": top_two})  # fmt: skip
    assert contents(third) == contents(every)[2:3]


async def case_a_query_naming_a_speaker_prefers_their_turns(open_system):
    system = await open_system(**QUIET)
    _, (said_by_tom, said_by_maya, _) = await session_with(
        system,
        [("assistant", "Biscuit chewed a slipper"),
         ("user", "Biscuit chewed the remote yesterday while I was out at work"),
         ("assistant", "hello there")],
    )  # fmt: skip
    search = system.searcher.search
    speakers = {"user": "Maya", "assistant": "Tom"}
    question = {"query": "What did Biscuit chew, MAYA?", "strategy": "keyword", "limit": 1}
    plain = await search(question)
    assert contents(plain) == [said_by_tom["content"]]  # shorter, so BM25 prefers it
    named = await search({**question, "speakers": speakers})
    assert contents(named) == [said_by_maya["content"]]  # found beyond the first candidate
    both = await search({**question, "query": "Maya asks Tom: what did Biscuit chew?",
                         "speakers": speakers})  # fmt: skip
    assert contents(both) == [said_by_tom["content"]]  # both named: no preference
    # Tom's turn scores half in the keyword list, which is then scaled to its best (Maya's).
    both_plain = (await search({**question, "limit": 2}))["results"]
    maya_to_tom = both_plain[1]["score"] / both_plain[0]["score"]
    ranked = await search({**question, "limit": 2, "speakers": speakers})
    assert [hit["score"] for hit in ranked["results"]] == [1.0, round(0.5 / maya_to_tom, 6)]
    for strategy in ("relevant", "hybrid"):
        fused = {**question, "strategy": strategy}
        assert contents(await search(fused)) == [said_by_tom["content"]]
        assert contents(await search({**fused, "speakers": speakers})) == [said_by_maya["content"]]
    # Recall in composition passes the names on.
    asking, _ = await session_with(system, [question["query"]])
    recall = {"limit": 1, "strategy": "keyword"}
    for names, expected in ((None, said_by_tom), (speakers, said_by_maya)):
        options = {"maxTokens": 2000, "retrieval": {**recall, "speakers": names}}
        composed = await system.compose_messages(asking, options)
        assert [r["messageId"] for r in composed["recalled"]] == [expected["id"]]
    await expect_error(
        InvalidValueError, search({**question, "speakers": {"user": ""}}), "speakers.user"
    )


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
    orphans = await restarted.query(
        "SELECT count(*) AS n FROM search_text t WHERE NOT EXISTS "
        "(SELECT 1 FROM chat_messages m WHERE m.doc = t.doc)"
    )
    assert orphans == [{"n": 0}]  # no rows left behind by the deletes


async def case_composition_recalls_old_memories_within_a_budget(open_system):
    system = await open_system(**QUIET)
    old, memories = await session_with(
        system, ["My dog Rex loves the beach.", "I work as a nurse at night."], title="Last year"
    )
    sid, turns = await session_with(
        system, ["hi", ("assistant", "hello!"), "Should I take Rex to the beach this weekend?"]
    )
    recall = {"limit": 3, "strategy": "keyword"}
    composed = await system.compose_messages(sid, {"maxTokens": 2000, "retrieval": recall})
    heading, line = composed["messages"][0]["content"].split("\n")
    assert composed["messages"][0]["role"] == "system"
    assert heading.startswith("Relevant memories from earlier conversations")
    assert line == "- [2026-01-01, 'Last year'] user: My dog Rex loves the beach."
    assert [m["content"] for m in composed["messages"][1:]] == [t["content"] for t in turns]
    # The question itself is in the window, so it is not recalled.
    (recalled,) = composed["recalled"]
    assert (recalled["messageId"], recalled["sessionId"]) == (memories[0]["id"], old)
    assert 0 < recalled["score"] <= 1
    assert composed["tokens"]["recall"] == -(-len(heading + "\n" + line) // 4)
    own_only = {**recall, "crossSession": False}
    alone = await system.compose_messages(sid, {"maxTokens": 2000, "retrieval": own_only})
    assert alone["recalled"] == [] and alone["tokens"]["recall"] == 0
    tight = {**recall, "maxTokens": 10}
    nothing = await system.compose_messages(sid, {"maxTokens": 2000, "retrieval": tight})
    assert nothing["recalled"] == [] and len(nothing["messages"]) == 3


# --- semantic ---------------------------------------------------------------------
# The mechanics (background indexing, persistence, filters, model changes) with a small
# stand-in embedder: words hashed into a few dimensions, so texts sharing words are close.
# The real model is tested in Chromium (tests/e2e/test_search_in_browser.py).
def toy_vectors(texts, dimensions=48):
    import hashlib

    rows = []
    for text in texts:
        row = [0.0] * dimensions
        for word in text.lower().replace("?", " ").replace(".", " ").split():
            row[int(hashlib.md5(word.encode()).hexdigest(), 16) % dimensions] += 1.0
        rows.append(row)
    return rows


async def use_toy_embeddings(system, model="toy", dimensions=48, fail=False):
    calls = []

    async def call_app(name, payload):
        assert name == "embed"
        calls.append(len(payload["texts"]))
        if fail:
            raise RuntimeError("embedding service down")
        return toy_vectors(payload["texts"], dimensions)

    system.ports.call_app = call_app
    await system.embeddings.configure(
        {"provider": "custom", "model": model, "dimensions": dimensions}
    )
    return calls


async def settled(system, state="ready", indexed=0):
    """The embedding status once it reached ``state`` with ``indexed`` vectors at least."""
    import asyncio

    for _ in range(300):
        status = await system.embeddings.status()
        done = state == "error" or (not status["pending"] and status["indexed"] >= indexed)
        if status["state"] == state and done:
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"embeddings did not settle: {status}")


async def case_semantic_search_indexes_in_the_background_and_persists(open_system):
    system = await open_system(**QUIET)
    calls = await use_toy_embeddings(system)
    await session_with(
        system, ["purple elephant dancing", ("assistant", "green frog singing"), "blue whale"],
        characterId="airi",
    )  # fmt: skip
    second, added = await session_with(system, ["purple frog", ("system", "purple rules")])
    status = await settled(system, indexed=4)
    assert status["indexed"] == 4  # user and assistant messages; system prompts are not
    assert sum(calls) == 4  # each embedded once, in the background
    assert status["model"] == "toy" and status["dimensions"] == 48
    search = system.searcher.search
    found = await search({"query": "purple elephant", "strategy": "semantic", "limit": 2})
    assert contents(found) == ["purple elephant dancing", "purple frog"]
    assert found["results"][0]["retrievers"] == ["semantic"]
    assert found["results"][0]["score"] > found["results"][1]["score"] > 0
    frogs = await search({"query": "frog", "strategy": "semantic", "limit": 5,
                          "filters": {"roles": ["assistant"]}})  # fmt: skip
    assert contents(frogs)[0] == "green frog singing" and len(frogs["results"]) == 1
    scoped = await search(
        {"query": "purple", "strategy": "semantic", "filters": {"sessionIds": [second]}}
    )
    assert contents(scoped) == ["purple frog"]
    by_character = await search({"query": "purple", "strategy": "semantic", "threshold": 0.3,
                                 "filters": {"characterIds": ["airi"]}})  # fmt: skip
    assert contents(by_character) == ["purple elephant dancing"]
    both = await search({"query": "purple frog", "strategy": "relevant"})
    assert contents(both)[0] == "purple frog"
    assert both["results"][0]["retrievers"] == ["keyword", "semantic"]
    # Score fusion: each side min-max scaled within its candidates, then weighted.
    system.searcher.config = system.searcher.config.model_copy(
        update={"fusion": "scores", "keyword_weight": 1.0}
    )
    scored = await search({"query": "purple frog", "strategy": "relevant"})
    assert contents(scored)[0] == "purple frog" and scored["results"][0]["score"] == 1.0
    assert all(0 <= hit["score"] <= 1 for hit in scored["results"])
    # Stored: a restart loads the vectors back and embeds nothing again.
    restarted = await open_system(**QUIET)
    calls_after = await use_toy_embeddings(restarted)
    status = await settled(restarted, indexed=4)
    assert status["indexed"] == 4 and calls_after == []
    again = await restarted.searcher.search(
        {"query": "purple elephant", "strategy": "semantic", "limit": 1}
    )
    assert contents(again) == ["purple elephant dancing"] and calls_after == [1]  # the query
    # A deleted message takes its vector with it.
    await restarted.sessions.delete_message(second, added[0]["id"])
    rows = await restarted.query("SELECT count(*) AS n FROM message_vectors")
    assert rows == [{"n": 3}]


async def case_a_named_speaker_lowers_negative_similarities_too(open_system):
    """The other speaker's turns lose ground even when every similarity is below zero:
    halving -0.2 would raise it to -0.1, past the named speaker's -0.25."""
    import hashlib

    system = await open_system(**QUIET)
    await use_toy_embeddings(system)
    await session_with(system, [("assistant", "alpha"), ("user", "beta")])
    await settled(system, indexed=2)
    dims = [int(hashlib.md5(w.encode()).hexdigest(), 16) % 48 for w in ("alpha", "beta")]
    assert dims[0] != dims[1]
    vector = [0.0] * 48
    vector[dims[0]], vector[dims[1]] = -0.2, -0.25  # both turns point away from the query
    question = {"query": "what did Maya say", "vector": vector, "strategy": "relevant"}
    assert contents(await system.searcher.search(question)) == ["alpha", "beta"]
    named = {**question, "speakers": {"user": "Maya", "assistant": "Tom"}}
    assert contents(await system.searcher.search(named)) == ["beta", "alpha"]


async def case_vectors_are_int8_and_score_as_cosine(open_system):
    """Vectors are kept as int8 codes and a scale; scores stay within 0.01 of the exact
    cosine, and the order is the exact order."""
    import json
    import struct

    texts = ["purple elephant dancing", "purple frog", "green frog singing", "blue whale"]
    system = await open_system(**QUIET)
    await use_toy_embeddings(system)
    await session_with(system, texts)
    await settled(system, indexed=4)
    stored = 0
    for _, data in await system.storage.get_all("local:memory:vectors", raw=True):
        (size,) = struct.unpack_from("<I", data)
        header = json.loads(bytes(data[4 : 4 + size]))
        rows = len(header["records"])
        assert header["encoding"] == "int8" and len(header["hashes"]) == rows
        assert len(data) == 4 + size + rows * 48 + rows * 4  # int8 codes, a float32 scale
        stored += rows
    assert stored == 4
    query = "purple frog singing"
    found = await system.searcher.search({"query": query, "strategy": "semantic", "limit": 4})

    def cosine(a, b):
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b))

    [wanted] = toy_vectors([query])
    exact = {text: cosine(wanted, row) for text, row in zip(texts, toy_vectors(texts), strict=True)}
    assert {text for text, score in exact.items() if score > 0} <= set(contents(found))
    assert sum(score > 0 for score in exact.values()) >= 3
    for hit in found["results"]:
        true = max(exact[hit["message"]["content"]], 0.0)  # scores are clipped at 0
        assert abs(hit["scores"]["semantic"] - true) < 0.01, (hit, true)
    ranked = [exact[text] for text in contents(found)]
    assert ranked == sorted(ranked, reverse=True)
    # Loaded back after a restart, the same codes score the same.
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    await settled(restarted, indexed=4)
    again = await restarted.searcher.search({"query": query, "strategy": "semantic", "limit": 4})
    assert calls == [1]  # the query only: nothing embedded again
    assert [(h["message"]["content"], h["scores"]["semantic"]) for h in again["results"]] == [
        (h["message"]["content"], h["scores"]["semantic"]) for h in found["results"]
    ]


async def case_vectors_stored_as_float32_by_an_older_version_still_load(open_system):
    import json
    import struct
    from array import array

    system = await open_system(**QUIET)
    calls = await use_toy_embeddings(system)
    await session_with(system, ["purple elephant dancing", "blue whale"])
    await settled(system, indexed=2)
    # Rewrite the stored batches as version 0.1 wrote them: a header and float32s.
    rows = await system.query(
        "SELECT session_id, record, folded FROM chat_messages JOIN search_text USING (doc) "
        "ORDER BY doc"
    )
    keys = [[r["session_id"], r["record"]] for r in rows]
    floats = array("f", [x for r in toy_vectors([r["folded"] for r in rows]) for x in r])
    header = json.dumps({"keys": keys, "dimensions": 48}).encode()
    for key in await system.storage.get_keys("local:memory:vectors"):
        await system.storage.remove_item(key)
    await system.storage.set_item_raw(
        "local:memory:vectors:custom-toy-48:0000000000001-old-000001",
        struct.pack("<I", len(header)) + header + floats.tobytes(),
    )
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    assert (await settled(restarted, indexed=2))["indexed"] == 2 and calls == []
    found = await restarted.searcher.search(
        {"query": "purple elephant", "strategy": "semantic", "limit": 1}
    )
    assert contents(found) == ["purple elephant dancing"]
    assert found["results"][0]["scores"]["semantic"] > 0.8
    # Stored again with the text each vector was made from: an edit is caught from now on.
    import asyncio

    from airi_memory.search.semantic import TEXT_HASH, WITH_TEXT
    from airi_memory.search.vector_batches import decode_batch

    texts = await restarted.query(
        f"SELECT session_id, record, {TEXT_HASH} AS text FROM chat_messages m {WITH_TEXT} "
        "ORDER BY m.doc"
    )
    wanted = sorted((r["session_id"], r["record"], r["text"]) for r in texts)
    for _ in range(200):
        stored = await restarted.storage.get_all("local:memory:vectors", raw=True)
        keys = sorted(key for _, data in stored for key in decode_batch(bytes(data)).keys)
        if keys == wanted:
            break
        await asyncio.sleep(0.02)
    assert keys == wanted


async def case_batches_with_a_list_per_key_still_load(open_system):
    """Batches as the previous version stored them (int8, one [session, record, text]
    list per key) load as they are; new batches store their keys by column."""
    import json
    import struct

    from airi_memory.search.vector_batches import decode_batch

    system = await open_system(**QUIET)
    await use_toy_embeddings(system)
    await session_with(system, ["purple elephant dancing", "blue whale"])
    await settled(system, indexed=2)
    for key, data in await system.storage.get_all("local:memory:vectors", raw=True):
        stored = decode_batch(bytes(data))
        keys, codes, scales, dims = stored.keys, stored.codes, stored.scales, stored.dims
        (size,) = struct.unpack_from("<I", data)
        assert set(json.loads(bytes(data[4 : 4 + size]))) >= {"sessions", "records", "hashes"}
        header = json.dumps({"keys": keys, "dimensions": dims, "encoding": "int8"}).encode()
        old = struct.pack("<I", len(header)) + header + codes + scales
        await system.storage.set_item_raw(key, old)
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    assert (await settled(restarted, indexed=2))["indexed"] == 2 and calls == []
    found = await restarted.searcher.search(
        {"query": "purple elephant", "strategy": "semantic", "limit": 1}
    )
    assert contents(found) == ["purple elephant dancing"] and calls == [1]


async def case_benchmark_vectors_are_stored_like_embedded_ones(open_system):
    from airi_memory.diagnostics import fill_vectors, stored_vectors
    from airi_memory.search.vector_batches import decode_batch

    system = await open_system(**QUIET)
    calls = await use_toy_embeddings(system)
    await system.embeddings.configure(
        {"provider": "custom", "model": "toy", "dimensions": 48, "backgroundIndexing": False}
    )
    sid, added = await session_with(
        system, ["one", ("assistant", "two"), "three"], characterId="neko"
    )
    filled = await fill_vectors(system.embeddings.vectors)
    assert filled["vectors"] == 3 and calls == []
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    assert (await settled(restarted, indexed=3))["indexed"] == 3 and calls == []
    # Read back for a peer to rank: each live message's text beside its stored codes.
    index = restarted.embeddings.vectors
    [(_, data)] = await restarted.storage.get_all("local:memory:vectors", raw=True)
    stored = decode_batch(bytes(data))
    keys, codes, dims = stored.keys, stored.codes, stored.dims
    rows = await restarted.query(
        "SELECT record, folded FROM chat_messages JOIN search_text USING (doc)"
    )
    texts = {r["record"]: r["folded"] for r in rows}
    by_text = {texts[key[1]]: codes[row * dims : (row + 1) * dims] for row, key in enumerate(keys)}
    read = await stored_vectors(index, 0)
    assert sorted(read["texts"]) == ["one", "three", "two"]
    assert [by_text[text] for text in read["texts"]] == [
        read["codes"][row * 48 : (row + 1) * 48] for row in range(3)
    ]
    # What a peer filters on rides with each row: the message's role, its session's character.
    roles = {"one": "user", "two": "assistant", "three": "user"}
    assert read["roles"] == [roles[text] for text in read["texts"]]
    assert read["characterIds"] == ["neko"] * 3
    await restarted.sessions.delete_message(sid, added[1]["id"])
    after = await stored_vectors(index, 0)
    assert sorted(after["texts"]) == ["one", "three"] and after["roles"] == ["user", "user"]
    assert await stored_vectors(index, 1) == {
        "texts": [],
        "roles": [],
        "characterIds": [],
        "codes": b"",
    }


async def case_deleted_messages_take_their_stored_vectors_with_them(open_system):
    """An embedding gives away much of its text: deleting a message (or its session), or
    editing its text, removes the vector from storage too, not only from the index."""
    import asyncio

    from airi_memory.search.semantic import TEXT_HASH, WITH_TEXT
    from airi_memory.search.vector_batches import decode_batch

    async def stored_texts(system):
        """The texts of the stored vectors: of messages as they are now, or gone."""
        found = set()
        for _, data in await system.storage.get_all("local:memory:vectors", raw=True):
            found.update(decode_batch(bytes(data)).keys)
        rows = await system.query(
            f"SELECT session_id, record, {TEXT_HASH} AS text, folded FROM chat_messages m "
            + WITH_TEXT
        )
        names = {(r["session_id"], r["record"], r["text"]): r["folded"] for r in rows}
        return {names.get(key, f"deleted {key}") for key in found}

    async def until(system, wanted):
        for _ in range(200):
            if (got := await stored_texts(system)) == wanted:
                return got
            await asyncio.sleep(0.02)
        raise AssertionError(f"stored vectors: {got}, wanted {wanted}")

    system = await open_system(**QUIET)
    await use_toy_embeddings(system)
    sid, added = await session_with(system, ["secret one", "keep two", "keep three"])
    other, _ = await session_with(system, ["other session"])
    await settled(system, indexed=4)
    assert await stored_texts(system) == {"secret one", "keep two", "keep three", "other session"}
    await system.sessions.delete_message(sid, added[0]["id"])
    await until(system, {"keep two", "keep three", "other session"})
    scan = system.embeddings.vectors.scan
    assert len(scan) == 3  # the prune that rewrote the stored batch emptied the scan too
    # A vector the scan holds and DuckDB does not (a delete the prune has not reached),
    # ranked first: the search forgets it and ranks again, so three results come back.
    from array import array

    from airi_memory.search.quantize import quantize

    codes, scales = quantize(array("f", toy_vectors(["secret one"])[0]).tobytes(), 48)
    scan.add([10**6], codes, scales)
    found = await system.searcher.search({"query": "secret one", "strategy": "semantic",
                                          "limit": 3})  # fmt: skip
    assert sorted(contents(found)) == ["keep three", "keep two", "other session"]
    assert len(scan) == 3
    await system.sessions.update_message(sid, added[1]["id"], {"content": "kept 2"})
    await until(system, {"kept 2", "keep three", "other session"})
    await system.sessions.delete_session(sid)
    await until(system, {"other session"})
    assert (await system.embeddings.status())["indexed"] == 1 and len(scan) == 1
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    assert (await settled(restarted, indexed=1))["indexed"] == 1 and calls == []
    found = await restarted.searcher.search({"query": "secret", "strategy": "semantic"})
    assert contents(found) == ["other session"]
    assert other in {hit["sessionId"] for hit in found["results"]}


async def case_an_edited_message_never_gets_its_old_vector_back(open_system):
    """Text edited out of a message must not stay findable by meaning: after a reload the
    stored vector of the old text is not attached to the new one, whether or not the new
    text was embedded before the reload."""

    async def toy_system(before=None):
        """A restart that embeds only when told to (so a reload can come first); the
        page ``before`` it is gone (its indexer stopped, as a reload stops it)."""
        if before is not None:
            await before.embeddings.vectors.stop()
        system = await open_system(**QUIET)
        calls = []

        async def call_app(name, payload):
            calls.append(len(payload["texts"]))
            return toy_vectors(payload["texts"])

        system.ports.call_app = call_app
        await system.embeddings.configure(
            {"provider": "custom", "model": "toy", "dimensions": 48, "backgroundIndexing": False}
        )
        await system.embeddings.vectors.index_now()
        return system, calls

    async def semantic_score(system, query, message_id):
        found = await system.searcher.search({"query": query, "strategy": "semantic"})
        scores = [
            h["scores"]["semantic"] for h in found["results"] if h["message"]["id"] == message_id
        ]
        return scores[0] if scores else 0.0

    def cosine(a, b):
        dot = sum(x * y for x, y in zip(a, b, strict=True))
        return max(dot / math.sqrt(sum(x * x for x in a) * sum(y * y for y in b)), 0.0)

    old, new, newer = "purple elephant dancing", "green frog singing", "grey owl hooting"
    system, _ = await toy_system()
    sid, added = await session_with(system, [old, "blue whale"])
    await system.embeddings.vectors.index_now()
    edited = added[0]["id"]
    assert await semantic_score(system, old, edited) > 0.99
    # Edited, and the system reloaded before the new text was embedded.
    await system.sessions.update_message(sid, edited, {"content": new})
    restarted, calls = await toy_system(before=system)
    assert calls == [1]  # the edited message, embedded again; "blue whale" was loaded
    expected = cosine(*toy_vectors([old, new]))
    assert abs(await semantic_score(restarted, old, edited) - expected) < 0.01
    assert await semantic_score(restarted, new, edited) > 0.99
    # Edited again and embedded before the reload: the newest vector is the one loaded.
    await restarted.sessions.update_message(sid, edited, {"content": newer})
    await restarted.embeddings.vectors.index_now()
    again, calls = await toy_system(before=restarted)
    assert calls == []
    for text in (old, new):
        expected = cosine(*toy_vectors([text, newer]))
        assert abs(await semantic_score(again, text, edited) - expected) < 0.01
    assert await semantic_score(again, newer, edited) > 0.99


async def case_a_message_changed_while_its_batch_is_embedded_gets_no_stale_vector(open_system):
    """A message edited, and another deleted, while the model embeds their batch: the
    deleted one gets no vector, the edited one none of its old text (it is embedded
    again), and the scan holds only what DuckDB holds."""
    system = await open_system(**QUIET)
    sid, added = await session_with(system, ["purple elephant", "green frog", "blue whale"])
    texts: list[list[str]] = []

    async def call_app(name, payload):
        texts.append(sorted(payload["texts"]))
        if len(texts) == 1:  # while the first batch is with the model
            await system.sessions.update_message(sid, added[0]["id"], {"content": "grey owl"})
            await system.sessions.delete_message(sid, added[1]["id"])
            await system.sessions.flush()  # DuckDB has the new text before the vectors come
        return toy_vectors(payload["texts"])

    system.ports.call_app = call_app
    await system.embeddings.configure(
        {"provider": "custom", "model": "toy", "dimensions": 48, "backgroundIndexing": False}
    )
    status = await system.embeddings.index_now()
    assert texts == [["blue whale", "green frog", "purple elephant"], ["grey owl"]]
    assert status["pending"] == 0
    rows = await system.query(
        "SELECT t.folded FROM message_vectors v JOIN search_text t USING (doc) ORDER BY 1"
    )
    assert [row["folded"] for row in rows] == ["blue whale", "grey owl"]
    assert len(system.embeddings.vectors.scan) == 2
    found = await system.searcher.search({"query": "purple elephant", "strategy": "semantic"})
    assert sorted(contents(found)) == ["blue whale", "grey owl"]
    found = await system.searcher.search({"query": "grey owl", "strategy": "semantic"})
    assert found["results"][0]["message"]["content"] == "grey owl"
    assert found["results"][0]["scores"]["semantic"] > 0.99


async def case_a_vector_two_tabs_both_stored_counts_once(open_system):
    """Two tabs may embed and store the same message: loaded together, it is indexed once,
    and the next prune stores its vector once."""
    system = await open_system(**QUIET)
    await use_toy_embeddings(system)
    await session_with(system, ["purple frog"])
    await settled(system, indexed=1)
    [(key, data)] = await system.storage.get_all("local:memory:vectors", raw=True)
    await system.storage.set_item_raw(f"{key}-other-tab", bytes(data))
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    status = await settled(restarted, indexed=1)
    assert status["indexed"] == 1 and calls == []
    assert await restarted.query("SELECT count(*) AS n FROM message_vectors") == [{"n": 1}]
    assert await restarted.storage.get_keys("local:memory:vectors") == [key]


async def stored_vectors_by_key(system):
    """Every stored vector of the live model: its key, and its codes and scale."""
    from airi_memory.search.vector_batches import decode_batch

    found = {}
    for _, data in await system.storage.get_all(system.embeddings.vectors.prefix, raw=True):
        stored = decode_batch(bytes(data))
        codes, scales = bytes(stored.codes), memoryview(bytes(stored.scales)).cast("f")
        for row, key in enumerate(stored.keys):
            assert key not in found, f"{key} stored twice"
            found[key] = (codes[row * stored.dims : (row + 1) * stored.dims], scales[row])
    return found


async def expected_vectors(system):
    """Each live message's key, and the codes and scale of its toy vector, made unit
    length and quantized, as the indexer stores it."""
    from array import array

    from airi_memory.search.quantize import quantize
    from airi_memory.search.semantic import TEXT_HASH, WITH_TEXT

    rows = await system.query(
        f"SELECT session_id, record, {TEXT_HASH} AS hash, body FROM chat_messages m {WITH_TEXT}"
    )
    expected = {}
    for row in rows:
        vector = toy_vectors([json.loads(row["body"])["content"]])[0]
        norm = math.sqrt(sum(x * x for x in vector))
        codes, scale = quantize(array("f", [x / norm for x in vector]).tobytes(), 48)
        expected[(row["session_id"], row["record"], row["hash"])] = (
            codes, memoryview(scale).cast("f")[0],
        )  # fmt: skip
    return expected


async def case_an_embedding_window_is_stored_as_one_record(open_system):
    """Background embedding embeds a window of WINDOW_BATCHES model batches, each
    searchable once back, and stores the window as one record."""
    from airi_memory.search.semantic import WINDOW_BATCHES
    from airi_memory.search.vector_batches import decode_batch

    system = await open_system(**QUIET)
    calls = await use_toy_embeddings(system)
    await system.embeddings.configure({"provider": "custom", "model": "toy", "dimensions": 48,
                                       "backgroundIndexing": False, "batchSize": 1})  # fmt: skip
    texts = [f"alpha{i} beta{i} gamma{i % 7}" for i in range(WINDOW_BATCHES + 8)]
    await session_with(system, texts)
    await system.embeddings.index_now()
    assert calls == [1] * len(texts)
    sizes = [
        len(decode_batch(bytes(data)))
        for _, data in await system.storage.get_all("local:memory:vectors", raw=True)
    ]
    assert sorted(sizes) == [8, WINDOW_BATCHES]
    assert await stored_vectors_by_key(system) == await expected_vectors(system)
    assert len(system.embeddings.vectors.scan) == len(texts)
    await system.embeddings.vectors.stop()  # as a reload stops it
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    assert (await settled(restarted, indexed=len(texts)))["indexed"] == len(texts)
    assert calls == []


async def case_a_window_that_fails_midway_keeps_what_was_embedded(open_system):
    """The model failing in the middle of a window: the batches embedded before it are
    stored (as one record) and searchable, and only the rest is embedded again. Until
    the window ends, its batches are searchable and not yet stored."""
    system = await open_system(**QUIET)
    texts = [f"window{i} part{i}" for i in range(6)]
    await session_with(system, texts)
    asked: list[list[str]] = []
    midway = []  # at the failing call: vectors in the scan, records stored

    async def call_app(name, payload):
        asked.append(payload["texts"])
        if len(asked) == 5:  # asked once the third came back: the first is indexed
            stored = await system.storage.get_keys("local:memory:vectors")
            midway.extend([len(system.embeddings.vectors.scan), len(stored)])
            raise RuntimeError("model worker died")
        return toy_vectors(payload["texts"])

    system.ports.call_app = call_app
    await system.embeddings.configure({"provider": "custom", "model": "toy", "dimensions": 48,
                                       "backgroundIndexing": False, "batchSize": 1})  # fmt: skip
    await expect_error(Exception, system.embeddings.index_now(), "model worker died")
    assert midway[0] >= 1 and midway[1] == 0, midway
    embedded = [text for batch in asked[:4] for text in batch]
    stored = await stored_vectors_by_key(system)
    assert len(await system.storage.get_keys("local:memory:vectors")) == 1
    expected = await expected_vectors(system)
    assert len(stored) == 4 and all(expected[key] == stored[key] for key in stored)
    found = await system.searcher.search(
        {"query": "", "vector": toy_vectors([embedded[1]])[0], "strategy": "semantic"}
    )
    assert contents(found)[0] == embedded[1] and len(found["results"]) == 4
    await system.embeddings.vectors.stop()
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    await settled(restarted, indexed=len(texts))
    assert sum(calls) == len(texts) - 4
    assert await stored_vectors_by_key(restarted) == await expected_vectors(restarted)


async def case_small_stored_batches_are_merged_and_lose_nothing(open_system):
    """A live chat stores a small record per exchange; once MERGE_AT are small they
    become one record, each vector under its own message, and a reload embeds nothing
    again. A prune rewrites the merged record as any other."""
    import asyncio

    from airi_memory.search.semantic import MERGE_AT
    from airi_memory.search.vector_batches import decode_batch

    system = await open_system(**QUIET)
    calls = await use_toy_embeddings(system)
    await system.embeddings.configure({"provider": "custom", "model": "toy", "dimensions": 48,
                                       "backgroundIndexing": False, "batchSize": 1})  # fmt: skip
    texts = [f"alpha{i} beta{i} gamma{i % 7}" for i in range(MERGE_AT + 8)]
    sid, added = await session_with(system, texts, embed_each=True)
    assert calls == [1] * len(texts)
    sizes = [
        len(decode_batch(bytes(data)))
        for _, data in await system.storage.get_all("local:memory:vectors", raw=True)
    ]
    assert sorted(sizes) == [1] * 8 + [MERGE_AT]  # the first MERGE_AT merged; 8 since
    assert await stored_vectors_by_key(system) == await expected_vectors(system)
    assert len(system.embeddings.vectors.scan) == len(texts)
    # Deleting messages rewrites the record each one is in, the merged one too.
    await system.sessions.delete_message(sid, added[0]["id"])  # in the merged record
    await system.sessions.delete_message(sid, added[-1]["id"])  # in a small one
    expected = await expected_vectors(system)
    assert len(expected) == len(texts) - 2
    scan = system.embeddings.vectors.scan
    for _ in range(500):  # the prune runs in the background
        stored = await stored_vectors_by_key(system)
        if stored == expected and len(scan) == len(texts) - 2:
            break
        await asyncio.sleep(0.02)
    assert stored == expected and len(scan) == len(texts) - 2, await system.embeddings.status()
    await system.embeddings.vectors.stop()  # as a reload stops it
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    status = await settled(restarted, indexed=len(texts) - 2)
    assert status["indexed"] == len(texts) - 2 and calls == []
    found = await restarted.searcher.search({"query": texts[5], "strategy": "semantic", "limit": 1})
    assert contents(found) == [texts[5]] and found["results"][0]["score"] > 0.99


async def case_small_batches_an_older_version_stored_are_merged_at_start(open_system):
    """A store from before merging holds one record per model batch: the next start
    merges them, and embeds nothing again."""
    from airi_memory.search.semantic import MERGE_AT
    from airi_memory.search.vector_batches import encode_batch

    system = await open_system(**QUIET)
    await use_toy_embeddings(system)
    await session_with(system, [f"old{i} store{i}" for i in range(MERGE_AT + 3)])
    await settled(system, indexed=MERGE_AT + 3)
    await system.embeddings.vectors.stop()
    vectors = await stored_vectors_by_key(system)
    prefix = system.embeddings.vectors.prefix
    await system.storage.write_batch(
        raw_sets=[
            (f"{prefix}:0000000000001-old-{n:06d}", encode_batch([key], codes, scale, 48))
            for n, (key, (codes, scale)) in enumerate(vectors.items())
            for scale in [array("f", [scale]).tobytes()]
        ],
        removes=await system.storage.get_keys(prefix),
    )
    assert len(await system.storage.get_keys(prefix)) == MERGE_AT + 3
    restarted = await open_system(**QUIET)
    calls = await use_toy_embeddings(restarted)
    await settled(restarted, indexed=MERGE_AT + 3)
    assert calls == [] and len(await restarted.storage.get_keys(prefix)) == 1
    assert await stored_vectors_by_key(restarted) == vectors


async def case_a_merge_beside_another_tab_loses_no_vector(open_system):
    """Two tabs hold the same small stored batches: one merges them, then the other,
    whose copies are gone by then, merges its own view. Each vector stays stored once
    somewhere, and a reload embeds nothing again."""
    from airi_memory.search.semantic import MERGE_AT

    async def tab():
        system = await open_system(separate_engine=True, **QUIET)  # its own DuckDB
        calls = await use_toy_embeddings(system)
        await system.embeddings.configure({"provider": "custom", "model": "toy",
            "dimensions": 48, "backgroundIndexing": False, "batchSize": 1})  # fmt: skip
        await system.embeddings.index_now()
        return system, calls

    first, _ = await tab()
    await session_with(first, [f"shared{i} memory" for i in range(MERGE_AT - 1)], embed_each=True)
    second, calls = await tab()  # loaded the MERGE_AT - 1 small batches
    assert calls == [] and (await second.embeddings.status())["indexed"] == MERGE_AT - 1
    await session_with(first, ["first tab's own"])
    await first.embeddings.index_now()  # the MERGE_AT-th: merged
    assert len(await first.storage.get_keys("local:memory:vectors")) == 1
    await session_with(second, ["second tab's own"])
    await second.embeddings.index_now()  # merges its view: all but its own are gone
    assert len(await first.storage.get_keys("local:memory:vectors")) == 2
    restarted, calls = await tab()
    assert (await restarted.embeddings.status())["indexed"] == MERGE_AT + 1 and calls == []
    assert await stored_vectors_by_key(restarted) == await expected_vectors(restarted)


async def case_a_merge_that_cannot_write_keeps_every_batch(open_system):
    """Storage failing during a merge: the small batches stay as they were, searchable,
    and the next store merges them."""
    from airi_memory.search.semantic import MERGE_AT

    system = await open_system(**QUIET)
    await use_toy_embeddings(system)
    await system.embeddings.configure({"provider": "custom", "model": "toy", "dimensions": 48,
                                       "backgroundIndexing": False, "batchSize": 1})  # fmt: skip
    await session_with(system, [f"word{i} other{i}" for i in range(MERGE_AT - 1)], embed_each=True)
    keys = await system.storage.get_keys("local:memory:vectors")
    # Only indexNow merges from here: a background prune (due after every embedding run)
    # could merge with the storage failing or mended, whenever it came.
    await system.embeddings.vectors.stop()
    write_batch = system.storage.write_batch

    async def failing(*args, **kwargs):
        if any(":vectors:" in key for key in kwargs.get("removes", ())):
            raise OSError("disk full")
        return await write_batch(*args, **kwargs)

    system.storage.write_batch = failing
    await session_with(system, ["one more"])
    await expect_error(OSError, system.embeddings.index_now(), "disk full")
    stored = await system.storage.get_keys("local:memory:vectors")
    assert len(stored) == MERGE_AT and set(keys) < set(stored)
    assert await stored_vectors_by_key(system) == await expected_vectors(system)
    found = await system.searcher.search({"query": "word3 other3", "strategy": "semantic"})
    assert contents(found)[0] == "word3 other3"
    system.storage.write_batch = write_batch
    await session_with(system, ["and another"])
    await system.embeddings.index_now()
    assert len(await system.storage.get_keys("local:memory:vectors")) == 1
    assert await stored_vectors_by_key(system) == await expected_vectors(system)
    assert len(system.embeddings.vectors.scan) == MERGE_AT + 1


async def case_a_new_model_never_mixes_vectors(open_system):
    system = await open_system(**QUIET)
    await use_toy_embeddings(system, "toy")
    await session_with(system, ["alpha beta", "gamma delta"])
    await settled(system, indexed=2)
    small = await use_toy_embeddings(system, "toy-small", 16)
    status = await settled(system, indexed=2)
    assert status["model"] == "toy-small" and status["indexed"] == 2 and sum(small) == 2
    assert system.embeddings.vectors.scan is not None and len(system.embeddings.vectors.scan) == 2
    found = await system.searcher.search(
        {"query": "", "vector": [1.0] * 16, "strategy": "semantic"}
    )
    assert len(found["results"]) == 2  # ranked by 16-d vectors
    back = await use_toy_embeddings(system, "toy")  # its stored vectors come back as they were
    assert (await settled(system, indexed=2))["indexed"] == 2 and back == []
    keys = await system.storage.get_keys("local:memory:vectors")
    assert {k.split(":")[3] for k in keys} == {"custom-toy-48", "custom-toy-small-16"}


async def case_a_failing_embedder_loses_nothing(open_system):
    system = await open_system(**QUIET)
    await use_toy_embeddings(system, fail=True)
    sid, _ = await session_with(system, ["still stored", "and searchable by keyword"])
    status = await settled(system, "error")
    assert "embedding service down" in status["lastError"]
    assert len(await system.sessions.load_session_messages(sid)) == 2
    keyword = await system.searcher.search({"query": "searchable", "strategy": "keyword"})
    assert contents(keyword) == ["and searchable by keyword"]
    from airi_memory.errors import ProviderError

    await expect_error(
        ProviderError,
        system.searcher.search({"query": "stored", "strategy": "semantic"}),
        "embedding service down",
    )
    off = await system.embeddings.configure({"provider": "none"})
    assert off["state"] == "off" and "none" in off["note"]


async def case_failed_embedding_calls_show_in_the_status(open_system):
    """A semantic search or an indexNow whose embedding fails (a dead model worker, a
    timeout) rejects, and the status says why: never "indexing" for good, never silent."""
    from airi_memory.errors import ProviderError

    system = await open_system(**QUIET)
    await use_toy_embeddings(system, fail=True)
    await system.embeddings.configure(
        {"provider": "custom", "model": "toy", "dimensions": 48, "backgroundIndexing": False}
    )
    await session_with(system, ["one thing", "another thing"])
    search = system.searcher.search({"query": "thing", "strategy": "semantic"})
    await expect_error(ProviderError, search, "embedding service down")
    status = await system.embeddings.status()
    assert "embedding service down" in status["lastError"]
    reply = await system.dispatch("indexEmbeddings", [])
    assert reply["error"]["name"] == "ProviderError"
    assert "embedding service down" in reply["error"]["message"]
    status = await system.embeddings.status()
    assert status["state"] == "error" and "embedding service down" in status["lastError"]
    assert (status["indexed"], status["pending"]) == (0, 2)


async def case_vectors_are_made_from_the_words_keyword_search_indexes(open_system):
    """One reading of a message's text: a vector is made from its words (text parts
    joined by newlines, empty ones left out), never from its tool calls' JSON."""
    system = await open_system(**QUIET)
    embedded = []

    async def call_app(name, payload):
        embedded.extend(payload["texts"])
        return toy_vectors(payload["texts"])

    system.ports.call_app = call_app
    sid = (await system.sessions.create_session({}))["sessionId"]
    parts = [{"type": "text", "text": "checking the weather"}, {"type": "text", "text": ""},
             {"type": "text", "text": "in Oslo"}]  # fmt: skip
    call = {"id": "c1", "type": "function", "function": {"name": "forecast", "arguments": "{}"}}
    await system.sessions.add_message(
        sid, {"role": "assistant", "content": parts, "tool_calls": [call]}
    )
    await system.embeddings.configure({"provider": "custom", "model": "toy", "dimensions": 48})
    await settled(system, indexed=1)
    assert embedded == ["checking the weather\nin Oslo"]
    found = await system.searcher.search({"query": "forecast", "strategy": "keyword"})
    assert found["results"] == []  # keyword search does not index tool calls either


async def case_the_indexer_waits_on_the_systems_clock(open_system):
    """The indexer's waits (the retry after a failure, the settle after a write, which
    lets a burst of writes fill one batch) are on the system's clock: nothing is embedded
    until the clock has passed them, and then at once."""
    from airi_memory.search.semantic import RETRY_S, SETTLE_S

    clock = Clock()
    system = await open_system(clock=clock, **QUIET)
    calls, outage = [], {"down": True}

    async def call_app(name, payload):
        calls.append(payload["texts"])
        if outage["down"]:
            raise RuntimeError("embedding service down")
        return toy_vectors(payload["texts"])

    system.ports.call_app = call_app
    sid, _ = await session_with(system, ["first words"])
    await system.embeddings.configure({"provider": "custom", "model": "toy", "dimensions": 48})
    assert "embedding service down" in (await settled(system, "error"))["lastError"]
    await eventually(lambda: clock.sleepers == 1, "the wait before a retry")
    outage["down"] = False
    await clock.advance(round(RETRY_S * 1000) - 1)
    assert calls == [["first words"]]  # not before its time
    await clock.advance(1)
    assert (await settled(system, indexed=1))["indexed"] == 1
    assert calls == [["first words"]] * 2
    await system.sessions.add_message(sid, {"role": "user", "content": "second words"})
    await system.sessions.add_message(sid, {"role": "user", "content": "third words"})
    await eventually(lambda: clock.sleepers == 1, "the settle after a write")
    assert len(calls) == 2
    await clock.advance(round(SETTLE_S * 1000))
    assert (await settled(system, indexed=3))["indexed"] == 3
    assert sorted(calls[2]) == ["second words", "third words"]  # one batch for the burst


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]

"""The sessions contract: every session-store operation, run on CPython and in Pyodide.

Each case gets ``open_system(**options)``: a coroutine that opens a MemorySystem over
the case's own durable storage (calling it again is a restart: same records, a fresh
DuckDB mirror). Self-contained so that it runs inside Pyodide too.
"""

from airi_memory.errors import InvalidValueError, NotFoundError, ProviderError
from contract.common import DAY, Clock, expect_error


async def case_create_list_filter_and_paginate(open_system):
    system = await open_system(clock=Clock())
    s = system.sessions
    first = await s.create_session({"title": "First", "characterId": "airi"})
    second = await s.create_session({"title": "Second", "tags": ["work", "urgent"]})
    third = await s.create_session({"title": "Third", "pinned": True})
    assert first["userId"] == "tester" and first["characterId"] == "airi"
    assert first["pinned"] is False and first["archived"] is False and first["tags"] == []
    assert await s.get_session(first["sessionId"]) == first
    assert await s.get_session("missing") is None
    listed = await s.list_sessions({"limit": 20})
    assert [m["title"] for m in listed] == ["Third", "Second", "First"]
    assert [m["title"] for m in await s.list_sessions({"limit": 1, "offset": 1})] == ["Second"]
    assert [m["title"] for m in await s.list_sessions({"characterId": "airi"})] == ["First"]
    assert [m["title"] for m in await s.list_sessions({"pinned": True})] == ["Third"]
    assert [m["title"] for m in await s.list_sessions({"tags": ["work"]})] == ["Second"]
    assert await s.list_sessions({"tags": ["work", "missing"]}) == []
    assert await s.list_sessions({"userId": "someone-else"}) == []
    assert len(await s.get_all_sessions()) == 3
    # The seed's SQL ("10 most recent sessions of a user") on the DuckDB mirror agrees.
    recent = await system.query(
        "SELECT session_id FROM chat_sessions WHERE user_id = ? ORDER BY updated_at DESC LIMIT 10",
        ["tester"],
    )
    assert [row["session_id"] for row in recent] == [m["sessionId"] for m in listed]
    await expect_error(InvalidValueError, s.list_sessions({"limit": -1}), "limit")
    await expect_error(InvalidValueError, s.list_sessions({"colour": "red"}), "colour")
    assert second["sessionId"] != third["sessionId"]


async def case_messages_are_durable_ordered_and_lazy(open_system):
    system = await open_system()
    s = system.sessions
    meta = await s.create_session({"title": "Chat", "systemPrompt": "You are Airi."})
    sid = meta["sessionId"]
    added = [
        await s.add_message(sid, {"role": "user", "content": f"message {i}"}) for i in range(30)
    ]
    assert all(m["id"] and m["createdAt"] > 0 for m in added)
    assert len({m["id"] for m in added}) == 30
    keys = await system.storage.get_keys(f"local:memory:messages:{sid}")
    assert len(keys) == 31  # one record per message, the system prompt included
    updated = await s.get_session(sid)
    assert updated["updatedAt"] >= added[-1]["createdAt"] - 1
    assert [m["content"] for m in await s.latest_messages(sid, 2)] == ["message 28", "message 29"]
    page = await s.messages_page(sid, 10, 5)
    assert [m["content"] for m in page] == [f"message {i}" for i in range(9, 14)]
    restarted = await open_system()
    messages = await restarted.sessions.load_session_messages(sid)
    assert messages[0] == {"id": messages[0]["id"], "role": "system", "content": "You are Airi.",
                           "createdAt": messages[0]["createdAt"]}  # fmt: skip
    assert [m["content"] for m in messages[1:]] == [f"message {i}" for i in range(30)]
    assert [m["id"] for m in messages[1:]] == [m["id"] for m in added]
    assert await restarted.sessions.latest_messages(sid, 3) == messages[-3:]  # from the cache
    assert (await restarted.sessions.persist_session_messages(sid))["messages"] == 31
    more = await restarted.sessions.add_message(
        sid, {"role": "assistant", "content": "after restart"}
    )
    assert (await restarted.sessions.latest_messages(sid, 1)) == [more]


async def case_message_shapes_and_unknown_fields_survive(open_system):
    system = await open_system()
    sid = (await system.sessions.create_session())["sessionId"]
    message = {
        "id": "fixed-id",
        "role": "assistant",
        "content": [
            {"type": "text", "text": "Look"},
            {"type": "image_url", "image_url": {"url": "data:x"}},
        ],
        "createdAt": 123,
        "slices": [{"type": "text", "text": "Look"}],
        "tool_results": [{"id": "call-1", "result": "ok"}],
        "categorization": {"speech": "Look", "reasoning": "because"},
        "appSpecific": {"mood": "happy"},
    }
    assert await system.sessions.add_message(sid, message) == message
    error = await system.sessions.add_message(sid, {"role": "error", "content": "the LLM failed"})
    assert error["role"] == "error"
    restarted = await open_system()
    assert (await restarted.sessions.load_session_messages(sid))[0] == message


async def case_bad_messages_are_refused_and_nothing_is_written(open_system):
    system = await open_system()
    s = system.sessions
    sid = (await s.create_session())["sessionId"]
    await expect_error(
        InvalidValueError, s.add_message(sid, {"role": "robot", "content": "x"}), "role"
    )
    await expect_error(
        InvalidValueError, s.add_message(sid, {"role": "user", "content": 5}), "content"
    )
    await expect_error(
        InvalidValueError, s.add_message(sid, {"role": "user", "createdAt": -1}), "createdAt"
    )
    await expect_error(
        NotFoundError, s.add_message("nope", {"role": "user", "content": "x"}), "nope"
    )
    await expect_error(InvalidValueError, s.create_session({"title": "x" * 501}), "title")
    assert await s.load_session_messages(sid) == []
    assert await system.storage.get_keys("local:memory:messages") == []


async def case_a_message_id_already_in_the_session_is_refused(open_system):
    """Update and delete find a message by its id: two with one id in a session would make
    them act on either. A repeated id is refused, in this tab or coming from another one,
    and nothing is written; the same id in another session is fine."""
    system = await open_system(clock=Clock(), separate_engine=True)
    s = system.sessions
    sid = (await s.create_session())["sessionId"]
    other_sid = (await s.create_session())["sessionId"]
    first = await s.add_message(sid, {"id": "m1", "role": "user", "content": "first"})
    sessions_before = (await system.export_sessions())["sessions"]
    keys_before = sorted(await system.storage.get_keys("local"))
    again = {"id": "m1", "role": "assistant", "content": "again"}
    await expect_error(
        InvalidValueError, s.add_message(sid, again), "message.id", "'m1'", sid, "already exists"
    )
    assert (await system.export_sessions())["sessions"] == sessions_before
    assert sorted(await system.storage.get_keys("local")) == keys_before
    # Another tab that has not seen m1 yet finds it in the store before writing.
    other_tab = await open_system(clock=Clock(), separate_engine=True)
    await other_tab.sessions.load_session_messages(sid)  # it knows the session ...
    await s.add_message(sid, {"id": "m2", "role": "user", "content": "second"})  # ... not m2
    await expect_error(
        InvalidValueError, other_tab.sessions.add_message(sid, {**again, "id": "m2"}), "m2"
    )
    # It caught up (after a guard conflict, or before writing when it had to look in the
    # store anyway: how often depends on the engine's timing), then refused.
    assert other_tab.sessions.stats()["journal"]["conflicts"] <= 1
    ids = [m["id"] for m in await s.load_session_messages(sid)]
    assert ids == ["m1", "m2"], ids
    assert (await s.add_message(other_sid, again))["id"] == "m1"
    fork = await s.fork_session({"fromSessionId": sid, "atIndex": 2})
    assert [m["id"] for m in await s.load_session_messages(fork["sessionId"])] == ["m1", "m2"]
    await s.delete_message(sid, first["id"])
    assert (await s.add_message(sid, again))["content"] == "again"  # free again once deleted
    restarted = await open_system(clock=Clock())
    messages = await restarted.sessions.load_session_messages(sid)
    found = [(m["id"], m["content"]) for m in messages]
    assert found == [("m2", "second"), ("m1", "again")], found


async def case_update_and_delete_messages(open_system):
    system = await open_system()
    s = system.sessions
    sid = (await s.create_session())["sessionId"]
    a = await s.add_message(sid, {"role": "user", "content": "a"})
    b = await s.add_message(sid, {"role": "assistant", "content": "b"})
    c = await s.add_message(sid, {"role": "user", "content": "c"})
    changed = await s.update_message(sid, b["id"], {"content": "B!", "edited": True})
    assert changed == {**b, "content": "B!", "edited": True}
    assert await s.delete_message(sid, a["id"]) is True
    await expect_error(NotFoundError, s.delete_message(sid, a["id"]), a["id"])
    await expect_error(InvalidValueError, s.update_message(sid, c["id"], {"id": "other"}), "id")
    restarted = await open_system()
    assert await restarted.sessions.load_session_messages(sid) == [changed, c]


async def case_fork_copies_a_prefix_and_leaves_the_parent(open_system):
    system = await open_system()
    s = system.sessions
    parent = await s.create_session({"title": "Original", "characterId": "airi", "tags": ["t"]})
    pid = parent["sessionId"]
    for i in range(12):
        await s.add_message(
            pid, {"role": "user" if i % 2 == 0 else "assistant", "content": f"m{i}"}
        )
    before = await s.load_session_messages(pid)
    parent_before = await s.get_session(pid)
    fork = await s.fork_session(
        {"fromSessionId": pid, "atIndex": 10, "reason": "trying-different-approach"}
    )
    assert fork["parentSessionId"] == pid and fork["forkIndex"] == 10
    assert fork["forkReason"] == "trying-different-approach" and fork["characterId"] == "airi"
    fid = fork["sessionId"]
    assert await s.load_session_messages(fid) == before[:10]
    await s.add_message(fid, {"role": "user", "content": "What if we tried X instead?"})
    assert await s.load_session_messages(pid) == before
    assert await s.get_session(pid) == parent_before  # the fork never touches its parent
    await expect_error(
        InvalidValueError, s.fork_session({"fromSessionId": pid, "atIndex": 13}), "atIndex"
    )
    await expect_error(
        NotFoundError, s.fork_session({"fromSessionId": "nope", "atIndex": 0}), "nope"
    )
    restarted = await open_system()
    assert len(await restarted.sessions.load_session_messages(fid)) == 11
    assert (await restarted.sessions.get_session(fid))["parentSessionId"] == pid


async def case_rename_pin_tag_archive_delete(open_system):
    clock = Clock()
    system = await open_system(clock=clock)
    s = system.sessions
    old = await s.create_session({"title": "Old"})
    kept = await s.create_session({"title": "Old but pinned", "pinned": True})
    clock.now += 40 * DAY
    fresh = await s.create_session({"title": "Fresh"})
    assert (await s.rename_session(fresh["sessionId"], "Renamed"))["title"] == "Renamed"
    assert (await s.tag_session(fresh["sessionId"], ["a", "b"]))["tags"] == ["a", "b"]
    assert (await s.pin_session(fresh["sessionId"], True))["pinned"] is True
    assert (await s.archive_session(fresh["sessionId"]))["archived"] is True
    assert [m["title"] for m in await s.list_sessions({"archived": True})] == ["Renamed"]
    assert (await s.unarchive_session(fresh["sessionId"]))["archived"] is False
    report = await s.delete_old_sessions({"olderThan": 30 * DAY})
    assert report == {"deleted": [old["sessionId"]]}
    assert await s.get_session(old["sessionId"]) is None
    assert await s.get_session(kept["sessionId"]) is not None
    sid = fresh["sessionId"]
    await s.add_message(sid, {"role": "user", "content": "soon gone"})
    assert await s.delete_session(sid) is True
    await expect_error(NotFoundError, s.delete_session(sid), sid)
    assert await system.storage.get_keys(f"local:memory:messages:{sid}") == []
    restarted = await open_system(clock=clock)
    assert [m["title"] for m in await restarted.sessions.get_all_sessions()] == ["Old but pinned"]


async def case_active_session_is_kept_per_character(open_system):
    system = await open_system()
    s = system.sessions
    a = await s.create_session({"characterId": "airi"})
    b = await s.create_session()
    assert await s.get_active_session_id() is None
    await s.set_active_session_id(a["sessionId"])
    await s.set_active_session_id(b["sessionId"])
    await expect_error(NotFoundError, s.set_active_session_id("nope"), "nope")
    restarted = await open_system()
    assert await restarted.sessions.get_active_session_id("airi") == a["sessionId"]
    assert await restarted.sessions.get_active_session_id() == b["sessionId"]


async def case_ids_never_share_a_storage_key(open_system):
    """User and character ids go into storage keys; unstorage turns ``/`` into ``:``, so
    ``a/b`` and ``a:b`` must not land on one record, and ``..`` or a trailing ``$`` must
    not stop the system from opening. Ordinary ids keep the keys they always had."""
    from airi_memory.llm import LlmConfig
    from airi_memory.llm.providers import CallbackLlm

    async def overloaded(request):
        raise RuntimeError("model overloaded")

    slash = await open_system(userId="a/b", retention={"enabled": False})
    colon = await open_system(userId="a:b", retention={"enabled": False})
    mine, theirs = slash.sessions, colon.sessions
    first = (await mine.create_session({"characterId": "x/y"}))["sessionId"]
    second = (await mine.create_session({"characterId": "x:y"}))["sessionId"]
    other = (await theirs.create_session({"characterId": "x/y"}))["sessionId"]
    for store, sid in ((mine, first), (mine, second), (theirs, other)):
        await store.set_active_session_id(sid)
    await slash.context.set_user_profile({"name": "slash"})
    await colon.context.set_user_profile({"name": "colon"})
    for text in ("hello", "again"):
        await mine.add_message(first, {"role": "user", "content": text})
    slash.summarizer.provider = CallbackLlm(LlmConfig(provider="callback"), overloaded)
    await expect_error(
        ProviderError, slash.summarizer.summarize_old_context(first, 1), "overloaded"
    )
    for user_id, active, profile, retries in (
        ("a/b", {"x/y": first, "x:y": second}, "slash", [first]),
        ("a:b", {"x/y": other, "x:y": None}, "colon", []),
    ):
        reopened = await open_system(userId=user_id, retention={"enabled": False})
        for character, sid in active.items():
            assert await reopened.sessions.get_active_session_id(character) == sid
        assert (await reopened.context.get_user_profile())["name"] == profile
        assert list(reopened.summarizer.failures) == retries
    for odd in ("..", ".", "money$", "what?", "back\\slash", "50%"):
        system = await open_system(userId=odd, retention={"enabled": False})
        sid = (await system.sessions.create_session({"characterId": odd}))["sessionId"]
        await system.sessions.set_active_session_id(sid)
        await system.context.set_user_profile({"name": odd})
        reopened = await open_system(userId=odd, retention={"enabled": False})
        assert (await reopened.info())["activeSessionId"] is None  # "default" has none
        assert await reopened.sessions.get_active_session_id(odd) == sid
        assert (await reopened.context.get_user_profile())["name"] == odd
    # Ordinary ids (nanoid's alphabet: "tester", "default") keep their keys: data written
    # before ids were encoded is still found.
    plain = await open_system(retention={"enabled": False})
    sid = (await plain.sessions.create_session({"characterId": "airi"}))["sessionId"]
    await plain.sessions.set_active_session_id(sid)
    await plain.context.set_user_profile({"name": "plain"})
    keys = await plain.storage.get_keys("local:memory")
    assert "local:memory:active:tester:airi" in keys
    assert "local:memory:profile:tester" in keys
    assert f"local:memory:sessions:{sid}" in keys
    # Session ids are checked, not encoded: only nanoid's alphabet is accepted, so one
    # from a file that would break a key is refused with the field named.
    for bad in ("x:y", "../z", "a/b"):
        export = {"version": "1.0.0", "sessions": [{"meta": {"sessionId": bad}, "messages": []}]}
        await expect_error(
            InvalidValueError,
            plain.import_sessions(export, {"keepIds": True}),
            "sessions[0].meta.sessionId",
        )
    reopened = await open_system(retention={"enabled": False})
    assert [m["sessionId"] for m in await reopened.sessions.get_all_sessions()] == [sid]


async def case_export_import_round_trip_and_duplicates(open_system):
    system = await open_system()
    s = system.sessions
    sid = (await s.create_session({"title": "Kept", "tags": ["x"]}))["sessionId"]
    for i in range(5):
        await s.add_message(sid, {"role": "user", "content": f"hello {i}", "extra": i})
    exported = await system.export_sessions()
    assert exported["version"] == "1.0.0" and exported["exportedAt"] > 0
    assert [len(e["messages"]) for e in exported["sessions"]] == [5]
    report = await system.import_sessions(exported)
    assert (
        report["format"],
        report["sessions"],
        report["messages"],
        report["skippedDuplicates"],
    ) == ("seed", 1, 5, 0)
    new_id = report["sessionIds"][0]
    assert new_id != sid
    assert await s.load_session_messages(new_id) == exported["sessions"][0]["messages"]
    assert (await s.get_session(new_id))["title"] == "Kept"
    again = await system.import_sessions(exported)
    assert (again["sessions"], again["skippedDuplicates"]) == (0, 1)
    kept = await system.import_sessions(exported, {"keepIds": True})
    assert (kept["sessions"], kept["skippedDuplicates"]) == (0, 1)
    only = await system.export_sessions([new_id])
    assert [e["meta"]["sessionId"] for e in only["sessions"]] == [new_id]


async def case_import_airi_files(open_system):
    system = await open_system()
    airi = {
        "format": "chat-sessions-index:v1",
        "index": {
            "userId": "local",
            "characters": {"default": {"activeSessionId": "s1", "sessions": {}}},
        },
        "sessions": {
            "s1": {
                "meta": {
                    "sessionId": "s1",
                    "userId": "local",
                    "characterId": "default",
                    "createdAt": 1,
                    "updatedAt": 2,
                    "cloudSyncedAt": 5,
                },
                "messages": [
                    {"role": "system", "content": "card prompt"},
                    {"role": "user", "content": "hi", "id": "m1", "createdAt": 3},
                    {
                        "role": "assistant",
                        "content": "hello!",
                        "slices": [{"type": "text", "text": "hello!"}],
                        "tool_results": [],
                        "categorization": {"speech": "hello!", "reasoning": ""},
                    },
                ],
            }
        },
    }
    report = await system.import_sessions(airi, {"keepIds": True})
    assert (report["format"], report["sessions"], report["messages"]) == ("airi", 1, 3)
    meta = await system.sessions.get_session("s1")
    assert meta["title"] == "New Conversation" and meta["cloudSyncedAt"] == 5
    assert meta["userId"] == "tester"
    messages = await system.sessions.load_session_messages("s1")
    assert [m["role"] for m in messages] == ["system", "user", "assistant"]
    assert messages[1]["id"] == "m1" and all(m["id"] for m in messages)


async def case_malformed_import_changes_nothing(open_system):
    system = await open_system()
    sid = (await system.sessions.create_session({"title": "Existing"}))["sessionId"]
    await system.sessions.add_message(sid, {"role": "user", "content": "keep me"})
    before = await system.export_sessions()
    keys_before = sorted(await system.storage.get_keys("local"))
    good = {
        "meta": {"sessionId": "g1", "title": "ok"},
        "messages": [{"role": "user", "content": "fine"}],
    }
    bad = {
        "meta": {"sessionId": "b1"},
        "messages": [{"role": "user", "content": "x"}, {"role": "wizard"}],
    }
    error = await expect_error(
        InvalidValueError,
        system.import_sessions({"version": "1.0.0", "exportedAt": 1, "sessions": [good, bad]}),
        "sessions[1].messages[1].role",
    )
    assert "wizard" in str(error) or "role" in str(error)
    await expect_error(
        InvalidValueError, system.import_sessions({"hello": 1}), "not a conversation export"
    )
    await expect_error(
        InvalidValueError, system.import_sessions({"version": "1.0.0", "sessions": {}}), "sessions"
    )
    await expect_error(
        InvalidValueError,
        system.import_sessions(
            {"version": "1.0.0", "sessions": [{"meta": {"sessionId": "has space"}, "messages": []}]}
        ),
        "sessions[0].meta.sessionId",
    )
    huge = {"meta": {"sessionId": "h"}, "messages": [{"role": "user", "content": "x" * 1_000_001}]}
    await expect_error(
        InvalidValueError,
        system.import_sessions({"version": "1.0.0", "sessions": [huge]}),
        "sessions[0].messages[0].content",
    )
    after = await system.export_sessions()
    assert after["sessions"] == before["sessions"]
    assert sorted(await system.storage.get_keys("local")) == keys_before


async def case_cache_hits_misses_and_invalidation(open_system):
    for strategy in ("lru", "lfu"):
        system = await open_system(cache={"maxSize": 2, "ttl": 60_000, "strategy": strategy})
        s = system.sessions
        ids = [(await s.create_session())["sessionId"] for _ in range(3)]
        await s.load_session_messages(ids[0])
        await s.load_session_messages(ids[0])
        stats = s.stats()["cache"]
        assert (stats["hits"], stats["misses"], stats["strategy"]) == (1, 1, strategy)
        # An added message joins the cached session: no read from DuckDB.
        await s.add_message(ids[0], {"role": "user", "content": "new"})
        assert [m["content"] for m in await s.load_session_messages(ids[0])] == ["new"]
        assert s.stats()["cache"]["misses"] == 1
        # Any other change invalidates it.
        message_id = (await s.load_session_messages(ids[0]))[0]["id"]
        await s.update_message(ids[0], message_id, {"content": "edited"})
        assert [m["content"] for m in await s.load_session_messages(ids[0])] == ["edited"]
        assert s.stats()["cache"]["misses"] == 2
        for sid in ids:
            await s.load_session_messages(sid)
        assert s.stats()["cache"]["size"] == 2
    await expect_error(InvalidValueError, open_system(cache={"strategy": "fifo"}), "strategy")


async def case_analytics(open_system):
    system = await open_system()
    s = system.sessions
    a = (await s.create_session({"characterId": "airi"}))["sessionId"]
    b = (await s.create_session({"characterId": "neko"}))["sessionId"]
    day = 1_767_225_600_000
    await s.add_message(a, {"role": "user", "content": "abcd", "createdAt": day})
    await s.add_message(a, {"role": "assistant", "content": "abcdefgh", "createdAt": day + DAY})
    await s.add_message(b, {"role": "user", "content": "xy", "createdAt": day + DAY})
    stats = await system.analytics()
    assert stats["messagesPerDay"] == [
        {"day": "2026-01-01", "messages": 1},
        {"day": "2026-01-02", "messages": 2},
    ]
    assert stats["perRole"] == [
        {"role": "user", "messages": 2, "characters": 6},
        {"role": "assistant", "messages": 1, "characters": 8},
    ]
    assert stats["perCharacter"] == [
        {"characterId": "airi", "sessions": 1, "messages": 2},
        {"characterId": "neko", "sessions": 1, "messages": 1},
    ]
    assert stats["perSession"][0] == {
        "sessionId": a,
        "title": "New Conversation",
        "messages": 2,
        "characters": 12,
    }
    assert stats["totals"] == {"sessions": 2, "messages": 3, "characters": 14, "estimatedTokens": 4}


async def case_snapshot_plus_journal_restores_everything(open_system):
    system = await open_system(clock=Clock())
    s = system.sessions
    keep = (await s.create_session({"title": "Keep"}))["sessionId"]
    gone = (await s.create_session({"title": "Gone"}))["sessionId"]
    early = [
        await s.add_message(keep, {"role": "user", "content": f"early {i}"}) for i in range(20)
    ]
    await s.add_message(gone, {"role": "user", "content": "bye"})
    report = await s.snapshot()
    assert report["bytes"] > 0 and report["through"] == 23 and report["prunedThrough"] == 0
    assert s.stats()["journalSinceSnapshot"] == 0
    # The first snapshot prunes nothing: a lagging tab may still need those entries.
    assert len(await system.storage.get_keys("local:memory:journal")) == 23
    # Changes after the snapshot live only in the journal until the next one.
    late = [
        await s.add_message(keep, {"role": "assistant", "content": f"late {i}"}) for i in range(5)
    ]
    edited = await s.update_message(keep, early[3]["id"], {"content": "edited"})
    await s.delete_message(keep, early[0]["id"])
    await s.delete_session(gone)
    await s.rename_session(keep, "Kept and renamed")
    expected = [*early[1:3], edited, *early[4:], *late]
    again = await s.snapshot()  # prunes what the first one covered, and no more
    assert again["prunedThrough"] == 23 and again["through"] == 23 + 9
    assert len(await system.storage.get_keys("local:memory:journal")) == 9
    restarted = await open_system(clock=Clock())
    assert await restarted.sessions.load_session_messages(keep) == expected
    assert await restarted.sessions.get_session(gone) is None
    assert (await restarted.sessions.get_session(keep))["title"] == "Kept and renamed"
    assert (await restarted.analytics())["totals"]["messages"] == len(expected)
    after = await restarted.sessions.add_message(keep, {"role": "user", "content": "next"})
    assert (await restarted.sessions.latest_messages(keep, 1)) == [after]


async def case_a_damaged_snapshot_falls_back_to_the_records(open_system):
    from airi_memory.sessions.snapshots import snapshot_key

    system = await open_system(clock=Clock())
    sid = (await system.sessions.create_session())["sessionId"]
    for i in range(3):
        await system.sessions.add_message(sid, {"role": "user", "content": f"m{i}"})
    await system.sessions.snapshot()
    await system.sessions.add_message(sid, {"role": "user", "content": "after"})
    await system.storage.set_item_raw(snapshot_key("chat_messages"), b"not a snapshot at all")
    restarted = await open_system(clock=Clock())
    contents = [m["content"] for m in await restarted.sessions.load_session_messages(sid)]
    assert contents == ["m0", "m1", "m2", "after"]
    assert "snapshotFailed" in restarted.sessions.stats()["loadMs"]


async def case_a_snapshot_in_an_older_layout_is_ignored_then_removed(open_system):
    """A snapshot an older version wrote (tables of another shape) is not imported: the
    start-up reads the records, and its next snapshot removes the old one."""
    from airi_memory.sessions.snapshots import SNAPSHOT, SNAPSHOT_VERSION

    system = await open_system(clock=Clock())
    sid = (await system.sessions.create_session())["sessionId"]
    for i in range(3):
        await system.sessions.add_message(sid, {"role": "user", "content": f"m{i}"})
    await system.sessions.snapshot()
    current = f"{SNAPSHOT}:{SNAPSHOT_VERSION}:"
    saved = await system.storage.get_keys(current)
    assert len(saved) >= 2  # the covers and at least the message table
    for key in saved:  # as if an older version (v4) had written it
        older = key.replace(current, f"{SNAPSHOT}:v4:")
        if key.endswith(":covers"):
            await system.storage.set_item(older, await system.storage.get_item(key))
        else:
            await system.storage.set_item_raw(older, await system.storage.get_item_raw(key))
        await system.storage.remove_item(key)
    restarted = await open_system(clock=Clock())
    assert "importSnapshot" not in restarted.sessions.stats()["loadMs"]
    contents = [m["content"] for m in await restarted.sessions.load_session_messages(sid)]
    assert contents == ["m0", "m1", "m2"]
    found = await restarted.searcher.search({"query": "m1", "strategy": "keyword"})
    assert [hit["message"]["content"] for hit in found["results"]] == ["m1"]
    await restarted.sessions.snapshot()
    assert await system.storage.get_keys(f"{SNAPSHOT}:v4:") == []
    assert len(await system.storage.get_keys(current)) == len(saved)


async def case_two_writers_on_one_store_lose_nothing(open_system):
    first = await open_system(clock=Clock(), separate_engine=True)
    sid = (await first.sessions.create_session({"title": "Shared"}))["sessionId"]
    second = await open_system(clock=Clock(), separate_engine=True)
    for i in range(5):  # interleaved, as two tabs would
        await first.sessions.add_message(sid, {"role": "user", "content": f"tab one {i}"})
        await second.sessions.add_message(sid, {"role": "user", "content": f"tab two {i}"})
    await first.sessions.rename_session(sid, "Renamed in tab one")
    await second.sessions.add_message(sid, {"role": "assistant", "content": "tab two after rename"})
    # Tab one catches up from the journal (a broadcast only tells it to look); tab two
    # already did, each time its guarded write found that tab one had written first.
    synced = await first.sessions.sync()
    assert synced["sessionIds"] == [sid]
    assert second.sessions.stats()["journal"]["catchUps"] >= 5
    contents = [m["content"] for m in await second.sessions.load_session_messages(sid)]
    # Each write was guarded on the session's version, so the order is commit order.
    assert contents == [f"tab {t} {i}" for i in range(5) for t in ("one", "two")] + [
        "tab two after rename"
    ]
    assert await first.sessions.load_session_messages(sid) == (
        await second.sessions.load_session_messages(sid)
    )
    restarted = await open_system()
    stored = [m["content"] for m in await restarted.sessions.load_session_messages(sid)]
    assert stored == contents
    assert (await restarted.sessions.get_session(sid))["title"] == "Renamed in tab one"


async def case_concurrent_reads_and_writes_see_every_message(open_system):
    import asyncio

    system = await open_system()
    s = system.sessions
    sid = (await s.create_session({"systemPrompt": "sys"}))["sessionId"]
    await s.load_session_messages(sid)
    for i in range(3):
        await s.add_message(sid, {"role": "user", "content": f"m{i}"})
        # Two reads at once, as a page rendering its list and its messages does.
        listed, messages = await asyncio.gather(s.list_sessions(), s.load_session_messages(sid))
        assert listed[0]["sessionId"] == sid
        assert len(messages) == i + 2, messages
        assert len(await s.load_session_messages(sid)) == i + 2
    writer = asyncio.ensure_future(s.add_message(sid, {"role": "user", "content": "racing"}))
    await s.load_session_messages(sid)
    await writer
    assert [m["content"] for m in await s.load_session_messages(sid)][-1] == "racing"


def _file(*entries):
    return {"version": "1.0.0", "exportedAt": 1, "sessions": list(entries)}


def _nested(levels):
    value = "bottom"
    for _ in range(levels):
        value = {"a": value}
    return value


async def case_hostile_import_files_are_refused_and_write_nothing(open_system):
    """Size in bytes, nesting, parts, attached fields, timestamps and duplicate ids are
    bounded; each refusal names its field and leaves the store as it was."""
    import json

    from airi_memory.models import MAX_CONTENT_PARTS, MAX_FIELD_BYTES, now_ms

    clock = Clock()
    system = await open_system(clock=clock, **{"import": {"maxBytes": 50_000}})
    sid = (await system.sessions.create_session({"title": "Existing"}))["sessionId"]
    keys_before = sorted(await system.storage.get_keys("local"))

    def one(*messages, meta=None):
        return _file({"meta": meta or {"sessionId": "s1"}, "messages": list(messages)})

    big = one({"role": "user", "content": "x" * 60_000})
    await expect_error(InvalidValueError, system.import_sessions(big), "50,000 bytes", "maxBytes")
    await expect_error(
        InvalidValueError, system.import_sessions(json.dumps(big)), "50,000 bytes", "maxBytes"
    )
    # UTF-8 bytes, not characters: 20,000 four-byte characters are 80,000 bytes.
    emoji = one({"role": "user", "content": "\U0001f600" * 20_000})
    await expect_error(InvalidValueError, system.import_sessions(emoji), "50,000 bytes")
    deep = one({"role": "user", "content": "x", "deep": _nested(70)})
    await expect_error(
        InvalidValueError, system.import_sessions(deep), "sessions[0].messages[0].deep.a", "64"
    )
    await expect_error(InvalidValueError, system.import_sessions(json.dumps(deep)), "64 levels")
    latest = max(clock.now, now_ms())  # the later of the store's clock and the wall clock
    future = latest + 2 * DAY
    await expect_error(
        InvalidValueError,
        system.import_sessions(one({"role": "user", "content": "x", "createdAt": future})),
        "sessions[0].messages[0].createdAt",
        "future",
    )
    await expect_error(
        InvalidValueError,
        system.import_sessions(one(meta={"sessionId": "s1", "updatedAt": 8_640_000_000_000_001})),
        "sessions[0].meta.updatedAt",
    )
    await expect_error(
        InvalidValueError,
        system.import_sessions(one({"role": "user", "createdAt": -8_640_000_000_000_001})),
        "sessions[0].messages[0].createdAt",
    )
    twice = one(
        {"role": "user", "content": "a", "id": "m1"},
        {"role": "user", "content": "b", "id": "m2"},
        {"role": "user", "content": "c", "id": "m1"},
    )
    await expect_error(
        InvalidValueError,
        system.import_sessions(twice),
        "sessions[0].messages[2].id",
        "duplicate",
        "messages[0]",
    )
    roomy = await open_system(clock=clock, separate_engine=True)  # the default limit: 64 MiB
    parts = [{"type": "text", "text": "p"}] * (MAX_CONTENT_PARTS + 1)
    await expect_error(
        InvalidValueError,
        roomy.import_sessions(one({"role": "user", "content": parts})),
        "sessions[0].messages[0].content",
        str(MAX_CONTENT_PARTS),
    )
    heavy = [{"id": "call", "result": "r" * MAX_FIELD_BYTES}]
    await expect_error(
        InvalidValueError,
        roomy.import_sessions(one({"role": "tool", "content": "", "tool_results": heavy})),
        "sessions[0].messages[0].tool_results",
        "bytes",
    )
    extra = {"role": "user", "content": "x", "notes": "n" * MAX_FIELD_BYTES}
    await expect_error(
        InvalidValueError,
        roomy.import_sessions(one(extra)),
        "sessions[0].messages[0].notes",
        "bytes",
    )
    await expect_error(
        InvalidValueError,
        roomy.import_sessions(one(meta={"sessionId": "s1", "appData": _nested(40)})),
        "sessions[0].meta.appData",
        "levels",
    )
    assert [m["sessionId"] for m in await roomy.sessions.get_all_sessions()] == [sid]
    assert sorted(await roomy.storage.get_keys("local")) == keys_before
    # Within the limits: a day ahead at most, the same ids in two sessions, a JSON string.
    fine = _file(
        {"meta": {"sessionId": "f1"}, "messages": [
            {"role": "user", "content": "soon", "id": "m1", "createdAt": latest + DAY // 2},
        ]},
        {"meta": {"sessionId": "f2"}, "messages": [{"role": "user", "content": "x", "id": "m1"}]},
    )  # fmt: skip
    report = await system.import_sessions(json.dumps(fine), {"keepIds": True})
    assert (report["sessions"], report["messages"]) == (2, 2)
    assert [m["content"] for m in await system.sessions.load_session_messages("f1")] == ["soon"]
    await expect_error(InvalidValueError, system.import_sessions("{not json"), "JSON")
    await expect_error(
        InvalidValueError, open_system(**{"import": {"maxBytes": 0}}), "import.maxBytes"
    )


async def case_add_message_refuses_the_same_abuses(open_system):
    from airi_memory.models import MAX_CONTENT_PARTS, MAX_FIELD_BYTES, now_ms

    system = await open_system()
    s = system.sessions
    sid = (await s.create_session())["sessionId"]
    refused = [
        ({"role": "user", "createdAt": now_ms() + 2 * DAY}, "message.createdAt"),
        ({"role": "user", "createdAt": 8_640_000_000_000_001}, "message.createdAt"),
        ({"role": "user", "content": [{"type": "text", "text": "p"}] * (MAX_CONTENT_PARTS + 1)},
         "message.content"),
        ({"role": "user", "content": [{"type": "image_url", "url": "u" * MAX_FIELD_BYTES}]},
         "message.content"),
        ({"role": "user", "slices": [{"text": "s" * MAX_FIELD_BYTES}]}, "message.slices"),
        ({"role": "user", "deep": _nested(40)}, "message.deep"),
        ({"role": "user", **{f"f{i}": "v" * (MAX_FIELD_BYTES // 4) for i in range(5)}},
         "message.f"),
    ]  # fmt: skip
    for message, field in refused:
        await expect_error(InvalidValueError, s.add_message(sid, message), field)
    assert await s.load_session_messages(sid) == []
    assert await system.storage.get_keys("local:memory:messages") == []
    kept = await s.add_message(sid, {"role": "user", "content": "x", "deep": _nested(20)})
    assert kept["deep"] == _nested(20)
    await expect_error(
        InvalidValueError,
        s.update_message(sid, kept["id"], {"createdAt": now_ms() + 2 * DAY}),
        "patch.createdAt",
    )
    assert await s.load_session_messages(sid) == [kept]


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]

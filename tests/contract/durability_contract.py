"""The durability contract: nothing acknowledged is lost. Tabs that lag behind, snapshots
racing each other, mirror updates that fail after a commit, damaged records, stray
writes into the library's keys, retention and deletes racing another tab's writes.

Each case gets ``open_system`` as the sessions contract does; ``separate_engine=True``
opens a second "tab" (its own DuckDB) on the same durable store. Runs on CPython and in
Pyodide (IndexedDB, DuckDB-WASM).
"""

import asyncio

from airi_memory.errors import AiriMemoryError, NotFoundError
from contract.common import DAY, QUIET, Clock, expect_error


async def _contents(system, session_id):
    return [m["content"] for m in await system.sessions.load_session_messages(session_id)]


async def _say(system, session_id, *contents):
    for content in contents:
        await system.sessions.add_message(session_id, {"role": "user", "content": content})


async def case_a_lagging_tab_never_hides_what_another_committed(open_system):
    ahead = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    behind = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await ahead.sessions.create_session({"title": "Shared"}))["sessionId"]
    await _say(ahead, sid, "m0", "m1", "m2")
    await ahead.sessions.snapshot()
    await _say(ahead, sid, "m3")
    second = await ahead.sessions.snapshot()
    assert second["prunedThrough"] > 0  # entries the lagging tab never applied are gone
    # The lagging tab (busy, frozen, its broadcasts lost) takes a snapshot: it catches up
    # first, from the records themselves, so its snapshot covers every committed message.
    await behind.sessions.snapshot()
    assert behind.sessions.stats()["journal"]["rebuilds"] == 1
    assert await _contents(behind, sid) == ["m0", "m1", "m2", "m3"]
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["m0", "m1", "m2", "m3"]
    exported = await restarted.export_sessions()
    assert [len(entry["messages"]) for entry in exported["sessions"]] == [4]


async def case_a_snapshot_never_replaces_one_that_pruned_past_it(open_system):
    ahead = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    behind = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await ahead.sessions.create_session({"title": "Shared"}))["sessionId"]
    await _say(ahead, sid, "m0", "m1")
    await ahead.sessions.snapshot()
    prepare = behind.sessions.mirror.save

    async def prepare_while_the_other_tab_snapshots_twice():
        # After the lagging tab caught up and before it writes its snapshot, the other
        # tab writes and snapshots twice: what the lagging one covers is now pruned.
        behind.sessions.mirror.save = prepare  # only the first attempt
        saved = await prepare()
        for content in ("m2", "m3"):
            await _say(ahead, sid, content)
            await ahead.sessions.snapshot()
        return saved

    behind.sessions.mirror.save = prepare_while_the_other_tab_snapshots_twice
    conflicts = behind.sessions.stats()["journal"]["conflicts"]
    # Its first attempt is refused (the guard on the head); it catches up and retakes it.
    report = await behind.sessions.snapshot()
    assert behind.sessions.stats()["journal"]["conflicts"] == conflicts + 1
    assert report["through"] == behind.sessions.journal.position
    assert behind.sessions.stats()["problems"]["snapshot"] is None
    assert await _contents(behind, sid) == ["m0", "m1", "m2", "m3"]
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["m0", "m1", "m2", "m3"]


async def case_a_write_whose_mirror_update_fails_is_kept_and_repaired(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    s = system.sessions
    sid = (await s.create_session())["sessionId"]
    working = s.mirror.add_message

    def broken(*_):
        raise RuntimeError("mirror down")

    s.mirror.add_message = broken
    saved = await s.add_message(sid, {"role": "user", "content": "kept"})  # it committed
    s.mirror.add_message = working
    assert saved["content"] == "kept"
    assert s.stats()["problems"]["mirror"] == "RuntimeError: mirror down"
    await s.sync()  # the repair began at once; this waits until it is done
    assert await _contents(system, sid) == ["kept"]
    assert s.stats()["problems"]["mirror"] is None  # repaired, so no longer reported
    await s.snapshot()
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["kept"]


async def case_import_with_kept_ids_never_overwrites_another_users_session(open_system):
    alice = await open_system(clock=Clock(), userId="alice", **QUIET)
    sid = (await alice.sessions.create_session({"title": "Alice's"}))["sessionId"]
    await _say(alice, sid, "mine")
    exported = await alice.export_sessions()
    bob = await open_system(clock=Clock(), userId="bob", separate_engine=True, **QUIET)
    report = await bob.import_sessions(exported, {"keepIds": True})
    assert (report["sessions"], report["skippedDuplicates"]) == (0, 1)
    restarted = await open_system(clock=Clock(), userId="alice", **QUIET)
    assert (await restarted.sessions.get_session(sid))["userId"] == "alice"
    assert await _contents(restarted, sid) == ["mine"]


async def case_writes_committed_while_a_tab_starts_reach_it(open_system):
    """Start-up without a snapshot reads the journal head before the records: what
    another tab commits in between (a message, a new session) is replayed by the next
    catch-up, never taken as applied unseen."""
    from airi_memory.sessions.reader import RecordReader

    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session())["sessionId"]
    await _say(here, sid, "m0")
    read_messages = RecordReader.read_messages
    late: list[str] = []

    async def read_then_let_the_other_tab_write(reader: RecordReader) -> dict:
        RecordReader.read_messages = read_messages
        found = await read_messages(reader)
        await _say(here, sid, "between")
        late.append((await here.sessions.create_session({"title": "late"}))["sessionId"])
        return found

    RecordReader.read_messages = read_then_let_the_other_tab_write
    try:
        starting = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    finally:
        RecordReader.read_messages = read_messages
    assert late, "the start-up did not read the records"
    await starting.sessions.sync()
    assert await _contents(starting, sid) == ["m0", "between"]
    assert (await starting.sessions.get_session(late[0]))["title"] == "late"


async def case_a_damaged_journal_head_never_numbers_entries_again(open_system):
    """The head record says where the journal ends; damaged or gone (a bad disk, another
    tool), the next entry still takes a number above every entry there, so a tab that
    read up to there sees it."""
    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    there = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session())["sessionId"]
    await _say(here, sid, "m0", "m1", "m2")
    await there.sessions.sync()
    local = here.storage.get_mount("local").driver
    for damage in ("garbage", None):
        if damage is None:
            await local.remove_item("memory:journal-head")
        else:
            await local.set_item("memory:journal-head", damage)
        # Numbered from 1 again, the fifth would reach the other tab's position: it would
        # take the log for complete and miss the four before.
        await _say(here, sid, *(f"{damage} {i}" for i in range(5)))
        await there.sessions.sync()
    expected = ["m0", "m1", "m2", *(f"{d} {i}" for d in ("garbage", None) for i in range(5))]
    assert await _contents(there, sid) == expected
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == await _contents(there, sid)


async def case_a_damaged_record_is_quarantined_and_start_up_goes_on(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    sid = (await system.sessions.create_session())["sessionId"]
    await _say(system, sid, "fine")
    local = system.storage.get_mount("local").driver  # beneath the public API, as a bad disk
    damaged = {
        "memory:sessions:broken": "{not json",
        "memory:sessions:wrong": '{"sessionId": "other", "title": "x"}',
        f"memory:messages:{sid}:000000000009-zzzz": '{"role": "user", "content": "no id"}',
        f"memory:messages:{sid}:garbage": "{}",
    }
    for key, text in damaged.items():
        await local.set_item(key, text)
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["fine"]
    quarantined = {q["key"]: q["reason"] for q in restarted.sessions.stats()["quarantined"]}
    assert set(quarantined) == {f"local:{key}" for key in damaged}
    assert "not the one its key names" in quarantined["local:memory:sessions:wrong"]
    for key, text in damaged.items():  # kept where they were, never deleted
        assert await local.get_item(key) == text
    # The app's storage API cannot write (or clear) there; elsewhere it can.
    refused = await restarted.dispatch("storage.setItem", ["local:memory:sessions:x", {}])
    assert (
        refused["error"]["name"] == "InvalidKeyError"
        and "local:memory" in (refused["error"]["message"])
    )
    cleared = await restarted.dispatch("storage.clear", ["local"])
    assert cleared["error"]["name"] == "InvalidKeyError"
    assert (await restarted.dispatch("storage.setItem", ["local:notes:x", 1]))["ok"]
    assert await _contents(await open_system(clock=Clock(), **QUIET), sid) == ["fine"]
    # The page learns of them at start-up, ...
    info = await restarted.info()
    assert {q["key"] for q in info["quarantined"]} == {f"local:{key}" for key in damaged}
    # ... and a start-up from a snapshot (which reads no message records) still reports them.
    await restarted.sessions.snapshot()
    from_snapshot = await open_system(clock=Clock(), **QUIET)
    assert from_snapshot.sessions.stats()["journal"]["position"] > 0  # restored, not rebuilt
    reported = {q["key"] for q in from_snapshot.sessions.stats()["quarantined"]}
    assert reported == {f"local:{key}" for key in damaged}
    # An import never writes over a session record in quarantine.
    export = {"version": "1.0.0", "exportedAt": 1767225600000,
              "sessions": [{"meta": {"sessionId": "broken", "title": "over it"}, "messages": []}]}  # fmt: skip
    report = await from_snapshot.import_sessions(export, {"keepIds": True})
    assert (report["sessions"], report["skippedDuplicates"]) == (0, 1)
    assert await local.get_item("memory:sessions:broken") == "{not json"


def _nested(levels):
    value = "bottom"
    for _ in range(levels):
        value = {"a": value}
    return value


async def case_input_nested_too_deep_is_refused_and_stored_records_are_quarantined(open_system):
    """Hostile nesting never surfaces as a RecursionError: input is refused naming its
    field and the bound, with nothing stored; a record nested that deep that something
    else wrote is quarantined, and start-up and catch-ups go on."""
    from airi_memory.models import MAX_FIELD_DEPTH
    from airi_memory.storage.values import MAX_VALUE_DEPTH

    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    there = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session())["sessionId"]
    await _say(here, sid, "m0")
    keys_before = sorted(await here.storage.get_keys())
    # As deep as the facade lets arguments through (MAX_ARGUMENT_DEPTH in airi-memory.mjs):
    # Python never receives deeper input from the page.
    deep = _nested(200)
    value_bound, field_bound = f"{MAX_VALUE_DEPTH} levels", f"{MAX_FIELD_DEPTH} levels"
    refused = {
        "storage.setItem": (["notes:x", {"a": deep}], ["notes:x", value_bound]),
        "storage.setItems": ([[{"key": "notes:x", "value": deep}]], ["notes:x", value_bound]),
        "context.setUserProfile": ([{"a": deep}], [value_bound]),
        "sessions.addMessage": ([sid, {"role": "user", "x": deep}], ["message.x.a", field_bound]),
        "context.ingestContext": (
            [{"sourceType": "t", "sourceId": "i", "content": deep}],
            ["context.content.a", field_bound],
        ),
    }
    for method, (args, words) in refused.items():
        reply = await here.dispatch(method, args)
        assert not reply["ok"] and reply["error"]["name"] == "InvalidValueError", (method, reply)
        for word in words:
            assert word in reply["error"]["message"], (method, word, reply["error"]["message"])
    assert sorted(await here.storage.get_keys()) == keys_before
    assert await here.context.entries() == []

    await there.sessions.load_session_messages(sid)  # the other tab has m0 in its mirror
    await _say(here, sid, "m1")
    await here.sessions.snapshot()
    await _say(here, sid, "m2")
    await here.sessions.snapshot()  # the journal the other tab needs is pruned
    local = here.storage.get_mount("local").driver  # beneath the API, as another tool writes
    m0_key = sorted(await local.get_keys("memory:messages"))[0]
    text = '{"a":' * 10_000 + "0" + "}" * 10_000
    await local.set_item(m0_key, text)  # where m0 was
    await local.set_item("memory:sessions:deep", text)
    await local.set_item(f"memory:messages:{sid}:000000000007-zzzz", text)
    await there.sessions.sync()  # so it rebuilds from the records, comparing each
    assert there.sessions.stats()["journal"]["rebuilds"] == 1
    assert await _contents(there, sid) == ["m1", "m2"]
    for key in await local.get_keys("memory:snapshot"):  # a restart then reads every record
        await local.remove_item(key)
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["m1", "m2"]
    for tab in (there, restarted):
        quarantined = {q["key"]: q["reason"] for q in tab.sessions.stats()["quarantined"]}
        assert sorted(quarantined) == sorted(
            [
                f"local:{m0_key}",
                "local:memory:sessions:deep",
                f"local:memory:messages:{sid}:000000000007-zzzz",
            ]
        )
        assert f"{MAX_VALUE_DEPTH} levels" in quarantined[f"local:{m0_key}"]
    assert await local.get_item(m0_key) == text  # kept where it was, untouched


async def case_a_row_duckdb_refuses_is_quarantined_and_the_rest_reach_the_mirror(open_system):
    """A record DuckDB will not hold (a time beyond BIGINT, written by another tool) is
    left out of the mirror and reported; the rows buffered with it, every later write and
    a restart all reach the mirror. The record itself stays in the store, untouched."""
    import json

    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    there = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session())["sessionId"]
    await _say(here, sid, "m0")
    await there.sessions.load_session_messages(sid)
    await _say(here, sid, "m1", "m2", "m3", "m4", "m5", "m6")  # one columnar flush there
    local = here.storage.get_mount("local").driver  # beneath the API, as another tool writes
    m3_key = sorted(await local.get_keys("memory:messages"))[3]
    record = json.loads(await local.get_item(m3_key))
    assert record["content"] == "m3"
    damaged = json.dumps({**record, "createdAt": 10**30})
    await local.set_item(m3_key, damaged)
    await there.sessions.sync()  # reads the six records the journal names; buffers them
    assert await _contents(there, sid) == ["m0", "m1", "m2", "m4", "m5", "m6"]
    await _say(there, sid, "m7")
    assert await _contents(there, sid) == ["m0", "m1", "m2", "m4", "m5", "m6", "m7"]
    found = await there.query("SELECT count(*) AS n FROM chat_messages WHERE session_id = ?", [sid])
    assert found == [{"n": 7}]
    (quarantined,) = there.sessions.stats()["quarantined"]
    assert quarantined["key"] == f"local:{m3_key}"
    assert quarantined["reason"].startswith("DuckDB refused its row")
    # A session record DuckDB will not hold does not stop a start-up either.
    session = {**(await here.sessions.get_session(sid)), "sessionId": "far", "updatedAt": 10**30}
    await local.set_item("memory:sessions:far", json.dumps(session))
    for local_key in await local.get_keys("memory:snapshot"):  # a restart reads every record
        await local.remove_item(local_key)
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["m0", "m1", "m2", "m4", "m5", "m6", "m7"]
    quarantined = {q["key"]: q["reason"] for q in restarted.sessions.stats()["quarantined"]}
    assert sorted(quarantined) == [f"local:{m3_key}", "local:memory:sessions:far"]
    assert all(reason.startswith("DuckDB refused its row") for reason in quarantined.values())
    assert await local.get_item(m3_key) == damaged  # kept where they were, untouched
    assert json.loads(await local.get_item("memory:sessions:far")) == session


async def case_old_sessions_used_in_another_tab_are_not_deleted(open_system):
    clock = Clock()
    here = await open_system(clock=clock, separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session())["sessionId"]
    other = await open_system(clock=clock, separate_engine=True, **QUIET)
    clock.now += 40 * DAY
    await _say(other, sid, "still talking")  # this tab has not seen it
    report = await here.sessions.delete_old_sessions({"olderThan": 30 * DAY})
    assert report["deleted"] == []
    report = await here.apply_retention_policy({"archiveAfter": 30 * DAY, "deleteArchived": True})
    assert report["deletedExpired"] == [] and report["archivedInactive"] == []
    restarted = await open_system(clock=clock, **QUIET)
    assert await _contents(restarted, sid) == ["still talking"]


async def case_a_message_for_a_session_another_tab_deleted_is_refused(open_system):
    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session())["sessionId"]
    other = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    await here.sessions.delete_session(sid)
    await expect_error(NotFoundError, _say(other, sid, "too late"), sid)
    assert await other.storage.get_keys("local:memory:messages") == []
    await expect_error(NotFoundError, other.sessions.rename_session(sid, "gone"), sid)
    assert await other.storage.get_keys("local:memory:sessions") == []


async def case_a_session_another_tab_just_created_is_found_at_once(open_system):
    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    other = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session({"title": "New"}))["sessionId"]
    # No broadcast has reached the other tab yet: it looks in the store before refusing.
    await _say(other, sid, "right away")
    assert await _contents(other, sid) == ["right away"]
    await expect_error(NotFoundError, _say(other, "no-such-session", "x"), "no-such-session")


async def case_messages_keep_commit_order_across_tabs(open_system):
    one = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await one.sessions.create_session())["sessionId"]
    two = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    await _say(one, sid, "one 0", "one 1", "one 2")
    await _say(two, sid, "two after")  # written by a tab that had not seen one's three
    await _say(one, sid, "one after")
    expected = ["one 0", "one 1", "one 2", "two after", "one after"]
    await two.sessions.sync()
    assert await _contents(one, sid) == await _contents(two, sid) == expected
    composed = await two.compose_messages(sid, {"maxTokens": 4000})
    assert [m["content"] for m in composed["messages"] if m["role"] == "user"] == expected
    assert await _contents(await open_system(clock=Clock(), **QUIET), sid) == expected


async def case_a_failing_snapshot_is_retried_with_backoff(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    s = system.sessions
    s.snapshot_after = 2
    sid = (await s.create_session())["sessionId"]
    working = s.mirror.sql.export_table

    async def full_disk(table):
        raise RuntimeError("disk full")

    s.mirror.sql.export_table = full_disk
    for i in range(20):
        await _say(system, sid, f"m{i}")
        await asyncio.sleep(0)  # let a background snapshot start and fail
    await s.queue.drain()
    s.mirror.sql.export_table = working
    counts = s.stats()["journal"]
    assert (counts["snapshots"], counts["snapshotFailures"]) == (0, 1)
    assert s.stats()["problems"]["snapshot"] == "RuntimeError: disk full"
    assert (await s.snapshot())["through"] > 20  # asked for, it runs at once
    assert s.stats()["problems"]["snapshot"] is None


async def case_writes_reach_the_store_while_the_sql_engine_is_stopped(open_system):
    """DuckDB is a mirror: with its engine gone (DuckDB-WASM's worker died), queries fail
    with an error, but writes still commit to the durable store and a restart has them."""
    system = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await system.sessions.create_session({"title": "Crash"}))["sessionId"]
    await _say(system, sid, "before")
    await system.sql.close()
    await expect_error(AiriMemoryError, system.query("SELECT 1"))
    await expect_error(AiriMemoryError, system.sessions.snapshot())
    saved = await system.sessions.add_message(sid, {"role": "user", "content": "after"})
    assert saved["content"] == "after"
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["before", "after"]


async def case_close_finishes_queued_writes_but_never_waits_forever(open_system):
    """close() lets writes queued before it finish; a task that never ends (one waiting on
    a hung worker) holds it up for timeouts.closeMs, not for ever."""
    system = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await system.sessions.create_session({"title": "Closing"}))["sessionId"]
    queued = asyncio.ensure_future(_say(system, sid, "queued before close"))
    await asyncio.sleep(0)
    await system.close()
    assert queued.done() and queued.exception() is None  # it committed before close ended
    stuck = await open_system(
        clock=Clock(), separate_engine=True, timeouts={"closeMs": 200}, **QUIET
    )
    hung = asyncio.ensure_future(stuck.sessions.queue.run("hung", asyncio.Event().wait))
    await asyncio.sleep(0)
    began = asyncio.get_running_loop().time()
    await asyncio.wait_for(stuck.close(), 5)
    assert asyncio.get_running_loop().time() - began < 2
    hung.cancel()


async def case_a_replayed_delete_never_hides_or_reuses_a_tabs_own_records(open_system):
    """Another tab imports a session and deletes it, both committed after this tab caught
    up and before its own import of the same session commits: replaying that delete must
    neither hide this tab's import nor let its next message reuse an imported record's
    name (it overwrote the first message)."""
    there = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await there.sessions.create_session())["sessionId"]
    await _say(there, sid, "i0", "i1")
    exported = await there.export_sessions()
    await there.sessions.delete_session(sid)
    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    importing = here.sessions.import_batch

    async def after_the_other_tab_imported_and_deleted_it(batch):
        await there.import_sessions(exported, {"keepIds": True})
        await there.sessions.delete_session(sid)
        return await importing(batch)

    here.sessions.import_batch = after_the_other_tab_imported_and_deleted_it
    assert (await here.import_sessions(exported, {"keepIds": True}))["sessions"] == 1
    await here.sessions.sync()
    assert await _contents(here, sid) == ["i0", "i1"]
    await _say(here, sid, "new")
    restarted = await open_system(clock=Clock(), **QUIET)
    assert await _contents(restarted, sid) == ["i0", "i1", "new"]


async def case_a_snapshot_replaced_while_a_tab_starts_is_not_mixed_with_the_new_one(
    open_system,
):
    """Start-up reads a snapshot's tables one by one: another tab writing a new snapshot
    in between must not leave it with tables of two snapshots (and the journal position
    of the newer), which hid the messages between them."""
    from airi_memory.storage import Storage

    there = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await there.sessions.create_session())["sessionId"]
    await _say(there, sid, "m0", "m1")
    await there.sessions.snapshot()
    await _say(there, sid, "m2", "m3")
    read, fired = Storage.get_item_raw_native, []

    async def the_other_tab_snapshots_after_the_first_table(self, key):
        value = await read(self, key)
        if key.endswith(":chat_messages") and not fired:
            fired.append(key)
            await _say(there, sid, "m4")
            await there.sessions.snapshot()
        return value

    Storage.get_item_raw_native = the_other_tab_snapshots_after_the_first_table
    try:
        starting = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    finally:
        Storage.get_item_raw_native = read
    assert fired
    assert await _contents(starting, sid) == ["m0", "m1", "m2", "m3", "m4"]
    found = await starting.searcher.search({"query": "m4", "strategy": "keyword"})
    assert [hit["message"]["content"] for hit in found["results"]] == ["m4"]


async def case_a_rebuild_never_lets_a_tab_overwrite_its_own_quarantined_record(open_system):
    """A record of this tab that DuckDB refuses at a rebuild is quarantined, and stays as
    it was: this tab's next message takes a new name, not the quarantined one's."""
    import json

    here = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    there = await open_system(clock=Clock(), separate_engine=True, **QUIET)
    sid = (await here.sessions.create_session())["sessionId"]
    await _say(here, sid, "m0", "m1", "m2")
    local = here.storage.get_mount("local").driver  # beneath the API, as another tool writes
    last_key = sorted(await local.get_keys("memory:messages"))[-1]
    damaged = json.dumps({**json.loads(await local.get_item(last_key)), "createdAt": 10**30})
    await local.set_item(last_key, damaged)
    other = (await there.sessions.create_session())["sessionId"]
    await _say(there, other, "t0")
    await there.sessions.snapshot()
    await _say(there, other, "t1")
    await there.sessions.snapshot()  # pruned past where this tab is: it rebuilds
    await here.sessions.sync()
    assert here.sessions.stats()["journal"]["rebuilds"] == 1
    assert [q["key"] for q in here.sessions.stats()["quarantined"]] == [f"local:{last_key}"]
    await _say(here, sid, "m3")
    assert await local.get_item(last_key) == damaged
    assert await _contents(here, sid) == ["m0", "m1", "m3"]


async def case_rows_retried_after_a_refused_one_are_searchable(open_system):
    """A start-up batch in which DuckDB refuses one record is undone and retried in
    halves: every other message is in the mirror and in the term index beside it."""
    import json

    system = await open_system(clock=Clock(), **QUIET)
    sid = (await system.sessions.create_session())["sessionId"]
    await _say(system, sid, "apple m0", "banana m1", "cherry m2", "damson m3", "elder m4", "fig m5")
    local = system.storage.get_mount("local").driver
    keys = sorted(await local.get_keys("memory:messages"))
    damaged = json.dumps({**json.loads(await local.get_item(keys[2])), "createdAt": 10**30})
    await local.set_item(keys[2], damaged)
    for snapshot_key in await local.get_keys("memory:snapshot"):  # a restart reads every record
        await local.remove_item(snapshot_key)
    restarted = await open_system(clock=Clock(), **QUIET)
    assert [q["key"] for q in restarted.sessions.stats()["quarantined"]] == [f"local:{keys[2]}"]
    for word in ("apple", "banana", "damson", "elder", "fig"):
        found = await restarted.searcher.search({"query": word, "strategy": "keyword"})
        assert [hit["message"]["content"].split()[0] for hit in found["results"]] == [word]
    counted = await restarted.query("SELECT count(*) AS n FROM search_text")
    assert counted == [{"n": 5}] and len(restarted.searcher.terms) == 5


async def case_a_stored_text_part_that_is_not_text_leaves_the_rest_of_the_message(
    open_system,
):
    """Another tool stored a text part whose text is a number: the message is read with
    its other parts' words (as search, recall and token counts read it), not quarantined."""
    import json

    system = await open_system(clock=Clock(), **QUIET)
    sid = (await system.sessions.create_session())["sessionId"]
    await _say(system, sid, "m0")
    local = system.storage.get_mount("local").driver
    [key] = await local.get_keys("memory:messages")
    record = json.loads(await local.get_item(key))
    parts = [{"type": "text", "text": 5}, {"type": "text", "text": "kept words"}]
    await local.set_item(key, json.dumps({**record, "content": parts}))
    for local_key in await local.get_keys("memory:snapshot"):  # a restart reads every record
        await local.remove_item(local_key)
    restarted = await open_system(clock=Clock(), **QUIET)
    assert restarted.sessions.stats()["quarantined"] == []
    [message] = await restarted.sessions.load_session_messages(sid)
    assert message["content"] == parts
    found = await restarted.searcher.search({"query": "kept", "strategy": "keyword"})
    assert [hit["message"]["id"] for hit in found["results"]] == [message["id"]]


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]

"""The sync client on CPython against the real server app: outbox, push, pull, merge,
dead letters, and the faults the issue names. Devices are native systems over their own
stores; a reload is the same store opened again."""

import json
import random
from pathlib import Path
from typing import Any

import pytest

from airi_memory.native.host import InMemory
from contract.common import Clock

EXAMPLES = json.loads(
    (Path(__file__).parents[2] / "docs" / "sync-conflict-examples.json").read_text()
)["examples"]


async def call(system: Any, method: str, *args: Any) -> Any:
    reply = await system.dispatch(method, list(args))
    assert reply["ok"], reply
    return reply["value"]


async def run(system: Any) -> dict[str, Any]:
    report = await call(system, "sync.processSyncQueue")
    assert "error" not in report, report
    return report


async def state(system: Any) -> dict[str, Any]:
    """What a user sees: every session and its messages."""
    sessions = await call(system, "sessions.getAllSessions")
    return {
        meta["sessionId"]: {
            "meta": meta,
            "messages": await call(system, "sessions.loadSessionMessages", meta["sessionId"]),
        }
        for meta in sessions
    }


async def test_writes_on_one_device_appear_on_the_other(open_device, user_key, sync_server):
    phone = await open_device(user_key)
    laptop = await open_device(user_key)
    session = await call(
        phone, "sessions.createSession", {"title": "Trip", "systemPrompt": "Be kind"}
    )
    sid = session["sessionId"]
    await call(phone, "sessions.addMessage", sid, {"role": "user", "content": "Kyoto in May?"})
    await call(phone, "sessions.addMessage", sid, {"role": "assistant", "content": "Book early."})
    await call(phone, "sessions.renameSession", sid, "Kyoto trip")
    assert (await call(phone, "sync.status"))["pending"] == 7  # 1 + system + 2 x 2 + rename

    pushed = await run(phone)
    assert pushed["pushed"] == 7 and pushed["pending"] == 0
    pulled = await run(laptop)
    assert pulled["pulled"] == 7 and pulled["skipped"] == []

    assert await state(laptop) == await state(phone)
    assert (await state(laptop))[sid]["meta"]["title"] == "Kyoto trip"
    # The pulled messages went through the normal write path: the mirror has them.
    found = await call(laptop, "searchMessages", "kyoto")
    assert [m["message"]["content"] for m in found] == ["Kyoto in May?"]
    # Nothing pulled is recorded again: the laptop has nothing to push.
    assert (await call(laptop, "sync.status"))["pending"] == 0
    assert len(await sync_server.pull_all({"Authorization": f"Bearer {user_key}"})) == 7


async def test_an_import_arrives_in_its_order_across_pull_pages(open_device, user_key):
    """Operations of one write leave in the order they were made (their ids sort so), and
    a message pulled is numbered after those pulled before it, page after page."""
    phone = await open_device(user_key)
    sessions = [
        {
            "meta": {"sessionId": f"s{s}", "title": f"S{s}", "createdAt": 1764547200000},
            "messages": [
                {"id": f"m{s}-{i}", "role": "user", "content": f"turn {i}", "createdAt": 1764547200000 + i}
                for i in range(250)
            ],
        }
        for s in range(3)
    ]  # fmt: skip
    file = {"version": "1.0.0", "exportedAt": 1764547200000, "sessions": sessions}
    await call(phone, "importSessions", file, {"keepIds": True})
    assert (await run(phone))["pushed"] == 753
    laptop = await open_device(user_key)
    assert (await run(laptop))["pulled"] == 753  # two pages of 500
    for sid, seen in (await state(laptop)).items():
        assert [m["content"] for m in seen["messages"]] == [f"turn {i}" for i in range(250)], sid


async def test_history_from_before_sync_is_backfilled(open_device, user_key):
    store = InMemory()
    phone = await open_device(user_key, store, enabled=False)
    sid = (await call(phone, "sessions.createSession", {"title": "Old"}))["sessionId"]
    await call(phone, "sessions.addMessage", sid, {"role": "user", "content": "from before"})
    assert (await call(phone, "sync.status"))["recording"] is False
    assert await phone.storage.get_keys("outbox") == []

    await call(phone, "configureSync", {
        "enabled": True, "endpoint": "http://127.0.0.1:8787", "apiKey": user_key, "autoSync": False,
    })  # fmt: skip
    assert (await run(phone))["pushed"] == 2
    laptop = await open_device(user_key)
    await run(laptop)
    assert await state(laptop) == await state(phone)


async def test_offline_edits_on_both_devices_converge(open_device, user_key):
    clock = Clock()
    phone = await open_device(user_key, clock=clock)
    laptop = await open_device(user_key, clock=clock)
    sid = (await call(phone, "sessions.createSession", {"title": "Plans"}))["sessionId"]
    await run(phone)
    await run(laptop)
    # Offline: both rename (the laptop later), the phone pins, the laptop tags, both add.
    await call(phone, "sessions.renameSession", sid, "Plans (phone)")
    await call(phone, "sessions.pinSession", sid, True)
    await call(phone, "sessions.addMessage", sid, {"role": "user", "content": "from the phone"})
    clock.now += 5000
    await call(laptop, "sessions.renameSession", sid, "Plans (laptop)")
    await call(laptop, "sessions.tagSession", sid, ["travel"])
    await call(laptop, "sessions.addMessage", sid, {"role": "user", "content": "from the laptop"})

    for device in (phone, laptop, phone):
        await run(device)
    phone_state, laptop_state = await state(phone), await state(laptop)
    assert phone_state[sid]["meta"] == laptop_state[sid]["meta"]
    meta = phone_state[sid]["meta"]
    assert (meta["title"], meta["pinned"], meta["tags"]) == ("Plans (laptop)", True, ["travel"])
    contents = {m["content"] for m in laptop_state[sid]["messages"]}
    assert contents == {m["content"] for m in phone_state[sid]["messages"]}
    assert contents == {"from the phone", "from the laptop"}


async def test_a_delete_wins_over_an_older_edit_and_over_a_newer_one(open_device, user_key):
    clock = Clock()
    phone = await open_device(user_key, clock=clock)
    laptop = await open_device(user_key, clock=clock)
    sid = (await call(phone, "sessions.createSession", {"title": "Doomed"}))["sessionId"]
    await call(phone, "sessions.addMessage", sid, {"role": "user", "content": "hello"})
    await run(phone)
    await run(laptop)
    await call(laptop, "sessions.renameSession", sid, "Older edit")  # before the delete
    clock.now += 1000
    await call(phone, "sessions.deleteSession", sid)
    clock.now += 1000
    await call(laptop, "sessions.addMessage", sid, {"role": "user", "content": "newer, offline"})

    for device in (phone, laptop, phone):
        await run(device)
    assert await state(phone) == {} and await state(laptop) == {}
    # A late edit pulled again (a new device) brings nothing back either.
    tablet = await open_device(user_key)
    await run(tablet)
    assert await state(tablet) == {}


async def test_message_edits_and_deletes_travel(open_device, user_key):
    phone = await open_device(user_key)
    laptop = await open_device(user_key)
    sid = (await call(phone, "sessions.createSession"))["sessionId"]
    first = await call(phone, "sessions.addMessage", sid, {"role": "user", "content": "typo"})
    second = await call(phone, "sessions.addMessage", sid, {"role": "user", "content": "bye"})
    await run(phone)
    await run(laptop)
    await call(laptop, "sessions.updateMessage", sid, first["id"], {"content": "fixed"})
    await call(laptop, "sessions.deleteMessage", sid, second["id"])
    await run(laptop)
    await run(phone)
    messages = await call(phone, "sessions.loadSessionMessages", sid)
    assert [(m["id"], m["content"]) for m in messages] == [(first["id"], "fixed")]


@pytest.mark.parametrize("example", EXAMPLES, ids=lambda e: e["name"])
async def test_the_merge_examples_hold_in_any_order(example, open_device, sync_server):
    """The protocol's examples, pushed by a foreign device in three orders, each pulled
    by a fresh device: what it shows is the examples' expected view."""
    orders = [example["operations"], example["operations"][::-1]]
    orders.append(random.Random(example["name"]).sample(example["operations"], k=len(orders[0])))
    for operations in orders:
        headers = await sync_server.new_user()
        assert (await sync_server.push(headers, operations)).status_code == 200
        device = await open_device(headers["Authorization"].removeprefix("Bearer "))
        await run(device)
        for sid, expected in example["expected"]["sessions"].items():
            meta = await call(device, "sessions.getSession", sid)
            if expected["deleted"]:
                assert meta is None
                continue
            assert {k: meta.get(k) for k in expected["fields"]} == expected["fields"]
            loaded = await call(device, "sessions.loadSessionMessages", sid)
            messages = {m["id"]: m for m in loaded}
            for mid, wanted in example["expected"]["messages"].get(sid, {}).items():
                if wanted["deleted"]:
                    assert mid not in messages
                else:
                    got = messages[mid]
                    assert {k: got.get(k) for k in wanted["fields"]} == wanted["fields"]
            assert set(messages) == {
                mid for mid, w in example["expected"]["messages"].get(sid, {}).items()
                if not w["deleted"]
            }  # fmt: skip


async def test_a_lost_answer_is_pushed_again_and_applied_once(open_device, user_key, sync_server):
    phone = await open_device(user_key)
    sid = (await call(phone, "sessions.createSession"))["sessionId"]
    await call(phone, "sessions.addMessage", sid, {"role": "user", "content": "once"})
    phone.transport.lose_answers = 1
    report = await call(phone, "sync.processSyncQueue")
    assert "connection reset" in report["error"] and report["pending"] == 3
    assert (await run(phone))["pushed"] == 3
    log = await sync_server.pull_all({"Authorization": f"Bearer {user_key}"})
    assert len(log) == 3 and len({op["id"] for op in log}) == 3
    laptop = await open_device(user_key)
    await run(laptop)
    assert [m["content"] for m in (await state(laptop))[sid]["messages"]] == ["once"]


async def test_failures_past_three_become_dead_letters_the_page_can_retry(open_device, user_key):
    phone = await open_device(user_key)
    sid = (await call(phone, "sessions.createSession"))["sessionId"]
    phone.transport.fail_next = [500] * 4
    for attempt in range(1, 5):
        report = await call(phone, "sync.processSyncQueue")
        assert "answered 500" in report["error"]
        assert report["failed"] == (1 if attempt == 4 else 0)
    status = await call(phone, "sync.status")
    assert (status["pending"], status["failed"]) == (0, 1)
    [letter] = await call(phone, "sync.deadLetters")
    assert (letter["sessionId"], letter["retries"]) == (sid, 4)
    assert "answered 500" in letter["error"]
    # Durable: still there after a reload.
    assert await phone.storage.get_keys("outbox:failed") == [f"outbox:failed:{letter['id']}"]

    assert await call(phone, "sync.retry", [letter["id"]]) == 1
    assert (await run(phone))["pushed"] == 1
    assert await call(phone, "sync.deadLetters") == []


async def test_a_refused_operation_is_set_aside_and_the_rest_goes(open_device, user_key):
    phone = await open_device(user_key)
    await call(phone, "sessions.createSession")
    await phone.storage.set_item("outbox:0-bad", {"id": "0-bad", "type": "explode"})
    report = await run(phone)
    assert (report["pushed"], report["failed"], report["pending"]) == (1, 1, 0)
    [letter] = await call(phone, "sync.deadLetters")
    assert letter["id"] == "0-bad" and "422" in letter["error"]
    assert await call(phone, "sync.discard", ["0-bad"]) == 1
    assert await call(phone, "sync.deadLetters") == []


async def test_a_wrong_key_stops_the_run_and_keeps_everything(open_device, user_key):
    phone = await open_device("amk_0000000000000000_" + "x" * 43)
    await call(phone, "sessions.createSession")
    report = await call(phone, "sync.processSyncQueue")
    assert "401" in report["error"] and report["pending"] == 2 - 1
    status = await call(phone, "sync.status")
    assert status["apiKey"] == "set" and "x" * 43 not in json.dumps(status)
    assert status["lastError"] == report["error"]


async def test_server_down_keeps_everything_for_later(open_device, user_key):
    phone = await open_device(user_key)
    await call(phone, "sessions.createSession")
    phone.transport.down = True
    report = await call(phone, "sync.processSyncQueue")
    assert "cannot reach" in report["error"] and report["pending"] == 1
    assert await call(phone, "sync.deadLetters") == []  # an outage is not the operation's fault
    phone.transport.down = False
    assert (await run(phone))["pushed"] == 1


async def test_the_outbox_and_cursor_survive_a_reload(open_device, user_key):
    store = InMemory()
    phone = await open_device(user_key, store)
    sid = (await call(phone, "sessions.createSession"))["sessionId"]
    await phone.close()
    phone = await open_device(user_key, store)
    assert (await call(phone, "sync.status"))["pending"] == 1
    assert (await run(phone))["pushed"] == 1
    await phone.close()
    phone = await open_device(user_key, store)
    report = await run(phone)
    assert report["pulled"] == 0  # the cursor was stored with the page it covers
    assert sid in await state(phone)


async def test_a_tab_that_opened_before_sync_was_on_records_its_writes(open_device, user_key):
    store = InMemory()
    first = await open_device(user_key, store, enabled=False)
    second = await open_device(user_key, store, enabled=False)
    await call(first, "configureSync", {
        "enabled": True, "endpoint": "http://127.0.0.1:8787", "apiKey": user_key, "autoSync": False,
    })  # fmt: skip
    await call(second, "sessions.createSession", {"title": "from the other tab"})
    assert (await call(second, "sync.status"))["recording"] is True
    assert (await run(first))["pushed"] == 1

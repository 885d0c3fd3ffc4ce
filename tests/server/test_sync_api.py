"""The sync server over HTTP, each test on SQLite and on PostgreSQL (see conftest)."""

import asyncio
import copy
import json
from pathlib import Path
from typing import Any

import pytest
from operations import message_op, session_op, stamp

from airi_memory_server.merge import merge
from sync_harness import Server

EXAMPLES = json.loads(
    (Path(__file__).parents[2] / "docs" / "sync-conflict-examples.json").read_text()
)["examples"]
UNAUTHORIZED = {"error": "unauthorized", "message": "a valid API key is required"}


async def test_health_and_openapi_need_no_key(server: Server) -> None:
    health = await server.client.get("/v1/health")
    assert health.status_code == 200
    assert health.json() == {"status": "ok", "schemaRevision": "0002"}
    document = (await server.client.get("/v1/openapi.json")).json()
    assert set(document["paths"]) == {"/v1/sync/push", "/v1/sync/pull", "/v1/health"}
    operation_schema = document["components"]["schemas"]["SyncOperation"]
    assert {"id", "type", "resource", "sessionId", "messageId", "hlc", "data"} <= set(
        operation_schema["properties"]
    )
    assert operation_schema["required"] == [
        "id",
        "type",
        "resource",
        "sessionId",
        "hlc",
        "timestamp",
    ]


@pytest.mark.parametrize(
    "authorization",
    [
        None,
        "",
        "Bearer",
        "Basic dXNlcjpwYXNz",
        "Bearer not-a-key",
        "Bearer amk_0123456789abcdef_" + "x" * 43,
    ],
)
async def test_a_missing_or_wrong_key_gets_401_and_nothing_else(
    server: Server, authorization: str | None
) -> None:
    headers = {"Authorization": authorization} if authorization is not None else {}
    requests = [
        server.client.get("/v1/sync/pull", headers=headers),
        server.client.post(
            "/v1/sync/push", json={"operations": [session_op("o1")]}, headers=headers
        ),
        # Neither size nor shape is judged before the key: 401 still, nothing more.
        server.client.post("/v1/sync/push", content=b"{" * 5_000_000, headers=headers),
        server.client.post("/v1/sync/push", content=b"not json", headers=headers),
    ]
    for response in await asyncio.gather(*requests):
        assert response.status_code == 401
        assert response.json() == UNAUTHORIZED
        assert response.headers["www-authenticate"] == 'Bearer realm="airi-sync"'


async def test_a_right_key_id_with_a_wrong_secret_is_refused(server: Server) -> None:
    headers = await server.new_user()
    key = headers["Authorization"].removeprefix("Bearer ")
    tampered = key[:-1] + ("A" if key[-1] != "A" else "B")
    response = await server.client.get(
        "/v1/sync/pull", headers={"Authorization": f"Bearer {tampered}"}
    )
    assert (response.status_code, response.json()) == (401, UNAUTHORIZED)
    assert (await server.client.get("/v1/sync/pull", headers=headers)).status_code == 200


async def test_each_user_sees_only_their_own_log(server: Server) -> None:
    alice, bob = await server.new_user(), await server.new_user()
    # The same operation and session ids, different content: two separate worlds.
    alice_ops = [session_op("op-1", title="Alice's"), message_op("op-2", "m1")]
    bob_ops = [session_op("op-1", title="Bob's")]
    assert (await server.push(alice, alice_ops)).json() == {
        "results": [{"id": "op-1", "seq": 1}, {"id": "op-2", "seq": 2}]
    }
    assert (await server.push(bob, bob_ops)).json() == {"results": [{"id": "op-1", "seq": 1}]}
    alice_log, bob_log = await server.pull_all(alice), await server.pull_all(bob)
    assert [(op["seq"], op["id"], op["data"]) for op in bob_log] == [
        (1, "op-1", {"title": "Bob's"})
    ]
    assert [op["data"]["title"] for op in alice_log if op["resource"] == "session"] == ["Alice's"]
    assert len(alice_log) == 2
    # Bob pulling past his own log finds nothing of Alice's seq 2.
    beyond = await server.client.get("/v1/sync/pull", params={"cursor": 1}, headers=bob)
    assert beyond.json() == {"operations": [], "cursor": 1, "hasMore": False}


async def test_a_replayed_batch_answers_the_same_and_applies_once(server: Server) -> None:
    user = await server.new_user()
    batch = [session_op("a", kind="create"), message_op("b", "m1"), session_op("c", offset_ms=5)]
    first = await server.push(user, batch)
    assert first.status_code == 200
    replay = copy.deepcopy(batch)
    for operation in replay:
        operation["retries"] = 2  # the client counted failures; the content is the same
    second = await server.push(user, replay)
    assert second.status_code == 200
    assert (
        second.json()
        == first.json()
        == {"results": [{"id": "a", "seq": 1}, {"id": "b", "seq": 2}, {"id": "c", "seq": 3}]}
    )
    # A batch that overlaps an old one: old ids keep their seq, new ones are appended.
    mixed = await server.push(user, [batch[1], message_op("d", "m2"), message_op("d", "m2")])
    assert mixed.json() == {
        "results": [{"id": "b", "seq": 2}, {"id": "d", "seq": 4}, {"id": "d", "seq": 4}]
    }
    pulled = await server.pull_all(user)
    assert [(op["seq"], op["id"]) for op in pulled] == [(1, "a"), (2, "b"), (3, "c"), (4, "d")]
    assert "retries" not in pulled[0]
    assert "messageId" not in pulled[0] and pulled[1]["messageId"] == "m1"


async def test_an_id_reused_with_other_content_is_409_and_nothing_applied(server: Server) -> None:
    user = await server.new_user()
    await server.push(user, [session_op("a", title="first")])
    response = await server.push(user, [session_op("new"), session_op("a", title="changed")])
    assert response.status_code == 409
    assert response.json()["field"] == "operations[1].id"
    assert [op["id"] for op in await server.pull_all(user)] == ["a"]


async def test_an_oversized_body_or_batch_is_413_and_nothing_applied(
    small_limits_server: Server,
) -> None:
    server = small_limits_server
    user = await server.new_user()
    four = [session_op(f"op{i}") for i in range(4)]
    too_many = await server.push(user, four)
    assert too_many.status_code == 413
    assert too_many.json()["error"] == "batch_too_large"
    too_big = await server.push(user, [session_op("big", title="x" * 5000)])
    assert too_big.status_code == 413
    assert too_big.json()["error"] == "body_too_large"

    # Without a Content-Length (a chunked upload), counted as it arrives.
    async def chunks() -> Any:
        for _ in range(10):
            yield b" " * 1000

    chunked = await server.client.post("/v1/sync/push", content=chunks(), headers=user)
    assert chunked.status_code == 413
    assert await server.pull_all(user) == []
    assert (await server.push(user, four[:3])).status_code == 200


def _without(operation: dict[str, Any], key: str) -> dict[str, Any]:
    return {k: v for k, v in operation.items() if k != key}


MALFORMED: list[tuple[str, dict[str, Any], str]] = [
    ("no id", _without(session_op("x"), "id"), "operations[1].id"),
    ("empty id", {**session_op("x"), "id": ""}, "operations[1].id"),
    ("unknown type", {**session_op("x"), "type": "upsert"}, "operations[1].type"),
    ("unknown resource", {**session_op("x"), "resource": "user"}, "operations[1].resource"),
    ("no session id", _without(session_op("x"), "sessionId"), "operations[1].sessionId"),
    (
        "message without its id",
        _without(message_op("x", "m"), "messageId"),
        "operations[1].messageId",
    ),
    ("session with a message id", {**session_op("x"), "messageId": "m"}, "operations[1].messageId"),
    ("bad stamp", {**session_op("x"), "hlc": "yesterday"}, "operations[1].hlc"),
    (
        "stamp two days ahead",
        {**session_op("x"), "hlc": f"{9_000_000_000_000:015d}-00000-devA"},
        "operations[1].hlc",
    ),
    ("update without data", _without(session_op("x"), "data"), "operations[1].data"),
    ("update of no field", {**session_op("x"), "data": {}}, "operations[1].data"),
    ("data not an object", {**session_op("x"), "data": ["title"]}, "operations[1].data"),
    ("negative timestamp", {**session_op("x"), "timestamp": -1}, "operations[1].timestamp"),
    ("unknown key", {**session_op("x"), "sessionID": "s"}, "operations[1].sessionID"),
]


@pytest.mark.parametrize(("case", "bad", "field"), MALFORMED, ids=[c[0] for c in MALFORMED])
async def test_a_malformed_operation_is_422_naming_its_field_and_nothing_applied(
    server: Server, case: str, bad: dict[str, Any], field: str
) -> None:
    user = await server.new_user()
    response = await server.push(user, [session_op("good"), bad, session_op("after")])
    assert response.status_code == 422, case
    body = response.json()
    assert (body["error"], body["field"]) == ("invalid_operation", field)
    assert await server.pull_all(user) == []


async def test_a_body_that_is_not_a_batch_is_422(server: Server) -> None:
    user = await server.new_user()
    cases = [
        (b"[1,", "body"),
        (b'{"operations": NaN}', "body"),
        (b"[]", "body"),
        (b"{}", "operations"),
    ]
    for content, field in cases:
        response = await server.client.post("/v1/sync/push", content=content, headers=user)
        assert (response.status_code, response.json()["field"]) == (422, field), content


async def test_pull_pages_in_seq_order_with_a_cursor(server: Server) -> None:
    user = await server.new_user()
    await server.push(user, [session_op(f"op{i:02d}", offset_ms=i) for i in range(25)])
    pages, cursor = [], 0
    while True:
        response = await server.client.get(
            "/v1/sync/pull", params={"cursor": cursor, "limit": 10}, headers=user
        )
        page = response.json()
        pages.append(([op["seq"] for op in page["operations"]], page["cursor"], page["hasMore"]))
        cursor = page["cursor"]
        if not page["hasMore"]:
            break
    assert pages == [
        (list(range(1, 11)), 10, True),
        (list(range(11, 21)), 20, True),
        (list(range(21, 26)), 25, False),
    ]
    for params, field in [
        ({"cursor": "-1"}, "cursor"),
        ({"limit": "0"}, "limit"),
        ({"limit": "1001"}, "limit"),
        ({"cursor": "x"}, "cursor"),
    ]:
        response = await server.client.get("/v1/sync/pull", params=params, headers=user)
        assert (response.status_code, response.json()["field"]) == (422, field)


async def test_concurrent_pushers_and_a_reader_never_skip_an_operation(server: Server) -> None:
    """Several devices push at once while another pulls from its cursor as it goes: every
    acknowledged operation reaches the reader exactly once, in seq order. With numbers
    from a plain sequence a push that took a lower number but committed later would be
    passed over by a reader already beyond it."""
    user = await server.new_user()
    pushers, batches, batch_size = 4, 8, 5
    acked: dict[str, int] = {}
    done = asyncio.Event()

    async def push_all(device: int) -> None:
        for batch in range(batches):
            ops = [
                message_op(f"d{device}-b{batch}-{i}", f"m{device}-{batch}-{i}", offset_ms=batch)
                for i in range(batch_size)
            ]
            response = await server.push(user, ops)
            assert response.status_code == 200, response.text
            acked.update({ack["id"]: ack["seq"] for ack in response.json()["results"]})

    async def read() -> list[dict[str, Any]]:
        seen: list[dict[str, Any]] = []
        cursor = 0
        while True:
            finished = done.is_set()
            response = await server.client.get(
                "/v1/sync/pull", params={"cursor": cursor, "limit": 7}, headers=user
            )
            page = response.json()
            seen += page["operations"]
            cursor = page["cursor"]
            if finished and not page["hasMore"]:
                return seen
            await asyncio.sleep(0)

    reader = asyncio.create_task(read())
    await asyncio.gather(*(push_all(device) for device in range(pushers)))
    done.set()
    seen = await reader
    total = pushers * batches * batch_size
    assert len(acked) == total
    assert [op["id"] for op in seen] == sorted(acked, key=acked.__getitem__)
    assert [op["seq"] for op in seen] == list(range(1, total + 1))


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
async def test_pulled_operations_merge_to_the_examples_expected_state(
    server: Server, example: dict[str, Any]
) -> None:
    """Each device pushes its own operations; what a third device pulls merges as the
    example expects (the server keeps the log; clients converge by merging)."""
    user = await server.new_user()
    by_device: dict[str, list[dict[str, Any]]] = {}
    for operation in example["operations"]:
        by_device.setdefault(operation["hlc"].rsplit("-", 1)[1], []).append(operation)
    for operations in reversed(list(by_device.values())):
        response = await server.push(user, operations)
        assert response.status_code == 200, response.text
    assert merge(await server.pull_all(user)) == example["expected"]


async def test_cors_answers_any_origin_by_default(server: Server) -> None:
    preflight = await server.client.options(
        "/v1/sync/push",
        headers={
            "Origin": "https://companion.example",
            "Access-Control-Request-Method": "POST",
            "Access-Control-Request-Headers": "authorization, content-type",
        },
    )
    assert preflight.status_code == 200
    assert preflight.headers["access-control-allow-origin"] == "*"
    assert "access-control-allow-credentials" not in preflight.headers


def test_stamps_sort_as_strings_in_clock_order() -> None:
    ordered = [stamp(0, 0, "devB"), stamp(0, 1, "devA"), stamp(0, 1, "devB"), stamp(1, 0, "devA")]
    assert sorted(reversed(ordered)) == ordered

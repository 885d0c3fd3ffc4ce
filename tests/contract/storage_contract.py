"""The storage contract: unstorage semantics every Storage/driver combination must keep.

Each case gets a ``Storage`` whose root is a memory driver, with ``local`` and ``outbox``
mounted on the driver under test. Self-contained: it runs inside Pyodide too.
"""

from airi_memory.errors import (
    InvalidKeyError,
    InvalidValueError,
    UnknownMountError,
    WriteConflictError,
)
from airi_memory.storage.driver import Guard, LogAppend, native_bytes


async def case_json_values_round_trip(storage):
    values = {
        "local:chat/sessions/abc": {"sessionId": "abc", "tags": ["a", "b"], "pinned": False},
        "local:list": [1, 2.5, "three", None, True],
        "local:number": 42,
        "local:text": "hello world",
        "local:unicode": {"text": "こんにちは 👋", "emoji": "🦊"},
        "outbox:op-1": {"type": "create", "retries": 0},
        "scratch": {"in": "memory root"},
    }
    for key, value in values.items():
        await storage.set_item(key, value)
    for key, value in values.items():
        assert await storage.get_item(key) == value, key
        assert await storage.has_item(key), key


async def case_stored_text_is_what_unstorage_writes(storage):
    await storage.set_item("local:obj", {"a": 1, "b": [True, None]})
    await storage.set_item("local:n", 5)
    await storage.set_item("local:s", "plain")
    assert _text(await storage.get_item_raw("local:obj")) == '{"a":1,"b":[true,null]}'
    assert _text(await storage.get_item_raw("local:n")) == "5"
    assert _text(await storage.get_item_raw("local:s")) == "plain"
    # destr: numeric-looking text reads back as a number, as in unstorage ...
    await storage.set_item("local:numeric-text", "7")
    assert await storage.get_item("local:numeric-text") == 7
    # ... unless JSON.parse refuses it.
    await storage.set_item("local:zip-code", "007")
    assert await storage.get_item("local:zip-code") == "007"


def _text(raw):
    """Raw reads give text (memory, IndexedDB) or bytes (files, like unstorage's fs driver)."""
    return raw.decode() if isinstance(raw, bytes) else raw


async def case_keys_are_normalised_like_unstorage(storage):
    await storage.set_item("local/chat\\sessions//x", 1)
    assert await storage.get_keys("local:chat") == ["local:chat:sessions:x"]
    assert await storage.get_item("local:chat:sessions:x") == 1
    assert await storage.get_item(":local:chat:sessions:x:") == 1
    assert await storage.get_item("local:chat:sessions:x?version=2") == 1


async def case_missing_items(storage):
    assert await storage.get_item("local:nothing") is None
    assert await storage.has_item("local:nothing") is False
    await storage.remove_item("local:nothing")  # removing nothing is fine
    await storage.set_item("local:gone", 1)
    await storage.remove_item("local:gone")
    assert await storage.has_item("local:gone") is False


async def case_keys_and_clear_stay_inside_their_mount(storage):
    await storage.set_item("local:a", 1)
    await storage.set_item("local:b:c", 2)
    await storage.set_item("outbox:op", 3)
    await storage.set_item("root-key", 4)
    assert sorted(await storage.get_keys("local")) == ["local:a", "local:b:c"]
    assert await storage.get_keys("outbox") == ["outbox:op"]
    assert sorted(await storage.get_keys()) == ["local:a", "local:b:c", "outbox:op", "root-key"]
    assert await storage.get_keys("", max_depth=0) == ["root-key"]
    await storage.clear("outbox")
    assert await storage.get_keys("outbox") == []
    assert sorted(await storage.get_keys("local")) == ["local:a", "local:b:c"]
    await storage.clear("local:b")
    assert await storage.get_keys("local") == ["local:a"]
    assert await storage.get_item("root-key") == 4


async def case_mount_routing(storage):
    assert storage.get_mount("local:chat:x").base == "local:"
    assert storage.get_mount("outbox").base == "outbox:"
    assert storage.get_mount("elsewhere:x").base == ""
    assert [m.base for m in storage.get_mounts("local")] == ["local:"]
    assert sorted(m.base for m in storage.get_mounts()) == ["", "local:", "outbox:"]
    assert storage.mount_names() == ["", "local", "outbox"]


async def case_batch_get_and_set(storage):
    await storage.set_items([("local:x", {"v": 1}), ("outbox:y", [2]), ("z", "three")])
    found = await storage.get_items(["z", "local:x", "outbox:y", "local:missing"])
    assert found == [
        {"key": "z", "value": "three"},
        {"key": "local:x", "value": {"v": 1}},
        {"key": "outbox:y", "value": [2]},
        {"key": "local:missing", "value": None},
    ]


async def case_bad_keys_are_refused_and_nothing_is_written(storage):
    before = sorted(await storage.get_keys())
    for bad in ["", ":", "//", "local:../x", "local:a\x00b", "local:meta$", 42, None]:
        try:
            await storage.set_item(bad, 1)
        except InvalidKeyError as error:
            assert "storage key" in str(error), str(error)
        else:
            raise AssertionError(f"key {bad!r} was accepted")
    assert sorted(await storage.get_keys()) == before


async def case_bad_values_are_refused_and_batch_writes_nothing(storage):
    try:
        await storage.set_item("local:bad", {"when": object()})
    except InvalidValueError as error:
        assert "local:bad" in str(error)
    else:
        raise AssertionError("a non-JSON value was accepted")
    try:
        await storage.set_items([("local:ok-1", 1), ("local:bad-2", {1, 2}), ("local:ok-3", 3)])
    except InvalidValueError as error:
        assert "local:bad-2" in str(error)
    else:
        raise AssertionError("a batch with a non-JSON value was accepted")
    assert await storage.get_keys("local") == []


def _nested(levels, leaf=0):
    value = leaf
    for level in range(levels):
        value = [value] if level % 2 else {"a": value}
    return value


async def case_values_nested_too_deep_are_refused_and_read_back_as_text(storage):
    """JSON nested deeper than MAX_VALUE_DEPTH is refused when written (the encoder would
    give out with a RecursionError), and stored text nested that deep (written by
    another tool) reads back as the text, as destr returns text it cannot parse."""
    from airi_memory.storage.values import MAX_VALUE_DEPTH

    at_limit = _nested(MAX_VALUE_DEPTH)
    await storage.set_item("local:at-limit", at_limit)
    assert await storage.get_item("local:at-limit") == at_limit
    # 200: as deep as the facade lets arguments through (MAX_ARGUMENT_DEPTH in
    # airi-memory.mjs); the stored text below goes far deeper.
    for levels in (MAX_VALUE_DEPTH + 1, 200):
        writes = [
            storage.set_item("local:deep", {"a": _nested(levels - 1)}),
            storage.set_items([("local:ok", 1), ("local:deep", _nested(levels))]),
            storage.write_batch(sets=[("local:ok", 1)], patches=[("local:deep", _nested(levels))]),
        ]
        for write in writes:
            try:
                await write
            except InvalidValueError as error:
                assert "local:deep" in str(error) and f"{MAX_VALUE_DEPTH} levels" in str(error)
            else:
                raise AssertionError(f"a value nested {levels} levels deep was accepted")
    assert await storage.get_keys("local") == ["local:at-limit"]
    for levels in (MAX_VALUE_DEPTH + 1, 10_000):
        text = "[" * levels + "]" * levels
        await storage.set_item_raw("local:raw-deep", text)
        assert await storage.get_item("local:raw-deep") == text
        found = await storage.get_items(["local:raw-deep", "local:at-limit"])
        assert [item["value"] for item in found] == [text, at_limit]
        assert dict(await storage.get_all("local:")) == {
            "local:at-limit": at_limit,
            "local:raw-deep": text,
        }


async def case_unknown_mounts_are_named(storage):
    try:
        await storage.unmount("nowhere")
    except UnknownMountError as error:
        assert "nowhere" in str(error)
    else:
        raise AssertionError("unmounting an unknown mount succeeded")


async def case_raw_values(storage):
    await storage.set_item_raw("local:blob", b"\x00\x01binary\xff")
    raw = await storage.get_item_raw("local:blob")
    assert bytes(raw) == b"\x00\x01binary\xff"
    # Native: the host's own bytes (a JS Uint8Array in the browser), passed on unopened;
    # written back as they came, they are the same bytes.
    native = await storage.get_item_raw_native("local:blob")
    as_bytes = native.to_bytes() if hasattr(native, "to_bytes") else bytes(native)
    assert as_bytes == b"\x00\x01binary\xff" and len(native) == 9
    await storage.write_batch(raw_sets=[("local:copy", native)])
    assert bytes(await storage.get_item_raw("local:copy")) == b"\x00\x01binary\xff"
    assert await storage.get_item_raw_native("local:absent") is None
    listed = await storage.get_all_raw_native("local:")
    assert [(key, native_bytes(value)) for key, value in listed] == [
        ("local:blob", b"\x00\x01binary\xff"),
        ("local:copy", b"\x00\x01binary\xff"),
    ]


async def case_one_batch_spans_the_mounts_of_one_store(storage):
    """A write and its sync operation commit together or not at all."""
    await storage.set_item("local:guarded", {"v": 1})
    write = {
        "sets": [("local:record", {"n": 1}), ("outbox:op-1", {"type": "create"})],
        "patches": [("local:guarded", {"w": 2})],
        "log": LogAppend("local:log", "local:log-head", '{"keys": []}'),
    }
    try:
        await storage.write_batch(**write, guards=[Guard("local:guarded", "v", 2)])
    except WriteConflictError:
        pass
    else:
        raise AssertionError("a failed guard must refuse the batch")
    assert await storage.get_keys("outbox") == []
    assert not await storage.has_item("local:record")
    number = await storage.write_batch(**write, guards=[Guard("local:guarded", "v", 1)])
    assert number == 1
    assert await storage.get_item("outbox:op-1") == {"type": "create"}
    assert await storage.get_item("local:record") == {"n": 1}
    assert await storage.get_item("local:guarded") == {"v": 1, "w": 2}
    assert await storage.get_keys("outbox") == ["outbox:op-1"]
    assert await storage.get_keys("local:log") == ["local:log:0000000000000001"]


async def case_a_patch_merges_into_what_the_batch_wrote_before_it(storage):
    """A guarded record's patch merges into the record as the batch left it: set or
    deleted earlier in the same batch (alone, or under a deleted prefix; a patch then
    merges into nothing), or as stored."""
    for key in ("local:a:one", "local:a:two", "local:b", "local:c"):
        await storage.set_item(key, {"v": 1, "old": True})
    guards = [Guard(key, "v", 1) for key in ("local:a:one", "local:b", "local:c")]
    await storage.write_batch(
        sets=[("local:b", {"v": 2})],
        removes=["local:c"],
        remove_prefixes=["local:a"],
        patches=[("local:a:one", {"w": 1}), ("local:b", {"w": 2}), ("local:c", {"w": 3})],
        guards=guards,
    )
    assert await storage.get_item("local:b") == {"v": 2, "w": 2}
    assert not await storage.has_item("local:a:two")
    assert [await storage.get_item(k) for k in ("local:a:one", "local:c")] == [None, None]
    await storage.set_item("local:d", {"v": 1, "old": True})
    await storage.write_batch(patches=[("local:d", {"w": 4})], guards=[Guard("local:d", "v", 1)])
    assert await storage.get_item("local:d") == {"v": 1, "old": True, "w": 4}


async def case_a_record_patched_twice_in_one_batch_keeps_both_patches(storage):
    """Patches apply in order, each onto what the one before it left (the browser's
    store read a record once per patch, before either was written, and kept only the
    last); a patch of a missing record writes nothing."""
    await storage.set_item("local:p", {"v": 1})
    await storage.write_batch(
        patches=[("local:p", {"a": 1}), ("local:p", {"b": 2})], guards=[Guard("local:p", "v", 1)]
    )
    assert await storage.get_item("local:p") == {"v": 1, "a": 1, "b": 2}
    await storage.write_batch(patches=[("local:p", {"a": 3}), ("local:q", {"x": 1})])
    assert await storage.get_item("local:p") == {"v": 1, "a": 3, "b": 2}
    assert not await storage.has_item("local:q")
    # Set earlier in the same batch, then patched twice.
    await storage.write_batch(
        sets=[("local:s", {"v": 1})], patches=[("local:s", {"a": 1}), ("local:s", {"b": 2})]
    )
    assert await storage.get_item("local:s") == {"v": 1, "a": 1, "b": 2}
    # Many patches at once (read as one key range in the browser), one key twice.
    many = [(f"local:m:{n:03d}", {"n": n}) for n in range(80)]
    for key, value in many:
        await storage.set_item(key, value)
    await storage.write_batch(
        patches=[(key, {"p": 1}) for key, _ in many] + [("local:m:007", {"q": 2})]
    )
    assert await storage.get_item("local:m:007") == {"n": 7, "p": 1, "q": 2}
    assert await storage.get_item("local:m:079") == {"n": 79, "p": 1}


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]

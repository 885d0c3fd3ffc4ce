"""The storage contract on CPython, over the memory and filesystem drivers."""

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airi_memory.errors import InvalidKeyError
from airi_memory.native.fs import FsDriver
from airi_memory.storage import MemoryDriver, Storage
from airi_memory.storage.keys import from_key_segment, item_key, key_segment, normalize_key
from airi_memory.storage.prefixed import PrefixedDriver
from airi_memory.storage.values import destr, stringify
from contract.storage_contract import CASES


def make_storage(kind: str, tmp_path) -> Storage:
    """Both mounts share one store, as they share one IndexedDB database in the browser."""
    storage = Storage(MemoryDriver())
    store = MemoryDriver() if kind == "memory" else FsDriver(tmp_path)
    storage.mount("local", PrefixedDriver(store, "airi-local"))
    storage.mount("outbox", PrefixedDriver(store, "airi-sync-queue"))
    return storage


async def test_a_batch_across_mounts_of_different_stores_is_refused_whole():
    storage = Storage(MemoryDriver())
    storage.mount("local", MemoryDriver()).mount("outbox", MemoryDriver())
    with pytest.raises(InvalidKeyError, match=r"one mount, got \['local:', 'outbox:'\]"):
        await storage.write_batch([("local:a", 1), ("outbox:op", 2)])
    assert await storage.get_keys() == []


@pytest.mark.parametrize("kind", ["memory", "fs"])
@pytest.mark.parametrize("case", CASES, ids=lambda case: case.__name__)
async def test_storage_contract(case, kind, tmp_path):
    await case(make_storage(kind, tmp_path))


@pytest.mark.parametrize(
    ("key", "expected"),
    [
        ("a/b\\c", "a:b:c"),
        ("::a::b::", "a:b"),
        ("a:b?x=1", "a:b"),
        ("", ""),
        (None, ""),
        ("/", ""),
    ],
)
def test_normalize_key_matches_unstorage(key, expected):
    assert normalize_key(key) == expected


@given(st.text(min_size=1, max_size=30), st.text(min_size=1, max_size=30))
def test_ids_as_key_segments_never_collide_and_always_pass_the_key_rules(first, second):
    keys = [f"local:memory:active:{key_segment(a)}:{key_segment(b)}" for a, b in (
        (first, second), (second, first), (first + ":" + second, "x"), (first + "/" + second, "x"),
    )]  # fmt: skip
    for key in keys:
        assert item_key(key) == key  # unstorage leaves it as it is
    segment = key_segment(first)
    assert ":" not in segment and from_key_segment(segment) == first
    assert (key_segment(first) == key_segment(second)) == (first == second)
    assert len(set(keys)) == (3 if first == second else 4)


def test_ordinary_ids_keep_their_keys_and_odd_ones_are_encoded():
    for plain in ("tester", "default", "V1StGXR8_Z5jdHi6B-myT", "alice@example.com", "東京"):
        assert key_segment(plain) == plain
    encoded = {"a/b": "a%2Fb", "a:b": "a%3Ab", "..": "%2E%2E", ".": "%2E", "x$": "x%24",
               "50%": "50%25", "a?b": "a%3Fb", "a\\b": "a%5Cb", "\n": "%0A"}  # fmt: skip
    assert {value: key_segment(value) for value in encoded} == encoded
    with pytest.raises(InvalidKeyError, match="empty"):
        key_segment("")


@pytest.mark.parametrize(
    ("text", "parsed"),
    [
        ("5", 5),
        ("-1.5e3", -1500.0),
        ("true", True),
        (" FALSE ", False),
        ("null", None),
        ('"quoted"', "quoted"),
        ('{"a":[1,{"b":null}]}', {"a": [1, {"b": None}]}),
        ("not json", "not json"),
        ("{broken", "{broken"),
        ("12345678901234567", "12345678901234567"),  # over 16 digits: destr keeps text
        ('{"__proto__":{"x":1},"y":2}', {"y": 2}),
    ],
)
def test_destr_matches_destr_2_0_5(text, parsed):
    assert destr(text) == parsed


def test_stringify_matches_unstorage():
    assert stringify(1.0, "k") == "1"
    assert stringify(0.5, "k") == "0.5"
    assert stringify(True, "k") == "true"
    assert stringify(None, "k") == "null"
    assert stringify({"b": [1, "x"]}, "k") == '{"b":[1,"x"]}'


def test_fs_driver_writes_files_in_unstorage_fs_layout(tmp_path):
    import asyncio

    storage = Storage().mount("local", FsDriver(tmp_path))
    asyncio.run(storage.set_item("local:chat/sessions/s1", {"id": "s1"}))
    assert (tmp_path / "chat" / "sessions" / "s1").read_text() == '{"id":"s1"}'
    assert not list(tmp_path.rglob(".tmp-*"))


def test_json_text_nested_too_deep_is_refused_before_it_is_parsed():
    """In Pyodide, json.loads of text nested ~10,000 deep kills the interpreter for good:
    every JSON text the core reads is measured first, brackets inside strings aside."""
    from airi_memory.storage.values import NestedTooDeepError, json_depth, loads

    assert json_depth('{"a": [1, {"b": "[[[[{{{{"}], "c": "\\"]]]"}') == 3
    assert loads('["[[[[[[", ' + "[" * 5 + "]" * 5 + "]", max_depth=6) == ["[[[[[[", [[[[[]]]]]]
    with pytest.raises(NestedTooDeepError, match="more than 6 levels"):
        loads("[" * 7 + "]" * 7, max_depth=6)
    with pytest.raises(ValueError):  # a NestedTooDeepError is a ValueError: "not JSON"
        loads('{"a":' * 100_000 + "0" + "}" * 100_000)
    assert loads(b'{"x": [1]}') == {"x": [1]}

"""The storage contract on CPython, over the memory and filesystem drivers."""

import pytest

from airi_memory.storage import MemoryDriver, Storage
from airi_memory.storage.fs import FsDriver
from airi_memory.storage.keys import normalize_key
from airi_memory.storage.values import destr, stringify
from contract.storage_contract import CASES


def make_storage(kind: str, tmp_path) -> Storage:
    storage = Storage(MemoryDriver())
    if kind == "memory":
        storage.mount("local", MemoryDriver()).mount("outbox", MemoryDriver())
    else:
        storage.mount("local", FsDriver(tmp_path / "airi-local"))
        storage.mount("outbox", FsDriver(tmp_path / "airi-sync-queue"))
    return storage


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

"""Fuzzed input through ``dispatch``, as a JS app sends it (issue 9's fault suite).

Every generated input is either accepted and reads back as given (under unstorage's
rules for storage values), or refused with one error of the library's own kinds that
names the field or key; after a refusal the store is what it was, byte for byte: every
mount's raw keys and values, the export, and the live context.

The same checks run in Chromium through the JS facade
(tests/e2e/faults/test_fault_fuzz_in_browser.py): they see the system only through a
``FuzzHarness``.
"""

import json
import math
from collections.abc import Awaitable, Callable
from typing import Any

from hypothesis import given, settings

from airi_memory.storage.keys import MAX_KEY_LENGTH, normalize_key
from airi_memory.storage.values import MAX_VALUE_DEPTH, destr, stringify
from faults.harness import (
    FAMILY_EXAMPLES,
    FUZZ,
    IMPORT_EXAMPLES,
    FuzzHarness,
    Harness,
    assert_refused,
    key_hints,
    same_json,
)
from faults.inputs import (
    Case,
    add_message_cases,
    context_cases,
    import_cases,
    nested,
    search_cases,
    storage_cases,
)

Check = Callable[[FuzzHarness, Case], Awaitable[None]]
Prepare = Callable[[FuzzHarness], Awaitable[None]]


def fuzz(
    harness: FuzzHarness,
    cases: Any,
    examples: int,
    check: Check,
    prepare: Prepare | None = None,
    found: tuple[Case, ...] = (),
) -> None:
    """Run ``check`` on ``examples`` drawn cases, all against ``harness``'s system (set
    up by ``prepare`` when the family needs data to work on), after the ``found`` cases:
    inputs this fuzzing once caught mishandled, replayed every run. Closes ``harness``."""
    try:
        if prepare is not None:
            harness.run(prepare(harness))
        for case in found:
            harness.run(check(harness, case))
        ran = []

        @settings(FUZZ, max_examples=examples)
        @given(cases)
        def run(case: Case) -> None:
            ran.append(case.note)
            harness.run(check(harness, case))

        run()
        assert len(ran) >= examples, f"only {len(ran)} of {examples} examples ran"
    finally:
        harness.close()


async def refused_and_untouched(
    harness: FuzzHarness, case: Case, reply: dict[str, Any], before: dict[str, Any]
) -> None:
    """The refusal was due (the input was broken), proper, and nothing changed."""
    assert case.expect != "accept", f"a valid input ({case.note}) was refused: {reply}"
    assert_refused(reply, case.hints)
    assert await harness.state() == before, f"a refused call ({case.note}) changed the store"


# --- import files -----------------------------------------------------------------------
IMPORT_FOUND = (  # each was stored, and then no write and no read of the mirror worked again
    Case(
        [{"version": "1.0.0", "sessions": [{"meta": {"color": "\ud896"}, "messages": []}]}],
        "refuse",
        ("sessions[0].meta.color",),
        "lone surrogate in an unknown field",
        {"sessions": [], "keep_ids": False},
    ),
    Case(
        ['{"version": "1", "sessions": [{"meta": {}, "messages": [{"role": "user", '
         '"mood": NaN}]}]}'],
        "refuse",
        ("sessions[0].messages[0].mood",),
        "NaN, which JSON.parse refuses and storage made null",
        {"sessions": [], "keep_ids": False},
    ),
    *(  # an own "__proto__" key (JSON.parse makes one) became the prototype in the worker
        Case(
            [{"version": "1.0.0", "sessions": [{"meta": {}, "messages": [message]}]}, None],
            "accept",
            (),
            "valid",
            {"sessions": [{"meta": {}, "messages": [message]}], "keep_ids": False},
        )
        for message in (
            {"role": "system", "slices": [{"__proto__": []}]},
            {"role": "system", "slices": [{"__proto__": None}]},
        )
    ),
)  # fmt: skip
STORAGE_FOUND = (  # unstorage cuts a base at "?": what follows is not part of it
    Case(["local:?\x1f"], "either", (), "getKeys"),
)


def test_fuzzed_import_files_import_whole_or_not_at_all(tmp_path):
    fuzz(Harness(tmp_path), import_cases(), IMPORT_EXAMPLES, check_import, found=IMPORT_FOUND)


async def check_import(harness: FuzzHarness, case: Case) -> None:
    await harness.fresh_if_full()
    before = await harness.state()
    reply = await harness.call("importSessions", *case.args)
    if not reply["ok"]:
        await refused_and_untouched(harness, case, reply, before)
        return
    assert case.expect != "refuse", f"a broken file ({case.note}) was imported: {reply}"
    exported = await harness.value("exportSessions")
    assert_imported(before["export"]["sessions"], case, reply["value"], exported["sessions"])


def assert_imported(existing: list, case: Case, report: dict, exported: list) -> None:
    """Every session the file holds is in the export with its messages as given, except
    those an import skips: ids seen earlier in the file or imported before."""
    keep_ids = case.extra["keep_ids"]
    known = {entry["meta"]["sessionId"] for entry in existing}
    imported_from = {entry["meta"].get("importedFrom") for entry in existing} - {None}
    accepted, seen = [], set()
    for entry in case.extra["sessions"]:
        original = entry["meta"].get("sessionId")
        skipped = original in seen or original in (known if keep_ids else imported_from)
        seen.add(original)
        if original is None or not skipped:
            accepted.append(entry)
    assert report["sessions"] == len(accepted), report
    assert report["skippedDuplicates"] == len(case.extra["sessions"]) - len(accepted)
    assert report["messages"] == sum(len(entry["messages"]) for entry in accepted)
    by_id = {entry["meta"]["sessionId"]: entry for entry in exported}
    for session_id, given_entry in zip(report["sessionIds"], accepted, strict=True):
        stored = by_id[session_id]
        given_meta = given_entry["meta"]
        original = given_meta.get("sessionId")
        if original is not None:
            assert (session_id if keep_ids else stored["meta"]["importedFrom"]) == original
        assert stored["meta"]["userId"] == "tester"
        for name, value in given_meta.items():
            if name != "sessionId":
                assert same_json(stored["meta"][name], value), (name, stored["meta"], value)
        assert len(stored["messages"]) == len(given_entry["messages"])
        for got, given_message in zip(stored["messages"], given_entry["messages"], strict=True):
            assert same_json(got, expected_message(given_message, got)), (got, given_message)


def expected_message(given_message: dict[str, Any], stored: dict[str, Any]) -> dict[str, Any]:
    """A message as stored: as given, defaults filled, and ``summary.trusted`` dropped
    (only the library's own summaries are trusted)."""
    expected = {"content": "", "id": stored["id"], "createdAt": stored["createdAt"]}
    expected.update(given_message)
    if isinstance(given_message.get("summary"), dict):
        expected["summary"] = {k: v for k, v in given_message["summary"].items() if k != "trusted"}
    return expected


# --- storage keys and values ------------------------------------------------------------
RESERVED = "local:memory:"  # the library's own records: readable, never writable by the app


def test_fuzzed_storage_calls_store_what_unstorage_would_or_write_nothing(tmp_path):
    fuzz(Harness(tmp_path), storage_cases(), FAMILY_EXAMPLES, check_storage, found=STORAGE_FOUND)


def key_problem(key: object, writing: bool) -> str | None:
    """Why unstorage's key rules (and the library's reserved space) refuse ``key``."""
    if not isinstance(key, str):
        return "not a string"
    normalized = normalize_key(key)
    segments = normalized.split(":")
    if not normalized or "." in segments or ".." in segments:
        return "empty or a dot segment"
    if any(ord(c) < 0x20 or c == "\x7f" for c in normalized):
        return "control characters"
    if normalized.endswith("$") or len(normalized) > MAX_KEY_LENGTH:
        return "meta suffix or too long"
    if writing and normalized.startswith(RESERVED):
        return "reserved"
    return None


def base_problem(base: object, clearing: bool) -> str | None:
    """Why a base (getKeys, clear) is refused; clearing may not reach the reserved space."""
    if base is None:
        base = ""
    if not isinstance(base, str):
        return "not a string"
    normalized = normalize_key(base)
    segments = normalized.split(":")
    # As unstorage does, everything from a "?" on is cut first: what is left is checked.
    if "." in segments or ".." in segments or any(ord(c) < 0x20 or c == "\x7f" for c in normalized):
        return "dot segment or control characters"
    prefix = normalized + ":" if normalized else ""
    if clearing and (RESERVED.startswith(prefix) or prefix.startswith(RESERVED)):
        return "reserved"
    return None


def value_problem(value: Any) -> str | None:
    """What JSON.stringify (with unstorage's String() for primitives) cannot store."""
    if value is None or isinstance(value, bool | int | float | str):
        return None  # NaN and Infinity are String()ed, as unstorage does
    try:
        json.dumps(value, allow_nan=False)
    except (TypeError, ValueError):
        return "not JSON"
    if _depth(value) > MAX_VALUE_DEPTH:
        return "nested too deep"
    return None


def _depth(value: Any) -> int:
    """Levels of lists and objects (the fuzzed values nest a few hundred at most)."""
    if isinstance(value, dict):
        return 1 + max(map(_depth, value.values()), default=0)
    if isinstance(value, list | tuple):
        return 1 + max(map(_depth, value), default=0)
    return 0


def expected_read(value: Any) -> Any:
    """What getItem returns for what setItem stored: JSON for objects and arrays (destr
    drops ``__proto__``), and for primitives destr's reading of String(value)."""
    if isinstance(value, dict | list | tuple):
        return _without_proto(json.loads(json.dumps(value)))
    return destr(stringify(value, "key"))


def _without_proto(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: _without_proto(v) for k, v in value.items() if k != "__proto__"}
    if isinstance(value, list):
        return [_without_proto(v) for v in value]
    return value


async def check_storage(harness: FuzzHarness, case: Case) -> None:
    """The expected outcome follows from the arguments; a refusal names the key, or one
    of the case's own ``hints`` (how a host refuses before the core sees the call)."""
    method, args = case.note, case.args
    if method == "setItem":
        key, value = args
        problem = key_problem(key, writing=True) or value_problem(value)
        hints = key_hints(key, normalize_key(key) if isinstance(key, str) else key)
        writes = [(key, value)]
    elif method == "setItems":
        items = args[0]
        shaped = isinstance(items, list) and all(isinstance(i, dict) and "key" in i for i in items)
        writes = [(i["key"], i["value"]) for i in items] if shaped else []
        problems = [key_problem(k, writing=True) or value_problem(v) for k, v in writes]
        problem = "shape" if not shaped else next((p for p in problems if p), None)
        bad = [k for (k, _), p in zip(writes, problems, strict=True) if p]
        hints = ("setItems",) if not shaped else key_hints(*bad, *map(_normalized, bad))
    elif method in ("getKeys", "clear"):
        problem = base_problem(args[0], clearing=method == "clear")
        hints, writes = key_hints(args[0]), []
    else:
        problem = key_problem(args[0], writing=method == "removeItem")
        hints, writes = key_hints(args[0]), []
    hints += case.hints
    before = await harness.state()
    reply = await harness.call(f"storage.{method}", *args)
    if problem:
        assert not reply["ok"], f"{method}{args!r:.200} was accepted ({problem}): {reply}"
        await refused_and_untouched(harness, Case(args, "refuse", hints, method), reply, before)
        return
    assert reply["ok"], f"{method}{args!r:.200} was refused: {reply}"
    if method in ("getItem", "hasItem", "getKeys"):
        assert await harness.state() == before, f"{method} changed the store"
    elif method == "removeItem":
        assert await harness.value("storage.hasItem", args[0]) is False
    elif method == "clear":
        assert await harness.value("storage.getKeys", args[0]) == []
    final = {_normalized(k): v for k, v in writes}  # a key's last value is the one kept
    for key, value in final.items():
        assert same_json(await harness.value("storage.getItem", key), expected_read(value)), key
        assert _normalized(key) in await harness.value("storage.getKeys", "")


def _normalized(key: Any) -> Any:
    return normalize_key(key) if isinstance(key, str) else key


# --- search queries ---------------------------------------------------------------------
SEARCH_FOUND = (
    Case(["searchMessages", "fox \ud83e", None], "refuse", ("query",), "unhandled by DuckDB"),
    Case(["searchMessages", "hi", {"limit": True}], "refuse", ("limit",), "a bool limit"),
    Case(["search", {"query": "fox", "vector": [math.nan]}], "refuse", ("search.vector",)),
    # A score rounded to 0.0 was returned above a threshold of 1.8e-214.
    Case(["search", {"query": "0", "strategy": "recent", "threshold": 1.8e-214}]),
)


def test_fuzzed_search_queries_answer_or_name_the_field_and_never_write(tmp_path):
    fuzz(
        Harness(tmp_path),
        search_cases(),
        FAMILY_EXAMPLES,
        check_search,
        seed_messages,
        SEARCH_FOUND,
    )


async def seed_messages(harness: FuzzHarness) -> None:
    """Sessions to search: plain words, accents, emoji, and text that looks like syntax."""
    texts = [
        "the fox jumps over the lazy dog",
        "Ärger über Straße und Café",
        "🦊 foxes 🦊 and 日本語のテキスト",
        "SELECT * FROM chat_messages; -- not SQL",
        "%_ wildcard \\ backslash ' quote",
    ]
    sessions = [
        {
            "meta": {"title": f"seed {i}", "characterId": "airi" if i % 2 else "default"},
            "messages": [
                {"role": role, "content": f"{texts[(i + j) % len(texts)]} {j}", "createdAt": j}
                for j, role in enumerate(["user", "assistant", "system", "tool"])
            ],
        }
        for i in range(4)
    ]
    await harness.value("importSessions", {"version": "1.0.0", "sessions": sessions})


async def check_search(harness: FuzzHarness, case: Case) -> None:
    method, *args = case.args
    before = await harness.state()
    reply = await harness.call(method, *args)
    after = await harness.state()
    assert after == before, f"{method} changed the store"
    if not reply["ok"]:
        await refused_and_untouched(harness, case, reply, before)
        return
    assert case.expect != "refuse", f"a broken query ({case.note}) was answered: {reply}"
    stored = {e["meta"]["sessionId"]: e["messages"] for e in before["export"]["sessions"]}
    if method == "search":
        query = args[0]
        results = reply["value"]["results"]
        assert len(results) <= query.get("limit", 10)
        for hit in results:
            assert hit["message"] in stored[hit["sessionId"]]
            assert query.get("threshold", 0) <= hit["score"] <= 1 + 1e-6, hit
    else:
        limit = (args[1] or {}).get("limit", 100)
        assert len(reply["value"]) <= limit
        for hit in reply["value"]:
            assert hit["message"] in stored[hit["sessionId"]]


# --- context messages -------------------------------------------------------------------
CONTEXT_FOUND = tuple(  # each was kept, after an error that said it was not, and broke every read
    Case([{"sourceType": "s", "sourceId": "i", "content": content}], "refuse", hints)
    for content, hints in [
        ({"o": object()}, ("context.content.o",)),
        ({"deep": nested(900)}, ("context.content.deep",)),
        ({"n": math.nan}, ("context.content",)),  # kept, as null
    ]
)


def test_fuzzed_context_messages_are_kept_as_given_or_refused(tmp_path):
    fuzz(Harness(tmp_path), context_cases(), FAMILY_EXAMPLES, check_context, found=CONTEXT_FOUND)


async def check_context(harness: FuzzHarness, case: Case) -> None:
    before = await harness.state()
    reply = await harness.call("context.ingestContext", *case.args)
    if not reply["ok"]:
        await refused_and_untouched(harness, case, reply, before)
        return
    assert case.expect != "refuse", f"a broken context ({case.note}) was kept: {reply}"
    given_message, entry = case.args[0], reply["value"]
    for name, value in given_message.items():
        assert same_json(entry[name], value), (name, entry, value)
    expires = given_message.get("expiresAt")
    live = expires is None or expires > await harness.now()
    assert (entry in await harness.value("context.getContexts")) == live
    after = await harness.state()
    assert (after["raw"], after["export"]) == (before["raw"], before["export"]), (
        "context is working memory: ingesting it must not write to storage"
    )


# --- addMessage payloads ----------------------------------------------------------------
MESSAGE_FOUND = (  # stored, and then the mirror refused it: no write worked again
    Case(["SESSION", {"role": "system", "content": "\ud800"}], "refuse", ("message.content",)),
)


def test_fuzzed_messages_are_added_as_given_or_refused(tmp_path):
    fuzz(
        Harness(tmp_path),
        add_message_cases(),
        FAMILY_EXAMPLES,
        check_add_message,
        open_session,
        MESSAGE_FOUND,
    )


async def open_session(harness: FuzzHarness) -> None:
    harness.session_id = (await harness.value("sessions.createSession", {"title": "fuzz"}))[
        "sessionId"
    ]


async def check_add_message(harness: FuzzHarness, case: Case) -> None:
    session_id = harness.session_id
    args = [session_id if arg == "SESSION" else arg for arg in case.args]
    before = await harness.state()
    message = args[1]
    if case.expect == "accept" and isinstance(message, dict) and "id" in message:
        (entry,) = [e for e in before["export"]["sessions"] if e["meta"]["sessionId"] == session_id]
        if any(stored["id"] == message["id"] for stored in entry["messages"]):
            case = Case(case.args, "refuse", ("message.id",), "an id the session holds already")
    reply = await harness.call("sessions.addMessage", *args)
    if not reply["ok"]:
        await refused_and_untouched(harness, case, reply, before)
        return
    assert case.expect != "refuse", f"a broken message ({case.note}) was added: {reply}"
    added = reply["value"]
    assert same_json(added, expected_message(args[1], added)), (added, args[1])
    assert await harness.value("sessions.latestMessages", session_id, 1) == [added]

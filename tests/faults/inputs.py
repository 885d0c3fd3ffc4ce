"""Hypothesis strategies for what a JS app (or a file it was handed) may pass in: each
draws a valid input or one broken in exactly one place, and says which.

A ``Case`` carries the call's arguments, what must happen (``accept``, ``refuse``, or
``either`` for inputs the contract leaves open), and ``hints``: the ways a refusal may name the broken field or key.
"""

import json
import math
import time
from dataclasses import dataclass, field
from typing import Any

from hypothesis import strategies as st

from airi_memory.models import DAY_MS, JS_MAX_TIME, MAX_FIELD_BYTES, MAX_FIELD_DEPTH

ROLES = ["system", "user", "assistant", "tool", "error"]
SEARCH_STRATEGIES = ["keyword", "relevant", "hybrid", "recent"]
# Characters that keys, paths and text handling trip over.
AWKWARD = [*"/\\:.$?%'\"\x00\x1f\x7f\u2028\u0301\ufeff", "🦊", "\U000e0001", "Σ", "ß"]
ID_ALPHABET = "ABCxyz019_-"

characters = st.characters(codec="utf-8") | st.sampled_from(AWKWARD)
lone_surrogate = st.characters(categories=["Cs"])
text = st.text(characters, max_size=20)
# A string with at least one lone surrogate: JS strings may hold them, JSON can escape them.
surrogate_text = st.builds(lambda a, s, b: a + s + b, text, lone_surrogate, text)
json_leaf = (
    st.none()
    | st.booleans()
    | st.integers(-(2**53), 2**53)
    | st.floats(allow_nan=False, allow_infinity=False)
    | text
)
json_value = st.recursive(
    json_leaf,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(text, inner, max_size=4),
    max_leaves=10,
)
json_object = st.dictionaries(text, json_value, max_size=4)


def nested(depth: int, leaf: Any = 0) -> Any:
    """A list inside a list ... ``depth`` levels deep."""
    value = leaf
    for _ in range(depth):
        value = [value]
    return value


# Values no JSON document holds, or holds beyond what a field allows.
non_json = st.sampled_from(
    [math.nan, math.inf, -math.inf, {1, 2}, b"bytes", object(), complex(1, 2)]
)
too_deep = st.integers(MAX_FIELD_DEPTH + 1, 80).map(nested)
too_big_text = st.just("x" * (MAX_FIELD_BYTES + 1))
not_text = st.sampled_from([5, 2.5, True, [], {}, ["a"], {"a": 1}])
not_int = st.sampled_from(["soon", "", [], {}, [1], 1.5, math.nan, math.inf, None])
not_bool = st.sampled_from(["maybe", 2, -1, [], {}, None, 0.5])


@dataclass
class Case:
    """One fuzzed call: ``args`` for ``dispatch``; ``expect`` is accept / refuse / either;
    a refusal must name one of ``hints``; ``note`` says what was broken, for reports."""

    args: list[Any]
    expect: str = "accept"
    hints: tuple[str, ...] = ()
    note: str = "valid"
    extra: dict[str, Any] = field(default_factory=dict)


# Drawn bounds must not move between examples (hypothesis replays them): the clock is
# read once. A run lasts minutes, far less than the day ahead an input may be stamped.
NOW = int(time.time() * 1000)


# --- messages (import files and addMessage) -----------------------------------------
def message_dicts() -> st.SearchStrategy[dict[str, Any]]:
    """A valid ChatHistoryItem as an app or an export file writes it."""
    part = st.fixed_dictionaries(
        {"type": st.sampled_from(["text", "image_url", "x"])},
        optional={"text": text, "image_url": json_object},
    )
    return st.fixed_dictionaries(
        {"role": st.sampled_from(ROLES)},
        optional={
            "id": st.text(ID_ALPHABET, min_size=1, max_size=24)
            | st.text(characters, min_size=1, max_size=40),
            "content": text | st.lists(part, max_size=4),
            "createdAt": st.integers(0, NOW),
            "slices": st.lists(json_object, max_size=2),
            "tool_results": st.lists(json_object, max_size=2),
            "categorization": st.fixed_dictionaries({"speech": text}, optional={"reasoning": text}),
            "summary": st.fixed_dictionaries(
                {
                    "covers": st.lists(text, min_size=1, max_size=3),
                    "method": st.sampled_from(["llm", "extractive"]),
                    "provider": text,
                },
                optional={"trusted": st.booleans(), "model": text},
            ),
            "mood": json_value,  # a field the library does not know: kept as it is
        },
    )


# Per field: values that must be refused.
MESSAGE_BREAKS: dict[str, st.SearchStrategy[Any]] = {
    "id": st.sampled_from(["", "x" * 129, 5, [], None]),
    "role": st.sampled_from(["robot", "", "USER", 5, None, []]) | surrogate_text,
    "content": st.sampled_from([5, {"a": 1}, [{"text": "no type"}], [{"type": ""}], [5], None])
    | surrogate_text
    | st.just([{"type": "text"}] * 257)
    | st.just("x" * 1_000_001),
    "createdAt": not_int
    | st.sampled_from([-1, JS_MAX_TIME + 1, 10**30, -(10**30)])
    | st.integers(2, 3650).map(lambda days: NOW + days * DAY_MS),
    "slices": st.sampled_from(["x", [1], {"a": 1}, [[]]])
    | too_deep.map(lambda v: [{"d": v}])
    | surrogate_text.map(lambda t: [{t: 1}]),
    "tool_results": st.sampled_from(["x", [None]]) | too_big_text.map(lambda t: [{"t": t}]),
    "categorization": st.sampled_from([{}, {"reasoning": "why"}, {"speech": 5}, "said"]),
    "summary": st.sampled_from(
        [
            {"covers": [], "method": "llm", "provider": "p"},
            {"covers": ["a"], "method": "magic", "provider": "p"},
            {"covers": ["a"], "method": "llm"},
            "a summary",
        ]
    ),
    "mood": too_deep
    | too_big_text
    | non_json
    | non_json.map(lambda v: {"a": [v]})
    | surrogate_text
    | surrogate_text.map(lambda t: {"a": [t]}),
}


@st.composite
def broken_message(draw: st.DrawFn, message: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """``message`` with one field broken; returns it and the field's name."""
    name = draw(st.sampled_from(sorted(MESSAGE_BREAKS)))
    return {**message, name: draw(MESSAGE_BREAKS[name])}, name


# --- import files ---------------------------------------------------------------------
def session_metas() -> st.SearchStrategy[dict[str, Any]]:
    return st.fixed_dictionaries(
        {},
        optional={
            "sessionId": st.text(ID_ALPHABET, min_size=1, max_size=24),
            "title": text,
            "createdAt": st.integers(0, NOW),
            "updatedAt": st.integers(0, NOW),
            "characterId": st.text(characters, min_size=1, max_size=20),
            "tags": st.lists(text, max_size=4),
            "pinned": st.booleans(),
            "archived": st.booleans(),
            "parentSessionId": st.none() | text,
            "forkIndex": st.none() | st.integers(0, 100),
            "forkReason": st.none() | text,
            "color": json_value,
        },
    )


META_BREAKS: dict[str, st.SearchStrategy[Any]] = {
    "sessionId": st.sampled_from(["", "has space", "a/b", "a:b", "..", "x" * 129, 5, None]),
    "title": not_text | st.just("t" * 501) | surrogate_text,
    "createdAt": MESSAGE_BREAKS["createdAt"],
    "updatedAt": MESSAGE_BREAKS["createdAt"],
    "characterId": st.sampled_from(["", "c" * 129, 5, None]),
    "tags": st.sampled_from(["tag", [1], [None], ["t"] * 101]),
    "pinned": not_bool,
    "archived": not_bool,
    "forkIndex": st.sampled_from([-1, 1.5, "first"]),
    "color": too_deep | too_big_text | non_json | surrogate_text,
}

# Where a lone surrogate may hide in an import file or a message: JSON escapes allow it, a
# JS string may hold one, but it is not text (DuckDB and UTF-8 refuse it).
surrogate_places = st.tuples(
    st.sampled_from(["meta", "mood", "slices", "tool_results", "content"]),
    surrogate_text,
).map(
    lambda found: (
        found[0],
        {
            "meta": found[1],
            "mood": {"deep": [found[1]]},
            "slices": [{found[1]: 1}],
            "tool_results": [{"output": found[1]}],
            "content": [{"type": "image_url", "image_url": {"url": found[1]}}],
        }[found[0]],
    )
)
session_entries = st.fixed_dictionaries(
    {
        "meta": session_metas(),
        "messages": st.lists(message_dicts(), max_size=5, unique_by=lambda m: m.get("id", id(m))),
    }
)
BROKEN_FILES = [
    (5, ("import data",)),
    ([], ("import data",)),
    (None, ("import data",)),
    ({}, ("conversation export",)),
    ({"sessions": []}, ("conversation export",)),
    ({"version": 1, "sessions": []}, ("conversation export",)),
    ({"version": "1.0.0", "sessions": {}}, ("'sessions'",)),
    ({"format": "chat-sessions-index:v1", "sessions": []}, ("'sessions'",)),
    ("{not json", ("not JSON",)),
    ('{"version": "1", "sessions": [{"meta": {"x": NaN}, "messages": []}]}', ("meta.x",)),
    ("", ("not JSON",)),
    (json.dumps(nested(70)), ("nested", "deep")),
]


@st.composite
def import_cases(draw: st.DrawFn) -> Case:
    """An import file, seed or AIRI format, parsed or as text, valid or broken once."""
    sessions = draw(st.lists(session_entries, max_size=4))
    airi = draw(st.booleans())
    paths = [f"sessions.k{i}" if airi else f"sessions[{i}]" for i in range(len(sessions))]
    how = draw(
        st.sampled_from(
            [
                *("valid", "valid", "meta", "message", "entry", "duplicate id"),
                *("lone surrogate", "options", "file"),
            ]
        )
    )
    options = draw(st.sampled_from([None, {}, {"keepIds": True}, {"keepIds": False}]))
    case = Case([], note=how)
    if how == "file":
        data, hints = draw(st.sampled_from(BROKEN_FILES))
        return Case([data], "refuse", hints, f"file {data!r:.40}")
    if how == "options":
        options = draw(st.sampled_from([{"keepIds": True, "merge": True}, "yes", ["keepIds"]]))
        case = Case([], "refuse", ("importSessions options",), "options")
    elif how == "valid" or not sessions:
        case.expect = "accept"
    else:
        i = draw(st.integers(0, len(sessions) - 1))
        entry = sessions[i] = dict(sessions[i])
        messages = entry["messages"] = list(entry["messages"])
        case.expect, case.hints = "refuse", (paths[i],)
        if how == "meta":
            name = draw(st.sampled_from(sorted(META_BREAKS)))
            entry["meta"] = {**entry["meta"], name: draw(META_BREAKS[name])}
            case.hints, case.note = (f"{paths[i]}.meta.{name}",), f"meta.{name}"
        elif how == "entry":
            broken = draw(st.sampled_from([5, {"meta": {}}, {"meta": {}, "messages": "m"}]))
            sessions[i] = broken
            case.note = f"entry {broken!r}"
        elif how == "message" and messages:
            j = draw(st.integers(0, len(messages) - 1))
            if draw(st.booleans()):
                messages[j], name = draw(broken_message(messages[j]))
                case.hints = (f"{paths[i]}.messages[{j}].{name}",)
                # The whole file's depth bound may catch a deep field first.
                case.hints += (f"{paths[i]}.messages[{j}]",) if name in ("slices", "mood") else ()
                case.note = f"message.{name}"
            else:
                messages[j] = draw(st.sampled_from([5, "hi", None, []]))
                case.hints, case.note = (f"{paths[i]}.messages[{j}]",), "message not an object"
        elif how == "duplicate id" and messages:
            j = draw(st.integers(0, len(messages) - 1))
            copied = {**draw(message_dicts()), "id": messages[j].get("id", "dup")}
            messages[j] = {**messages[j], "id": copied["id"]}
            messages.append(copied)
            case.hints = (f"{paths[i]}.messages[{len(messages) - 1}].id",)
            case.note = "duplicate message id"
        elif how == "lone surrogate":
            place, value = draw(surrogate_places)
            if place == "meta" or not messages:
                entry["meta"] = {**entry["meta"], "color": value}
                case.hints = (f"{paths[i]}.meta.color",)
            else:
                j = draw(st.integers(0, len(messages) - 1))
                messages[j] = {**messages[j], place: value}
                case.hints = (f"{paths[i]}.messages[{j}].{place}",)
            case.note = f"lone surrogate in {place}"
        else:
            case.expect = "accept"
    if airi:
        data: Any = {
            "format": "chat-sessions-index:v1",
            "sessions": {f"k{i}": entry for i, entry in enumerate(sessions)},
        }
    else:
        data = {"version": "1.0.0", "exportedAt": NOW, "sessions": sessions}
    if case.expect != "refuse" and draw(st.booleans()):
        data = json.dumps(data)  # the file's text: lone surrogates would be JSON escapes
    case.args = [data, options]
    keep_ids = isinstance(options, dict) and bool(options.get("keepIds"))
    case.extra = {"sessions": sessions, "keep_ids": keep_ids}
    return case


# --- storage keys and values ------------------------------------------------------------
plausible_keys = st.builds(
    lambda base, rest: base + rest,
    st.sampled_from(["local:", "outbox:", "", "local/fuzz/", "outbox\\q\\", "scratch:"]),
    st.text(characters | lone_surrogate, max_size=16),
)
storage_keys = (
    st.one_of(plausible_keys, plausible_keys, plausible_keys)  # weighed: most keys are keys
    | st.sampled_from(
        [
            *("", ":", "//", "?", "local:..", "local:a/../b", "x$", "local:a?b", "local:a:.:b"),
            *("local:memory:sessions:x", "local/memory/journal", "local:memory", "k" * 1025),
        ]
    )
    | st.sampled_from([5, None, ["local:a"], {"key": "local:a"}, True])
)
storage_values = (
    json_value
    | st.text(characters | lone_surrogate, max_size=16)
    | st.sampled_from(["5", "007", "true", " null ", "-Infinity", "1e5", '"quoted"', "{bad"])
    | st.sampled_from([math.nan, math.inf, -math.inf, 10**400, 2**53 + 1])
    | st.sampled_from([{"n": math.nan}, [math.inf], {"__proto__": {"x": 1}, "a": 1}])
    | st.sampled_from([{1, 2}, b"bytes", object(), {"set": {1}}])
    | st.integers(1, 200).map(nested)
)
storage_bases = storage_keys | st.sampled_from(["local", "outbox", "scratch", "local:fuzz"])


@st.composite
def storage_cases(draw: st.DrawFn) -> Case:
    """One storage call as an app makes it, on keys and values of every shape."""
    method = draw(
        st.sampled_from(
            [
                *("setItem", "setItem", "setItems", "removeItem", "getItem", "hasItem"),
                *("getKeys", "clear"),
            ]
        )
    )
    if method == "setItems":
        items = draw(
            st.lists(
                st.fixed_dictionaries({"key": storage_keys, "value": storage_values}), max_size=4
            )
            | st.sampled_from([[{"value": 1}], "items", [5], None])
        )
        return Case([items], "either", note=method)
    if method in ("getKeys", "clear"):
        return Case([draw(storage_bases)], "either", note=method)
    if method == "setItem":
        return Case([draw(storage_keys), draw(storage_values)], "either", note=method)
    return Case([draw(storage_keys)], "either", note=method)


# --- search queries ---------------------------------------------------------------------
SEARCH_BREAKS: dict[str, st.SearchStrategy[Any]] = {
    "query": not_text.filter(lambda v: not isinstance(v, str)) | st.just("q" * 10_001),
    "limit": st.sampled_from([0, -1, 1001, 2.5, "ten", None, math.nan]),
    "threshold": st.sampled_from([-0.1, 1.5, math.nan, math.inf, "high", None]),
    "filters": st.sampled_from(
        [
            {"dateRange": [5, 1]},
            {"dateRange": [1]},
            {"roles": ["robot"]},
            {"sessionIds": "s1"},
            {"tags": ["a"]},
            "all",
        ]
    ),
    "strategy": st.sampled_from(["fancy", "", 5, "semantic"]),
    "excludeIds": st.sampled_from(["id", [5], {"a": 1}]),
    "vector": st.sampled_from([["x"], "v", [math.nan], [0.1] * 4097]),
    "q": st.just("a field search does not know"),
}


@st.composite
def search_cases(draw: st.DrawFn) -> Case:
    """``search`` (SearchQuery) or ``searchMessages`` (text, options), valid or broken once."""
    if draw(st.booleans()):
        query = draw(
            st.fixed_dictionaries(
                {"query": st.text(characters, min_size=1, max_size=30).filter(str.strip)},
                optional={
                    "limit": st.integers(1, 1000),
                    "threshold": st.floats(0, 1),
                    "filters": st.fixed_dictionaries(
                        {},
                        optional={
                            "sessionIds": st.lists(text, max_size=3),
                            "characterIds": st.lists(text, max_size=3),
                            "dateRange": st.lists(st.integers(0, NOW), min_size=2, max_size=2).map(
                                sorted
                            ),
                            "roles": st.lists(st.sampled_from(ROLES), max_size=3),
                        },
                    ),
                    "strategy": st.sampled_from(SEARCH_STRATEGIES),
                    "excludeIds": st.lists(text, max_size=3),
                },
            )
        )
        if draw(st.booleans()):
            return Case(["search", query], "accept")
        name = draw(st.sampled_from(sorted(SEARCH_BREAKS)))
        broken = {**query, name: draw(SEARCH_BREAKS[name])}
        hints = (f"search.{name}", "search.filters")
        if name == "strategy" and broken["strategy"] == "semantic":
            hints = ("semantic",)
        if name == "query":
            hints = ("search.query", "query text")
        return Case(["search", broken], "refuse", hints, f"search.{name}")
    if draw(st.booleans()):
        text_query = draw(st.text(characters, min_size=1, max_size=30))
        options = draw(
            st.none()
            | st.fixed_dictionaries(
                {},
                optional={
                    "limit": st.integers(1, 10_000),
                    "filters": st.fixed_dictionaries(
                        {}, optional={"roles": st.lists(st.sampled_from(ROLES), max_size=2)}
                    ),
                },
            )
        )
        return Case(["searchMessages", text_query, options], "accept")
    broken = draw(
        st.sampled_from(
            [
                (["", None], ("query",)),
                ([None, None], ("query",)),
                ([5, None], ("query",)),
                (["fox \ud83e", None], ("query",)),
                (["hi", {"limit": 0}], ("limit",)),
                (["hi", {"limit": "9"}], ("limit",)),
                (["hi", {"limit": True}], ("limit",)),
                (["hi", {"sort": "new"}], ("options",)),
                (["hi", "fast"], ("options",)),
                (["hi", {"filters": {"roles": "user"}}], ("filters.roles",)),
            ]
        )
    )
    return Case(["searchMessages", *broken[0]], "refuse", broken[1], f"searchMessages {broken}")


# --- context messages -------------------------------------------------------------------
CONTEXT_BREAKS: dict[str, st.SearchStrategy[Any]] = {
    "sourceType": st.sampled_from(["", "s" * 129, 5, None, []]) | surrogate_text,
    "sourceId": st.sampled_from(["", 5, None]),
    "content": st.sampled_from(["text", 5, [1], None])
    | st.sampled_from([{"n": math.nan}, {"i": [math.inf]}, {"o": object()}, {"s": {1, 2}}])
    | st.integers(MAX_FIELD_DEPTH, 1500).map(lambda depth: {"deep": nested(depth)}),
    "size": st.just({"big": "x" * 100_001}),
    "strategy": st.sampled_from(["replace", "append", 5, None]),
    "priority": st.sampled_from([1_000_001, -1_000_001, 1.5, "high", math.nan]),
    "expiresAt": st.sampled_from([-1, "tomorrow", 1.5, []]),
    "createdAt": st.sampled_from([-1, "now", None]),
    "unknown": st.just("a field ContextMessage does not know"),
}


@st.composite
def context_cases(draw: st.DrawFn) -> Case:
    """A ``context.ingestContext`` message, valid or broken once."""
    message = draw(
        st.fixed_dictionaries(
            {
                "sourceType": st.text(characters, min_size=1, max_size=20),
                "sourceId": st.text(characters, min_size=1, max_size=20),
                "content": json_object,
            },
            optional={
                "strategy": st.sampled_from(["replace-self", "append-self"]),
                "priority": st.integers(-1_000_000, 1_000_000),
                # Never close to now: an entry must not expire between two looks.
                "expiresAt": st.none()
                | st.integers(0, NOW - DAY_MS)
                | st.integers(NOW + 30 * DAY_MS, JS_MAX_TIME),
                "createdAt": st.integers(0, NOW),
            },
        )
    )
    name = draw(st.sampled_from(["valid"] * 6 + ["not an object", *sorted(CONTEXT_BREAKS)]))
    if name == "valid":
        return Case([message], "accept")
    if name == "not an object":
        return Case([draw(st.sampled_from([None, "ctx", 5, []]))], "refuse", ("context",), name)
    if name == "size":  # too big: named by its source
        broken = {**message, "content": draw(CONTEXT_BREAKS[name])}
        return Case([broken], "refuse", (repr(broken["sourceType"]),), "context too big")
    broken = {**message, name: draw(CONTEXT_BREAKS[name])}
    return Case([broken], "refuse", (f"context.{name}",), f"context.{name}")


# --- addMessage payloads ----------------------------------------------------------------
@st.composite
def add_message_cases(draw: st.DrawFn) -> Case:
    """``sessions.addMessage(sessionId, message)`` to the test's session (``SESSION``
    stands for its id), valid, broken once, or to a session that does not exist."""
    message = draw(message_dicts())
    how = draw(
        st.sampled_from(
            ["valid"] * 4 + ["lone surrogate", "not an object", "session", *sorted(MESSAGE_BREAKS)]
        )
    )
    if how == "valid":
        return Case(["SESSION", message], "accept")
    if how in MESSAGE_BREAKS:
        broken = {**message, how: draw(MESSAGE_BREAKS[how])}
        return Case(["SESSION", broken], "refuse", (f"message.{how}",), f"message.{how}")
    if how == "lone surrogate":
        place, value = draw(surrogate_places.filter(lambda found: found[0] != "meta"))
        return Case(["SESSION", {**message, place: value}], "refuse", (f"message.{place}",), how)
    if how == "not an object":
        broken = draw(st.sampled_from([None, "hello", 5, [message]]))
        return Case(["SESSION", broken], "refuse", ("message",), how)
    session_id = draw(st.sampled_from(["no-such-session", "", 5, None, ["SESSION"]]))
    return Case([session_id, message], "refuse", (repr(session_id),), "unknown session")

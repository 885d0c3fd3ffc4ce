"""The data contract: camelCase on the wire, unknown fields kept, one clear error."""

import json
import re

import pytest
from hypothesis import given
from hypothesis import strategies as st

from airi_memory.errors import InvalidValueError
from airi_memory.models import (
    DAY_MS,
    JS_MAX_TIME,
    WRITTEN_HERE,
    ChatHistoryItem,
    ChatSessionMeta,
    JsonLimitError,
    json_schemas,
    json_size,
    now_ms,
    validate_or_raise,
)
from airi_memory.options import parse_options


def test_json_schemas_use_the_js_names():
    schemas = json_schemas()
    meta = schemas["ChatSessionMeta"]["properties"]
    assert {
        "sessionId",
        "createdAt",
        "updatedAt",
        "userId",
        "characterId",
        "parentSessionId",
    } <= set(meta)
    message = schemas["ChatHistoryItem"]
    assert set(message["properties"]["role"]["enum"]) == {
        "system",
        "user",
        "assistant",
        "tool",
        "error",
    }
    assert "tool_results" in message["properties"] and message["required"] == ["role"]
    assert schemas["CacheConfig"]["properties"]["strategy"]["enum"] == ["lru", "lfu"]


def test_unknown_fields_and_explicit_nulls_are_kept():
    item = validate_or_raise(
        ChatHistoryItem, {"role": "user", "content": "hi", "mood": None, "x": {"y": 1}}
    )
    wire = item.to_wire()
    assert wire["mood"] is None and wire["x"] == {"y": 1}
    assert wire["id"] and wire["createdAt"] > 0
    assert "slices" not in wire  # optional fields nobody set are not written


@pytest.mark.parametrize(
    ("data", "field"),
    [
        ({"role": "user", "content": [{"type": "text", "text": 5}]}, "message.content"),
        ({"role": "user", "createdAt": "yesterday"}, "message.createdAt"),
        ({"content": "no role"}, "message.role"),
    ],
)
def test_validation_names_the_first_bad_field(data, field):
    with pytest.raises(InvalidValueError, match=field.replace(".", r"\.")):
        validate_or_raise(ChatHistoryItem, data, "message")


def test_session_ids_must_be_key_safe():
    with pytest.raises(InvalidValueError, match="sessionId"):
        validate_or_raise(ChatSessionMeta, {"sessionId": "a:b"})


plain_text = st.text(
    st.characters(exclude_categories=("Cs", "Cc"), exclude_characters='"\\'), max_size=20
)
json_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**53), 2**53) | st.floats(allow_nan=False,
    allow_infinity=False) | plain_text,
    lambda children: st.lists(children, max_size=4) | st.dictionaries(plain_text, children,
    max_size=4),
)  # fmt: skip


@given(json_values)
def test_json_size_is_the_length_of_compact_utf8_json(value):
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"))
    assert json_size(value, 10**9, 100) == len(text.encode())


def test_json_size_stops_at_its_bounds_and_names_the_place():
    with pytest.raises(JsonLimitError) as too_big:
        json_size(["x" * 10, "y" * 10], 20, 5)
    assert (too_big.value.path, too_big.value.reason) == ("", "more than 20 bytes of JSON")
    deep = {"a": [{"b": [1]}]}
    assert json_size(deep, 100, 4) == len(json.dumps(deep, separators=(",", ":")))
    with pytest.raises(JsonLimitError) as too_deep:
        json_size(deep, 100, 3)
    assert too_deep.value.path == "a[0].b"
    with pytest.raises(JsonLimitError, match="bytes is not JSON data"):
        json_size({"raw": b"\x00"}, 100, 4)


def test_input_is_bounded_but_stored_records_are_read_back_as_they_are():
    """A bound tightened later must never make a stored record (or a copy the library
    makes of one) unreadable."""
    ahead = {"role": "user", "createdAt": now_ms() + 2 * DAY_MS}
    assert ChatHistoryItem.model_validate(ahead).created_at == ahead["createdAt"]
    with pytest.raises(InvalidValueError, match=r"message\.createdAt.*future"):
        validate_or_raise(ChatHistoryItem, ahead, "message")
    assert validate_or_raise(ChatHistoryItem, ahead, "message", now=ahead["createdAt"])
    assert validate_or_raise(ChatHistoryItem, ahead, "message", context=WRITTEN_HERE)
    meta = {"sessionId": "s", "createdAt": JS_MAX_TIME + 1}
    assert ChatSessionMeta.model_validate(meta).created_at == JS_MAX_TIME + 1
    with pytest.raises(InvalidValueError, match=r"meta\.createdAt.*Date range"):
        validate_or_raise(ChatSessionMeta, meta, "meta", now=JS_MAX_TIME + 1)


def test_timeouts_have_generous_defaults_and_bounds_that_name_the_field():
    timeouts = parse_options({}).timeouts
    assert (timeouts.sql_ms, timeouts.embedding_load_ms, timeouts.close_ms) == (
        120_000,
        120_000,
        10_000,
    )
    assert parse_options({"timeouts": {"sqlMs": 3000}}).timeouts.sql_ms == 3000
    for bad, field in [({"sqlMs": 5}, "timeouts.sqlMs"), ({"closeMs": 10**9}, "timeouts.closeMs")]:
        with pytest.raises(InvalidValueError, match=re.escape(field)):
            parse_options({"timeouts": bad})
    with pytest.raises(InvalidValueError, match=re.escape("timeouts.hangMs")):
        parse_options({"timeouts": {"hangMs": 1}})


@pytest.mark.parametrize(
    ("mood", "reason"),
    [
        (float("nan"), r"'message\.mood': nan is not a JSON number"),
        ({"deep": [float("inf")]}, r"'message\.mood\.deep\[0\]': inf is not a JSON number"),
        ({1, 2}, r"'message\.mood': set is not JSON data"),
    ],
)
def test_a_value_json_cannot_hold_is_refused_for_what_it_is(mood, reason):
    """NaN would be stored as null, and a set is not too big: it is not JSON."""
    with pytest.raises(InvalidValueError, match=reason):
        validate_or_raise(ChatHistoryItem, {"role": "user", "mood": mood}, "message")


def test_a_lone_surrogate_anywhere_in_input_is_refused_where_it_is():
    """DuckDB refuses it and the browser's encoders replace it: it would not read back."""
    for message, path in [
        ({"role": "user", "content": "a\ud800"}, "message.content"),
        ({"role": "user", "mood": {"k\udfff": 1}}, "message.mood.k\udfff"),
        ({"role": "user", "slices": [{"text": "\ud83e"}]}, "message.slices[0].text"),
    ]:
        with pytest.raises(InvalidValueError, match="lone surrogate") as refused:
            validate_or_raise(ChatHistoryItem, message, "message")
        assert repr(path) in str(refused.value)


def test_message_text_is_the_words_whatever_the_content_shape():
    from airi_memory.models import message_text

    parts = [{"type": "text", "text": "one"}, {"type": "image_url", "image_url": {"url": "x"}},
             {"type": "text", "text": ""}, {"type": "text", "text": "two"}, "stray", {"text": 5}]  # fmt: skip
    assert message_text({"role": "user", "content": parts}) == "one\ntwo"
    assert message_text({"role": "user", "content": "plain words"}) == "plain words"
    assert message_text({"role": "assistant", "tool_calls": [{"id": "c1"}]}) == ""
    assert message_text({"role": "user", "content": None}) == ""

"""The data contract: camelCase on the wire, unknown fields kept, one clear error."""

import pytest

from airi_memory.errors import InvalidValueError
from airi_memory.models import ChatHistoryItem, ChatSessionMeta, json_schemas, validate_or_raise


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

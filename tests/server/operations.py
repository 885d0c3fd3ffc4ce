"""Wire operations for the sync server's tests."""

from typing import Any

BASE_WALL_MS = 1_700_000_000_000


def stamp(offset_ms: int = 0, counter: int = 0, node: str = "devA") -> str:
    return f"{BASE_WALL_MS + offset_ms:015d}-{counter:05d}-{node}"


def session_op(
    op_id: str, session_id: str = "s1", offset_ms: int = 0, **data: Any
) -> dict[str, Any]:
    """An update of a session's fields (a create when `kind` says so)."""
    kind = data.pop("kind", "update")
    operation: dict[str, Any] = {
        "id": op_id,
        "type": kind,
        "resource": "session",
        "sessionId": session_id,
        "hlc": stamp(offset_ms),
        "timestamp": BASE_WALL_MS + offset_ms,
        "retries": 0,
    }
    if kind != "delete":
        operation["data"] = data or {"title": f"title of {op_id}"}
    return operation


def message_op(
    op_id: str, message_id: str, session_id: str = "s1", offset_ms: int = 0
) -> dict[str, Any]:
    return {
        "id": op_id,
        "type": "create",
        "resource": "message",
        "sessionId": session_id,
        "messageId": message_id,
        "hlc": stamp(offset_ms),
        "data": {"role": "user", "content": f"text of {message_id}"},
        "timestamp": BASE_WALL_MS + offset_ms,
        "retries": 0,
    }

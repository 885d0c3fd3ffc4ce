"""What a summary is, in one place: composition, retention and the summariser ask here.

A summary is a stored message whose ``summary`` the summariser wrote, which it marks
``summary.trusted``; validation keeps that mark from no one else (``models.SummaryInfo``).
Only such a summary stands for the turns it covers: composition sends it instead of
them, and retention may delete them. A ``summary`` from anywhere else (addMessage,
updateMessage, an import file, even our own export, or an edit of a real summary) stays
with its message as data, and the message is an ordinary one: a made-up ``covers``
never hides or deletes a turn.
"""

from typing import Any


def is_summary(message: dict[str, Any]) -> bool:
    info = message.get("summary")
    return isinstance(info, dict) and info.get("trusted") is True


def latest_summary(messages: list[dict[str, Any]]) -> tuple[dict[str, Any] | None, set[str]]:
    """The newest summary of a session's messages, and the ids of the messages before it
    that it covers (it stands for older turns only)."""
    for index in range(len(messages) - 1, -1, -1):
        if is_summary(messages[index]):
            covers = set(messages[index]["summary"]["covers"])
            return messages[index], {m["id"] for m in messages[:index] if m.get("id") in covers}
    return None, set()

"""What a summary is, in one place: composition, retention and the summariser ask here,
and what of a session it leaves for the model to read (``split_session``).

A summary is a stored message whose ``summary`` the summariser wrote, which it marks
``summary.trusted``; validation keeps that mark from no one else (``models.SummaryInfo``).
Only such a summary stands for the turns it covers: composition sends it instead of
them, and retention may delete them. A ``summary`` from anywhere else (addMessage,
updateMessage, an import file, even our own export, or an edit of a real summary) stays
with its message as data, and the message is an ordinary one: a made-up ``covers``
never hides or deletes a turn.
"""

from dataclasses import dataclass, field
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


@dataclass
class SessionSplit:
    """A stored session as the model reads it: the system prompt (a leading system
    message), the newest summary, and the ids of the turns that summary stands for."""

    system: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    covered: set[str] = field(default_factory=set)

    def history(self, messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
        """What of ``messages`` belongs in the history: not summaries, not covered by the
        summary, and not ``error`` messages (those are for the user's eyes, not the model's)."""
        return [
            m
            for m in messages
            if m is not self.system
            and not is_summary(m)
            and m.get("role") != "error"
            and m.get("id") not in self.covered
        ]


def split_session(messages: list[dict[str, Any]], use_summary: bool = True) -> SessionSplit:
    split = SessionSplit()
    if messages and messages[0].get("role") == "system" and not is_summary(messages[0]):
        split.system = messages[0]
    if use_summary:
        split.summary, split.covered = latest_summary(messages)
    return split

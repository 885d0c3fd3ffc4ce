"""The reference merge: how every replica turns a set of operations into one state.

Pure Python and order-free: applying the same operations in any order, any number of
times, gives the same state, so two devices that saw the same operations agree. The
browser client implements these rules (docs/sync-protocol.md, "Merge rules") and is
tested against the same examples (docs/sync-conflict-examples.json).

- A session is keyed by its sessionId; a message by (sessionId, messageId).
- create and update set the fields in `data`, each stamped with the operation's `hlc`;
  a field keeps the value of its highest stamp (last writer wins, per field). An equal
  stamp is the same edit seen again: the value there stays.
- delete is a tombstone and is final: once a record has one it is deleted whatever the
  stamps of its edits, older or newer (ids are made fresh on the client, never reused,
  so nothing needs to come back). Deleting a session deletes every message in it.
"""

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

RecordKey = tuple[str, str | None]


@dataclass
class Record:
    """One session or message: its fields with their stamps, and its tombstone if any."""

    values: dict[str, Any] = field(default_factory=dict)
    stamps: dict[str, str] = field(default_factory=dict)
    deleted_at: str | None = None

    def set_field(self, name: str, value: Any, stamp: str) -> None:
        """Last writer wins: the higher stamp; an equal one is the same edit again."""
        if name not in self.stamps or stamp > self.stamps[name]:
            self.values[name] = value
            self.stamps[name] = stamp

    def delete(self, stamp: str) -> None:
        """Keep the latest tombstone stamp (for diagnostics; any tombstone deletes)."""
        if self.deleted_at is None or stamp > self.deleted_at:
            self.deleted_at = stamp


@dataclass
class SyncState:
    """Every record one user's operations touched, tombstones included."""

    records: dict[RecordKey, Record] = field(default_factory=dict)

    def apply(self, operation: Mapping[str, Any]) -> None:
        """Fold one wire operation (camelCase keys) into the state."""
        key: RecordKey = (
            operation["sessionId"],
            operation.get("messageId") if operation["resource"] == "message" else None,
        )
        record = self.records.setdefault(key, Record())
        if operation["type"] == "delete":
            record.delete(operation["hlc"])
            return
        for name, value in (operation.get("data") or {}).items():
            record.set_field(name, value, operation["hlc"])

    def is_deleted(self, key: RecordKey) -> bool:
        """A tombstone on the record, or, for a message, on its session."""
        own = self.records[key].deleted_at is not None
        session = self.records.get((key[0], None))
        return own or (session is not None and session.deleted_at is not None)

    def view(self) -> dict[str, Any]:
        """The merged state as docs/sync-protocol.md writes it; deleted records keep no fields."""
        sessions: dict[str, Any] = {}
        messages: dict[str, dict[str, Any]] = {}
        for key in sorted(self.records, key=lambda k: (k[0], k[1] or "")):
            session_id, message_id = key
            deleted = self.is_deleted(key)
            entry = {
                "deleted": deleted,
                "fields": {} if deleted else dict(self.records[key].values),
            }
            if message_id is None:
                sessions[session_id] = entry
            else:
                messages.setdefault(session_id, {})[message_id] = entry
        return {"sessions": sessions, "messages": messages}


def merge(operations: Iterable[Mapping[str, Any]]) -> dict[str, Any]:
    """The merged view of ``operations``, whatever their order or repetitions."""
    state = SyncState()
    for operation in operations:
        state.apply(operation)
    return state.view()

"""Merging a pulled page of other devices' operations into this store (merge rules in
docs/sync-protocol.md): per field, the higher clock stamp wins; a tombstone is final.

Decided inside the write queue (``SessionStore.apply_remote``), against the stamps and
tombstones stored here; the winning changes, the stamps they bring, the tombstones and
the new pull cursor are then written in one transaction, so a crash leaves the page
either applied with its cursor or not at all (and pulled again).
"""

from collections import defaultdict
from typing import Any

from ..sessions.changes import Bookkeeping, Change
from ..storage import Storage
from . import hlc, layout
from .recorder import OutboxRecorder


def _stamp_of(value: Any) -> str | None:
    return value.get("hlc") if isinstance(value, dict) else None


async def merge_page(
    storage: Storage, recorder: OutboxRecorder, operations: list[dict[str, Any]], cursor: int
) -> tuple[list[Change], Bookkeeping]:
    """The changes that win and the bookkeeping that goes with them."""
    book = Bookkeeping(patches=[(layout.STATE, {"cursor": cursor})])
    foreign = []
    for op in operations:
        recorder.receive(op["hlc"])  # the next local edit orders after everything seen
        if not hlc.parse(op["hlc"]).node.startswith(recorder.device + "-"):
            foreign.append(op)  # our own come back too: already applied here
    session_ids = sorted({op["sessionId"] for op in foreign})
    message_ids = sorted(
        {(op["sessionId"], op["messageId"]) for op in foreign if "messageId" in op}
    )
    keys = [layout.stamps_key(sid) for sid in session_ids]
    keys += [layout.gone_session_key(sid) for sid in session_ids]
    keys += [layout.gone_message_key(sid, mid) for sid, mid in message_ids]
    found = {item["key"]: item["value"] for item in await storage.get_items(keys)} if keys else {}
    stamps = {sid: found.get(layout.stamps_key(sid)) for sid in session_ids}
    existed = {sid for sid, value in stamps.items() if isinstance(value, dict)}
    fields: dict[str, dict[str, str]] = {
        sid: dict(value) if isinstance(value, dict) else {} for sid, value in stamps.items()
    }
    gone = {sid for sid in session_ids if _stamp_of(found.get(layout.gone_session_key(sid)))}
    gone_messages = {
        where for where in message_ids if _stamp_of(found.get(layout.gone_message_key(*where)))
    }
    won: dict[str, dict[str, str]] = defaultdict(dict)  # stamps that changed, per session
    changes: list[Change] = []
    for op in foreign:
        sid, mid, stamp = op["sessionId"], op.get("messageId"), op["hlc"]
        if sid in gone or (sid, mid) in gone_messages:
            continue  # tombstones are final
        if op["type"] == "delete":
            changes.append(Change("delete", sid, mid))
            if mid is None:
                gone.add(sid)
                book.sets.append((layout.gone_session_key(sid), {"hlc": stamp}))
                book.removes.append(layout.stamps_key(sid))
                book.prefixes.append(layout.gone_messages_prefix(sid))
            else:
                gone_messages.add((sid, mid))
                book.sets.append((layout.gone_message_key(sid, mid), {"hlc": stamp}))
            continue
        winners = {}
        for name, value in (op.get("data") or {}).items():
            field = name if mid is None else layout.message_field(mid, name)
            if field not in fields[sid] or stamp > fields[sid][field]:
                winners[name] = value
                if mid is None or op["type"] == "update":
                    fields[sid][field] = won[sid][field] = stamp
        if winners or op["type"] == "create":
            changes.append(Change(op["type"], sid, mid, winners))
    for sid, changed in won.items():
        if sid in gone:
            continue
        if sid in existed:
            book.patches.append((layout.stamps_key(sid), changed))
        else:
            book.sets.append((layout.stamps_key(sid), fields[sid]))
    return changes, book

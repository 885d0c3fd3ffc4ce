"""Export and import of conversations, in the seed's envelope and in AIRI's real files.

Import checks the whole file before writing anything, then writes every session and
message in one storage batch (one IndexedDB transaction): all of it lands, or none. A
file is someone else's data: its size in bytes, its nesting, its counts and every
record in it are bounded before anything is kept.
"""

from typing import Any

from .errors import InvalidValueError
from .models import (
    ChatHistoryItem,
    ChatSessionMeta,
    JsonLimitError,
    JsonSizeError,
    json_size,
    new_id,
    now_ms,
    validate_or_raise,
)
from .sessions import SessionStore
from .storage.values import NestedTooDeepError, loads

EXPORT_VERSION = "1.0.0"
AIRI_FORMAT = "chat-sessions-index:v1"
MAX_IMPORT_SESSIONS = 10_000
MAX_IMPORT_MESSAGES = 500_000
MAX_IMPORT_DEPTH = 64


async def export_sessions(store: SessionStore, session_ids: list[str] | None = None) -> dict:
    if session_ids is None:
        metas = await store.get_all_sessions()
    else:
        if not isinstance(session_ids, list):
            raise InvalidValueError("exportSessions expects a list of session ids")
        metas = [store.require_session(sid).to_wire() for sid in session_ids]
    return {
        "version": EXPORT_VERSION,
        "exportedAt": store.clock(),
        "sessions": [
            {"meta": meta, "messages": await store.get_session_messages(meta["sessionId"])}
            for meta in metas
        ],
    }


def _bounded(data: Any, max_bytes: int) -> Any:
    """The file as parsed JSON (given as text or already parsed), within ``max_bytes`` of
    JSON text and ``MAX_IMPORT_DEPTH`` levels of nesting."""
    too_big = f"the import file is more than {max_bytes:,} bytes (the import.maxBytes option)"
    if isinstance(data, str):
        if len(data) > max_bytes or len(data.encode("utf-8", "surrogatepass")) > max_bytes:
            raise InvalidValueError(too_big)
        try:
            data = loads(data, MAX_IMPORT_DEPTH)
        except NestedTooDeepError:
            raise InvalidValueError(
                f"the import file is nested more than {MAX_IMPORT_DEPTH} levels deep"
            ) from None
        except ValueError as error:
            raise InvalidValueError(f"the import file is not JSON: {error}") from None
    try:
        json_size(data, max_bytes, MAX_IMPORT_DEPTH)
    except JsonLimitError as error:
        if isinstance(error, JsonSizeError):
            raise InvalidValueError(too_big) from None
        raise InvalidValueError(f"invalid import field {error.path!r}: {error.reason}") from None
    return data


def _entries(data: Any) -> tuple[str, list[tuple[str, Any]]]:
    """(format, [(path, {meta, messages})]) for either kind of file."""
    if not isinstance(data, dict):
        raise InvalidValueError("import data must be an object (a parsed export file)")
    if data.get("format") == AIRI_FORMAT:
        sessions = data.get("sessions")
        if not isinstance(sessions, dict):
            raise InvalidValueError("invalid AIRI export field 'sessions': expected an object")
        return "airi", [(f"sessions.{sid}", entry) for sid, entry in sessions.items()]
    if isinstance(data.get("version"), str) and "sessions" in data:
        sessions = data["sessions"]
        if not isinstance(sessions, list):
            raise InvalidValueError("invalid export field 'sessions': expected a list")
        return "seed", [(f"sessions[{i}]", entry) for i, entry in enumerate(sessions)]
    raise InvalidValueError(
        "not a conversation export: expected {version, exportedAt, sessions: [...]} "
        f"or AIRI's {{format: '{AIRI_FORMAT}', ...}}"
    )


def _validate(
    entries: list[tuple[str, Any]], now: int
) -> list[tuple[ChatSessionMeta, list[ChatHistoryItem]]]:
    """Every session and message checked (times against ``now``), ids unique per session."""
    if len(entries) > MAX_IMPORT_SESSIONS:
        raise InvalidValueError(
            f"invalid import field 'sessions': {len(entries)} sessions, more than "
            f"{MAX_IMPORT_SESSIONS} in one import"
        )
    parsed, total = [], 0
    for path, entry in entries:
        if not isinstance(entry, dict) or not isinstance(entry.get("messages"), list):
            raise InvalidValueError(
                f"invalid import field '{path}': expected {{meta, messages: []}}"
            )
        meta = validate_or_raise(ChatSessionMeta, entry.get("meta"), f"{path}.meta", now=now)
        total += len(entry["messages"])
        if total > MAX_IMPORT_MESSAGES:
            raise InvalidValueError(
                f"invalid import field '{path}.messages': more than {MAX_IMPORT_MESSAGES} "
                "messages in one import"
            )
        messages = [
            validate_or_raise(ChatHistoryItem, message, f"{path}.messages[{i}]", now=now)
            for i, message in enumerate(entry["messages"])
        ]
        _unique_ids(path, messages)
        parsed.append((meta, messages))
    return parsed


def _unique_ids(path: str, messages: list[ChatHistoryItem]) -> None:
    """Two messages of one session with one id: updates and deletes would hit either."""
    first_at: dict[str, int] = {}
    for i, message in enumerate(messages):
        earlier = first_at.setdefault(message.id, i)
        if earlier != i:
            raise InvalidValueError(
                f"invalid import field '{path}.messages[{i}].id': duplicate message id "
                f"{message.id!r}, also at {path}.messages[{earlier}]"
            )


async def import_sessions(
    store: SessionStore, data: Any, options: Any, max_bytes: int
) -> dict[str, Any]:
    """``data``: an export file, parsed or as JSON text, of at most ``max_bytes``."""
    options = options or {}
    if not isinstance(options, dict) or set(options) - {"keepIds"}:
        raise InvalidValueError("importSessions options: only {keepIds: boolean} is known")
    keep_ids = bool(options.get("keepIds", False))
    file_format, entries = _entries(_bounded(data, max_bytes))
    # Times are judged by the later of the clocks that stamp records (the store's, and the
    # wall clock a message's default createdAt reads), so our own export always imports.
    parsed = _validate(entries, max(store.clock(), now_ms()))

    async def task() -> dict[str, Any]:
        await store.catch_up()  # what other tabs imported counts as known too
        existing = await store.get_all_sessions()
        known_ids = store.session_ids()  # every user's: an import never overwrites one
        imported_from = {meta.get("importedFrom") for meta in existing} - {None}
        accepted, skipped, seen = [], 0, set()
        for meta, messages in parsed:
            original = meta.session_id
            duplicate = original in seen or (
                original in known_ids if keep_ids else original in imported_from
            )
            seen.add(original)
            if duplicate:
                skipped += 1
                continue
            wire = {**meta.to_wire(), "userId": store.user_id}
            if not keep_ids:
                wire.update(sessionId=new_id(), importedFrom=original)
            accepted.append((ChatSessionMeta.model_validate(wire), messages))
        message_count = await store.import_batch(accepted)
        return {
            "format": file_format,
            "sessions": len(accepted),
            "messages": message_count,
            "skippedDuplicates": skipped,
            "sessionIds": [meta.session_id for meta, _ in accepted],
        }

    return await store.queue.run("importSessions", task)

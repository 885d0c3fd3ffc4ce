"""Where sessions and messages live in the ``local`` mount: one record each.

    local:memory/sessions/<sessionId>            ChatSessionMeta JSON
    local:memory/messages/<sessionId>/<seq>-<writer>   ChatHistoryItem JSON
    local:memory/active/<userId>/<characterId>   the active session id

A message is its own record, so a turn writes one small record whatever the session's
length (AIRI rewrites the whole session). The zero-padded sequence keeps IndexedDB's key
order equal to the conversation's order; the writer (a random id per open system, that
is per tab) keeps two tabs that add to one session at once from ever taking the same key.
Ids are key segments (``storage.keys.key_segment``): two ids never share a key.
"""

from ..storage.keys import from_key_segment, key_segment

LIBRARY_KEYS = "local:memory"  # everything the library stores lives under this base
SESSIONS = "local:memory:sessions"
MESSAGES = "local:memory:messages"
ACTIVE = "local:memory:active"
SEQ_DIGITS = 12


def session_key(session_id: str) -> str:
    return f"{SESSIONS}:{key_segment(session_id)}"


def messages_prefix(session_id: str) -> str:
    return f"{MESSAGES}:{key_segment(session_id)}"


def session_of_key(key: str) -> str | None:
    """The session id a session record's key names, or None for any other key."""
    head = SESSIONS + ":"
    rest = key[len(head) :] if key.startswith(head) else ""
    return from_key_segment(rest) if rest and ":" not in rest else None


def session_of_messages_prefix(prefix: str) -> str | None:
    """The session id of a ``messages_prefix``, or None for any other prefix."""
    head = MESSAGES + ":"
    rest = prefix[len(head) :] if prefix.startswith(head) else ""
    return from_key_segment(rest) if rest and ":" not in rest else None


def record_name(seq: int, writer: str) -> str:
    """The last key segment of a message record: sorts by seq, unique per writer."""
    return f"{seq:0{SEQ_DIGITS}d}-{writer}"


def message_key(session_id: str, record: str) -> str:
    return f"{MESSAGES}:{key_segment(session_id)}:{record}"


def parse_message_key(key: str) -> tuple[str, str, int]:
    """(session id, record name, seq) from a message record's full key; ValueError
    naming the key when it is not one."""
    parts = key[len(MESSAGES) + 1 :].split(":") if key.startswith(MESSAGES + ":") else []
    seq = parts[1].split("-", 1)[0] if len(parts) == 2 else ""
    if not (seq.isdigit() and seq.isascii() and parts[0]):
        raise ValueError(f"{key!r} is not a message record's key")
    return from_key_segment(parts[0]), parts[1], int(seq)


def active_key(user_id: str, character_id: str) -> str:
    return f"{ACTIVE}:{key_segment(user_id)}:{key_segment(character_id)}"

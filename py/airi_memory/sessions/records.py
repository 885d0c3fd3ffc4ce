"""Where sessions and messages live in the ``local`` mount: one record each.

    local:memory/sessions/<sessionId>            ChatSessionMeta JSON
    local:memory/messages/<sessionId>/<seq>      ChatHistoryItem JSON, seq zero-padded
    local:memory/active/<userId>/<characterId>   the active session id

A message is its own record, so a turn writes one small record whatever the session's
length (AIRI rewrites the whole session). The zero-padded sequence keeps IndexedDB's key
order equal to the conversation's order.
"""

SESSIONS = "local:memory:sessions"
MESSAGES = "local:memory:messages"
ACTIVE = "local:memory:active"
SEQ_DIGITS = 12


def session_key(session_id: str) -> str:
    return f"{SESSIONS}:{session_id}"


def messages_prefix(session_id: str) -> str:
    return f"{MESSAGES}:{session_id}"


def message_key(session_id: str, seq: int) -> str:
    return f"{MESSAGES}:{session_id}:{seq:0{SEQ_DIGITS}d}"


def parse_message_key(key: str) -> tuple[str, int]:
    """(session id, seq) from a message record's full key."""
    session_id, seq = key[len(MESSAGES) + 1 :].rsplit(":", 1)
    return session_id, int(seq)


def active_key(user_id: str, character_id: str) -> str:
    return f"{ACTIVE}:{user_id}:{character_id}"

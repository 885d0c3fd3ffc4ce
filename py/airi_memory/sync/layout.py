"""Where sync keeps its records.

    outbox:<op id>                              an operation waiting to be pushed
    outbox:failed:<op id>                       a dead letter: refused, or failed too often
    local:memory:sync:state                     on or off, device id, clock, pull cursor
    local:memory:sync:stamps:<sessionId>        the clock stamp of each field last set
    local:memory:sync:gone-sessions:<id>        a deleted session's tombstone
    local:memory:sync:gone-messages:<sid>:<mid> a deleted message's tombstone

An operation's id is its clock stamp and its place in its write (``<stamp>.0000012``):
unique (the stamp names this tab), and IndexedDB's key order is the order the operations
were made in, so the outbox reads oldest first. Dead letters are kept in the outbox mount,
in IndexedDB (the seed's ``failed:<id>`` would land in the memory root and vanish on a
reload). Stamps and tombstones live beside the session store in ``local:memory``, so
they commit with the writes they describe.
"""

from ..storage.keys import key_segment

OUTBOX = "outbox"
FAILED = "outbox:failed"
STATE = "local:memory:sync:state"
_SYNC = "local:memory:sync"


def op_key(op_id: str) -> str:
    return f"{OUTBOX}:{op_id}"


def failed_key(op_id: str) -> str:
    return f"{FAILED}:{op_id}"


def stamps_key(session_id: str) -> str:
    return f"{_SYNC}:stamps:{key_segment(session_id)}"


def gone_session_key(session_id: str) -> str:
    return f"{_SYNC}:gone-sessions:{key_segment(session_id)}"


def gone_messages_prefix(session_id: str) -> str:
    return f"{_SYNC}:gone-messages:{key_segment(session_id)}"


def gone_message_key(session_id: str, message_id: str) -> str:
    return f"{gone_messages_prefix(session_id)}:{key_segment(message_id)}"


def message_field(message_id: str, name: str) -> str:
    """A message field's name in its session's stamps record."""
    return f"m:{message_id}:{name}"

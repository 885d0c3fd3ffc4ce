"""The messages a ranking picked, read in one statement.

Ranking works on integers only (``term_index``, ``vector_scan``); the text and JSON of
the few winners are read after it, all in one statement: in the browser every statement
is a round trip to DuckDB's worker (a millisecond or more). ``doc`` grows with insertion
order, so DuckDB's zone maps skip almost every block.
"""

from collections.abc import Sequence
from typing import Any

from ..sql import SqlEngine

Message = tuple[str, str, str]  # session id, record name, body


async def messages_of(sql: SqlEngine, docs: Sequence[int], join: str = "") -> dict[int, Message]:
    """The messages of ``docs`` by doc; a doc whose message is gone (or that ``join``,
    on ``r.doc``, finds no row for) is left out."""
    if not docs:
        return {}
    values = ", ".join(f"({int(doc)})" for doc in docs)  # integers we made: safe inline
    found = await sql.query(
        "SELECT r.doc, m.session_id, m.record, m.body "
        f"FROM (VALUES {values}) r(doc) JOIN chat_messages m ON m.doc = r.doc {join}"
    )
    return {int(doc): (sid, record, body) for doc, sid, record, body in found.tuples()}


def hit(session_id: str, record: str, body: str, score: float, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id, "record": record, "score": score, "body": body, **extra}

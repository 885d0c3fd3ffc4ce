"""The messages a ranking picked, fetched by ``doc`` in one statement.

Ranking works on integers only; the text and JSON of the few winners are read after.
``doc`` grows with insertion order, so DuckDB's zone maps skip almost every block.
"""

from typing import Any

from ..sql import SqlEngine


async def by_doc(sql: SqlEngine, docs: list[int]) -> dict[int, tuple[str, str, str, str]]:
    """``{doc: (session id, record, folded text, body)}`` of the given docs."""
    if not docs:
        return {}
    listed = ", ".join(str(int(doc)) for doc in docs)  # integers: safe inline, pushed down
    result = await sql.query(
        "SELECT m.doc, m.session_id, m.record, t.folded, m.body FROM chat_messages m "
        f"JOIN search_text t ON t.doc = m.doc WHERE m.doc IN ({listed})"
    )
    return {
        int(doc): (sid, record, folded, body) for doc, sid, record, folded, body in result.tuples()
    }


def hit(found: tuple[str, str, str, str], score: float, **extra: Any) -> dict[str, Any]:
    session_id, record, _, body = found
    return {"sessionId": session_id, "record": record, "score": score, "body": body, **extra}

"""The messages a ranking picked, joined onto it in the same statement.

Ranking works on integers only; the text and JSON of the few winners are joined on
after its LIMIT, inside one statement: in the browser every statement is a round trip
to DuckDB's worker (several milliseconds), which cost as much as the ranking itself.
``doc`` grows with insertion order, so DuckDB's zone maps skip almost every block.
"""

from typing import Any


def with_messages(ranking: str) -> str:
    """``ranking`` (rows of ``doc``, ``score`` and any other columns, limited) with each
    row's session id, record name, folded text and body after its own columns, best
    first."""
    return (
        f"WITH ranked AS ({ranking}) "
        "SELECT r.*, m.session_id, m.record, t.folded, m.body FROM ranked r "
        "JOIN chat_messages m ON m.doc = r.doc JOIN search_text t ON t.doc = r.doc "
        "ORDER BY r.score DESC, r.doc"
    )


def hit(session_id: str, record: str, body: str, score: float, **extra: Any) -> dict[str, Any]:
    return {"sessionId": session_id, "record": record, "score": score, "body": body, **extra}

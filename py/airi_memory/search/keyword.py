"""Keyword retrieval inside DuckDB: the seed's substring search, and BM25 over our own
term index (``search_terms``), since DuckDB's fts extension cannot be loaded offline.

BM25 as Lucene computes it: idf = ln(1 + (N - df + 0.5) / (df + 0.5)), k1 = 1.2,
b = 0.75, over every message of the store. A message containing the whole query as a
phrase (accents and case folded) gets its score raised by ``PHRASE_BOOST``.
"""

from collections import Counter
from typing import Any

from ..sql import SqlEngine
from .filters import SearchFilters, where
from .text import fold, terms

K1 = 1.2
B = 0.75
PHRASE_BOOST = 1.5
MAX_QUERY_TERMS = 32


async def bm25(
    sql: SqlEngine,
    query: str,
    filters: SearchFilters,
    user_id: str,
    limit: int,
) -> list[dict[str, Any]]:
    """The top ``limit`` messages by BM25: ``{sessionId, record, score, matchedTerms, body}``."""
    counts = Counter(terms(query)[:MAX_QUERY_TERMS])
    if not counts:
        return []
    condition, params = where(filters, user_id)
    values = ", ".join("(?, ?)" for _ in counts)
    query_params = [v for term, n in counts.items() for v in (term, n)]
    phrase = fold(query).strip()
    boost_phrase = len(counts) > 1 and bool(phrase)
    statement = f"""
        WITH q(term, qtf) AS (VALUES {values}),
        stats AS (SELECT count(*) AS n, greatest(avg(terms), 1) AS avgdl
                  FROM chat_messages WHERE terms > 0),
        df AS (SELECT t.term, count(*) AS df FROM search_terms t JOIN q USING (term)
               GROUP BY t.term),
        ranked AS (
            SELECT t.session_id, t.record,
                   sum(q.qtf * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5))
                       * t.tf * {K1 + 1}
                       / (t.tf + {K1} * (1 - {B} + {B} * m.terms / stats.avgdl))) AS score,
                   list(t.term ORDER BY t.term) AS matched
            FROM search_terms t
            JOIN q USING (term)
            JOIN df USING (term)
            JOIN chat_messages m ON m.session_id = t.session_id AND m.record = t.record
            JOIN chat_sessions s ON s.session_id = m.session_id,
            stats
            WHERE {condition}
            GROUP BY t.session_id, t.record
            ORDER BY score DESC
            LIMIT ?)
        SELECT r.session_id, r.record, r.matched, m.body,
               r.score * (CASE WHEN ? AND contains(lower(strip_accents(m.text)), ?)
                          THEN {PHRASE_BOOST} ELSE 1 END) AS score
        FROM ranked r
        JOIN chat_messages m ON m.session_id = r.session_id AND m.record = r.record
        ORDER BY score DESC, m.created_at DESC
        LIMIT ?"""
    result = await sql.query(
        statement,
        [*query_params, *params, limit * 3 if boost_phrase else limit, boost_phrase, phrase, limit],
    )
    return [
        {"sessionId": sid, "record": record, "score": float(score), "matchedTerms": list(matched),
         "body": body}
        for sid, record, matched, body, score in result.tuples()
    ]  # fmt: skip


async def substring(
    sql: SqlEngine, query: str, filters: SearchFilters, user_id: str, limit: int
) -> list[dict[str, Any]]:
    """The seed's ``searchMessages``: messages whose text contains ``query``, case
    ignored, oldest first."""
    condition, params = where(filters, user_id)
    result = await sql.query(
        f"""SELECT m.session_id, m.body FROM chat_messages m
            JOIN chat_sessions s ON s.session_id = m.session_id
            WHERE contains(lower(m.text), lower(?)) AND {condition}
            ORDER BY m.created_at, m.session_id, m.seq LIMIT ?""",
        [query, *params, limit],
    )
    return [{"sessionId": sid, "body": body} for sid, body in result.tuples()]

"""Keyword retrieval inside DuckDB: the seed's substring search, and BM25 over our own
term index (``search_terms``), since DuckDB's fts extension cannot be loaded offline.

Both read search's own tables (``search.tables``: ``search_text``, ``search_terms``).
BM25 as Lucene computes it: idf = ln(1 + (N - df + 0.5) / (df + 0.5)), k1 = 1.2,
b = 0.75, over every message of the store. A message containing the whole query as a
phrase (accents and case folded) gets its score raised by ``PHRASE_BOOST``.
"""

from collections import Counter
from typing import Any

from ..sql import SqlEngine
from .filters import Scope
from .messages import hit, with_messages
from .text import fold, term_id, terms

K1 = 1.2
B = 0.75
PHRASE_BOOST = 1.5
MAX_QUERY_TERMS = 32
# One term's part of a message's score (Lucene's BM25), summed over the query's terms.
_SCORE = f"""sum(q.qtf * ln(1 + (stats.n - df.df + 0.5) / (df.df + 0.5)) * h.tf * {K1 + 1}
    / (h.tf + {K1} * (1 - {B} + {B} * t.terms / stats.avgdl)))"""


async def bm25(
    sql: SqlEngine, query: str, scope: Scope, limit: int, scoped_stats: bool = True
) -> list[dict[str, Any]]:
    """The top ``limit`` messages by BM25: ``{sessionId, record, score, matchedTerms, body}``.

    With ``scoped_stats`` and a filter, N, the average length and each term's document
    frequency are those of the messages searched, not of the whole store: a name that is
    everywhere in one conversation is common there, however rare it is elsewhere."""
    counts = Counter(terms(query)[:MAX_QUERY_TERMS])
    if not counts:
        return []
    names = {term_id(term): term for term in counts}
    ids = ", ".join(str(i) for i in names)  # integers we made: safe to inline, and pushed down
    values = ", ".join(f"({term_id(term)}, {n})" for term, n in counts.items())
    if scoped_stats and scope.condition != "TRUE":
        docs = f"SELECT m.doc FROM chat_messages m {scope.join} WHERE {scope.condition}"
        statement = f"""
            WITH q(term, qtf) AS (VALUES {values}),
            searched AS ({docs}),
            stats AS (SELECT count(*) AS n, greatest(avg(t.terms), 1) AS avgdl
                      FROM search_text t JOIN searched USING (doc) WHERE t.terms > 0),
            hits AS (SELECT doc, term, tf FROM search_terms JOIN searched USING (doc)
                     WHERE term IN ({ids})),
            df AS (SELECT term, count(*) AS df FROM hits GROUP BY term)
            SELECT h.doc, {_SCORE} AS score, list(h.term) AS matched
            FROM hits h JOIN q USING (term) JOIN df USING (term)
            JOIN search_text t ON t.doc = h.doc, stats
            GROUP BY h.doc ORDER BY score DESC LIMIT ?"""
    else:
        statement = f"""
            WITH q(term, qtf) AS (VALUES {values}),
            stats AS (SELECT count(*) AS n, greatest(avg(terms), 1) AS avgdl
                      FROM search_text WHERE terms > 0),
            hits AS (SELECT doc, term, tf FROM search_terms WHERE term IN ({ids})),
            df AS (SELECT term, count(*) AS df FROM hits GROUP BY term)
            SELECT h.doc, {_SCORE} AS score, list(h.term) AS matched
            FROM hits h JOIN q USING (term) JOIN df USING (term)
            JOIN search_text t ON t.doc = h.doc JOIN chat_messages m ON m.doc = h.doc
            {scope.join}, stats
            WHERE {scope.condition}
            GROUP BY h.doc ORDER BY score DESC LIMIT ?"""
    phrase = fold(query).strip()
    boost_phrase = len(counts) > 1 and bool(phrase)
    pool = limit * 3 if boost_phrase else limit
    ranked = (await sql.query(with_messages(statement), [*scope.params, pool])).tuples()
    hits = [
        hit(
            session_id,
            record,
            body,
            score * (PHRASE_BOOST if boost_phrase and phrase in folded else 1),
            matchedTerms=sorted(names[t] for t in matched),
        )
        for _, score, matched, session_id, record, folded, body in ranked
    ]
    hits.sort(key=lambda h: -h["score"])
    return hits[:limit]


async def substring(sql: SqlEngine, query: str, scope: Scope, limit: int) -> list[dict[str, Any]]:
    """The seed's ``searchMessages``: messages whose text contains ``query``, case (and
    accents) ignored, oldest first."""
    result = await sql.query(
        f"""SELECT m.session_id, m.body FROM chat_messages m
            JOIN search_text t ON t.doc = m.doc {scope.join}
            WHERE contains(t.folded, ?) AND {scope.condition}
            ORDER BY m.created_at, m.session_id, m.seq LIMIT ?""",
        [fold(query), *scope.params, limit],
    )
    return [{"sessionId": sid, "body": body} for sid, body in result.tuples()]

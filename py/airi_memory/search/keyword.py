"""Keyword retrieval: the seed's substring search (in DuckDB), and BM25 over our own
term index (``term_index``: postings held beside DuckDB's ``search_terms``, scored in the
worker), since DuckDB's fts extension cannot be loaded offline.

A message containing the whole query as a phrase (accents and case folded) gets its
score raised by ``PHRASE_BOOST``.
"""

from collections import Counter
from collections.abc import Sequence
from typing import Any

from ..models import message_text
from ..sql import SqlEngine
from ..storage.values import loads
from .filters import Scope
from .messages import hit, messages_of
from .term_index import TermIndex
from .text import fold, term_id, terms

PHRASE_BOOST = 1.5
MAX_QUERY_TERMS = 32


async def bm25(
    sql: SqlEngine,
    index: TermIndex,
    query: str,
    allow: Sequence[int] | None,
    limit: int,
    scoped_stats: bool = True,
) -> list[dict[str, Any]]:
    """The top ``limit`` messages by BM25: ``{sessionId, record, score, matchedTerms, body}``,
    among the docs in ``allow`` when it is given (a filter's, see ``filters``).

    With ``scoped_stats`` and a filter, N, the average length and each term's document
    frequency are those of the messages searched, not of the whole store: a name that is
    everywhere in one conversation is common there, however rare it is elsewhere."""
    counts = Counter(terms(query)[:MAX_QUERY_TERMS])
    if not counts:
        return []
    names = list(counts)
    phrase = fold(query).strip()
    boost_phrase = len(counts) > 1 and bool(phrase)
    pool = limit * 3 if boost_phrase else limit
    ids = [term_id(term) for term in names]
    ranked = index.top_k(ids, list(counts.values()), pool, allow, scoped_stats)
    found = await messages_of(sql, [doc for doc, _, _ in ranked])
    hits = []
    for doc, score, matched in ranked:
        if doc not in found:  # deleted while this search ran
            continue
        session_id, record, body = found[doc]
        message = loads(body)
        boost = PHRASE_BOOST if boost_phrase and phrase in fold(message_text(message)) else 1
        words = sorted(name for bit, name in enumerate(names) if matched >> bit & 1)
        hits.append(
            hit(session_id, record, body, score * boost, matchedTerms=words, message=message)
        )
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

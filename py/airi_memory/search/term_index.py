"""The keyword index's postings, held beside DuckDB, and BM25's top-k over them.

A port, one implementation per place: the browser's is web/worker/term-index.mjs (typed
arrays in the worker; ``browser.term_index``); ``PythonTermIndex`` is the same arithmetic
in Python, for CPython and as the reference. The index holds the only copy of the
postings; DuckDB's ``search_text`` holds each doc's length. The index is filled from the
rows the mirror inserts, told of the docs it deletes, saved in snapshots (``saved``) and
loaded back from them (``add_saved``).

BM25 as Lucene computes it: idf = ln(1 + (N - df + 0.5) / (df + 0.5)), k1 = 1.2,
b = 0.75; N and the average length count the docs with at least one term.
"""

import math
from collections.abc import Callable, Sequence
from typing import Any, Protocol

K1 = 1.2
B = 0.75


class TermIndex(Protocol):
    def add(
        self,
        docs: Sequence[int],
        lengths: Sequence[int],
        posting_docs: Sequence[int],
        terms: Sequence[int],
        tfs: Sequence[int],
    ) -> None:
        """New ``docs`` with their lengths (sum of their tfs), and one (doc, term, tf)
        per posting. A doc held already, or removed before, is ignored: docs are never
        reused (the mirror numbers a retried row afresh)."""

    def add_saved(self, terms_table: Any, text_table: Any) -> None:
        """Postings and lengths from a snapshot: ``search_terms`` as ``saved`` made it
        (or this place's SQL engine exported the table, when DuckDB held it) and
        ``search_text`` as the engine exported it (``SqlEngine.export_table``)."""

    def saved(self) -> Any:
        """Every live posting, ordered by term then doc, as ``add_saved`` reads them: in
        the format this place's ``SqlEngine.export_table`` makes, columns doc, term, tf."""

    def remove(self, docs: Sequence[int]) -> None: ...

    def clear(self) -> None: ...

    def __len__(self) -> int:
        """How many docs it holds."""

    def top_k(
        self,
        terms: Sequence[int],
        qtfs: Sequence[int],
        k: int,
        allow: Sequence[int] | None,
        scoped_stats: bool,
    ) -> list[tuple[int, float, int]]:
        """The best ``k`` (doc, score, matched) by BM25 for the query's distinct
        ``terms`` (``qtfs``: how often each occurs in it), best first, ties by the
        smaller doc; ``matched`` has bit j set when the doc holds ``terms[j]``. Only docs
        in ``allow`` when it is given; with ``scoped_stats`` N, the average length and
        each df are those of the allowed docs, else of every doc."""


# Makes an empty index.
TermIndexFactory = Callable[[], TermIndex]


def bm25_term(qtf: int, n: int, df: int, tf: int, length: int, average: float) -> float:
    """One query term's part of a doc's score."""
    idf = math.log(1 + (n - df + 0.5) / (df + 0.5))
    return qtf * idf * tf * (K1 + 1) / (tf + K1 * (1 - B + B * length / average))


class PythonTermIndex:
    """The index in plain Python dicts: the browser's arithmetic, at Python's speed."""

    def __init__(self) -> None:
        self.lengths: dict[int, int] = {}
        self.postings: dict[int, dict[int, int]] = {}  # term -> {doc: tf}
        self.terms_of: dict[int, list[int]] = {}  # doc -> its terms (removals)
        self.removed: set[int] = set()
        self.total_length = 0
        self.with_terms = 0  # docs of length > 0

    def add(
        self,
        docs: Sequence[int],
        lengths: Sequence[int],
        posting_docs: Sequence[int],
        terms: Sequence[int],
        tfs: Sequence[int],
    ) -> None:
        fresh = set()
        for doc, length in zip(docs, lengths, strict=True):
            if doc in self.lengths or doc in self.removed:
                continue
            fresh.add(doc)
            self.lengths[doc] = length
            self.total_length += length
            self.with_terms += length > 0
        for doc, term, tf in zip(posting_docs, terms, tfs, strict=True):
            if doc in fresh:
                self.postings.setdefault(term, {})[doc] = tf
                self.terms_of.setdefault(doc, []).append(term)

    def add_saved(self, terms_table: Any, text_table: Any) -> None:
        """The CPython engine's exports: pickled columns (``native.sql``)."""
        import pickle  # here: only CPython's engine pickles, and Pyodide pays ~50 ms to import it

        terms, texts = pickle.loads(terms_table), pickle.loads(text_table)  # our own bytes
        self.add(texts["doc"], texts["terms"], terms["doc"], terms["term"], terms["tf"])

    def saved(self) -> bytes:
        """Pickled columns, as the CPython engine exports a table."""
        import pickle  # as in add_saved

        rows = sorted(
            (term, doc, tf) for term, tfs in self.postings.items() for doc, tf in tfs.items()
        )
        terms, docs, tfs = (
            (list(column) for column in zip(*rows, strict=True)) if rows else ([], [], [])
        )
        return pickle.dumps(
            {"doc": docs, "term": terms, "tf": tfs}, protocol=pickle.HIGHEST_PROTOCOL
        )

    def remove(self, docs: Sequence[int]) -> None:
        self.removed.update(docs)
        for doc in docs:
            length = self.lengths.pop(doc, None)
            if length is None:
                continue
            self.total_length -= length
            self.with_terms -= length > 0
            for term in self.terms_of.pop(doc, []):
                postings = self.postings[term]
                del postings[doc]
                if not postings:
                    del self.postings[term]

    def clear(self) -> None:
        self.lengths.clear()
        self.postings.clear()
        self.terms_of.clear()
        self.removed.clear()
        self.total_length = self.with_terms = 0

    def __len__(self) -> int:
        return len(self.lengths)

    def top_k(
        self,
        terms: Sequence[int],
        qtfs: Sequence[int],
        k: int,
        allow: Sequence[int] | None,
        scoped_stats: bool,
    ) -> list[tuple[int, float, int]]:
        allowed = None if allow is None else set(allow) & self.lengths.keys()
        searched = allowed if allowed is not None and scoped_stats else None
        if searched is None:
            n, total = self.with_terms, self.total_length
        else:
            n = sum(self.lengths[doc] > 0 for doc in searched)
            total = sum(self.lengths[doc] for doc in searched)
        average = max(total / n, 1.0) if n else 1.0
        scores: dict[int, float] = {}
        matched: dict[int, int] = {}
        for bit, (term, qtf) in enumerate(zip(terms, qtfs, strict=True)):
            hits = {
                doc: tf
                for doc, tf in self.postings.get(term, {}).items()
                if searched is None or doc in searched
            }
            for doc, tf in hits.items():
                part = bm25_term(qtf, n, len(hits), tf, self.lengths[doc], average)
                scores[doc] = scores.get(doc, 0.0) + part
                matched[doc] = matched.get(doc, 0) | 1 << bit
        ranked = sorted(
            (doc for doc in scores if allowed is None or doc in allowed),
            key=lambda doc: (-scores[doc], doc),
        )
        return [(doc, scores[doc], matched[doc]) for doc in ranked[: max(k, 0)]]


def python_term_index() -> TermIndex:
    return PythonTermIndex()

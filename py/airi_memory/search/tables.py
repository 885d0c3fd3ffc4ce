"""Search's own tables in the DuckDB mirror, kept up to date by the session mirror, and
what is kept beside them: the term index BM25 ranks with (``term_index``) and the doc
scope filters are answered from (``doc_scope``).

``SearchTables`` is registered with the mirror from above (api.py): it analyses each
message's text once, when its row is built, and inserts its rows in the mirror's batches.
The mirror deletes them with their messages (they are keyed by ``doc``). The postings
live only in the term index, not in DuckDB: at 100,000 messages they are 1.4M rows, which
DuckDB held in memory a second time and imported at every start-up. Snapshots save the
text table and the index's postings (``search_terms``, in the format DuckDB exported that
table in when it had one), so a start-up from a snapshot analyses nothing again.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..sessions.derived import Inserted, insert_rows
from ..sql import SqlEngine
from .doc_scope import MESSAGES, DocScope
from .term_index import TermIndex
from .text import fold, term_counts, term_id

TEXT_TABLE = "search_text"
TERMS_SAVED = "search_terms"  # the term index's postings, as a snapshot names them
VECTORS_TABLE = "message_vectors"
# Which messages have a vector, and in which stored batch: filled by search.semantic (the
# vectors themselves are in its scan and in storage), which creates it afresh per model.
VECTORS_SCHEMA = f"CREATE OR REPLACE TABLE {VECTORS_TABLE} (doc INTEGER, batch INTEGER)"

SCHEMA = [
    # Per message: its number of index terms (BM25's document length) and its text, case
    # and accents folded (substring search, phrases, and what a vector was made from).
    f"CREATE OR REPLACE TABLE {TEXT_TABLE} (doc INTEGER, terms INTEGER, folded VARCHAR)",
    f"CREATE INDEX {TEXT_TABLE}_doc ON {TEXT_TABLE} (doc)",
    # Here too, so that deleting a message always deletes its vector's row.
    VECTORS_SCHEMA,
]


class SearchTables:
    """The keyword index, message vectors and the doc scope filters are answered from,
    as the mirror's ``DerivedTables``."""

    tables = (TEXT_TABLE, VECTORS_TABLE)
    # Vectors are stored by search.semantic, in their own records, per model.
    saved = (TEXT_TABLE, TERMS_SAVED)

    def __init__(self, index: TermIndex, doc_scope: DocScope) -> None:
        self.index = index
        self.doc_scope = doc_scope

    def schema(self) -> list[str]:
        return SCHEMA

    def cleared(self) -> None:
        self.index.clear()
        self.doc_scope.clear()

    async def save(self, sql: SqlEngine) -> list[Any]:
        return [await sql.export_table(TEXT_TABLE), self.index.saved()]

    def restore_beside(self, saved: Mapping[str, Any]) -> None:
        # Before the import: importing hands the bytes to DuckDB's worker, which may take
        # them (a detached buffer in the browser).
        self.index.add_saved(saved[TERMS_SAVED], saved[TEXT_TABLE])
        self.doc_scope.add_saved(saved[MESSAGES])

    async def restore(self, sql: SqlEngine, saved: Mapping[str, Any]) -> None:
        await sql.import_table(TEXT_TABLE, saved[TEXT_TABLE])

    def deleted(self, docs: Sequence[int]) -> None:
        self.index.remove(docs)
        self.doc_scope.remove(docs)

    def analyse(self, text: str) -> tuple[str, Counter[str]]:
        return fold(text), term_counts(text)

    async def insert(
        self, sql: SqlEngine, rows: Inserted, analyses: Sequence[tuple[str, Counter[str]]]
    ) -> None:
        self.doc_scope.add(rows.docs, rows.session_ids, rows.roles, rows.created_at)
        pairs = list(zip(rows.docs, analyses, strict=True))
        texts = [(doc, sum(counts.values()), folded) for doc, (folded, counts) in pairs]
        await insert_rows(sql, TEXT_TABLE, "doc, terms, folded", texts)
        terms = [
            (doc, term_id(term), tf) for doc, (_, counts) in pairs for term, tf in counts.items()
        ]
        self.index.add(
            [doc for doc, _, _ in texts],
            [length for _, length, _ in texts],
            [doc for doc, _, _ in terms],
            [term for _, term, _ in terms],
            [tf for _, _, tf in terms],
        )

"""Search's own tables in the DuckDB mirror, kept up to date by the session mirror, and
the term index BM25 ranks with (``term_index``), kept beside them.

``SearchTables`` is registered with the mirror from above (api.py): it analyses each
message's text once, when its row is built, and inserts its rows in the mirror's batches.
The mirror deletes them with their messages (they are keyed by ``doc``), and snapshots
save the text and term tables, so a start-up from a snapshot analyses nothing again: the
term index is loaded from those same saved tables.
"""

from collections import Counter
from collections.abc import Mapping, Sequence
from typing import Any

from ..sessions.derived import insert_rows
from ..sql import SqlEngine
from .term_index import TermIndex
from .text import fold, term_counts, term_id

TEXT_TABLE = "search_text"
TERMS_TABLE = "search_terms"
VECTORS_TABLE = "message_vectors"
# Which messages have a vector, and in which stored batch: filled by search.semantic (the
# vectors themselves are in its scan and in storage), which creates it afresh per model.
VECTORS_SCHEMA = f"CREATE OR REPLACE TABLE {VECTORS_TABLE} (doc INTEGER, batch INTEGER)"

SCHEMA = [
    # Per message: its number of index terms (BM25's document length) and its text, case
    # and accents folded (substring search, phrases, and what a vector was made from).
    f"CREATE OR REPLACE TABLE {TEXT_TABLE} (doc INTEGER, terms INTEGER, folded VARCHAR)",
    f"CREATE INDEX {TEXT_TABLE}_doc ON {TEXT_TABLE} (doc)",
    # The keyword index: one row per (message, term); terms as 64-bit hashes.
    f"CREATE OR REPLACE TABLE {TERMS_TABLE} (doc INTEGER, term BIGINT, tf INTEGER)",
    # Here too, so that deleting a message always deletes its vector's row.
    VECTORS_SCHEMA,
]


class SearchTables:
    """The keyword index and message vectors, as the mirror's ``DerivedTables``."""

    tables = (TEXT_TABLE, TERMS_TABLE, VECTORS_TABLE)
    # Vectors are stored by search.semantic, in their own records, per model.
    saved_tables = (TEXT_TABLE, TERMS_TABLE)

    def __init__(self, index: TermIndex) -> None:
        self.index = index

    def schema(self) -> list[str]:
        return SCHEMA

    def cleared(self) -> None:
        self.index.clear()

    def restored(self, saved: Mapping[str, Any]) -> None:
        self.index.add_saved(saved[TERMS_TABLE], saved[TEXT_TABLE])

    def deleted(self, docs: Sequence[int]) -> None:
        self.index.remove(docs)

    def analyse(self, text: str) -> tuple[str, Counter[str]]:
        return fold(text), term_counts(text)

    async def insert(
        self, sql: SqlEngine, docs: Sequence[int], analyses: Sequence[tuple[str, Counter[str]]]
    ) -> None:
        pairs = list(zip(docs, analyses, strict=True))
        texts = [(doc, sum(counts.values()), folded) for doc, (folded, counts) in pairs]
        await insert_rows(sql, TEXT_TABLE, "doc, terms, folded", texts)
        terms: list[Any] = [
            (doc, term_id(term), tf) for doc, (_, counts) in pairs for term, tf in counts.items()
        ]
        await insert_rows(sql, TERMS_TABLE, "doc, term, tf", terms)
        self.index.add(
            [doc for doc, _, _ in texts],
            [length for _, length, _ in texts],
            [doc for doc, _, _ in terms],
            [term for _, term, _ in terms],
            [tf for _, _, tf in terms],
        )

    async def before_snapshot(self, sql: SqlEngine) -> None:
        """Order the term index by term, so a lookup skips the blocks that cannot match
        (DuckDB's zone maps); a snapshot keeps the order."""
        await sql.execute(
            f"CREATE OR REPLACE TABLE {TERMS_TABLE} AS "
            f"SELECT * FROM {TERMS_TABLE} ORDER BY term, doc"
        )

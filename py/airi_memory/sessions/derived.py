"""The mirror's extension point: tables another package keeps about each message.

The mirror numbers every message row (``chat_messages.doc``). A package that indexes
messages (search) keeps its own tables keyed by that number and is registered from above
(api.py), so sessions imports nothing of it. The mirror hands it each row's text when the
row is built (the analysis then rides with the row), tells it of rows inserted in the
same batches as its own columnar inserts (with the columns a filter reads), deletes its
rows in the same statements that delete their messages (telling it which), and a
snapshot saves and restores what it names, so a start-up from a snapshot does not
analyse every message again. What it keeps beside its tables (search's term index and
doc scope) follows the same events, and may be saved in a snapshot in place of a table.
"""

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from ..sql import SqlEngine

SMALL_INSERT = 4  # up to this many rows, single-row inserts beat a columnar batch


@dataclass(frozen=True)
class Inserted:
    """Rows just inserted in ``chat_messages``, by column: their docs and what a search
    filter reads of them."""

    docs: Sequence[int]
    session_ids: Sequence[str]
    roles: Sequence[str]
    created_at: Sequence[int]


class DerivedTables(Protocol):
    """Tables keyed by ``doc`` that follow ``chat_messages``."""

    # Every table it keeps, keyed by ``doc``: a message's rows there go with the message.
    tables: tuple[str, ...]
    # What a snapshot saves for it (in this order) and a start-up from it restores: its
    # tables' names, or names of what it keeps beside them.
    saved: tuple[str, ...]

    def schema(self) -> list[str]:
        """Statements creating its tables afresh (run whenever the mirror is created)."""

    def cleared(self) -> None:
        """Its tables are being created afresh: anything it holds beside them goes."""

    def restore_beside(self, saved: Mapping[str, Any]) -> None:
        """What it keeps beside its tables, from its part of a snapshot (by name, as
        ``save`` made it, and the snapshot's ``chat_messages``), instead of rows through
        ``insert``. No SQL: at start-up this runs while DuckDB is still starting."""

    async def save(self, sql: SqlEngine) -> list[Any]:
        """The bytes of each of ``saved``, in order, for a snapshot (every buffered row is
        in)."""

    async def restore(self, sql: SqlEngine, saved: Mapping[str, Any]) -> None:
        """Its tables (created empty) from its part of a snapshot, after
        ``restore_beside`` had the same part."""

    def deleted(self, docs: Sequence[int]) -> None:
        """These messages are about to be deleted, with its rows (in the statements that
        follow): anything it holds beside its tables forgets them now."""

    def analyse(self, text: str) -> Any:
        """What it needs from a message's text, computed once when its row is built."""

    async def insert(self, sql: SqlEngine, rows: Inserted, analyses: Sequence[Any]) -> None:
        """Rows for messages just inserted (one batch, as the mirror inserted them)."""


def by_column(names: str, rows: Iterable[Sequence[Any]]) -> dict[str, list[Any]]:
    """Rows (in the order of ``names``, comma-separated) as columns."""
    keys = [name.strip() for name in names.split(",")]
    columns: dict[str, list[Any]] = {key: [] for key in keys}
    for row in rows:
        for key, value in zip(keys, row, strict=True):
            columns[key].append(value)
    return columns


async def insert_rows(sql: SqlEngine, table: str, columns: str, rows: list[Sequence[Any]]) -> None:
    """Append ``rows`` to ``table``: by column when there are more than a few."""
    if not rows:
        return
    if len(rows) > SMALL_INSERT:
        await sql.insert_columns(table, by_column(columns, rows))
        return
    marks = ", ".join("?" for _ in columns.split(","))
    for row in rows:
        await sql.execute(f"INSERT INTO {table} ({columns}) VALUES ({marks})", list(row))

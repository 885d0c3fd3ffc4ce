"""The SQL port: one small interface over DuckDB, the same SQL in the browser and on CPython.

Parameters are always bound, never formatted into the text. Results come back by
column (``QueryResult``), and bulk inserts go in by column, because both sides of the
port move data fastest that way (Arrow in DuckDB-WASM, lists in the duckdb package).
"""

import asyncio
import json
import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValueError, ReadOnlyQueryError, SqlError

Columns = Mapping[str, Sequence[Any]]

_IDENTIFIER = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


@dataclass(frozen=True)
class QueryResult:
    """A result held by column: ``data[name][row]``."""

    columns: list[str]
    data: dict[str, list[Any]]

    def __len__(self) -> int:
        return len(self.data[self.columns[0]]) if self.columns else 0

    def rows(self) -> list[dict[str, Any]]:
        return [dict(zip(self.columns, values, strict=True)) for values in self.tuples()]

    def tuples(self) -> list[tuple[Any, ...]]:
        return list(zip(*(self.data[name] for name in self.columns), strict=True))

    def column(self, name: str) -> list[Any]:
        return self.data[name]

    def scalar(self) -> Any:
        return self.data[self.columns[0]][0] if len(self) else None


class SqlEngine(ABC):
    def __init__(self) -> None:
        self._read_only_turn = asyncio.Lock()  # one diagnostics transaction at a time
        self._table_functions: frozenset[str] | None = None

    @abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement for its effect."""

    @abstractmethod
    async def query(self, sql: str, params: Sequence[Any] = ()) -> QueryResult: ...

    @abstractmethod
    async def insert_columns(self, table: str, columns: Columns) -> int:
        """Append rows given by column to an existing table; returns the row count."""

    @abstractmethod
    async def version(self) -> str: ...

    @abstractmethod
    async def export_table(self, table: str) -> bytes:
        """A table's rows as opaque bytes for ``import_table`` of the same engine kind
        (bytes, or the host's own bytes object: pass it on, do not look inside)."""

    @abstractmethod
    async def import_table(self, table: str, data: bytes) -> int:
        """Append rows from ``export_table`` bytes to an existing table; returns the count."""

    async def close(self) -> None:
        """Release the connection; engines without one need not override."""

    @abstractmethod
    async def begin_read_only(self) -> None:
        """Open a read-only transaction on a connection kept for diagnostics only, so the
        core's own statements on the main connection never run inside it."""

    @abstractmethod
    async def query_read_only(self, sql: str, params: Sequence[Any]) -> QueryResult:
        """Prepare and run ``sql`` on the diagnostics connection; DuckDB refuses to prepare
        more than one statement (``SqlError`` with its message)."""

    @abstractmethod
    async def end_read_only(self) -> None:
        """Roll the diagnostics transaction back."""

    async def read_only_query(self, sql: str, params: Sequence[Any] = ()) -> QueryResult:
        """A diagnostic query from outside, judged by DuckDB rather than by reading the text:
        its parser must take it as one SELECT-like subquery, its plan may call only table
        functions that read, and it runs in a read-only transaction that is rolled back.
        Files and URLs are out of reach because each engine opens DuckDB with
        ``enable_external_access`` off."""
        subquery = as_subquery(sql)
        async with self._read_only_turn:
            await self.begin_read_only()
            try:
                plan = await self.query_read_only(f"EXPLAIN (FORMAT json) {subquery}", params)
                check_table_functions(plan, await self._known_table_functions())
                return await self.query_read_only(subquery, params)
            except SqlError as error:
                raise refusal(error, sql) from None
            finally:
                await self.end_read_only()

    async def _known_table_functions(self) -> frozenset[str]:
        """DuckDB's table functions; fixed while it runs (extensions never load)."""
        if self._table_functions is None:
            found = await self.query_read_only(
                "SELECT DISTINCT function_name FROM duckdb_functions() "
                "WHERE function_type = 'table'",
                (),
            )
            self._table_functions = frozenset(found.column("function_name"))
        return self._table_functions


def check_identifier(name: str) -> str:
    if not isinstance(name, str) or not _IDENTIFIER.match(name):
        raise InvalidValueError(f"invalid SQL identifier {name!r}")
    return name


def check_columns(table: str, columns: Columns) -> int:
    """Validate names and equal lengths before anything is sent; returns the row count."""
    check_identifier(table)
    if not columns:
        raise InvalidValueError(f"insert into {table!r} names no columns")
    lengths = {name: len(values) for name, values in columns.items()}
    for name in lengths:
        check_identifier(name)
    if len(set(lengths.values())) > 1:
        raise InvalidValueError(f"columns for {table!r} differ in length: {lengths}")
    return next(iter(lengths.values()))


# Table functions a diagnostic query may call. The rest are refused: file and URL readers
# (blocked by DuckDB too), secrets, and those that act when run: checkpoint,
# force_checkpoint, enable_logging, disable_logging, truncate_duckdb_logs, arrow_scan.
_READING_TABLE_FUNCTIONS = frozenset({
    "seq_scan", "range", "generate_series", "unnest", "repeat", "repeat_row", "summary",
    "test_all_types", "test_vector_types", "icu_calendar_names", "pg_timezone_names",
    "json_each", "json_tree", "duckdb_approx_database_count", "duckdb_columns",
    "duckdb_connection_count", "duckdb_constraints", "duckdb_databases",
    "duckdb_dependencies", "duckdb_extensions", "duckdb_external_file_cache",
    "duckdb_functions", "duckdb_indexes", "duckdb_keywords", "duckdb_log_contexts",
    "duckdb_logs", "duckdb_memory", "duckdb_optimizers", "duckdb_prepared_statements",
    "duckdb_schemas", "duckdb_sequences", "duckdb_settings", "duckdb_table_sample",
    "duckdb_tables", "duckdb_temporary_files", "duckdb_types", "duckdb_variables",
    "duckdb_views", "pragma_collations", "pragma_database_size", "pragma_metadata_info",
    "pragma_platform", "pragma_show", "pragma_storage_info", "pragma_table_info",
    "pragma_user_agent", "pragma_version",
})  # fmt: skip

# Table functions that run SQL given as text. DuckDB binds that text again when the query
# runs, and the text may differ from what EXPLAIN saw (random(), current_query()), so the
# plan check cannot vouch for them. The name is refused wherever it appears: DuckDB
# spells an identifier only bare or in double quotes, never escaped.
_DYNAMIC_SQL = re.compile(
    r"(?<![\w$])(query_table|query|json_execute_serialized_sql)(?![\w$])", re.IGNORECASE
)

_SELECT_LIKE = "SELECT, WITH, FROM, VALUES, TABLE, DESCRIBE, SHOW or SUMMARIZE"


def as_subquery(sql: str) -> str:
    """The query wrapped so that DuckDB's parser accepts nothing but a SELECT-like statement;
    the newline before ``)`` ends a trailing ``--`` comment."""
    if not isinstance(sql, str) or not sql.strip():
        raise ReadOnlyQueryError("query() needs a non-empty SQL string")
    dynamic = _DYNAMIC_SQL.search(sql)
    if dynamic:
        raise ReadOnlyQueryError(
            f"query() may not use {dynamic.group(1).lower()}(): it runs SQL given as text, "
            "which DuckDB can only judge when it runs; write the SELECT itself (and pass "
            "text that contains the word as a $1 parameter)"
        )
    body = sql.strip().removesuffix(";").rstrip()
    return f"SELECT * FROM (\n{body}\n)"


def check_table_functions(plan: QueryResult, table_functions: frozenset[str]) -> None:
    """Refuse a plan (``EXPLAIN (FORMAT json)``) that calls a table function not known to
    only read the database; operators show a table function by name, or under Function."""
    used: set[str] = set()
    nodes = [node for text in plan.column("explain_value") for node in json.loads(text)]
    while nodes:
        node = nodes.pop()
        used.add(node["name"].strip().lower())
        extra = node.get("extra_info")
        if isinstance(extra, dict) and isinstance(extra.get("Function"), str):
            used.add(extra["Function"].strip().lower())
        nodes.extend(node.get("children", []))
    refused = sorted((used & table_functions) - _READING_TABLE_FUNCTIONS)
    if refused:
        raise ReadOnlyQueryError(
            f"query() only reads the database; it may not call {', '.join(refused)}()"
        )


def refusal(error: SqlError, sql: str) -> Exception:
    """DuckDB's refusal of a diagnostic query as a ``ReadOnlyQueryError`` naming the reason;
    any other error (a missing table, a bad cast) stays the ``SqlError`` it is."""
    message = str(error)
    shown = sql if len(sql) <= 80 else f"{sql[:77]}..."
    if message.startswith("Parser Error") or "multiple statements" in message:
        reason = f"query() takes one {_SELECT_LIKE} statement"
    elif message.startswith("Permission Error"):
        reason = "query() may not read files or URLs"
    elif message.startswith("TransactionContext Error"):
        reason = "query() is read-only"
    else:
        return error
    return ReadOnlyQueryError(f"{reason}; DuckDB refused {shown!r}: {message}")

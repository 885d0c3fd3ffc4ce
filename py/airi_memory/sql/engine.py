"""The SQL port: one small interface over DuckDB, the same SQL in the browser and on CPython.

Parameters are always bound, never formatted into the text. Results come back by
column (``QueryResult``), and bulk inserts go in by column, because both sides of the
port move data fastest that way (Arrow in DuckDB-WASM, lists in the duckdb package).
"""

import re
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..errors import InvalidValueError, ReadOnlyQueryError

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
    @abstractmethod
    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        """Run one statement for its effect."""

    @abstractmethod
    async def query(self, sql: str, params: Sequence[Any] = ()) -> QueryResult: ...

    @abstractmethod
    async def insert_columns(self, table: str, columns: Columns) -> int:
        """Append rows given by column to an existing table; returns the row count."""

    @abstractmethod
    async def insert_vectors(
        self, table: str, keys: Columns, codes: bytes, scales: bytes, dimensions: int
    ) -> int:
        """Rows of ``keys`` (text columns) plus ``vec`` TINYINT[dimensions] from ``codes``
        (int8, row after row) and ``scale`` FLOAT from ``scales`` (float32, one per row)."""

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

    async def read_only_query(self, sql: str, params: Sequence[Any] = ()) -> QueryResult:
        """A diagnostic query from outside: refused unless it only reads."""
        check_read_only(sql)
        return await self.query(sql, params)


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


# Read-only check for diagnostics: strip literals and comments, then look at the words.
_LITERALS_AND_COMMENTS = re.compile(r"'(?:[^']|'')*'|\"(?:[^\"]|\"\")*\"|--[^\n]*|/\*.*?\*/", re.S)
_READING_STARTS = {"select", "with", "from", "describe", "show", "summarize", "explain", "values"}
_WRITING_WORDS = {
    "insert", "update", "delete", "create", "drop", "alter", "copy", "attach", "detach",
    "install", "load", "set", "reset", "pragma", "call", "checkpoint", "vacuum", "export",
    "import", "begin", "commit", "rollback", "truncate", "merge", "use",
}  # fmt: skip


def check_read_only(sql: str) -> None:
    if not isinstance(sql, str) or not sql.strip():
        raise ReadOnlyQueryError("query() needs a non-empty SQL string")
    bare = _LITERALS_AND_COMMENTS.sub(" ", sql).strip().rstrip(";").strip()
    if ";" in bare:
        raise ReadOnlyQueryError("query() runs one statement; found ';' inside the SQL")
    words = re.findall(r"[A-Za-z_]+", bare.lower())
    if not words or words[0] not in _READING_STARTS:
        first = words[0].upper() if words else bare[:20]
        raise ReadOnlyQueryError(f"query() is read-only; a statement starting with {first} is not")
    writing = next((w for w in words if w in _WRITING_WORDS), None)
    if writing:
        raise ReadOnlyQueryError(f"query() is read-only; found {writing.upper()} in the SQL")

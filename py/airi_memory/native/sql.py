"""The SQL port on CPython: the ``duckdb`` package, the same DuckDB 1.4 as DuckDB-WASM."""

import pickle
from collections.abc import Sequence
from typing import Any

import duckdb

from ..errors import SqlError
from ..sql.engine import Columns, QueryResult, SqlEngine, check_columns, check_identifier


class NativeDuckDb(SqlEngine):
    def __init__(self, path: str = ":memory:") -> None:
        super().__init__()
        self._connection = duckdb.connect(
            path,
            config={
                "autoinstall_known_extensions": False,
                "autoload_known_extensions": False,
                # No files or URLs from SQL (read_csv, FROM 'x.csv', COPY ...): the core
                # never needs them, and diagnostics must not reach them.
                "enable_external_access": False,
            },
        )
        self._diagnostics = self._connection.cursor()  # its own connection to the database

    def _run(
        self,
        sql: str | duckdb.Statement,
        params: Sequence[Any],
        on: duckdb.DuckDBPyConnection | None = None,
    ) -> duckdb.DuckDBPyConnection:
        try:
            return (on or self._connection).execute(sql, list(params))
        except duckdb.Error as error:
            raise SqlError(str(error)) from None

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        self._run(sql, params)

    async def query(self, sql: str, params: Sequence[Any] = ()) -> QueryResult:
        return _result(self._run(sql, params))

    async def begin_read_only(self) -> None:
        self._run("BEGIN TRANSACTION READ ONLY", (), on=self._diagnostics)

    async def query_read_only(self, sql: str, params: Sequence[Any]) -> QueryResult:
        # The duckdb package runs every statement of a text given no parameters, so the
        # statements are counted here, by DuckDB's parser, as DuckDB-WASM's prepare does.
        try:
            statements = self._diagnostics.extract_statements(sql)
        except duckdb.Error as error:
            raise SqlError(str(error)) from None
        if len(statements) != 1:
            raise SqlError("Invalid Input Error: Cannot prepare multiple statements at once!")
        return _result(self._run(statements[0], params, on=self._diagnostics))

    async def end_read_only(self) -> None:
        self._run("ROLLBACK", (), on=self._diagnostics)

    async def insert_columns(self, table: str, columns: Columns) -> int:
        count = check_columns(table, columns)
        if count == 0:
            return 0
        names = list(columns)
        unnests = ", ".join(f"unnest(${i + 1})" for i in range(len(names)))
        self._run(
            f"INSERT INTO {table} ({', '.join(names)}) SELECT {unnests}",
            [list(columns[name]) for name in names],
        )
        return count

    async def export_table(self, table: str) -> bytes:
        """Pickled columns: the CPython engine's table export (Arrow IPC needs pyarrow)."""
        result = await self.query(f"SELECT * FROM {check_identifier(table)}")
        return pickle.dumps(result.data, protocol=pickle.HIGHEST_PROTOCOL)

    async def import_table(self, table: str, data: bytes) -> int:
        return await self.insert_columns(table, pickle.loads(data))  # our own bytes only

    async def version(self) -> str:
        return duckdb.__version__

    async def close(self) -> None:
        self._diagnostics.close()
        self._connection.close()


def _result(cursor: duckdb.DuckDBPyConnection) -> QueryResult:
    columns = [d[0] for d in cursor.description]
    rows = cursor.fetchall()
    data = {name: [row[i] for row in rows] for i, name in enumerate(columns)}
    return QueryResult(columns, data)

"""The SQL port in the browser: DuckDB-WASM through the JS host (web/worker/duckdb-engine.mjs).

Columns cross the bridge whole: numbers as typed arrays (one copy, no per-row proxies),
strings as one JS array. Results come back the same way.
"""

from array import array
from collections.abc import Sequence
from itertools import accumulate
from typing import Any

from pyodide.ffi import JsException, JsProxy, to_js

from ..errors import SqlEngineStoppedError, SqlError
from ..sql.engine import Columns, QueryResult, SqlEngine, check_columns, check_identifier
from .ffi import to_javascript

_EXACT_DOUBLE = 2**53


def _column_to_js(values: Sequence[Any]) -> Any:
    """Numbers as one typed array; text as Arrow's own layout (UTF-8 bytes + offsets).
    An ``array`` goes as the typed array it is, unchecked: its type says what it holds."""
    if isinstance(values, array):
        return to_js(values)
    if values and type(values[0]) is str and (ascii_text := _ascii_column(values)) is not None:
        return ascii_text
    if values and all(type(v) is int for v in values):
        wide = any(abs(v) > _EXACT_DOUBLE for v in values)
        return to_js(array("q" if wide else "d", values))
    if values and all(type(v) in (int, float) for v in values):
        return to_js(array("d", values))
    if all(v is None or type(v) is str for v in values):
        return _utf8_column(values)
    return to_js(list(values))


def _ascii_column(values: Sequence[Any]) -> Any:
    """Text that is all strings and all ASCII (ids, record names, hashes), laid out in C
    loops instead of a Python one per row (160 ms of 100,000 stored vectors' keys); None
    for anything else."""
    try:
        joined = "".join(values)  # TypeError if any value is not a string
    except TypeError:
        return None
    if not joined.isascii():
        return None
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, values)))
    column = {"utf8": to_js(joined.encode()), "offsets": to_js(offsets), "validity": None}
    return to_javascript(column)


def _utf8_column(values: Sequence[str | None]) -> Any:
    """Three buffers instead of one JS string per row: the bridge copies bytes, not objects."""
    encoded = [b"" if v is None else v.encode() for v in values]
    offsets = array("i", [0])
    offsets.extend(accumulate(map(len, encoded)))
    validity = None
    if None in values:
        bits = bytearray((len(values) + 7) // 8)
        for index, value in enumerate(values):
            if value is not None:
                bits[index >> 3] |= 1 << (index & 7)
        validity = to_js(bytes(bits))
    column = {"utf8": to_js(b"".join(encoded)), "offsets": to_js(offsets), "validity": validity}
    return to_javascript(column)


def _column_to_python(column: Any) -> list[Any]:
    if isinstance(column, JsProxy):
        column = column.to_py()
    if isinstance(column, memoryview):
        return column.tolist()
    return list(column)


def _result_to_python(result: Any) -> QueryResult:
    names = [str(name) for name in result.columns]
    data = {
        name: _column_to_python(column) for name, column in zip(names, result.data, strict=True)
    }
    return QueryResult(names, data)


class WasmDuckDb(SqlEngine):
    def __init__(self, sql_host: Any) -> None:
        super().__init__()
        self._host = sql_host

    async def _call(self, method: str, *args: Any) -> Any:
        try:
            return await getattr(self._host, method)(*args)
        except JsException as error:
            message = str(error.message) if hasattr(error, "message") else str(error)
            # The host's own error when DuckDB's worker died or a call outlived its bound.
            if getattr(error, "name", "") == "SqlEngineStoppedError":
                raise SqlEngineStoppedError(message) from None
            raise SqlError(message) from None

    async def execute(self, sql: str, params: Sequence[Any] = ()) -> None:
        await self._call("execute", sql, to_js(list(params)))

    async def query(self, sql: str, params: Sequence[Any] = ()) -> QueryResult:
        return _result_to_python(await self._call("query", sql, to_js(list(params))))

    async def begin_read_only(self) -> None:
        await self._call("beginReadOnly")

    async def query_read_only(self, sql: str, params: Sequence[Any]) -> QueryResult:
        return _result_to_python(await self._call("queryReadOnly", sql, to_js(list(params))))

    async def end_read_only(self) -> None:
        await self._call("endReadOnly")

    async def insert_columns(self, table: str, columns: Columns) -> int:
        count = check_columns(table, columns)
        if count == 0:
            return 0
        names = list(columns)
        js_columns = to_js([_column_to_js(columns[name]) for name in names])
        await self._call("insertColumns", table, to_js(names), js_columns)
        return count

    async def export_table(self, table: str) -> Any:
        """Arrow IPC stream bytes, made and read back by DuckDB-WASM's own Arrow; left in
        JS (a Uint8Array) for storage to keep, never copied into Python's heap."""
        return await self._call("exportArrow", f"SELECT * FROM {check_identifier(table)}")

    async def import_table(self, table: str, data: bytes) -> int:
        data = data if isinstance(data, JsProxy) else to_js(data)
        return int(await self._call("importArrow", check_identifier(table), data))

    async def version(self) -> str:
        return str(await self._call("version"))

    async def close(self) -> None:
        await self._host.close()

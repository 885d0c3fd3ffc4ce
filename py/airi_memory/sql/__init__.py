"""SQL port: DuckDB through one interface (DuckDB-WASM in the browser, duckdb on CPython)."""

from .engine import QueryResult, SqlEngine

__all__ = ["QueryResult", "SqlEngine"]

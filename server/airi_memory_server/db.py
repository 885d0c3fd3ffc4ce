"""Engines for the two databases: a SYNC_DB value (a file path or a URL) to an async engine."""

from pathlib import Path
from typing import Any

from sqlalchemy import event
from sqlalchemy.engine import make_url
from sqlalchemy.ext.asyncio import AsyncEngine, create_async_engine

# A connection that will write asks for SQLite's write lock when it begins, so two
# writers queue on busy_timeout instead of one failing to upgrade a read lock.
SQLITE_IMMEDIATE = "airi_sqlite_immediate"
SQLITE_BUSY_TIMEOUT_MS = 30_000


def database_url(target: str) -> str:
    """The SQLAlchemy async URL for SYNC_DB: a PostgreSQL URL, a SQLite URL, or a file path."""
    if target.startswith(("postgresql://", "postgres://")):
        return "postgresql+asyncpg://" + target.split("://", 1)[1]
    if target.startswith(("postgresql+asyncpg://", "sqlite+aiosqlite://")):
        return target
    if target.startswith("sqlite://"):
        return "sqlite+aiosqlite://" + target.split("://", 1)[1]
    path = Path(target).expanduser().resolve()
    path.parent.mkdir(parents=True, exist_ok=True)
    return f"sqlite+aiosqlite:///{path}"


def is_postgresql(engine: AsyncEngine) -> bool:
    return engine.dialect.name == "postgresql"


def create_engine(target: str, pool_size: int = 10) -> AsyncEngine:
    """An engine for SYNC_DB; on SQLite with WAL, foreign keys, and explicit transactions."""
    url = make_url(database_url(target))
    if url.get_backend_name() == "postgresql":
        return create_async_engine(url, pool_size=pool_size, max_overflow=pool_size)
    engine = create_async_engine(url)
    _configure_sqlite(engine)
    return engine


def _configure_sqlite(engine: AsyncEngine) -> None:
    """SQLAlchemy's recipe: the driver's own BEGIN handling off, ours on (DDL included)."""

    @event.listens_for(engine.sync_engine, "connect")
    def on_connect(dbapi_connection: Any, _record: Any) -> None:
        dbapi_connection.isolation_level = None
        cursor = dbapi_connection.cursor()
        cursor.execute("PRAGMA journal_mode=WAL")
        cursor.execute(f"PRAGMA busy_timeout={SQLITE_BUSY_TIMEOUT_MS}")
        cursor.execute("PRAGMA foreign_keys=ON")
        cursor.close()

    @event.listens_for(engine.sync_engine, "begin")
    def on_begin(connection: Any) -> None:
        immediate = connection.get_execution_options().get(SQLITE_IMMEDIATE, False)
        connection.exec_driver_sql("BEGIN IMMEDIATE" if immediate else "BEGIN")

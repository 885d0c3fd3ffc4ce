"""Alembic migrations run from code: `migrate` and `serve` bring the schema to head.

Several server processes may start together over one PostgreSQL: a transaction-scoped
advisory lock lets one migrate while the others wait, then find nothing to do. On
SQLite the migrating transaction holds the write lock (BEGIN IMMEDIATE) for the same.
"""

from pathlib import Path

from alembic import command
from alembic.config import Config
from alembic.runtime.migration import MigrationContext
from alembic.script import ScriptDirectory
from sqlalchemy import Connection, text
from sqlalchemy.ext.asyncio import AsyncEngine

from airi_memory_server.db import SQLITE_IMMEDIATE, is_postgresql

MIGRATIONS = Path(__file__).parent / "migrations"
# Any fixed number: the key of the advisory lock that serialises migrating processes.
MIGRATION_LOCK_KEY = 0x41495249_5359


def alembic_config() -> Config:
    config = Config()
    config.set_main_option("script_location", str(MIGRATIONS))
    return config


def head_revision() -> str:
    head = ScriptDirectory.from_config(alembic_config()).get_current_head()
    assert head is not None
    return head


async def upgrade(engine: AsyncEngine) -> None:
    """Bring the database to the newest revision, one process at a time."""
    async with engine.connect() as connection:
        connection = await connection.execution_options(**{SQLITE_IMMEDIATE: True})
        # Locked before Alembic starts: its module-level context is one per process.
        if is_postgresql(engine):
            await connection.execute(
                text("SELECT pg_advisory_xact_lock(:key)"), {"key": MIGRATION_LOCK_KEY}
            )
        else:
            await connection.execute(text("SELECT 1"))  # BEGIN IMMEDIATE: the write lock
        await connection.run_sync(_upgrade_on)
        await connection.commit()


def _upgrade_on(connection: Connection) -> None:
    config = alembic_config()
    config.attributes["connection"] = connection
    command.upgrade(config, "head")


async def current_revision(engine: AsyncEngine) -> str | None:
    """The revision the database is at; None for an empty one."""
    async with engine.connect() as connection:
        return await connection.run_sync(
            lambda sync: MigrationContext.configure(sync).get_current_revision()
        )

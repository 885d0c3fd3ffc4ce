"""Migrations, row-level security, the CLI, the reference merge and the clock."""

import asyncio
import itertools
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from alembic.autogenerate import compare_metadata
from alembic.runtime.migration import MigrationContext
from operations import session_op
from sqlalchemy import text

from airi_memory.sync import hlc
from airi_memory_server import migrate
from airi_memory_server.db import create_engine
from airi_memory_server.merge import merge
from airi_memory_server.protocol import SyncOperation
from airi_memory_server.schema import metadata
from airi_memory_server.store import SqlSyncStore
from postgres_cluster import PostgresCluster
from sync_harness import EmptyDatabases

ROOT = Path(__file__).parents[2]
EXAMPLES = json.loads((ROOT / "docs" / "sync-conflict-examples.json").read_text())["examples"]


async def test_migrations_build_the_schema_from_empty_even_when_run_at_once(
    empty_databases: EmptyDatabases,
) -> None:
    target = empty_databases.new()
    engines = [create_engine(target) for _ in range(3)]
    try:
        assert await migrate.current_revision(engines[0]) is None
        # Three processes starting together: one migrates, the others find it done.
        await asyncio.gather(*(migrate.upgrade(engine) for engine in engines))
        assert await migrate.current_revision(engines[0]) == migrate.head_revision() == "0002"
        async with engines[0].connect() as connection:
            differences = await connection.run_sync(
                lambda sync: compare_metadata(MigrationContext.configure(sync), metadata)
            )
        assert differences == []
    finally:
        for engine in engines:
            await engine.dispose()


async def test_the_app_refuses_to_start_on_an_unmigrated_database(
    empty_databases: EmptyDatabases,
) -> None:
    from airi_memory_server.app import Settings, create_app

    app = create_app(Settings(db=empty_databases.new()))
    with pytest.raises(RuntimeError, match="schema is at None, not 0002"):
        async with app.router.lifespan_context(app):
            pass


async def test_row_level_security_hides_rows_of_users_not_named(postgres: PostgresCluster) -> None:
    """PostgreSQL's second guard: a query that forgets the user filter still sees only the
    rows of the user its transaction names, and none when it names no one."""
    target = postgres.create_database("rls_check")
    engine = create_engine(target)
    try:
        await migrate.upgrade(engine)
        store = SqlSyncStore(engine)
        alice, bob = await store.issue_key("alice"), await store.issue_key("bob")
        for key in (alice, bob):
            await store.push(key.user_id, [SyncOperation.model_validate(session_op("o1"))])
        async with engine.connect() as connection:
            unscoped = await connection.scalar(text("SELECT count(*) FROM operations"))
            await connection.execute(
                text("SELECT set_config('airi_sync.user_id', :u, true)"), {"u": str(bob.user_id)}
            )
            scoped = (await connection.execute(text("SELECT user_id FROM operations"))).all()
            await connection.rollback()
        assert unscoped == 0
        assert scoped == [(bob.user_id,)]
    finally:
        await engine.dispose()


def test_create_user_prints_the_new_key_last(tmp_path: Path) -> None:
    database = tmp_path / "cli.sqlite3"
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "py")]),
        "SYNC_DB": str(database),
    }

    def create(name: str) -> list[str]:
        done = subprocess.run(
            [sys.executable, "-m", "airi_memory_server", "create-user", name],
            env=environment, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip().splitlines()

    first, again = create("alice"), create("alice")
    assert first[0].startswith("created user 'alice'")
    assert again[0].startswith("new key for existing user 'alice'")
    assert first[-1] != again[-1]

    async def owners() -> list[int | None]:
        store = SqlSyncStore(create_engine(str(database)))
        try:
            return [await store.user_for_key(key) for key in (first[-1], again[-1], "amk_x_y")]
        finally:
            await store.close()

    assert asyncio.run(owners()) == [1, 1, None]


@pytest.mark.parametrize("example", EXAMPLES, ids=[e["name"] for e in EXAMPLES])
def test_reference_merge_gives_the_expected_state_in_any_order(example: dict[str, Any]) -> None:
    operations = example["operations"]
    for operation in operations:
        SyncOperation.model_validate(operation)  # the examples are valid wire operations
    for order in itertools.permutations(operations):
        assert merge(order) == example["expected"]
    assert merge(operations + operations[::-1]) == example["expected"]


def test_clock_ticks_past_its_last_stamp_and_past_what_it_received() -> None:
    first = hlc.tick(None, 1000, "devA")
    assert first == hlc.Stamp(1000, 0, "devA")
    assert hlc.tick(first, 999, "devA") == hlc.Stamp(1000, 1, "devA")  # the clock went back
    assert hlc.tick(first, 1001, "devA") == hlc.Stamp(1001, 0, "devA")
    remote = hlc.Stamp(5000, 7, "devB")
    after = hlc.receive(first, remote, 1002, "devA")
    assert after == hlc.Stamp(5000, 8, "devA") and after > remote
    assert hlc.tick(hlc.Stamp(1, hlc.MAX_COUNTER, "n"), 1, "n") == hlc.Stamp(2, 0, "n")
    assert hlc.parse(after.encode()) == after
    assert after.encode() == "000000000005000-00008-devA"
    with pytest.raises(ValueError):
        hlc.parse("5000-8-devA")

"""Fixtures for the sync server's tests: every test that takes `server` runs twice, on
SQLite and on a real PostgreSQL (a throwaway cluster started once per test run)."""

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest

from postgres_cluster import PostgresCluster
from sync_harness import EmptyDatabases, Server, migrate_database, start_server

ENGINES = ["sqlite", "postgresql"]


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresCluster]:
    cluster = PostgresCluster()
    cluster.start()
    try:
        yield cluster
    finally:
        cluster.stop()


@pytest.fixture(params=ENGINES)
def empty_databases(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> EmptyDatabases:
    return EmptyDatabases(request.param, request, tmp_path_factory.mktemp("sqlite"))


@pytest.fixture(scope="session")
def migrated_databases() -> dict[str, str]:
    """One migrated database per engine, shared: tests keep apart by making their own users."""
    return {}


@pytest.fixture
def database(empty_databases: EmptyDatabases, migrated_databases: dict[str, str]) -> str:
    engine = empty_databases.engine
    if engine not in migrated_databases:
        target = empty_databases.new()
        asyncio.run(migrate_database(target))
        migrated_databases[engine] = target
    return migrated_databases[engine]


@pytest.fixture
async def server(database: str, empty_databases: EmptyDatabases) -> AsyncIterator[Server]:
    lifespan, running = await start_server(database, empty_databases.engine)
    try:
        yield running
    finally:
        await running.client.aclose()
        await lifespan.__aexit__(None, None, None)


@pytest.fixture
async def small_limits_server(
    database: str, empty_databases: EmptyDatabases
) -> AsyncIterator[Server]:
    """A server whose body and batch limits a test can reach with a few operations."""
    lifespan, running = await start_server(
        database, empty_databases.engine, max_body_bytes=4000, max_batch_operations=3
    )
    try:
        yield running
    finally:
        await running.client.aclose()
        await lifespan.__aexit__(None, None, None)

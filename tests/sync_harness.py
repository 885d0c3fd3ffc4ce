"""What the sync server's tests share beyond fixtures: fresh databases, a migration, and
the app behind an in-process client. Its own module, not conftest: tests import from it,
and a `conftest` module name is taken by whichever test folder loaded first."""

import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from airi_memory_server import migrate
from airi_memory_server.app import Settings, create_app
from airi_memory_server.db import create_engine
from airi_memory_server.store import SqlSyncStore


class EmptyDatabases:
    """Fresh, unmigrated databases on one engine."""

    def __init__(self, engine: str, request: pytest.FixtureRequest, folder: Path) -> None:
        self.engine = engine
        self.request = request
        self.folder = folder

    def new(self) -> str:
        name = f"sync_{uuid.uuid4().hex[:12]}"
        if self.engine == "sqlite":
            return str(self.folder / f"{name}.sqlite3")
        return self.request.getfixturevalue("postgres").create_database(name)


async def migrate_database(target: str) -> None:
    engine = create_engine(target)
    try:
        await migrate.upgrade(engine)
    finally:
        await engine.dispose()


@dataclass
class Server:
    """The app on one database, a client for it, and a way to make users with keys."""

    app: Any
    client: httpx.AsyncClient
    store: SqlSyncStore
    engine_name: str

    async def new_user(self) -> dict[str, str]:
        """Headers carrying a fresh user's key."""
        key = await self.store.issue_key(f"user-{uuid.uuid4().hex[:10]}")
        return {"Authorization": f"Bearer {key.api_key}"}

    async def push(self, headers: dict[str, str], operations: list[dict[str, Any]]) -> Any:
        return await self.client.post(
            "/v1/sync/push", json={"operations": operations}, headers=headers
        )

    async def pull_all(self, headers: dict[str, str], limit: int = 1000) -> list[dict[str, Any]]:
        """Every operation of the user, page by page from cursor 0."""
        pulled: list[dict[str, Any]] = []
        cursor = 0
        while True:
            response = await self.client.get(
                "/v1/sync/pull", params={"cursor": cursor, "limit": limit}, headers=headers
            )
            assert response.status_code == 200, response.text
            page = response.json()
            pulled += page["operations"]
            cursor = page["cursor"]
            if not page["hasMore"]:
                return pulled


async def start_server(database: str, engine_name: str, **settings: Any) -> tuple[Any, Server]:
    app = create_app(Settings(db=database, **settings))
    lifespan = app.router.lifespan_context(app)
    await lifespan.__aenter__()
    store = app.state.store
    client = httpx.AsyncClient(transport=httpx.ASGITransport(app=app), base_url="http://sync.test")
    return lifespan, Server(app, client, store, engine_name)

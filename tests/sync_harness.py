"""What the sync server's tests share beyond fixtures: fresh databases, a migration, and
the app behind an in-process client. Its own module, not conftest: tests import from it,
and a `conftest` module name is taken by whichever test folder loaded first."""

import contextlib
import os
import socket
import sqlite3
import subprocess
import sys
import time
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


class SyncServerProcess:
    """The sync server as `make sync-server` runs it (its CLI, on SQLite, on loopback), in a
    process a test can kill and start again on the same port and database."""

    def __init__(self, database: Path) -> None:
        self.database = database
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.process: subprocess.Popen[bytes] | None = None
        root = Path(__file__).resolve().parents[1]
        self.environment = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(root / "server"), str(root / "py")]),
        }

    def _cli(self, *args: str) -> list[str]:
        return [sys.executable, "-m", "airi_memory_server", "--db", str(self.database), *args]

    def start(self) -> None:
        command = self._cli("serve", "--host", "127.0.0.1", "--port", str(self.port))
        self.process = subprocess.Popen(command, env=self.environment)
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(httpx.HTTPError):
                if httpx.get(self.url + "/v1/health", timeout=1).status_code == 200:
                    return
            if self.process.poll() is not None:
                raise RuntimeError(f"the sync server exited with {self.process.returncode}")
            time.sleep(0.1)
        raise RuntimeError("the sync server did not answer /v1/health within 30 s")

    def kill(self) -> None:
        """SIGKILL: no clean shutdown, as a crash or a pulled plug."""
        if self.process is not None:
            self.process.kill()
            self.process.wait()
            self.process = None

    def create_user(self, name: str) -> str:
        """A new user's API key, from the last line `make sync-user` prints."""
        done = subprocess.run(
            self._cli("create-user", name),
            env=self.environment, capture_output=True, text=True, check=True,
        )  # fmt: skip
        return done.stdout.strip().splitlines()[-1]

    def stored_count(self) -> int:
        """Operations in the database, read from the file (the server may be dead)."""
        with contextlib.closing(sqlite3.connect(self.database)) as database:
            return database.execute("SELECT count(*) FROM operations").fetchone()[0]

    def operations(self, api_key: str) -> list[dict[str, Any]]:
        """Every operation the server holds for the key's user, in order."""
        headers = {"Authorization": f"Bearer {api_key}"}
        found: list[dict[str, Any]] = []
        cursor = 0
        while True:
            page = httpx.get(
                f"{self.url}/v1/sync/pull", params={"cursor": cursor, "limit": 1000},
                headers=headers, timeout=30,
            ).json()  # fmt: skip
            found += page["operations"]
            cursor = page["cursor"]
            if not page["hasMore"]:
                return found


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

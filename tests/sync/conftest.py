"""Devices syncing through the real sync server app (SQLite), reached through the HTTP
port: in process (``AsgiTransport``, httpx's ASGI transport) for the merge and outbox
cases, over a socket to a uvicorn process for the cases that kill the server."""

from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from airi_memory.errors import ProviderError
from airi_memory.http import HttpReply, HttpTransport
from airi_memory.native.host import InMemory, open_native_system
from contract.common import QUIET, Clock
from sync_harness import Server, migrate_database, start_server

ENDPOINT = "http://127.0.0.1:8787"


class AsgiTransport(HttpTransport):
    """The HTTP port straight into the server app, with faults a test switches on:
    ``fail_next`` answers of a status, ``down`` (unreachable), ``lose_answers`` (the server
    applies the request, the answer never arrives: a connection cut mid-response)."""

    def __init__(self, client: httpx.AsyncClient) -> None:
        self.client = client
        self.fail_next: list[int] = []
        self.down = False
        self.lose_answers = 0
        self.requests: list[tuple[str, str, dict[str, str]]] = []

    async def request(
        self, method: str, url: str, headers: dict[str, str], body: str | None, timeout_s: float
    ) -> HttpReply:
        self.requests.append((method, url, dict(headers)))
        if self.down:
            raise ProviderError(f"cannot reach {url}: connection refused")
        if self.fail_next:
            return HttpReply(self.fail_next.pop(0), '{"error": "internal", "message": "boom"}')
        path = url.removeprefix(ENDPOINT)
        response = await self.client.request(method, path, content=body, headers=headers)
        if self.lose_answers:
            self.lose_answers -= 1
            raise ProviderError(f"cannot reach {url}: connection reset by peer")
        return HttpReply(response.status_code, response.text)


@pytest.fixture
async def sync_server(tmp_path) -> AsyncIterator[Server]:
    database = str(tmp_path / "sync.sqlite3")
    await migrate_database(database)
    lifespan, server = await start_server(database, "sqlite")
    try:
        yield server
    finally:
        await server.client.aclose()
        await lifespan.__aexit__(None, None, None)


Device = Callable[..., Awaitable[Any]]


@pytest.fixture
async def open_device(sync_server: Server) -> AsyncIterator[Device]:
    """Open a device (a native system over its own store) syncing as a user; the same
    ``store`` again is that device after a reload."""
    opened: list[Any] = []

    async def open_device(
        key: str, store: InMemory | None = None, clock: Clock | None = None, **sync: Any
    ) -> Any:
        transport = AsgiTransport(sync_server.client)
        config = {"enabled": True, "endpoint": ENDPOINT, "apiKey": key, "autoSync": False}
        time = {"clock": clock, "sleep": clock.sleep} if clock else {}
        system = await open_native_system(
            store or InMemory(),
            {"userId": "alice", **QUIET, "sync": {**config, **sync}},
            http=transport,
            **time,
        )
        system.transport = transport
        opened.append(system)
        return system

    yield open_device
    for system in opened:
        await system.close()


@pytest.fixture
async def user_key(sync_server: Server) -> str:
    """A fresh user's API key."""
    headers = await sync_server.new_user()
    return headers["Authorization"].removeprefix("Bearer ")

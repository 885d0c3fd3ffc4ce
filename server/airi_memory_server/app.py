"""The HTTP service: /v1/sync/push, /v1/sync/pull, /v1/health, /v1/openapi.json.

Stateless: everything lives in the database, so any number of processes can serve one
PostgreSQL behind a load balancer. Order of checks on the sync routes: the key first
(401 says nothing else), then size (413), then shape (422, naming the field).
"""

import json
import os
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.middleware.cors import CORSMiddleware
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from airi_memory_server import migrate, protocol
from airi_memory_server.db import create_engine
from airi_memory_server.protocol import ErrorBody, PushRequest, PushResponse
from airi_memory_server.store import OperationIdReused, SqlSyncStore, SyncStore, now_ms

DEFAULT_DB = "build/sync.sqlite3"


@dataclass(frozen=True)
class Settings:
    """How one server process runs; `from_env` reads the SYNC_* variables."""

    db: str = DEFAULT_DB
    cors_origins: tuple[str, ...] = ("*",)
    max_body_bytes: int = protocol.DEFAULT_MAX_BODY_BYTES
    max_batch_operations: int = protocol.DEFAULT_MAX_BATCH_OPERATIONS
    max_clock_ahead_ms: int = protocol.DEFAULT_MAX_CLOCK_AHEAD_MS
    pool_size: int = 10

    @classmethod
    def from_env(cls) -> "Settings":
        origins = os.environ.get("SYNC_CORS_ORIGINS", "*")
        return cls(
            db=os.environ.get("SYNC_DB", DEFAULT_DB),
            cors_origins=tuple(o.strip() for o in origins.split(",") if o.strip()),
            max_body_bytes=int(
                os.environ.get("SYNC_MAX_BODY_BYTES", protocol.DEFAULT_MAX_BODY_BYTES)
            ),
            max_batch_operations=int(
                os.environ.get("SYNC_MAX_BATCH", protocol.DEFAULT_MAX_BATCH_OPERATIONS)
            ),
            pool_size=int(os.environ.get("SYNC_POOL_SIZE", 10)),
        )


def error(status: int, code: str, message: str, field_name: str | None = None) -> JSONResponse:
    body = ErrorBody(error=code, message=message, field=field_name)
    headers = {"WWW-Authenticate": 'Bearer realm="airi-sync"'} if status == 401 else None
    return JSONResponse(body.model_dump(by_alias=True, exclude_none=True), status, headers)


def unauthorized() -> JSONResponse:
    return error(401, "unauthorized", "a valid API key is required")


def reply(model: BaseModel) -> JSONResponse:
    """camelCase; an absent optional field (messageId of a session) is left out."""
    return JSONResponse(model.model_dump(by_alias=True, mode="json", exclude_none=True))


def refuse_non_finite(constant: str) -> Any:
    """JSON has no NaN or Infinity; PostgreSQL's jsonb would refuse them later."""
    raise ValueError(f"{constant} is not JSON")


async def read_capped(request: Request, limit: int) -> bytes | None:
    """The body, or None once it is longer than ``limit`` (declared or actually sent)."""
    declared = request.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > limit:
        return None
    body = bytearray()
    async for chunk in request.stream():
        body += chunk
        if len(body) > limit:
            return None
    return bytes(body)


def create_app(settings: Settings, store: SyncStore | None = None) -> Starlette:
    """The ASGI app; it makes its store from ``settings.db`` unless given one."""
    sync_store: SyncStore = store or SqlSyncStore(create_engine(settings.db, settings.pool_size))

    async def user_of(request: Request) -> int | None:
        scheme, _, token = request.headers.get("authorization", "").partition(" ")
        if scheme.lower() != "bearer" or not token.strip():
            return None
        return await sync_store.user_for_key(token.strip())

    async def push(request: Request) -> Response:
        user_id = await user_of(request)
        if user_id is None:
            return unauthorized()
        body = await read_capped(request, settings.max_body_bytes)
        if body is None:
            return error(
                413, "body_too_large", f"a body is at most {settings.max_body_bytes} bytes"
            )
        try:
            payload = json.loads(body, parse_constant=refuse_non_finite)
        except (ValueError, UnicodeDecodeError) as exc:
            return error(422, "invalid_json", str(exc)[:200], "body")
        batch = payload.get("operations") if isinstance(payload, dict) else None
        if isinstance(batch, list) and len(batch) > settings.max_batch_operations:
            return error(
                413,
                "batch_too_large",
                f"a batch is at most {settings.max_batch_operations} operations",
                "operations",
            )
        context = {"now_ms": now_ms(), "max_clock_ahead_ms": settings.max_clock_ahead_ms}
        try:
            request_model = PushRequest.model_validate(payload, context=context)
        except ValidationError as exc:
            path, message = protocol.first_error_field(exc)
            return error(422, "invalid_operation", message, path)
        try:
            acks = await sync_store.push(user_id, request_model.operations)
        except OperationIdReused as exc:
            return error(409, "operation_id_reused", str(exc), f"operations[{exc.index}].id")
        return reply(PushResponse(results=acks))

    async def pull(request: Request) -> Response:
        user_id = await user_of(request)
        if user_id is None:
            return unauthorized()
        cursor = request.query_params.get("cursor", "0") or "0"
        limit = request.query_params.get("limit", str(protocol.DEFAULT_PULL_LIMIT))
        if not cursor.isdigit():
            return error(422, "invalid_query", "a whole number, 0 or more", "cursor")
        if not limit.isdigit() or not 1 <= int(limit) <= protocol.MAX_PULL_LIMIT:
            return error(422, "invalid_query", f"1 to {protocol.MAX_PULL_LIMIT}", "limit")
        return reply(await sync_store.pull(user_id, int(cursor), int(limit)))

    async def health(_request: Request) -> Response:
        try:
            await sync_store.ping()
        except Exception as exc:
            return JSONResponse({"status": "unavailable", "reason": type(exc).__name__}, 503)
        return JSONResponse({"status": "ok", "schemaRevision": migrate.head_revision()})

    async def openapi(_request: Request) -> Response:
        return JSONResponse(openapi_document())

    @asynccontextmanager
    async def lifespan(_app: Starlette) -> AsyncIterator[None]:
        if isinstance(sync_store, SqlSyncStore):
            found = await migrate.current_revision(sync_store.engine)
            if found != migrate.head_revision():
                raise RuntimeError(
                    f"database schema is at {found}, not {migrate.head_revision()}: "
                    "run `python -m airi_memory_server migrate` (serve does it by default)"
                )
        try:
            yield
        finally:
            await sync_store.close()

    routes = [
        Route("/v1/sync/push", push, methods=["POST"]),
        Route("/v1/sync/pull", pull, methods=["GET"]),
        Route("/v1/health", health, methods=["GET"]),
        Route("/v1/openapi.json", openapi, methods=["GET"]),
    ]
    middleware = [
        Middleware(
            CORSMiddleware,
            allow_origins=list(settings.cors_origins),
            allow_methods=["GET", "POST"],
            allow_headers=["authorization", "content-type"],
            allow_credentials=False,
            max_age=600,
        )
    ]
    app = Starlette(routes=routes, middleware=middleware, lifespan=lifespan)
    app.state.store = sync_store
    return app


def create_app_from_env() -> Starlette:
    """For `uvicorn --factory airi_memory_server.app:create_app_from_env --workers N`."""
    return create_app(Settings.from_env())


def openapi_document() -> dict[str, Any]:
    """OpenAPI 3.1 for the routes above, its schemas straight from the wire models."""
    models: list[tuple[type[BaseModel], Any]] = [
        (protocol.PushRequest, "validation"),
        (protocol.PushResponse, "serialization"),
        (protocol.PullResponse, "serialization"),
        (protocol.ErrorBody, "serialization"),
    ]
    _, schemas = models_json_schema(
        models, by_alias=True, ref_template="#/components/schemas/{model}"
    )

    def ref(name: str) -> dict[str, Any]:
        return {
            "content": {"application/json": {"schema": {"$ref": f"#/components/schemas/{name}"}}}
        }

    def failure(text: str) -> dict[str, Any]:
        return {"description": text, **ref("ErrorBody")}

    auth_failures = {"401": failure("Missing or wrong API key; nothing else is said.")}
    return {
        "openapi": "3.1.0",
        "info": {
            "title": "airi-memory sync",
            "version": "1",
            "description": "A per-user ordered log of sync operations (docs/sync-protocol.md).",
        },
        "components": {
            "schemas": schemas["$defs"],
            "securitySchemes": {"apiKey": {"type": "http", "scheme": "bearer"}},
        },
        "security": [{"apiKey": []}],
        "paths": {
            "/v1/sync/push": {
                "post": {
                    "summary": "Append a batch of operations, all or nothing; replays are no-ops.",
                    "requestBody": {"required": True, **ref("PushRequest")},
                    "responses": {
                        "200": {"description": "Each operation's seq.", **ref("PushResponse")},
                        **auth_failures,
                        "409": failure("An operation id pushed before with other content."),
                        "413": failure("Body or batch over the limit."),
                        "422": failure("A malformed operation; `field` names it."),
                    },
                }
            },
            "/v1/sync/pull": {
                "get": {
                    "summary": "The user's operations after a cursor, in seq order.",
                    "parameters": [
                        {
                            "name": "cursor",
                            "in": "query",
                            "schema": {"type": "integer", "minimum": 0, "default": 0},
                        },
                        {
                            "name": "limit",
                            "in": "query",
                            "schema": {
                                "type": "integer",
                                "minimum": 1,
                                "maximum": protocol.MAX_PULL_LIMIT,
                                "default": protocol.DEFAULT_PULL_LIMIT,
                            },
                        },
                    ],
                    "responses": {
                        "200": {"description": "A page of the log.", **ref("PullResponse")},
                        **auth_failures,
                        "422": failure("A bad cursor or limit; `field` names it."),
                    },
                }
            },
            "/v1/health": {
                "get": {
                    "summary": "Whether this process reaches its database.",
                    "security": [],
                    "responses": {"200": {"description": "ok"}, "503": {"description": "down"}},
                }
            },
        },
    }

"""`python -m airi_memory_server serve | migrate | create-user NAME` (see README, Sync server).

SYNC_DB names the database for all three: a SQLite file path (default
build/sync.sqlite3) or a postgresql:// URL.
"""

import argparse
import asyncio
import os
import sys

import uvicorn

from airi_memory_server import migrate
from airi_memory_server.app import DEFAULT_DB
from airi_memory_server.db import create_engine
from airi_memory_server.store import SqlSyncStore

DEFAULT_PORT = 8787


async def migrate_database(db: str) -> str:
    engine = create_engine(db)
    try:
        await migrate.upgrade(engine)
        return str(await migrate.current_revision(engine))
    finally:
        await engine.dispose()


async def create_user(db: str, name: str) -> int:
    await migrate_database(db)
    store = SqlSyncStore(create_engine(db))
    try:
        key = await store.issue_key(name)
    finally:
        await store.close()
    what = "created user" if key.user_created else "new key for existing user"
    print(f"{what} {key.user_name!r} (id {key.user_id}); its API key, shown only now:")
    print(key.api_key)
    return 0


def serve(args: argparse.Namespace) -> int:
    if not args.no_migrate:
        print(f"schema at revision {asyncio.run(migrate_database(args.db))}", flush=True)
    # The worker processes build the app from the environment (create_app_from_env).
    os.environ["SYNC_DB"] = args.db
    if args.cors_origins:
        os.environ["SYNC_CORS_ORIGINS"] = args.cors_origins
    uvicorn.run(
        "airi_memory_server.app:create_app_from_env",
        factory=True,
        host=args.host,
        port=args.port,
        workers=args.workers,
        proxy_headers=True,
    )
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m airi_memory_server")
    parser.add_argument(
        "--db",
        default=os.environ.get("SYNC_DB") or DEFAULT_DB,
        help="SQLite file path or postgresql:// URL (default: $SYNC_DB, else %(default)s)",
    )
    commands = parser.add_subparsers(dest="command", required=True)
    serve_parser = commands.add_parser("serve", help="migrate, then serve HTTP")
    serve_parser.add_argument("--host", default="127.0.0.1")
    serve_parser.add_argument(
        "--port", type=int, default=int(os.environ.get("SYNC_PORT") or DEFAULT_PORT)
    )
    serve_parser.add_argument("--workers", type=int, default=1)
    serve_parser.add_argument("--no-migrate", action="store_true", help="only check the schema")
    serve_parser.add_argument(
        "--cors-origins", default="", help="comma-separated allow-list (default: any origin)"
    )
    commands.add_parser("migrate", help="bring the schema to the newest revision")
    user_parser = commands.add_parser(
        "create-user", help="create a user (or give one a new key); the key is the last line"
    )
    user_parser.add_argument("name")
    args = parser.parse_args(argv)
    if args.command == "serve":
        return serve(args)
    if args.command == "migrate":
        print(f"schema at revision {asyncio.run(migrate_database(args.db))}")
        return 0
    return asyncio.run(create_user(args.db, args.name))


if __name__ == "__main__":
    sys.exit(main())

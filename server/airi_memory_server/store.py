"""Storage of users, keys and the per-user log: one interface, SQLite or PostgreSQL beneath.

Every query names the user; on PostgreSQL each transaction that touches the log also
names the user to row-level security (migration 0002), a second guard behind the first.
"""

import hashlib
import hmac
import json
import secrets
import time
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from sqlalchemy import func, insert, select, text, update
from sqlalchemy.ext.asyncio import AsyncConnection, AsyncEngine

from airi_memory_server.db import SQLITE_IMMEDIATE, is_postgresql
from airi_memory_server.protocol import Ack, PulledOperation, PullResponse, SyncOperation
from airi_memory_server.schema import api_keys, operations, users

API_KEY_PREFIX = "amk"
# A hash to compare against when the key id is unknown, so that case costs the same.
UNKNOWN_KEY_SECRET_SHA256 = hashlib.sha256(b"no such key").hexdigest()


class OperationIdReused(Exception):
    """An operation id the user already pushed, now with other content."""

    def __init__(self, index: int, operation_id: str) -> None:
        super().__init__(f"operation id {operation_id!r} was pushed before with other content")
        self.index = index


@dataclass(frozen=True)
class NewKey:
    user_id: int
    user_name: str
    api_key: str
    user_created: bool


class SyncStore(Protocol):
    """What the HTTP layer needs from storage; every call after auth is per user."""

    async def issue_key(self, user_name: str) -> NewKey: ...

    async def user_for_key(self, api_key: str) -> int | None: ...

    async def push(self, user_id: int, batch: Sequence[SyncOperation]) -> list[Ack]: ...

    async def pull(self, user_id: int, cursor: int, limit: int) -> PullResponse: ...

    async def ping(self) -> None: ...

    async def close(self) -> None: ...


def now_ms() -> int:
    return time.time_ns() // 1_000_000


def secret_hash(secret: str) -> str:
    """Keys are 32 random bytes: one sha256 is enough (no password to stretch)."""
    return hashlib.sha256(secret.encode()).hexdigest()


def content_hash(operation: SyncOperation) -> str:
    canonical = json.dumps(operation.content(), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(canonical.encode()).hexdigest()


def split_key(api_key: str) -> tuple[str, str] | None:
    """`amk_<key id>_<secret>` to (key id, secret); None for anything else."""
    parts = api_key.split("_", 2)
    if len(parts) != 3 or parts[0] != API_KEY_PREFIX or not parts[1] or not parts[2]:
        return None
    return parts[1], parts[2]


class SqlSyncStore:
    """SyncStore on SQLAlchemy Core: aiosqlite or asyncpg, chosen by the engine's URL."""

    def __init__(self, engine: AsyncEngine) -> None:
        self.engine = engine
        # The same pool; its transactions take SQLite's write lock at BEGIN.
        self.writer = engine.execution_options(**{SQLITE_IMMEDIATE: True})

    async def issue_key(self, user_name: str) -> NewKey:
        """A new key for ``user_name``, creating the user when there is none by that name."""
        key_id = secrets.token_hex(8)
        secret = secrets.token_urlsafe(32)
        async with self.writer.connect() as connection:
            user_id = await connection.scalar(select(users.c.id).where(users.c.name == user_name))
            created = user_id is None
            if created:
                user_id = await connection.scalar(
                    insert(users).values(name=user_name, created_at=now_ms()).returning(users.c.id)
                )
            await connection.execute(
                insert(api_keys).values(
                    key_id=key_id,
                    user_id=user_id,
                    secret_sha256=secret_hash(secret),
                    created_at=now_ms(),
                )
            )
            await connection.commit()
        return NewKey(user_id, user_name, f"{API_KEY_PREFIX}_{key_id}_{secret}", created)

    async def user_for_key(self, api_key: str) -> int | None:
        """The user a key belongs to, comparing secrets in constant time; None if no user."""
        parts = split_key(api_key)
        if parts is None:
            return None
        key_id, secret = parts
        async with self.engine.connect() as connection:
            row = (
                await connection.execute(
                    select(api_keys.c.user_id, api_keys.c.secret_sha256).where(
                        api_keys.c.key_id == key_id
                    )
                )
            ).first()
        stored = row.secret_sha256 if row else UNKNOWN_KEY_SECRET_SHA256
        matches = hmac.compare_digest(stored, secret_hash(secret))
        return row.user_id if row and matches else None

    async def push(self, user_id: int, batch: Sequence[SyncOperation]) -> list[Ack]:
        """Append the batch to the user's log in one transaction, or nothing of it.

        The user's counter row is locked first (FOR UPDATE; on SQLite the write lock), so
        one push per user numbers and commits at a time: seq order is commit order, and a
        reader that has seen seq n has seen every seq below it. Ids already in the log
        answer with their first seq, unapplied again.
        """
        if not batch:
            return []
        async with self.writer.connect() as connection:
            await self._scope(connection, user_id)
            last_seq = await connection.scalar(
                select(users.c.last_seq).where(users.c.id == user_id).with_for_update()
            )
            if last_seq is None:
                raise LookupError(f"no user {user_id}")
            seen = await self._existing(connection, user_id, {op.id for op in batch})
            acks: list[Ack] = []
            rows: list[dict[str, Any]] = []
            received_at = now_ms()
            for index, operation in enumerate(batch):
                digest = content_hash(operation)
                if operation.id in seen:
                    seq, first_digest = seen[operation.id]
                    if first_digest != digest:
                        raise OperationIdReused(index, operation.id)
                else:
                    last_seq += 1
                    seq = last_seq
                    seen[operation.id] = (seq, digest)
                    rows.append(_row(user_id, seq, operation, digest, received_at))
                acks.append(Ack(id=operation.id, seq=seq))
            if rows:
                await connection.execute(insert(operations), rows)
                await connection.execute(
                    update(users).where(users.c.id == user_id).values(last_seq=last_seq)
                )
            await connection.commit()
        return acks

    async def pull(self, user_id: int, cursor: int, limit: int) -> PullResponse:
        """The user's operations after ``cursor``, in seq order, at most ``limit``."""
        async with self.engine.connect() as connection:
            await self._scope(connection, user_id)
            result = await connection.execute(
                select(operations)
                .where(operations.c.user_id == user_id, operations.c.seq > cursor)
                .order_by(operations.c.seq)
                .limit(limit + 1)
            )
            rows = result.mappings().all()
            await connection.commit()
        page = [_pulled(row) for row in rows[:limit]]
        return PullResponse(
            operations=page,
            cursor=page[-1].seq if page else cursor,
            has_more=len(rows) > limit,
        )

    async def ping(self) -> None:
        async with self.engine.connect() as connection:
            await connection.execute(select(func.count()).select_from(users).limit(1))

    async def close(self) -> None:
        await self.engine.dispose()

    async def _scope(self, connection: AsyncConnection, user_id: int) -> None:
        """Name the user to PostgreSQL's row-level security for this transaction."""
        if is_postgresql(self.engine):
            await connection.execute(
                text("SELECT set_config('airi_sync.user_id', :user_id, true)"),
                {"user_id": str(user_id)},
            )

    @staticmethod
    async def _existing(
        connection: AsyncConnection, user_id: int, operation_ids: set[str]
    ) -> dict[str, tuple[int, str]]:
        result = await connection.execute(
            select(operations.c.op_id, operations.c.seq, operations.c.content_sha256).where(
                operations.c.user_id == user_id, operations.c.op_id.in_(operation_ids)
            )
        )
        return {row.op_id: (row.seq, row.content_sha256) for row in result}


def _row(
    user_id: int, seq: int, operation: SyncOperation, digest: str, received_at: int
) -> dict[str, Any]:
    return {
        "user_id": user_id,
        "seq": seq,
        "op_id": operation.id,
        "type": operation.type,
        "resource": operation.resource,
        "session_id": operation.session_id,
        "message_id": operation.message_id,
        "hlc": operation.hlc,
        "data": operation.data,
        "timestamp": operation.timestamp,
        "content_sha256": digest,
        "received_at": received_at,
    }


def _pulled(row: Any) -> PulledOperation:
    return PulledOperation(
        seq=row["seq"],
        id=row["op_id"],
        type=row["type"],
        resource=row["resource"],
        session_id=row["session_id"],
        message_id=row["message_id"],
        hlc=row["hlc"],
        data=row["data"],
        timestamp=row["timestamp"],
    )

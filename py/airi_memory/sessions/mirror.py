"""The DuckDB mirror of the durable records: ``chat_sessions`` and ``chat_messages``.

IndexedDB is the truth; these tables answer queries (lists, pages, analytics) and are
kept in step on every write. Columns follow the seed's indexes (userId, characterId,
updatedAt, createdAt; sessionId, createdAt, role); the full JSON rides along in ``body``
so reads never go back to IndexedDB.
"""

import json
from collections.abc import Iterable, Sequence
from typing import Any

from ..models import ChatHistoryItem, ChatSessionMeta
from ..sql import SqlEngine

TAG_SEPARATOR = "\x1f"

SCHEMA = [
    """CREATE OR REPLACE TABLE chat_sessions (
        session_id VARCHAR PRIMARY KEY, user_id VARCHAR, character_id VARCHAR, title VARCHAR,
        created_at BIGINT, updated_at BIGINT, pinned BOOLEAN, archived BOOLEAN, tags VARCHAR,
        parent_session_id VARCHAR, body VARCHAR)""",
    """CREATE OR REPLACE TABLE chat_messages (
        id VARCHAR, session_id VARCHAR, seq BIGINT, role VARCHAR, created_at BIGINT,
        chars INTEGER, body VARCHAR)""",
]
SESSION_COLUMNS = (
    "session_id, user_id, character_id, title, created_at, updated_at, pinned, archived, "
    "tags, parent_session_id, body"
)
MESSAGE_COLUMNS = "id, session_id, seq, role, created_at, chars, body"


def _tags(tags: Sequence[str]) -> str:
    """Tags as one delimited string, so a tag filter is a bound ``contains``."""
    return TAG_SEPARATOR + TAG_SEPARATOR.join(tags) + TAG_SEPARATOR if tags else ""


def session_row(meta: ChatSessionMeta) -> list[Any]:
    return [
        meta.session_id, meta.user_id, meta.character_id, meta.title, meta.created_at,
        meta.updated_at, meta.pinned, meta.archived, _tags(meta.tags), meta.parent_session_id,
        json.dumps(meta.to_wire(), ensure_ascii=False),
    ]  # fmt: skip


def message_row(session_id: str, seq: int, item: ChatHistoryItem) -> list[Any]:
    body = json.dumps(item.to_wire(), ensure_ascii=False)
    return [item.id, session_id, seq, item.role, item.created_at, len(item.text()), body]


def _columns(names: str, rows: Iterable[list[Any]]) -> dict[str, list[Any]]:
    keys = [name.strip() for name in names.split(",")]
    columns: dict[str, list[Any]] = {key: [] for key in keys}
    for row in rows:
        for key, value in zip(keys, row, strict=True):
            columns[key].append(value)
    return columns


class SessionMirror:
    def __init__(self, sql: SqlEngine) -> None:
        self.sql = sql

    async def create(self) -> None:
        """Fresh tables: the mirror is rebuilt from the durable records at every start."""
        for statement in SCHEMA:
            await self.sql.execute(statement)

    async def load(self, sessions: list[list[Any]], messages: list[list[Any]]) -> None:
        """Bulk-load rows (from ``session_row`` / ``message_row``) by column."""
        if sessions:
            await self.sql.insert_columns("chat_sessions", _columns(SESSION_COLUMNS, sessions))
        if messages:
            await self.sql.insert_columns("chat_messages", _columns(MESSAGE_COLUMNS, messages))

    async def put_session(self, meta: ChatSessionMeta) -> None:
        await self.sql.execute(
            f"INSERT OR REPLACE INTO chat_sessions ({SESSION_COLUMNS}) "
            "VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)",
            session_row(meta),
        )

    async def add_message(self, session_id: str, seq: int, item: ChatHistoryItem) -> None:
        await self.sql.execute(
            f"INSERT INTO chat_messages ({MESSAGE_COLUMNS}) VALUES (?, ?, ?, ?, ?, ?, ?)",
            message_row(session_id, seq, item),
        )

    async def replace_message(self, session_id: str, seq: int, item: ChatHistoryItem) -> None:
        await self.sql.execute(
            "DELETE FROM chat_messages WHERE session_id = ? AND seq = ?", [session_id, seq]
        )
        await self.add_message(session_id, seq, item)

    async def delete_message(self, session_id: str, seq: int) -> None:
        await self.sql.execute(
            "DELETE FROM chat_messages WHERE session_id = ? AND seq = ?", [session_id, seq]
        )

    async def delete_sessions(self, session_ids: Sequence[str]) -> None:
        for session_id in session_ids:
            await self.sql.execute("DELETE FROM chat_messages WHERE session_id = ?", [session_id])
            await self.sql.execute("DELETE FROM chat_sessions WHERE session_id = ?", [session_id])

    # --- reads --------------------------------------------------------------------
    async def session(self, session_id: str) -> dict[str, Any] | None:
        result = await self.sql.query(
            "SELECT body FROM chat_sessions WHERE session_id = ?", [session_id]
        )
        return json.loads(result.scalar()) if len(result) else None

    async def list_sessions(
        self,
        user_id: str | None,
        character_id: str | None = None,
        archived: bool | None = None,
        pinned: bool | None = None,
        tags: Sequence[str] = (),
        limit: int | None = None,
        offset: int = 0,
    ) -> list[dict[str, Any]]:
        """Newest ``updated_at`` first; every filter is a bound parameter."""
        where, params = ["TRUE"], []
        for column, value in (
            ("user_id", user_id),
            ("character_id", character_id),
            ("archived", archived),
            ("pinned", pinned),
        ):
            if value is not None:
                where.append(f"{column} = ?")
                params.append(value)
        for tag in tags:
            where.append("contains(tags, ?)")
            params.append(TAG_SEPARATOR + tag + TAG_SEPARATOR)
        sql = (
            f"SELECT body FROM chat_sessions WHERE {' AND '.join(where)} "
            "ORDER BY updated_at DESC, session_id"
        )
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        result = await self.sql.query(sql, params)
        return [json.loads(body) for body in result.column("body")]

    async def session_ids_older_than(self, user_id: str, cutoff: int) -> list[str]:
        result = await self.sql.query(
            "SELECT session_id FROM chat_sessions WHERE user_id = ? AND updated_at < ? "
            "AND NOT pinned ORDER BY updated_at",
            [user_id, cutoff],
        )
        return result.column("session_id")

    async def messages(
        self, session_id: str, offset: int = 0, limit: int | None = None
    ) -> list[tuple[int, dict[str, Any]]]:
        """(seq, message) in conversation order, from ``offset``."""
        sql = "SELECT seq, body FROM chat_messages WHERE session_id = ? ORDER BY seq"
        params: list[Any] = [session_id]
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        elif offset:
            sql += " OFFSET ?"
            params.append(offset)
        result = await self.sql.query(sql, params)
        return [(seq, json.loads(body)) for seq, body in result.tuples()]

    async def latest_messages(self, session_id: str, limit: int) -> list[dict[str, Any]]:
        result = await self.sql.query(
            "SELECT body FROM (SELECT seq, body FROM chat_messages WHERE session_id = ? "
            "ORDER BY seq DESC LIMIT ?) ORDER BY seq",
            [session_id, limit],
        )
        return [json.loads(body) for body in result.column("body")]

    async def message(self, session_id: str, message_id: str) -> tuple[int, dict[str, Any]] | None:
        """(seq, message) of one message by id, or None."""
        result = await self.sql.query(
            "SELECT seq, body FROM chat_messages WHERE session_id = ? AND id = ? LIMIT 1",
            [session_id, message_id],
        )
        if not len(result):
            return None
        seq, body = result.tuples()[0]
        return seq, json.loads(body)

    async def next_seq(self, session_id: str) -> int:
        result = await self.sql.query(
            "SELECT coalesce(max(seq) + 1, 0) AS next FROM chat_messages WHERE session_id = ?",
            [session_id],
        )
        return int(result.scalar())

    async def message_count(self, session_id: str) -> int:
        result = await self.sql.query(
            "SELECT count(*) AS n FROM chat_messages WHERE session_id = ?", [session_id]
        )
        return int(result.scalar())

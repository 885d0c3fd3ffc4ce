"""``MemorySystem``: the one object the JS facade talks to.

``dispatch`` is the whole bridge contract: a facade method name and a list of plain
arguments in, ``{"ok": True, "value": ...}`` or ``{"ok": False, "error": {...}}`` out.
Expected errors carry our message; anything else carries its type and message, so a JS
caller always gets one clear ``Error``.
"""

import sys
import traceback
from collections.abc import Awaitable, Callable
from typing import Any

from . import __version__, diagnostics, transfer
from .errors import AiriMemoryError, InvalidValueError, UnknownMethodError
from .models import json_schemas, now_ms
from .options import SystemOptions, parse_options
from .sessions import SessionStore
from .sessions.analytics import message_analytics
from .sessions.mirror import SessionMirror
from .sql import SqlEngine
from .storage import Storage


class MemorySystem:
    def __init__(
        self, storage: Storage, sql: SqlEngine, options: SystemOptions, sessions: SessionStore
    ) -> None:
        self.storage = storage
        self.sql = sql
        self.options = options
        self.sessions = sessions
        self._methods: dict[str, Callable[..., Awaitable[Any]]] = {
            "info": self.info,
            "ping": self.ping,
            "close": self.close,
            "query": self.query,
            "storage.getItem": storage.get_item,
            "storage.getItemRaw": storage.get_item_raw,
            "storage.getItems": storage.get_items,
            "storage.setItem": storage.set_item,
            "storage.setItemRaw": storage.set_item_raw,
            "storage.setItems": self._set_items,
            "storage.hasItem": storage.has_item,
            "storage.removeItem": storage.remove_item,
            "storage.getKeys": storage.get_keys,
            "storage.clear": storage.clear,
            "storage.getMounts": self._mounts,
            "diagnostics.bulkInsert": self._bulk_insert,
            "sessions.stats": self._session_stats,
            "analytics": self.analytics,
            "schemas": self.schemas,
            "exportSessions": self.export_sessions,
            "importSessions": self.import_sessions,
            **{
                f"sessions.{name}": getattr(sessions, attr)
                for name, attr in _SESSION_METHODS.items()
            },
        }

    @classmethod
    async def open(
        cls,
        storage: Storage,
        sql: SqlEngine,
        raw_options: object,
        clock: Callable[[], int] = now_ms,
        publish: Callable[[str], None] | None = None,
    ) -> "MemorySystem":
        options = parse_options(raw_options)
        sessions = await SessionStore.open(
            storage, SessionMirror(sql), options.user_id, options.cache, clock, publish
        )
        return cls(storage, sql, options, sessions)

    async def dispatch(self, method: str, args: list[Any]) -> dict[str, Any]:
        try:
            handler = self._methods.get(method)
            if handler is None:
                raise UnknownMethodError(f"airi-memory has no method {method!r}")
            if not isinstance(args, list):
                raise InvalidValueError(f"arguments of {method!r} must be a list")
            return {"ok": True, "value": await handler(*args)}
        except AiriMemoryError as error:
            return _error_reply(error)
        except Exception as error:  # one clear error for the caller, with the trace kept
            return _error_reply(error, detail=traceback.format_exc(limit=8))

    async def info(self) -> dict[str, Any]:
        python = sys.version.split()[0]
        return {
            "userId": self.options.user_id,
            "activeSessionId": await self.sessions.get_active_session_id(),
            "versions": {
                "airiMemory": __version__,
                "python": python,
                "duckdb": await self.sql.version(),
            },
            "mounts": self.storage.mount_names(),
        }

    async def ping(self) -> str:
        return "pong"

    async def query(self, sql: str, params: list[Any] | None = None) -> list[dict[str, Any]]:
        await self.sessions.mirror.flush()
        return (await self.sql.read_only_query(sql, params or [])).rows()

    async def close(self) -> None:
        await self.sql.close()
        await self.storage.dispose()

    async def schemas(self) -> dict[str, Any]:
        return json_schemas()

    async def analytics(self) -> dict[str, Any]:
        await self.sessions.mirror.flush()
        return await message_analytics(self.sql, self.options.user_id)

    async def export_sessions(self, session_ids: list[str] | None = None) -> dict[str, Any]:
        return await transfer.export_sessions(self.sessions, session_ids)

    async def import_sessions(self, data: Any, options: Any = None) -> dict[str, Any]:
        return await transfer.import_sessions(self.sessions, data, options)

    async def _set_items(self, items: list[dict[str, Any]]) -> None:
        if not isinstance(items, list) or not all(
            isinstance(i, dict) and "key" in i for i in items
        ):
            raise InvalidValueError("setItems expects a list of {key, value} objects")
        await self.storage.set_items((item["key"], item.get("value")) for item in items)

    async def _mounts(self) -> list[dict[str, str]]:
        return [
            {"base": mount.base, "driver": mount.driver.name} for mount in self.storage.get_mounts()
        ]

    async def _session_stats(self) -> dict[str, Any]:
        return self.sessions.stats()

    async def _bulk_insert(self, rows: int) -> dict[str, float | int]:
        return await diagnostics.bulk_insert(self.sql, rows)


# Facade name (after "sessions.") -> SessionStore method: the seed's names on the JS side.
_SESSION_METHODS = {
    "createSession": "create_session",
    "getSession": "get_session",
    "listSessions": "list_sessions",
    "getAllSessions": "get_all_sessions",
    "renameSession": "rename_session",
    "pinSession": "pin_session",
    "tagSession": "tag_session",
    "archiveSession": "archive_session",
    "unarchiveSession": "unarchive_session",
    "deleteSession": "delete_session",
    "deleteOldSessions": "delete_old_sessions",
    "getActiveSessionId": "get_active_session_id",
    "setActiveSessionId": "set_active_session_id",
    "addMessage": "add_message",
    "updateMessage": "update_message",
    "deleteMessage": "delete_message",
    "loadSessionMessages": "load_session_messages",
    "getSessionMessages": "get_session_messages",
    "messagesPage": "messages_page",
    "latestMessages": "latest_messages",
    "persistSessionMessages": "persist_session_messages",
    "forkSession": "fork_session",
    "snapshot": "snapshot",
    "sync": "sync",
}


def _error_reply(error: BaseException, detail: str | None = None) -> dict[str, Any]:
    reply: dict[str, Any] = {"name": type(error).__name__, "message": str(error)}
    if detail:
        reply["detail"] = detail
    return {"ok": False, "error": reply}

"""Reads: sessions from the metadata held in memory, messages from the cache or the
DuckDB mirror. Nothing here writes."""

from typing import Any

from ..errors import InvalidValueError
from ..models import ChatSessionMeta
from ..storage import Storage
from . import records
from .arguments import count_of, options_of
from .catch_up import CatchUp
from .queue import PersistQueue
from .reader import RecordReader
from .view import SessionView

_LIST_OPTIONS = {"limit", "offset", "userId", "characterId", "archived", "pinned", "tags"}


class Queries:
    def __init__(
        self,
        storage: Storage,
        view: SessionView,
        catch_up: CatchUp,
        reader: RecordReader,
        queue: PersistQueue,
        user_id: str,
    ) -> None:
        self.storage = storage
        self.view = view
        self.mirror = view.mirror
        self.cache = view.cache
        self.catch_up = catch_up
        self.reader = reader
        self.queue = queue
        self.user_id = user_id

    # --- sessions -----------------------------------------------------------------
    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        meta = self.view.metas.get(session_id) if isinstance(session_id, str) else None
        return meta.to_wire() if meta else None

    async def list_sessions(self, options: Any = None) -> list[dict[str, Any]]:
        """Newest ``updatedAt`` first, filtered; answered from the session metadata held in
        memory (a few thousand at most), which every write and every sync keeps current.
        The same rows are in DuckDB's ``chat_sessions`` for SQL and analytics."""
        opts = options_of(options, _LIST_OPTIONS, "listSessions")
        tags = opts.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidValueError("listSessions tags must be a list of strings")
        limit = count_of(opts.get("limit", 20), "listSessions limit")
        offset = count_of(opts.get("offset", 0), "listSessions offset")
        wanted = {
            "user_id": opts.get("userId", self.user_id),
            "character_id": opts.get("characterId"),
            "archived": opts.get("archived"),
            "pinned": opts.get("pinned"),
        }
        found = [
            meta
            for meta in self.view.newest_first()
            if all(v is None or getattr(meta, k) == v for k, v in wanted.items())
            and set(tags) <= set(meta.tags)
        ]
        return [meta.to_wire() for meta in found[offset : offset + limit]]

    def has_other_users(self) -> bool:
        """Whether any stored session belongs to someone else (searches must then filter)."""
        return any(meta.user_id != self.user_id for meta in self.view.metas.values())

    def session_ids(self) -> set[str]:
        """Every stored session's id, whoever it belongs to, and the ids of session
        records in quarantine (an import must not write over them)."""
        return set(self.view.metas) | self.reader.held_session_ids()

    def meta(self, session_id: str) -> ChatSessionMeta | None:
        return self.view.metas.get(session_id)

    def own_sessions(self) -> list[ChatSessionMeta]:
        """This user's sessions, newest ``updatedAt`` first."""
        return [m for m in self.view.newest_first() if m.user_id == self.user_id]

    async def get_all_sessions(self) -> list[dict[str, Any]]:
        return [m.to_wire() for m in self.own_sessions()]

    async def get_active_session_id(self, character_id: str = "default") -> str | None:
        value = await self.storage.get_item(records.active_key(self.user_id, character_id))
        return value if isinstance(value, str) else None

    # --- messages -----------------------------------------------------------------
    async def load_session_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order; held in the cache only once asked for."""
        cached = self.cache.get(session_id)
        if cached is not None:
            return cached
        await self.catch_up.ensure_session(session_id)
        generation = self.cache.generation(session_id)
        messages = await self.mirror.messages(session_id)
        self.cache.put(session_id, messages, generation)
        return messages

    async def messages_page(self, session_id: str, offset: int, limit: int) -> list[dict[str, Any]]:
        """One batch for ``streamMessages``: ``limit`` messages from ``offset``."""
        if not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidValueError("batchSize must be an integer from 1 to 10000")
        return await self.mirror.messages(session_id, count_of(offset, "offset"), limit)

    async def latest_messages(self, session_id: str, limit: int = 50) -> list[dict[str, Any]]:
        """The last ``limit`` messages: from the cache when the session is there, else one
        DuckDB query (which does not fill the cache: a window is not the whole session)."""
        limit = count_of(limit, "limit")
        cached = self.cache.get(session_id)
        if cached is not None:
            return cached[-limit:] if limit else []
        return await self.mirror.latest_messages(session_id, limit)

    async def persist_session_messages(self, session_id: str) -> dict[str, Any]:
        """Messages are written as they arrive; this waits until every queued write is done."""
        await self.queue.drain()
        return {"sessionId": session_id, "messages": await self.mirror.message_count(session_id)}

    async def message_counts(self) -> dict[str, int]:
        """Messages per session id (every user's)."""
        return await self.mirror.message_counts()

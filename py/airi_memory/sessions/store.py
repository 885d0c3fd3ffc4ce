"""``SessionStore``: the seed's session store, durable per message.

Every write goes through one ``PersistQueue`` and is one storage batch: the message
record and its session's updated meta commit in the same IndexedDB transaction, so the
session list and the messages agree after a crash at any point. Only after the commit
is the DuckDB mirror updated and the cache invalidated, and only then does the caller's
promise resolve: a resolved ``addMessage`` is on disk.
"""

import json
from collections.abc import Callable
from typing import Any

from ..errors import InvalidValueError, NotFoundError
from ..models import (
    CacheConfig,
    ChatHistoryItem,
    ChatSessionMeta,
    now_ms,
    validate_or_raise,
)
from ..storage import Storage
from . import records
from .cache import MessageCache
from .mirror import SessionMirror, message_row, session_row
from .queue import PersistQueue

_SESSION_OPTIONS = {"title", "characterId", "userId", "tags", "pinned", "systemPrompt"}
_LIST_OPTIONS = {"limit", "offset", "userId", "characterId", "archived", "pinned", "tags"}


def _options(raw: Any, allowed: set[str], what: str) -> dict[str, Any]:
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidValueError(f"{what} options must be an object")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidValueError(f"unknown {what} option {unknown[0]!r}; allowed: {sorted(allowed)}")
    return raw


class SessionStore:
    def __init__(
        self,
        storage: Storage,
        mirror: SessionMirror,
        user_id: str,
        cache: MessageCache,
        clock: Callable[[], int] = now_ms,
    ) -> None:
        self.storage = storage
        self.mirror = mirror
        self.user_id = user_id
        self.cache = cache
        self.clock = clock
        self.queue = PersistQueue()
        self._next_seq: dict[str, int] = {}

    @classmethod
    async def open(
        cls,
        storage: Storage,
        mirror: SessionMirror,
        user_id: str,
        cache_config: CacheConfig | None = None,
        clock: Callable[[], int] = now_ms,
    ) -> "SessionStore":
        store = cls(storage, mirror, user_id, MessageCache(cache_config or CacheConfig()), clock)
        await mirror.create()
        await store._load_mirror()
        return store

    async def _load_mirror(self) -> None:
        """Fill DuckDB from the durable records: two range reads, two columnar inserts."""
        sessions = [
            session_row(ChatSessionMeta.model_validate(value))
            for _, value in await self.storage.get_all(records.SESSIONS)
            if isinstance(value, dict)
        ]
        messages = []
        for key, value in await self.storage.get_all(records.MESSAGES):
            if isinstance(value, dict):
                session_id, seq = records.parse_message_key(key)
                messages.append(message_row(session_id, seq, ChatHistoryItem.model_validate(value)))
                self._next_seq[session_id] = max(self._next_seq.get(session_id, 0), seq + 1)
        await self.mirror.load(sessions, messages)

    # --- sessions -----------------------------------------------------------------
    async def create_session(self, options: Any = None) -> dict[str, Any]:
        opts = _options(options, _SESSION_OPTIONS, "createSession")
        now = self.clock()
        meta = validate_or_raise(
            ChatSessionMeta,
            {
                "title": opts.get("title", "New Conversation"),
                "characterId": opts.get("characterId", "default"),
                "userId": opts.get("userId", self.user_id),
                "tags": opts.get("tags", []),
                "pinned": opts.get("pinned", False),
                "createdAt": now,
                "updatedAt": now,
            },
        )
        first = []
        if opts.get("systemPrompt") is not None:
            first.append(
                validate_or_raise(
                    ChatHistoryItem,
                    {"role": "system", "content": opts["systemPrompt"], "createdAt": now},
                    "systemPrompt",
                )
            )
        await self.queue.run("createSession", lambda: self._write_session(meta, first))
        return meta.to_wire()

    async def _write_session(self, meta: ChatSessionMeta, messages: list[ChatHistoryItem]) -> None:
        sid = meta.session_id
        sets = [(records.session_key(sid), meta.to_wire())]
        sets += [(records.message_key(sid, seq), m.to_wire()) for seq, m in enumerate(messages)]
        await self.storage.write_batch(sets)
        await self.mirror.put_session(meta)
        for seq, message in enumerate(messages):
            await self.mirror.add_message(sid, seq, message)
        self._next_seq[sid] = len(messages)
        self.cache.invalidate(sid)

    async def get_session(self, session_id: str) -> dict[str, Any] | None:
        return await self.mirror.session(session_id)

    async def require_session(self, session_id: str) -> ChatSessionMeta:
        found = await self.mirror.session(session_id)
        if found is None:
            raise NotFoundError(f"no session {session_id!r}")
        return ChatSessionMeta.model_validate(found)

    async def list_sessions(self, options: Any = None) -> list[dict[str, Any]]:
        opts = _options(options, _LIST_OPTIONS, "listSessions")
        limit = opts.get("limit", 20)
        offset = opts.get("offset", 0)
        for name, value in (("limit", limit), ("offset", offset)):
            if not isinstance(value, int) or isinstance(value, bool) or value < 0:
                raise InvalidValueError(f"listSessions {name} must be a non-negative integer")
        tags = opts.get("tags", [])
        if not isinstance(tags, list) or not all(isinstance(t, str) for t in tags):
            raise InvalidValueError("listSessions tags must be a list of strings")
        return await self.mirror.list_sessions(
            opts.get("userId", self.user_id),
            opts.get("characterId"),
            opts.get("archived"),
            opts.get("pinned"),
            tags,
            limit,
            offset,
        )

    async def get_all_sessions(self) -> list[dict[str, Any]]:
        return await self.mirror.list_sessions(self.user_id)

    async def _update_meta(self, session_id: str, label: str, **changes: Any) -> dict[str, Any]:
        async def task() -> dict[str, Any]:
            meta = await self.require_session(session_id)
            updated = validate_or_raise(ChatSessionMeta, {**meta.to_wire(), **changes})
            await self.storage.write_batch([(records.session_key(session_id), updated.to_wire())])
            await self.mirror.put_session(updated)
            return updated.to_wire()

        return await self.queue.run(label, task)

    async def rename_session(self, session_id: str, title: str) -> dict[str, Any]:
        return await self._update_meta(
            session_id, "renameSession", title=title, updatedAt=self.clock()
        )

    async def pin_session(self, session_id: str, pinned: bool = True) -> dict[str, Any]:
        return await self._update_meta(session_id, "pinSession", pinned=bool(pinned))

    async def tag_session(self, session_id: str, tags: list[str]) -> dict[str, Any]:
        return await self._update_meta(session_id, "tagSession", tags=tags)

    async def archive_session(self, session_id: str) -> dict[str, Any]:
        return await self._update_meta(session_id, "archiveSession", archived=True)

    async def unarchive_session(self, session_id: str) -> dict[str, Any]:
        return await self._update_meta(session_id, "unarchiveSession", archived=False)

    async def delete_session(self, session_id: str) -> bool:
        await self.require_session(session_id)
        await self.queue.run("deleteSession", lambda: self._delete_sessions([session_id]))
        return True

    async def _delete_sessions(self, session_ids: list[str]) -> None:
        """One transaction per session: its meta and every message record go together."""
        for sid in session_ids:
            await self.storage.write_batch(
                removes=[records.session_key(sid)], remove_prefixes=[records.messages_prefix(sid)]
            )
            await self.mirror.delete_sessions([sid])
            self._next_seq.pop(sid, None)
            self.cache.invalidate(sid)

    async def delete_old_sessions(self, options: Any) -> dict[str, Any]:
        """Delete sessions not updated for ``olderThan`` ms; pinned sessions are kept."""
        opts = _options(options, {"olderThan"}, "deleteOldSessions")
        older_than = opts.get("olderThan")
        if not isinstance(older_than, int) or isinstance(older_than, bool) or older_than < 0:
            raise InvalidValueError("deleteOldSessions olderThan must be milliseconds (>= 0)")
        ids = await self.mirror.session_ids_older_than(self.user_id, self.clock() - older_than)
        await self.queue.run("deleteOldSessions", lambda: self._delete_sessions(ids))
        return {"deleted": ids}

    # --- active session -----------------------------------------------------------
    async def get_active_session_id(self, character_id: str = "default") -> str | None:
        value = await self.storage.get_item(records.active_key(self.user_id, character_id))
        return value if isinstance(value, str) else None

    async def set_active_session_id(self, session_id: str | None) -> str | None:
        if session_id is None:
            return None
        meta = await self.require_session(session_id)
        key = records.active_key(self.user_id, meta.character_id)
        await self.queue.run(
            "setActiveSessionId", lambda: self.storage.write_batch([(key, json.dumps(session_id))])
        )
        return session_id

    # --- messages -----------------------------------------------------------------
    async def add_message(self, session_id: str, message: Any) -> dict[str, Any]:
        item = validate_or_raise(ChatHistoryItem, message, "message")

        async def task() -> dict[str, Any]:
            meta = await self.require_session(session_id)
            seq = await self._allocate_seq(session_id)
            touched = meta.model_copy(update={"updated_at": max(self.clock(), meta.updated_at)})
            await self.storage.write_batch(
                [
                    (records.message_key(session_id, seq), item.to_wire()),
                    (records.session_key(session_id), touched.to_wire()),
                ]
            )
            self._next_seq[session_id] = seq + 1
            await self.mirror.add_message(session_id, seq, item)
            await self.mirror.put_session(touched)
            self.cache.invalidate(session_id)
            return item.to_wire()

        return await self.queue.run("addMessage", task)

    async def _allocate_seq(self, session_id: str) -> int:
        if session_id not in self._next_seq:
            self._next_seq[session_id] = await self.mirror.next_seq(session_id)
        return self._next_seq[session_id]

    async def _message(self, session_id: str, message_id: str) -> tuple[int, dict[str, Any]]:
        found = await self.mirror.message(session_id, message_id)
        if found is None:
            raise NotFoundError(f"no message {message_id!r} in session {session_id!r}")
        return found

    async def update_message(self, session_id: str, message_id: str, patch: Any) -> dict[str, Any]:
        if not isinstance(patch, dict):
            raise InvalidValueError("updateMessage patch must be an object")
        if patch.get("id", message_id) != message_id:
            raise InvalidValueError("updateMessage cannot change a message's id")

        async def task() -> dict[str, Any]:
            seq, body = await self._message(session_id, message_id)
            item = validate_or_raise(ChatHistoryItem, {**body, **patch}, "patch")
            await self.storage.write_batch([(records.message_key(session_id, seq), item.to_wire())])
            await self.mirror.replace_message(session_id, seq, item)
            self.cache.invalidate(session_id)
            return item.to_wire()

        return await self.queue.run("updateMessage", task)

    async def delete_message(self, session_id: str, message_id: str) -> bool:
        async def task() -> bool:
            seq, _ = await self._message(session_id, message_id)
            await self.storage.write_batch(removes=[records.message_key(session_id, seq)])
            await self.mirror.delete_message(session_id, seq)
            self.cache.invalidate(session_id)
            return True

        return await self.queue.run("deleteMessage", task)

    async def load_session_messages(self, session_id: str) -> list[dict[str, Any]]:
        """All messages of a session, in order; held in the cache only once asked for."""
        cached = self.cache.get(session_id)
        if cached is not None:
            return cached
        await self.require_session(session_id)
        messages = [body for _, body in await self.mirror.messages(session_id)]
        self.cache.put(session_id, messages)
        return messages

    async def get_session_messages(self, session_id: str) -> list[dict[str, Any]]:
        return await self.load_session_messages(session_id)

    async def messages_page(self, session_id: str, offset: int, limit: int) -> list[dict[str, Any]]:
        """One batch for ``streamMessages``: ``limit`` messages from ``offset``."""
        if not isinstance(limit, int) or not 1 <= limit <= 10_000:
            raise InvalidValueError("batchSize must be an integer from 1 to 10000")
        return [body for _, body in await self.mirror.messages(session_id, offset, limit)]

    async def latest_messages(self, session_id: str, limit: int = 50) -> list[dict[str, Any]]:
        return await self.mirror.latest_messages(session_id, limit)

    async def persist_session_messages(self, session_id: str) -> dict[str, Any]:
        """Messages are written as they arrive; this waits until every queued write is done."""
        await self.queue.drain()
        return {"sessionId": session_id, "messages": await self.mirror.message_count(session_id)}

    async def fork_session(self, options: Any) -> dict[str, Any]:
        opts = _options(options, {"fromSessionId", "atIndex", "reason", "title"}, "forkSession")
        parent_id = opts.get("fromSessionId")
        at_index = opts.get("atIndex")
        if not isinstance(parent_id, str):
            raise InvalidValueError("forkSession fromSessionId must be a session id")
        parent = await self.require_session(parent_id)
        messages = await self.load_session_messages(parent_id)
        if not isinstance(at_index, int) or isinstance(at_index, bool):
            raise InvalidValueError("forkSession atIndex must be an integer")
        if not 0 <= at_index <= len(messages):
            raise InvalidValueError(
                f"forkSession atIndex {at_index} is outside 0..{len(messages)} for {parent_id!r}"
            )
        now = self.clock()
        fork = validate_or_raise(
            ChatSessionMeta,
            {
                "title": opts.get("title", f"{parent.title} (fork)"),
                "characterId": parent.character_id,
                "userId": parent.user_id,
                "tags": parent.tags,
                "createdAt": now,
                "updatedAt": now,
                "parentSessionId": parent_id,
                "forkIndex": at_index,
                "forkReason": opts.get("reason"),
            },
        )
        copies = [ChatHistoryItem.model_validate(m) for m in messages[:at_index]]
        await self.queue.run("forkSession", lambda: self._write_session(fork, copies))
        return fork.to_wire()

    def stats(self) -> dict[str, Any]:
        return {"cache": self.cache.stats(), "queue": self.queue.stats()}

"""What this tab shows of the durable records: every session's metadata in memory, the
DuckDB mirror, the message cache and the next message numbers. Kept in one place so a
change (a write settled, a catch-up) reaches all of them together.
"""

from collections.abc import Callable, Iterable

from ..errors import NotFoundError
from ..models import ChatSessionMeta
from .cache import MessageCache
from .mirror import SessionMirror
from .writer import Sequences


class SessionView:
    def __init__(
        self,
        mirror: SessionMirror,
        cache: MessageCache,
        sequences: Sequences,
        clock: Callable[[], int],
    ) -> None:
        self.metas: dict[str, ChatSessionMeta] = {}
        self.mirror = mirror
        self.cache = cache
        self.sequences = sequences
        self.clock = clock

    def put(self, meta: ChatSessionMeta) -> None:
        """A session as it now is."""
        self.metas[meta.session_id] = meta
        self.mirror.put_session(meta)

    async def forget(self, session_ids: Iterable[str]) -> None:
        """Sessions that are gone from the store, with their messages."""
        gone = list(session_ids)
        for sid in gone:
            self.metas.pop(sid, None)
            self.cache.invalidate(sid)
        if gone:
            await self.mirror.delete_sessions(gone)

    def require(self, session_id: str) -> ChatSessionMeta:
        meta = self.metas.get(session_id) if isinstance(session_id, str) else None
        if meta is None:
            raise NotFoundError(f"no session {session_id!r}")
        return meta

    def newest_first(self) -> list[ChatSessionMeta]:
        return sorted(
            self.metas.values(), key=lambda m: (-m.updated_at, -m.created_at, m.session_id)
        )

    def next_updated_at(self, meta: ChatSessionMeta) -> int:
        """A new ``updatedAt``: now, and always above the last one, because it is also
        the session's version: a write guarded on it fails if another tab wrote first."""
        return max(self.clock(), meta.updated_at + 1)

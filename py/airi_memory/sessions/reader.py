"""Reading the durable records into sessions and mirror rows, with the quarantine.

Records were validated when written; here they are only read. A record that cannot be
read (damaged, or written by something else) or whose row DuckDB refuses is kept where
it is, never deleted, left out of the mirror and reported (``quarantined``).
"""

from collections.abc import Callable
from typing import Any

from pydantic import ValidationError

from ..models import ChatSessionMeta
from ..storage import Storage
from ..storage.driver import parse_head
from . import records
from .journal import JOURNAL_HEAD
from .mirror import MessageRow, SessionMirror


def error_text(error: BaseException) -> str:
    return f"{type(error).__name__}: {error}"[:300]


class RecordReader:
    def __init__(self, storage: Storage, mirror: SessionMirror) -> None:
        self.storage = storage
        self.mirror = mirror
        mirror.on_refused = self.refused_by_mirror
        # Record key -> why it cannot be read.
        self.quarantined: dict[str, str] = {}
        # Told of each record newly quarantined after start-up (the page's event).
        self.on_quarantine: Callable[[str, str], None] | None = None

    def quarantine(self, key: str, error: BaseException | str) -> None:
        reason = error if isinstance(error, str) else error_text(error)
        if self.quarantined.get(key) != reason and self.on_quarantine is not None:
            self.on_quarantine(key, reason)
        self.quarantined[key] = reason

    def refused_by_mirror(self, session_id: str, record: str | None, error: BaseException) -> None:
        """A row DuckDB would not take: its record stays in the store, untouched, out of
        the mirror, and is reported like a record that cannot be read."""
        key = records.session_key(session_id)
        if record is not None:
            key = records.message_key(session_id, record)
        self.quarantine(key, f"DuckDB refused its row: {error_text(error)}")

    def session_from_record(self, key: str, value: Any) -> ChatSessionMeta | None:
        """The session a stored record holds, or None (quarantined) when it cannot be read."""
        try:
            meta = ChatSessionMeta.model_validate(value)
        except ValidationError as error:
            self.quarantine(key, f"not a session: {error.errors()[0]['msg']}")
            return None
        if records.session_key(meta.session_id) != key:
            self.quarantine(key, f"holds session {meta.session_id!r}, not the one its key names")
            return None
        self.quarantined.pop(key, None)
        return meta

    async def read_sessions(self) -> dict[str, ChatSessionMeta]:
        metas = {}
        for key, value in await self.storage.get_all(records.SESSIONS):
            meta = self.session_from_record(key, value)
            if meta is not None:
                metas[meta.session_id] = meta
        return metas

    def message_row(self, key: str, text: Any) -> MessageRow | None:
        """A mirror row from a stored message record, or None (quarantined)."""
        try:
            session_id, record, _ = records.parse_message_key(key)
            if isinstance(text, bytes):  # a driver that keeps bytes (files)
                text = text.decode("utf-8")
            row = self.mirror.row(session_id, record, text)
        except (ValueError, TypeError, KeyError, AttributeError) as error:
            self.quarantine(key, error)
            return None
        self.quarantined.pop(key, None)
        return row

    async def recheck_quarantined(self, keys: Any) -> None:
        """Quarantine again the message records a snapshot left out, if still unreadable
        (session records are all read at start-up anyway)."""
        for key in keys if isinstance(keys, list) else []:
            if isinstance(key, str) and records.session_of_key(key) is None:
                text = await self.storage.get_item_raw_native(key)
                if text is not None:
                    self.message_row(key, text)

    async def read_messages(self) -> dict[str, Any]:
        return dict(await self.storage.get_all(records.MESSAGES, raw=True))

    async def read_head(self) -> dict[str, int]:
        return parse_head(await self.storage.get_item(JOURNAL_HEAD)) or {"last": 0, "pruned": 0}

    def held_session_ids(self) -> set[str]:
        """Ids of session records in quarantine (an import must not write over them)."""
        held = {records.session_of_key(key) for key in self.quarantined}
        return {sid for sid in held if sid is not None}

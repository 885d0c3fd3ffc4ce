"""Writes of single messages: add (the hot path), a summary replacing the previous one,
update, and deletes. A message is its own record; adding one also patches its
session's ``updatedAt`` in the same transaction, so the session list and the messages
agree after a crash at any point.
"""

from typing import Any

from ..errors import InvalidValueError, NotFoundError
from ..models import ChatHistoryItem, validate_or_raise
from ..storage.driver import Guard
from . import records
from .catch_up import CatchUp
from .changes import Change, created_message
from .view import SessionView
from .writer import Writer


class MessageWrites:
    def __init__(self, writer: Writer, view: SessionView, catch_up: CatchUp) -> None:
        self.writer = writer
        self.view = view
        self.mirror = view.mirror
        self.cache = view.cache
        self.catch_up = catch_up

    async def add_message(self, session_id: str, message: Any) -> dict[str, Any]:
        item = validate_or_raise(ChatHistoryItem, message, "message")
        # Only an id the caller chose can repeat one; ours are 126 random bits, and
        # looking costs a DuckDB round trip that appending otherwise never pays.
        chosen_id = isinstance(message, dict) and "id" in message
        await self.catch_up.ensure_session(session_id)

        async def attempt() -> dict[str, Any]:
            # Guarded on the session's updatedAt: if another tab added a message (or
            # deleted the session) since we last looked, we catch up and number again,
            # so messages are numbered in the order they commit, in every tab.
            meta = await self.catch_up.session_in_queue(session_id)
            if chosen_id and await self.mirror.records_of(session_id, [item.id]):
                raise InvalidValueError(
                    f"invalid ChatHistoryItem field 'message.id': {item.id!r} already exists "
                    f"in session {session_id!r}"
                )
            [record] = self.writer.sequences.names(session_id)
            now = self.view.next_updated_at(meta)
            key = records.session_key(session_id)
            wire = item.to_wire()
            number = await self.writer.write(
                sets=[(records.message_key(session_id, record), wire)],
                patches=[(key, {"updatedAt": now})],
                guards=[Guard(key, "updatedAt", meta.updated_at)],
                changes=[
                    created_message(session_id, item),
                    Change("update", session_id, data={"updatedAt": now}),
                ],
            )

            def apply() -> None:
                self.writer.sequences.took(session_id)
                self.view.put(meta.model_copy(update={"updated_at": now}))
                self.mirror.add_message(session_id, record, wire)
                self.cache.append(session_id, wire)

            await self.writer.settle(number, apply)
            return item.to_wire()  # the caller's own copy: the cache holds ``wire``

        return await self.writer.run_guarded("addMessage", attempt)

    async def put_summary(
        self, session_id: str, summary: ChatHistoryItem, replaces: str | None
    ) -> dict[str, Any]:
        """Add a summary message and drop the one it supersedes, in one transaction. The
        session's ``updatedAt`` is left alone: summarising is not activity."""

        async def attempt() -> dict[str, Any]:
            await self.catch_up.session_in_queue(session_id)
            [record] = self.writer.sequences.names(session_id)
            old = await self.mirror.records_of(session_id, [replaces] if replaces else [])
            wire = summary.to_wire()
            number = await self.writer.write(
                sets=[(records.message_key(session_id, record), wire)],
                removes=[records.message_key(session_id, r) for r in old],
                guards=[Guard(records.session_key(session_id))],
                changes=[
                    created_message(session_id, summary),
                    *(Change("delete", session_id, mid) for mid in old.values()),
                ],
            )

            async def apply() -> None:
                self.writer.sequences.took(session_id)
                if old:
                    await self.mirror.delete_records([(session_id, r) for r in old])
                self.mirror.add_message(session_id, record, wire)
                self.cache.invalidate(session_id)

            await self.writer.settle(number, apply)
            return summary.to_wire()

        return await self.writer.run_guarded("summarize", attempt)

    async def _record_of(self, session_id: str, message_id: str) -> tuple[str, dict[str, Any]]:
        found = await self.mirror.message(session_id, message_id)
        if found is None:
            raise NotFoundError(f"no message {message_id!r} in session {session_id!r}")
        return found

    async def update_message(self, session_id: str, message_id: str, patch: Any) -> dict[str, Any]:
        if not isinstance(patch, dict):
            raise InvalidValueError("updateMessage patch must be an object")
        if patch.get("id", message_id) != message_id:
            raise InvalidValueError("updateMessage cannot change a message's id")

        async def attempt() -> dict[str, Any]:
            record, body = await self._record_of(session_id, message_id)
            item = validate_or_raise(ChatHistoryItem, {**body, **patch}, "patch")
            key = records.message_key(session_id, record)
            wire = item.to_wire()
            edited = {name: wire.get(name) for name in patch if name != "id"}
            number = await self.writer.write(
                sets=[(key, wire)],
                guards=[Guard(key)],
                changes=[Change("update", session_id, message_id, edited)],
            )

            async def apply() -> None:
                await self.mirror.replace_message(session_id, record, wire)
                self.cache.invalidate(session_id)

            await self.writer.settle(number, apply)
            return item.to_wire()

        return await self.writer.run_guarded("updateMessage", attempt)

    async def delete_message(self, session_id: str, message_id: str) -> bool:
        async def task() -> bool:
            record, _ = await self._record_of(session_id, message_id)
            await self._delete_records(session_id, {record: message_id})
            return True

        return await self.writer.run("deleteMessage", task)

    async def delete_messages(self, session_id: str, message_ids: list[str], label: str) -> int:
        """Delete many messages of a session in one transaction; returns how many."""

        async def task() -> int:
            found = await self.mirror.records_of(session_id, message_ids)
            if found:
                await self._delete_records(session_id, found)
            return len(found)

        return await self.writer.run(label, task)

    async def _delete_records(self, session_id: str, found: dict[str, str]) -> None:
        """Delete message records ({record name: message id})."""
        number = await self.writer.write(
            removes=[records.message_key(session_id, r) for r in found],
            changes=[Change("delete", session_id, mid) for mid in found.values()],
        )

        async def apply() -> None:
            await self.mirror.delete_records([(session_id, r) for r in found])
            self.cache.invalidate(session_id)

        await self.writer.settle(number, apply)

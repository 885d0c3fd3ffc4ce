"""Writes that create, change or delete whole sessions: create, fork, import, the merge
patches (rename, pin, tag, archive), deletes and retention's archive-and-delete.

Each is one ``Writer.write`` (one transaction) settled into the view after it commits.
Session fields change by merge patches applied inside the transaction, so two tabs
editing different fields never undo each other.
"""

import json
from collections.abc import Callable
from typing import Any

from ..errors import InvalidValueError
from ..models import WRITTEN_HERE, ChatHistoryItem, ChatSessionMeta, validate_or_raise
from ..storage.driver import Guard
from . import records
from .arguments import count_of, options_of
from .catch_up import CatchUp
from .changes import Change, created
from .mirror import session_row
from .queries import Queries
from .view import SessionView
from .writer import Writer

_SESSION_OPTIONS = {"title", "characterId", "userId", "tags", "pinned", "systemPrompt"}


class SessionWrites:
    def __init__(
        self,
        writer: Writer,
        view: SessionView,
        catch_up: CatchUp,
        queries: Queries,
        user_id: str,
    ) -> None:
        self.writer = writer
        self.view = view
        self.mirror = view.mirror
        self.catch_up = catch_up
        self.queries = queries
        self.user_id = user_id

    async def create_session(self, options: Any = None) -> dict[str, Any]:
        opts = options_of(options, _SESSION_OPTIONS, "createSession")
        now = self.view.clock()
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
        await self.writer.run("createSession", lambda: self._write_session(meta, first))
        return meta.to_wire()

    async def fork_session(self, options: Any) -> dict[str, Any]:
        opts = options_of(options, {"fromSessionId", "atIndex", "reason", "title"}, "forkSession")
        parent_id = opts.get("fromSessionId")
        at_index = opts.get("atIndex")
        if not isinstance(parent_id, str):
            raise InvalidValueError("forkSession fromSessionId must be a session id")
        parent = await self.catch_up.ensure_session(parent_id)
        messages = await self.queries.load_session_messages(parent_id)
        if not isinstance(at_index, int) or isinstance(at_index, bool):
            raise InvalidValueError("forkSession atIndex must be an integer")
        if not 0 <= at_index <= len(messages):
            raise InvalidValueError(
                f"forkSession atIndex {at_index} is outside 0..{len(messages)} for {parent_id!r}"
            )
        now = self.view.clock()
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
        # A fork is written here from messages stored here: their summaries stay trusted.
        copies = [
            ChatHistoryItem.model_validate(m, context=WRITTEN_HERE) for m in messages[:at_index]
        ]
        await self.writer.run("forkSession", lambda: self._write_session(fork, copies))
        return fork.to_wire()

    async def _write_session(self, meta: ChatSessionMeta, messages: list[ChatHistoryItem]) -> None:
        """A new session and its first messages; refused if the id is taken meanwhile."""
        sid = meta.session_id
        sequences = self.writer.sequences
        named = list(zip(sequences.names(sid, len(messages)), messages, strict=True))
        key = records.session_key(sid)
        wires = [(record, m.to_wire()) for record, m in named]
        sets = [(key, meta.to_wire())]
        sets += [(records.message_key(sid, record), wire) for record, wire in wires]
        number = await self.writer.write(
            sets=sets, guards=[Guard(key, "sessionId", None)], changes=created(meta, messages)
        )

        def apply() -> None:
            sequences.took(sid, len(messages))
            self.view.put(meta)
            for record, wire in wires:
                self.mirror.add_message(sid, record, wire)
            self.view.cache.invalidate(sid)

        await self.writer.settle(number, apply)

    async def import_batch(
        self, sessions: list[tuple[ChatSessionMeta, list[ChatHistoryItem]]]
    ) -> int:
        """Write whole sessions in ONE storage batch (all or nothing); returns messages.
        Runs inside the write queue; a session id that exists already (any user's) is
        refused inside the transaction, so an import never overwrites a session."""
        sets, session_rows, message_rows = [], [], []
        sequences = self.writer.sequences
        for meta, messages in sessions:
            sid = meta.session_id
            sets.append((records.session_key(sid), meta.to_wire()))
            session_rows.append(session_row(meta))
            for record, message in zip(sequences.names(sid, len(messages)), messages, strict=True):
                text = json.dumps(message.to_wire(), ensure_ascii=False)
                sets.append((records.message_key(sid, record), text))
                message_rows.append(self.mirror.row(sid, record, text))
        guards = [Guard(records.session_key(m.session_id), "sessionId", None) for m, _ in sessions]
        changes = [change for meta, messages in sessions for change in created(meta, messages)]
        number = await self.writer.write(sets=sets, guards=guards, changes=changes)

        async def apply() -> None:
            for meta, messages in sessions:
                self.view.metas[meta.session_id] = meta
                sequences.took(meta.session_id, len(messages))
            await self.mirror.load(session_rows, message_rows)

        await self.writer.settle(number, apply)
        return len(message_rows)

    # --- merge patches ------------------------------------------------------------
    async def _patch_session(self, session_id: str, label: str, **changes: Any) -> dict[str, Any]:
        """Change some fields: validated here, merged into the stored record there."""
        await self.catch_up.ensure_session(session_id)

        async def attempt() -> dict[str, Any]:
            current = await self.catch_up.session_in_queue(session_id)
            fields = {k: v(current) if callable(v) else v for k, v in changes.items()}
            updated = validate_or_raise(ChatSessionMeta, {**current.to_wire(), **fields})
            patch = {k: v for k, v in updated.to_wire().items() if k in fields}
            key = records.session_key(session_id)
            number = await self.writer.write(
                patches=[(key, patch)],
                guards=[Guard(key)],
                changes=[Change("update", session_id, data=patch)],
            )
            await self.writer.settle(number, lambda: self.view.put(updated))
            return updated.to_wire()

        return await self.writer.run_guarded(label, attempt)

    async def rename_session(self, session_id: str, title: str) -> dict[str, Any]:
        return await self._patch_session(
            session_id, "renameSession", title=title, updatedAt=self.view.next_updated_at
        )

    async def pin_session(self, session_id: str, pinned: bool = True) -> dict[str, Any]:
        return await self._patch_session(session_id, "pinSession", pinned=bool(pinned))

    async def tag_session(self, session_id: str, tags: list[str]) -> dict[str, Any]:
        return await self._patch_session(session_id, "tagSession", tags=tags)

    async def archive_session(self, session_id: str) -> dict[str, Any]:
        return await self._patch_session(session_id, "archiveSession", archived=True)

    async def unarchive_session(self, session_id: str) -> dict[str, Any]:
        return await self._patch_session(session_id, "unarchiveSession", archived=False)

    async def set_active_session_id(self, session_id: str | None) -> str | None:
        if session_id is None:
            return None
        meta = await self.catch_up.ensure_session(session_id)
        key = records.active_key(self.user_id, meta.character_id)
        # Not journaled: which session is active is this user's, not the mirror's.
        await self.writer.run(
            "setActiveSessionId",
            lambda: self.writer.storage.write_batch([(key, json.dumps(session_id))]),
        )
        return session_id

    # --- deletes ------------------------------------------------------------------
    async def delete_session(self, session_id: str) -> bool:
        await self.catch_up.ensure_session(session_id)
        await self.writer.run("deleteSession", lambda: self._archive_and_delete([], [session_id]))
        return True

    async def archive_and_delete(
        self, decide: Callable[[], tuple[list[str], list[str]]], label: str
    ) -> tuple[list[str], list[str]]:
        """Archive some sessions and delete others in ONE transaction (retention touches
        thousands). ``decide`` names them; it runs inside the write queue after catching
        up with the store, and a deleted session must still be as old as it was then
        (guarded on its ``updatedAt``), so a message another tab just added to it saves
        it. Archiving is a merge patch, so another tab's edits survive it."""

        async def attempt() -> tuple[list[str], list[str]]:
            archive, delete = decide()
            await self._archive_and_delete(archive, delete, guard_age=True)
            return archive, delete

        async def task() -> tuple[list[str], list[str]]:
            await self.catch_up.catch_up()  # decide on what the store holds now
            return await self.writer.guarded(attempt)

        return await self.writer.run(label, task)

    async def _archive_and_delete(
        self, archive: list[str], delete: list[str], guard_age: bool = False
    ) -> None:
        """One transaction: archive sessions (merge patches, skipped for sessions gone
        here), delete others with every message record (guarded on the ``updatedAt``
        they were judged on when ``guard_age``)."""
        metas = self.view.metas
        doomed = [sid for sid in delete if sid in metas]
        spared = metas.keys() - set(doomed)
        archived = {
            sid: metas[sid].model_copy(update={"archived": True})
            for sid in archive
            if sid in spared
        }
        if not archived and not doomed:
            return
        patch = {"archived": True}  # one object: encoded once for every key
        number = await self.writer.write(
            patches=[(records.session_key(sid), patch) for sid in archived],
            removes=[records.session_key(sid) for sid in doomed],
            prefixes=[records.messages_prefix(sid) for sid in doomed],
            guards=[
                Guard(records.session_key(sid), "updatedAt", metas[sid].updated_at)
                for sid in (doomed if guard_age else [])
            ],
            changes=[Change("update", sid, data=patch) for sid in archived]
            + [Change("delete", sid) for sid in doomed],
        )

        async def apply() -> None:
            for meta in archived.values():
                self.view.put(meta)
            await self.view.forget(doomed)

        await self.writer.settle(number, apply)

    async def delete_old_sessions(self, options: Any) -> dict[str, Any]:
        """Delete sessions not updated for ``olderThan`` ms; pinned sessions are kept."""
        opts = options_of(options, {"olderThan"}, "deleteOldSessions")
        older_than = count_of(opts.get("olderThan"), "deleteOldSessions olderThan (ms)")

        def decide() -> tuple[list[str], list[str]]:
            cutoff = self.view.clock() - older_than
            old = [
                m.session_id
                for m in reversed(self.view.newest_first())
                if m.user_id == self.user_id and m.updated_at < cutoff and not m.pinned
            ]
            return [], old

        _, deleted = await self.archive_and_delete(decide, "deleteOldSessions")
        return {"deleted": deleted}

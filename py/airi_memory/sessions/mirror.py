"""The DuckDB mirror of the durable records: ``chat_sessions`` and ``chat_messages``.

IndexedDB is the truth; these tables answer queries (lists, pages, analytics). Columns
follow the seed's indexes (userId, characterId, updatedAt, createdAt; sessionId,
createdAt, role); the full JSON rides along in ``body`` so reads never go back to
IndexedDB. Appends are buffered and flushed in one columnar insert before the next read
(write-behind), so adding a message costs no DuckDB round trip on the caller's path.
A row DuckDB refuses never holds up the rows around it: it is left out and reported.
Tables other packages derive from the messages are theirs (``derived``).

Over 350 lines because the buffered writes and the reads share one buffer: every read
flushes it first, so they stay in one class.
"""

import asyncio
import contextlib
import json
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, TypeVar

from ..errors import SqlEngineStoppedError
from ..models import ChatSessionMeta, message_text
from ..sql import SqlEngine
from ..storage.values import MAX_VALUE_DEPTH, NestedTooDeepError, loads
from .derived import SMALL_INSERT, DerivedTables, Inserted, insert_rows

TAG_SEPARATOR = "\x1f"

SCHEMA = [
    """CREATE OR REPLACE TABLE chat_sessions (
        session_id VARCHAR PRIMARY KEY, user_id VARCHAR, character_id VARCHAR, title VARCHAR,
        created_at BIGINT, updated_at BIGINT, pinned BOOLEAN, archived BOOLEAN, tags VARCHAR,
        parent_session_id VARCHAR, body VARCHAR)""",
    # ``doc`` numbers messages inside this mirror (rebuilt at every start), so the tables
    # other packages keep about messages (``derived``) key on one integer.
    """CREATE OR REPLACE TABLE chat_messages (
        doc INTEGER, id VARCHAR, session_id VARCHAR, record VARCHAR, seq BIGINT, role VARCHAR,
        created_at BIGINT, chars INTEGER, body VARCHAR)""",
    # Searches rank by ``doc`` and then read the few winners by it: an index makes that a
    # lookup instead of a scan of every message's text.
    "CREATE INDEX chat_messages_doc ON chat_messages (doc)",
]
SESSION_COLUMNS = (
    "session_id, user_id, character_id, title, created_at, updated_at, pinned, archived, "
    "tags, parent_session_id, body"
)
MESSAGE_COLUMNS = "doc, id, session_id, record, seq, role, created_at, chars, body"
Row = TypeVar("Row")
# Told of a row DuckDB refused: (session id, record name or None for the session's row,
# DuckDB's error).
Refused = Callable[[str, str | None, BaseException], None]


def _tags(tags: Sequence[str]) -> str:
    """Tags as one delimited string, so a tag filter is a bound ``contains``."""
    return TAG_SEPARATOR + TAG_SEPARATOR.join(tags) + TAG_SEPARATOR if tags else ""


def session_row(meta: ChatSessionMeta) -> list[Any]:
    return [
        meta.session_id, meta.user_id, meta.character_id, meta.title, meta.created_at,
        meta.updated_at, meta.pinned, meta.archived, _tags(meta.tags), meta.parent_session_id,
        json.dumps(meta.to_wire(), ensure_ascii=False),
    ]  # fmt: skip


@dataclass
class MessageRow:
    """A ``chat_messages`` row and what each derived table's owner made of its text; for
    a row this tab just wrote, made at the flush from ``text`` (``analyses`` None), so
    analysing never delays a write's acknowledgement."""

    values: list[Any]
    analyses: list[Any] | None
    text: str = ""


def _message_values(
    session_id: str, record: str, message: dict[str, Any], text: str, body: str
) -> list[Any]:
    """A ``chat_messages`` row's values (doc 0: the mirror numbers the row when it inserts it)."""
    seq = int(record.split("-", 1)[0])
    return [
        0, message["id"], session_id, record, seq, message["role"], message["createdAt"],
        len(text), body,
    ]  # fmt: skip


def _inserted(rows: Sequence[MessageRow]) -> Inserted:
    """What derived owners are told of inserted rows (``MESSAGE_COLUMNS``' doc, session_id,
    role and created_at)."""
    return Inserted(
        [row.values[0] for row in rows],
        [row.values[2] for row in rows],
        [row.values[5] for row in rows],
        [row.values[6] for row in rows],
    )


def _raise_refusal(session_id: str, record: str | None, error: BaseException) -> None:
    raise error  # nobody to report it to: never left out silently


class SessionMirror:
    def __init__(self, sql: SqlEngine, derived: Sequence[DerivedTables] = ()) -> None:
        self.sql = sql
        self.derived = list(derived)  # other packages' tables about messages (search)
        self.on_refused: Refused = _raise_refusal  # the store quarantines the record
        self._pending_sessions: dict[str, ChatSessionMeta] = {}
        self._pending_messages: list[MessageRow] = []
        # A read that arrives while another read's flush is still writing must wait for
        # it, or it would miss rows that have left the buffer but are not in DuckDB yet.
        self._flushing = asyncio.Lock()
        self._next_doc = 1

    async def create(self, snapshot: Sequence[Any] | None = None) -> None:
        """Fresh tables: the mirror is rebuilt from the durable records at every start.
        With a ``snapshot`` (``save``'s bytes, which ``restore`` imports next), what each
        owner keeps beside its tables is restored first: at start-up the statements wait
        for DuckDB's start, and that work (the term index, 65-75 ms at 100,000 messages)
        then overlaps it instead of delaying the load after it."""
        self._pending_sessions.clear()
        self._pending_messages.clear()
        for owner in self.derived:
            owner.cleared()
            if snapshot is not None:
                owner.restore_beside(self._parts(snapshot, owner))
        for statement in SCHEMA + [s for owner in self.derived for s in owner.schema()]:
            await self.sql.execute(statement)

    @property
    def saved_names(self) -> tuple[str, ...]:
        """What a snapshot saves: the messages and what is derived from them (the session
        table is rebuilt from its records: it is small)."""
        return ("chat_messages", *(name for owner in self.derived for name in owner.saved))

    async def save(self) -> list[Any]:
        """Every buffered row in, then the bytes of each of ``saved_names``, in order."""
        await self.flush()
        saved = [await self.sql.export_table("chat_messages")]
        for owner in self.derived:
            saved += await owner.save(self.sql)
        return saved

    async def restore(self, saved: Sequence[Any]) -> None:
        """The tables ``create(saved)`` made, filled from that snapshot (``save``'s bytes,
        in order): each owner restores its own part; new rows are numbered after the
        snapshot's."""
        await self.sql.import_table("chat_messages", saved[0])
        for owner in self.derived:
            await owner.restore(self.sql, self._parts(saved, owner))
        await self._resume_numbering()

    def _parts(self, saved: Sequence[Any], owner: DerivedTables) -> dict[str, Any]:
        """``owner``'s part of a snapshot, by name, and the messages its rows follow."""
        by_name = dict(zip(self.saved_names, saved, strict=True))
        return {name: by_name[name] for name in ("chat_messages", *owner.saved)}

    def _derived_tables(self) -> list[str]:
        return [table for owner in self.derived for table in owner.tables]

    def row(self, session_id: str, record: str, body: str) -> MessageRow:
        """A mirror row from a stored record's JSON text, without re-validating it: only
        the fields the row needs are checked (ValueError naming the first bad one)."""
        try:
            message = loads(body)
        except NestedTooDeepError:  # deeper than anything we write
            raise ValueError(
                f"a message record nested more than {MAX_VALUE_DEPTH} levels deep"
            ) from None
        if not isinstance(message, dict):
            raise ValueError("a message record must hold a JSON object")
        for name, kind in (("id", str), ("role", str), ("createdAt", int)):
            if not isinstance(message.get(name), kind) or isinstance(message.get(name), bool):
                raise ValueError(f"message field {name!r} is missing or not a {kind.__name__}")
        text = message_text(message)
        return MessageRow(
            _message_values(session_id, record, message, text, body), self._analyse(text)
        )

    def _analyse(self, text: str) -> list[Any]:
        return [owner.analyse(text) for owner in self.derived]

    async def load(self, sessions: list[list[Any]], messages: list[MessageRow]) -> None:
        """Bulk-load rows of sessions not yet in the mirror (start-up, import) by column."""
        await self.flush()
        await self._insert_sessions(sessions)
        await self._insert_messages(messages)

    async def _insert_sessions(self, rows: list[list[Any]]) -> None:
        async def insert(part: Sequence[list[Any]]) -> None:
            await insert_rows(self.sql, "chat_sessions", SESSION_COLUMNS, list(part))

        async def undo(part: Sequence[list[Any]]) -> None:
            await self._delete_session_rows([row[0] for row in part])

        await self._insert_apart(rows, insert, undo, lambda row: (row[0], None))

    async def _insert_messages(self, rows: list[MessageRow]) -> None:
        for row in rows:
            if row.analyses is None:
                row.analyses = self._analyse(row.text)

        async def insert(part: Sequence[MessageRow]) -> None:
            # Numbered at each try: a doc that was undone is never used again (the
            # derived owners may hold it as deleted).
            for row in part:
                row.values[0], self._next_doc = self._next_doc, self._next_doc + 1
            await insert_rows(self.sql, "chat_messages", MESSAGE_COLUMNS, [r.values for r in part])
            inserted = _inserted(part)
            for index, owner in enumerate(self.derived):
                await owner.insert(self.sql, inserted, [row.analyses[index] for row in part])

        async def undo(part: Sequence[MessageRow]) -> None:
            span = [part[0].values[0], part[-1].values[0]]  # numbered in a row, just now
            for owner in self.derived:
                owner.deleted(range(span[0], span[1] + 1))
            for table in (*self._derived_tables(), "chat_messages"):
                await self.sql.execute(f"DELETE FROM {table} WHERE doc BETWEEN ? AND ?", span)

        await self._insert_apart(rows, insert, undo, lambda row: (row.values[2], row.values[3]))

    async def _insert_apart(
        self,
        rows: Sequence[Row],
        insert: Callable[[Sequence[Row]], Awaitable[None]],
        undo: Callable[[Sequence[Row]], Awaitable[None]],
        where: Callable[[Row], tuple[str, str | None]],
    ) -> None:
        """Insert ``rows`` in one go; when DuckDB refuses, undo what got in and halve the
        batch until each refused row stands alone: it is left out and reported through
        ``on_refused``, every other row inserted. A stopped engine is no row's fault."""
        if not rows:
            return
        try:
            await insert(rows)
        except SqlEngineStoppedError:
            raise
        except Exception as error:
            await undo(rows)
            if len(rows) == 1:
                self.on_refused(*where(rows[0]), error)
                return
            middle = len(rows) // 2
            await self._insert_apart(rows[:middle], insert, undo, where)
            await self._insert_apart(rows[middle:], insert, undo, where)

    async def _resume_numbering(self) -> None:
        """After a snapshot was imported: new rows continue after its highest ``doc``."""
        top = await self.sql.query("SELECT coalesce(max(doc), 0) AS top FROM chat_messages")
        self._next_doc = int(top.scalar()) + 1

    async def _delete_session_rows(self, session_ids: Sequence[str]) -> None:
        if len(session_ids) <= SMALL_INSERT:
            for session_id in session_ids:
                await self.sql.execute(
                    "DELETE FROM chat_sessions WHERE session_id = ?", [session_id]
                )
            return
        async with self._doomed({"session_id": list(session_ids)}):
            await self.sql.execute(
                "DELETE FROM chat_sessions USING doomed "
                "WHERE chat_sessions.session_id = doomed.session_id"
            )

    @contextlib.asynccontextmanager
    async def _doomed(self, columns: dict[str, list[str]]) -> AsyncIterator[None]:
        """A temporary ``doomed`` table holding ``columns`` while the block runs: set-based
        statements instead of one per key."""
        definition = ", ".join(f"{name} VARCHAR" for name in columns)
        await self.sql.execute(f"CREATE OR REPLACE TEMP TABLE doomed ({definition})")
        await self.sql.insert_columns("doomed", columns)
        yield
        await self.sql.execute("DROP TABLE doomed")

    # --- buffered appends -----------------------------------------------------------
    def put_session(self, meta: ChatSessionMeta) -> None:
        """Buffered as the model: its row is built at the flush, once per session."""
        self._pending_sessions[meta.session_id] = meta

    def add_message(self, session_id: str, record: str, message: dict[str, Any]) -> None:
        """A message this tab wrote (``ChatHistoryItem.to_wire``'s form, so already
        checked); its text is analysed at the flush."""
        text = message_text(message)
        body = json.dumps(message, ensure_ascii=False)
        values = _message_values(session_id, record, message, text, body)
        self._pending_messages.append(MessageRow(values, None, text))

    def add_row(self, row: MessageRow) -> None:
        self._pending_messages.append(row)

    async def flush(self) -> None:
        """Write buffered rows; every read and every non-append write calls this first."""
        async with self._flushing:
            metas, self._pending_sessions = list(self._pending_sessions.values()), {}
            messages, self._pending_messages = self._pending_messages, []
            sessions = [session_row(meta) for meta in metas]
            if sessions:
                await self._delete_session_rows([row[0] for row in sessions])
                await self._insert_sessions(sessions)
            await self._insert_messages(messages)

    # --- immediate writes -----------------------------------------------------------
    async def replace_message(self, session_id: str, record: str, message: dict[str, Any]) -> None:
        await self.delete_records([(session_id, record)])
        self.add_message(session_id, record, message)

    async def delete_records(self, records: Sequence[tuple[str, str]]) -> None:
        """Delete many (session id, record) messages, and their derived rows."""
        await self._delete_messages(
            {"session_id": [s for s, _ in records], "record": [r for _, r in records]}
        )

    async def delete_sessions(self, session_ids: Sequence[str]) -> None:
        """Delete sessions' rows, their messages and their messages' derived rows."""
        await self._delete_messages({"session_id": list(session_ids)})
        await self._delete_session_rows(session_ids)

    async def _delete_messages(self, keys: dict[str, list[str]]) -> None:
        """Delete the messages matching ``keys`` by column (every column equal), derived
        tables first, in set-based statements."""
        await self.flush()
        if not next(iter(keys.values())):
            return
        match = " AND ".join(f"m.{column} = doomed.{column}" for column in keys)
        async with self._doomed(keys):
            if self.derived:
                found = await self.sql.query(
                    f"SELECT m.doc FROM chat_messages m, doomed WHERE {match}"
                )
                docs = [int(doc) for doc in found.column("doc")]
                for owner in self.derived:
                    owner.deleted(docs)
            for table in self._derived_tables():
                await self.sql.execute(
                    f"DELETE FROM {table} USING chat_messages m, doomed "
                    f"WHERE {table}.doc = m.doc AND {match}"
                )
            await self.sql.execute("DELETE FROM chat_messages m USING doomed WHERE " + match)

    # --- reads --------------------------------------------------------------------
    async def query(self, sql: str, params: Sequence[Any]) -> Any:
        await self.flush()
        return await self.sql.query(sql, params)

    async def messages(
        self, session_id: str, offset: int = 0, limit: int | None = None
    ) -> list[dict[str, Any]]:
        """Messages in conversation order, from ``offset``."""
        sql = "SELECT body FROM chat_messages WHERE session_id = ? ORDER BY seq, record"
        params: list[Any] = [session_id]
        if limit is not None:
            sql += " LIMIT ? OFFSET ?"
            params += [limit, offset]
        elif offset:
            sql += " OFFSET ?"
            params.append(offset)
        result = await self.query(sql, params)
        return [loads(body) for body in result.column("body")]

    async def latest_messages(self, session_id: str, limit: int) -> list[dict[str, Any]]:
        result = await self.query(
            "SELECT body FROM (SELECT seq, record, body FROM chat_messages WHERE session_id = ? "
            "ORDER BY seq DESC, record DESC LIMIT ?) ORDER BY seq, record",
            [session_id, limit],
        )
        return [loads(body) for body in result.column("body")]

    async def message(self, session_id: str, message_id: str) -> tuple[str, dict[str, Any]] | None:
        """(record name, message) of one message by id, or None."""
        result = await self.query(
            "SELECT record, body FROM chat_messages WHERE session_id = ? AND id = ? LIMIT 1",
            [session_id, message_id],
        )
        if not len(result):
            return None
        record, body = result.tuples()[0]
        return record, loads(body)

    async def records_of(self, session_id: str, message_ids: Sequence[str]) -> dict[str, str]:
        """{record name: message id} of the named messages of a session (those that exist)."""
        found = await self.messages_by_id(session_id, message_ids)
        return {record: message_id for message_id, (record, _) in found.items()}

    async def messages_by_id(
        self, session_id: str, message_ids: Sequence[str]
    ) -> dict[str, tuple[str, dict[str, Any]]]:
        """{message id: (record name, message)} of the named messages of a session that
        exist: a statement per 500 ids, not one per message."""
        found: dict[str, tuple[str, dict[str, Any]]] = {}
        ids = list(message_ids)
        for start in range(0, len(ids), 500):  # bound parameters, in statements of a fair size
            chunk = ids[start : start + 500]
            marks = ", ".join("?" for _ in chunk)
            result = await self.query(
                "SELECT id, record, body FROM chat_messages "
                f"WHERE session_id = ? AND id IN ({marks})",
                [session_id, *chunk],
            )
            found.update({mid: (record, loads(body)) for mid, record, body in result.tuples()})
        return found

    async def stored_bodies(self) -> dict[tuple[str, str], str]:
        """Every message row's JSON body by (session id, record name)."""
        result = await self.query("SELECT session_id, record, body FROM chat_messages", [])
        return {(sid, record): body for sid, record, body in result.tuples()}

    async def max_seqs(self) -> dict[str, int]:
        """The highest message seq of every session, to continue numbering after a start."""
        result = await self.query(
            "SELECT session_id, max(seq) AS top FROM chat_messages GROUP BY session_id", []
        )
        return dict(result.tuples())

    async def message_counts(self) -> dict[str, int]:
        result = await self.query(
            "SELECT session_id, count(*) AS n FROM chat_messages GROUP BY session_id", []
        )
        return {sid: int(n) for sid, n in result.tuples()}

    async def message_count(self, session_id: str) -> int:
        result = await self.query(
            "SELECT count(*) AS n FROM chat_messages WHERE session_id = ?", [session_id]
        )
        return int(result.scalar())

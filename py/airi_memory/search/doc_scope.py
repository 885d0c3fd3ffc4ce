"""Which docs a search's filters allow, answered beside DuckDB from each message's
session, role and time (``SearchFilters``; the rankers take the docs it allows).

DuckDB answered it with a statement over every message, joined to its session for a
character or a user: 9-12 ms at 100,000 messages in DuckDB-WASM, more than the ranking
it narrows. A port, one implementation per place: the browser's is typed arrays in the
worker (web/worker/doc-scope.mjs, ``browser.doc_scope``); ``PythonDocScope`` is the same
in Python, for CPython. The session mirror keeps it as it keeps the term index
(``SearchTables``): rows inserted, docs deleted, tables created afresh, and a snapshot's
``chat_messages`` read at start-up. Characters and users are sessions' fields: the
sessions in scope are found from the sessions the store holds (``sessions_in_scope``).
"""

from array import array
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Protocol

from ..models import ChatSessionMeta
from .filters import SearchFilters

MESSAGES = "chat_messages"  # the snapshot's table this reads its rows from
COLUMNS = ("doc", "session_id", "role", "created_at")


class DocScope(Protocol):
    def add(
        self,
        docs: Sequence[int],
        session_ids: Sequence[str],
        roles: Sequence[str],
        created_at: Sequence[int],
    ) -> None:
        """Messages just inserted in the mirror; a doc removed before stays removed."""

    def add_saved(self, messages_table: Any) -> None:
        """The rows of a snapshot's ``chat_messages``, as this place's SQL engine exported
        it (``SqlEngine.export_table``)."""

    def remove(self, docs: Sequence[int]) -> None: ...

    def clear(self) -> None: ...

    def __len__(self) -> int:
        """How many live docs it holds."""

    def allowed(
        self,
        session_ids: Iterable[str] | None,
        roles: Sequence[str] | None,
        date_range: tuple[int, int] | None,
    ) -> "array[int]":
        """The live docs, ascending, in one of ``session_ids`` (any session when None),
        with one of ``roles`` (any when None), created within ``date_range`` (inclusive)."""


# Makes an empty scope.
DocScopeFactory = Callable[[], DocScope]


class PythonDocScope:
    """The scope in a Python dict: what the browser's typed arrays hold, at Python's speed."""

    def __init__(self) -> None:
        self.rows: dict[int, tuple[str, str, int]] = {}
        self.removed: set[int] = set()

    def add(
        self,
        docs: Sequence[int],
        session_ids: Sequence[str],
        roles: Sequence[str],
        created_at: Sequence[int],
    ) -> None:
        for doc, session_id, role, created in zip(
            docs, session_ids, roles, created_at, strict=True
        ):
            if doc not in self.removed:
                self.rows[doc] = (session_id, role, created)

    def add_saved(self, messages_table: Any) -> None:
        """The CPython engine's export: pickled columns (``native.sql``)."""
        import pickle  # as in PythonTermIndex.add_saved

        columns = pickle.loads(messages_table)  # our own bytes
        self.add(*(columns[name] for name in COLUMNS))

    def remove(self, docs: Sequence[int]) -> None:
        for doc in docs:
            self.rows.pop(doc, None)
            self.removed.add(doc)

    def clear(self) -> None:
        self.rows.clear()
        self.removed.clear()

    def __len__(self) -> int:
        return len(self.rows)

    def allowed(
        self,
        session_ids: Iterable[str] | None,
        roles: Sequence[str] | None,
        date_range: tuple[int, int] | None,
    ) -> "array[int]":
        sessions = None if session_ids is None else set(session_ids)
        low, high = date_range if date_range is not None else (None, None)
        return array(
            "i",
            sorted(
                doc
                for doc, (session_id, role, created) in self.rows.items()
                if (sessions is None or session_id in sessions)
                and (roles is None or role in roles)
                and (low is None or low <= created <= high)  # type: ignore[operator]
            ),
        )


def python_doc_scope() -> DocScope:
    return PythonDocScope()


def sessions_in_scope(
    filters: SearchFilters, own: Callable[[], Iterable[ChatSessionMeta]], other_users: bool
) -> set[str] | None:
    """The sessions whose messages ``filters`` let this user's search see, from ``own()``
    (this user's sessions, asked only when needed), or None when every session's may be
    seen. As the filter's SQL (``filters.scope``) says: a character, or another user in
    the store, confines a search to sessions the store holds; session ids alone do not."""
    if filters.character_ids is None and not other_users:
        return None if filters.session_ids is None else set(filters.session_ids)
    found = {
        meta.session_id
        for meta in own()
        if filters.character_ids is None or meta.character_id in filters.character_ids
    }
    return found if filters.session_ids is None else found & set(filters.session_ids)


def allowed_docs(
    scope: DocScope,
    filters: SearchFilters,
    own: Callable[[], Iterable[ChatSessionMeta]],
    other_users: bool,
) -> "array[int] | None":
    """The docs ``filters`` let this user's search rank, or None when it allows every doc."""
    sessions = sessions_in_scope(filters, own, other_users)
    if sessions is None and filters.roles is None and filters.date_range is None:
        return None
    if filters.roles == [] or sessions == set():
        return array("i")
    return scope.allowed(sessions, filters.roles, filters.date_range)

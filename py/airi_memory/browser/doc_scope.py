"""The doc scope port in the browser: web/worker/doc-scope.mjs (each message's session,
role and time in typed arrays in the worker), beside Python. Docs cross as typed arrays."""

from array import array
from collections.abc import Iterable, Sequence
from typing import Any

from pyodide.ffi import to_js

from ..search.doc_scope import DocScope, DocScopeFactory


class JsDocScope:
    def __init__(self, scope: Any, add_saved: Any) -> None:
        self.scope = scope
        self._add_saved = add_saved

    def add(
        self,
        docs: Sequence[int],
        session_ids: Sequence[str],
        roles: Sequence[str],
        created_at: Sequence[int],
    ) -> None:
        self.scope.add(
            to_js(array("i", docs)),
            to_js(list(session_ids)),
            to_js(list(roles)),
            to_js(array("d", created_at)),
        )

    def add_saved(self, messages_table: Any) -> None:
        """DuckDB-WASM's export (Arrow IPC, still in JS): read there, never in Python."""
        self._add_saved(self.scope, messages_table)

    def remove(self, docs: Sequence[int]) -> None:
        self.scope.remove(to_js(array("i", docs)))

    def clear(self) -> None:
        self.scope.clear()

    def __len__(self) -> int:
        return int(self.scope.size)

    def allowed(
        self,
        session_ids: Iterable[str] | None,
        roles: Sequence[str] | None,
        date_range: tuple[int, int] | None,
    ) -> "array[int]":
        low, high = date_range if date_range is not None else (None, None)
        found = self.scope.allowed(
            None if session_ids is None else to_js(list(session_ids)),
            None if roles is None else to_js(list(roles)),
            low,
            high,
        )
        docs = array("i")
        docs.frombytes(found.to_bytes())
        return docs


def js_doc_scope(host_scope: Any) -> DocScopeFactory:
    """The factory the system makes its doc scope with, from the host's ``docScope``."""

    def new_scope() -> DocScope:
        return JsDocScope(host_scope.create(), host_scope.addSaved)

    return new_scope

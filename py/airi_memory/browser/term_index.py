"""The term index port in the browser: web/worker/term-index.mjs (postings in typed
arrays, BM25 scored in the worker's JS), beside Python. Numbers cross as typed arrays;
term hashes as 64-bit integers (BigInt64Array)."""

from array import array
from collections.abc import Sequence
from typing import Any

from pyodide.ffi import to_js

from ..search.term_index import TermIndex, TermIndexFactory


class JsTermIndex:
    def __init__(self, index: Any, add_saved: Any, saved: Any) -> None:
        self.index = index
        self._add_saved = add_saved
        self._saved = saved

    def add(
        self,
        docs: Sequence[int],
        lengths: Sequence[int],
        posting_docs: Sequence[int],
        terms: Sequence[int],
        tfs: Sequence[int],
    ) -> None:
        self.index.add(
            to_js(array("i", docs)),
            to_js(array("i", lengths)),
            to_js(array("i", posting_docs)),
            to_js(array("q", terms)),
            to_js(array("i", tfs)),
        )

    def add_saved(self, terms_table: Any, text_table: Any) -> None:
        """DuckDB-WASM's exports (Arrow IPC, still in JS): read there, never in Python."""
        self._add_saved(self.index, terms_table, text_table)

    def saved(self) -> Any:
        """Arrow IPC bytes, made in JS and left there (a Uint8Array) for storage to keep."""
        return self._saved(self.index)

    def remove(self, docs: Sequence[int]) -> None:
        self.index.remove(to_js(array("i", docs)))

    def clear(self) -> None:
        self.index.clear()

    def __len__(self) -> int:
        return int(self.index.size)

    def top_k(
        self,
        terms: Sequence[int],
        qtfs: Sequence[int],
        k: int,
        allow: Sequence[int] | None,
        scoped_stats: bool,
    ) -> list[tuple[int, float, int]]:
        allowed = None if allow is None else to_js(array("i", allow))
        found = self.index.topK(
            to_js(array("q", terms)), to_js(array("i", qtfs)), k, allowed, scoped_stats
        )
        return list(
            zip(
                found.docs.to_py().tolist(),
                found.scores.to_py().tolist(),
                found.matched.to_py().tolist(),
                strict=True,
            )
        )


def js_term_index(host_terms: Any) -> TermIndexFactory:
    """The factory the system makes its term index with, from the host's ``termIndex``."""

    def new_index() -> TermIndex:
        return JsTermIndex(host_terms.create(), host_terms.addSaved, host_terms.saved)

    return new_index

"""The vectors' top-k scan, held beside DuckDB: int8 codes and a scale per message doc,
scored by inner product with a query quantised to i16 (exact integer dots).

A port, one implementation per place: the browser's is web/worker/vector-scan.mjs (128-bit
WebAssembly SIMD, 0.08x a plain float32 scan in JavaScript; ``browser.vector_scan``);
``PythonVectorScan`` is the same arithmetic in Python, for CPython and as the reference.
DuckDB keeps the truth (``message_vectors``); the scan is filled from what was inserted
there, and ``search.semantic`` drops a doc the scan still holds once DuckDB no longer does.
"""

import math
import operator
from array import array
from collections.abc import Awaitable, Callable, Sequence
from typing import Protocol

from .vector_batches import Buffer


class VectorScan(Protocol):
    def add(self, docs: Sequence[int], codes: Buffer, scales: Buffer) -> None:
        """Vectors of ``docs`` (int8 codes row after row, float32 scales: bytes, or views
        of a stored record as this place's storage read it); a doc held already gets the
        new vector."""

    def remove(self, docs: Sequence[int]) -> None: ...

    def relabel(self, old: Sequence[int], new: Sequence[int]) -> None:
        """``old[i]`` is held as ``new[i]`` from now on, all in one step (the two may
        share numbers); unknown old docs are ignored. An error, nothing changed, if a doc
        would be held twice (ValueError here, RangeError from the browser's scan)."""

    def __len__(self) -> int:
        """How many docs it holds."""

    def top_k(
        self, query: Sequence[float], k: int, allow: Sequence[int] | None
    ) -> list[tuple[int, float]]:
        """The best ``k`` (doc, score) by inner product with the unit ``query``, best
        first, ties by the smaller doc; only docs in ``allow`` when it is given."""

    def clear(self) -> None: ...


# Opens an empty scan for vectors of this many dimensions.
ScanFactory = Callable[[int], Awaitable[VectorScan]]


def query_steps(dims: int) -> int:
    """The query's code range: as fine as an i32 dot of ``dims`` int8 codes can hold."""
    return min(32767, (2**31 - 1) // (dims * 127))


class PythonVectorScan:
    """The scan in plain Python: the browser's arithmetic, at Python's speed."""

    def __init__(self, dims: int) -> None:
        self.dims = dims
        self.vectors: dict[int, tuple[array, float]] = {}

    def add(self, docs: Sequence[int], codes: Buffer, scales: Buffer) -> None:
        scale_values = memoryview(scales).cast("f")
        code_values = memoryview(codes).cast("b")
        for row, doc in enumerate(docs):
            row_codes = array("b", code_values[row * self.dims : (row + 1) * self.dims])
            self.vectors[doc] = (row_codes, scale_values[row])

    def remove(self, docs: Sequence[int]) -> None:
        for doc in docs:
            self.vectors.pop(doc, None)

    def relabel(self, old: Sequence[int], new: Sequence[int]) -> None:
        if len(old) != len(new):
            raise ValueError("relabel needs as many new docs as old")
        moved = {doc: self.vectors[doc] for doc in old if doc in self.vectors}
        renamed = {to: moved[doc] for doc, to in zip(old, new, strict=True) if doc in moved}
        kept = self.vectors.keys() - moved.keys()
        if len(renamed) < len(moved) or kept & renamed.keys():
            raise ValueError("relabel would hold a doc twice")
        for doc in moved:
            del self.vectors[doc]
        self.vectors.update(renamed)

    def __len__(self) -> int:
        return len(self.vectors)

    def top_k(
        self, query: Sequence[float], k: int, allow: Sequence[int] | None
    ) -> list[tuple[int, float]]:
        peak = max((abs(x) for x in query), default=0.0)
        if peak == 0 or k <= 0:
            return []
        steps = query_steps(self.dims)
        codes = [round(x * steps / peak) for x in query]
        query_scale = peak / steps
        docs = self.vectors if allow is None else set(allow) & self.vectors.keys()
        scored = []
        for doc in docs:
            row, scale = self.vectors[doc]
            dot = sum(map(operator.mul, row, codes))
            score = dot * scale * query_scale
            if math.isfinite(score):
                scored.append((doc, score))
        scored.sort(key=lambda pair: (-pair[1], pair[0]))
        return scored[:k]

    def clear(self) -> None:
        self.vectors.clear()


async def python_vector_scan(dims: int) -> VectorScan:
    return PythonVectorScan(dims)

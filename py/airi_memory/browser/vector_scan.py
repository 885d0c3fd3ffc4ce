"""The vector scan port in the browser: web/worker/vector-scan.mjs (128-bit WebAssembly
SIMD over int8 codes) in the worker, beside Python. Numbers cross as typed arrays."""

from array import array
from collections.abc import Sequence
from typing import Any

from js import Float32Array, Int8Array
from pyodide.ffi import JsProxy, to_js

from ..search.vector_scan import ScanFactory, VectorScan


class SimdVectorScan:
    def __init__(self, scan: Any) -> None:
        self.scan = scan

    def add(self, docs: Sequence[int], codes: Any, scales: Any) -> None:
        """``codes`` and ``scales``: bytes, or views of a stored record still in JS (a
        Uint8Array), which go to the scan without a copy into Python's heap."""
        if isinstance(codes, JsProxy):
            codes = Int8Array.new(codes.buffer, codes.byteOffset, codes.length)
        else:
            codes = to_js(memoryview(codes).cast("b"))
        if isinstance(scales, JsProxy):  # copied: a record's scales need not be 4-aligned
            scales = Float32Array.new(scales.slice().buffer)
        else:
            scales = to_js(memoryview(scales).cast("f"))
        self.scan.add(to_js(array("i", docs)), codes, scales)

    def remove(self, docs: Sequence[int]) -> None:
        self.scan.remove(to_js(array("i", docs)))

    def relabel(self, old: Sequence[int], new: Sequence[int]) -> None:
        self.scan.relabel(to_js(array("i", old)), to_js(array("i", new)))

    def __len__(self) -> int:
        return int(self.scan.size)

    def top_k(
        self, query: Sequence[float], k: int, allow: Sequence[int] | None
    ) -> list[tuple[int, float]]:
        allowed = None if allow is None else to_js(array("i", allow))
        found = self.scan.topK(to_js(array("f", query)), k, allowed)
        return list(zip(found.docs.to_py().tolist(), found.scores.to_py().tolist(), strict=True))

    def clear(self) -> None:
        self.scan.clear()


def simd_vector_scan(host_scan: Any) -> ScanFactory:
    """The factory the system opens a scan with, from the host's ``vectorScan``."""

    async def new_scan(dims: int) -> VectorScan:
        return SimdVectorScan(await host_scan.create(dims))

    return new_scan

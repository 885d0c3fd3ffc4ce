"""The vector scan port in the browser: web/worker/vector-scan.mjs (128-bit WebAssembly
SIMD over int8 codes) in the worker, beside Python. Numbers cross as typed arrays."""

from array import array
from collections.abc import Sequence
from typing import Any

from pyodide.ffi import to_js

from ..search.vector_scan import ScanFactory, VectorScan


class SimdVectorScan:
    def __init__(self, scan: Any) -> None:
        self.scan = scan

    def add(self, docs: Sequence[int], codes: bytes, scales: bytes) -> None:
        self.scan.add(
            to_js(array("i", docs)),
            to_js(memoryview(codes).cast("b")),
            to_js(memoryview(scales).cast("f")),
        )

    def remove(self, docs: Sequence[int]) -> None:
        self.scan.remove(to_js(array("i", docs)))

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

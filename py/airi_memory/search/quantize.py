"""Message vectors as int8 codes with one float scale per vector.

A quarter of float32's memory (38 MB instead of 154 MB for 100k x 384 in DuckDB and in
IndexedDB), and scores within about 0.01 of exact cosine: the retrieval eval does not
move. Each vector is scaled so its largest component is 127, so short and long vectors
keep the same precision.
"""

from array import array

CODE_MAX = 127


def quantize(vectors: bytes, dimensions: int) -> tuple[bytes, bytes]:
    """float32 rows -> (int8 codes, row after row; one float32 scale per row)."""
    floats = array("f", vectors)
    codes = array("b")
    scales = array("f")
    for start in range(0, len(floats), dimensions):
        row = floats[start : start + dimensions]
        peak = max(max(row), -min(row)) or 1.0
        factor = CODE_MAX / peak
        codes.extend([round(value * factor) for value in row])
        scales.append(peak / CODE_MAX)
    return codes.tobytes(), scales.tobytes()

"""The stored format of message vectors: one record per stored batch (an embedding window,
or small ones merged), under ``local:memory:vectors:<model key>:...``.

A record is a length-prefixed JSON header (the keys, the dimensions, the encoding), then
the int8 codes row after row, then one float32 scale per row. A key names a vector's
message and the text it was made from: (session id, record, text hash). The keys go by
column, each session id once: a third of the bytes of a list per key, and parsed without
the nesting check (a scan of every bracket) that text with a list per key needs.
Older versions stored a list per key, without the text hash at first, and float32s
before int8: those still load.

Decoding takes a record as storage read it (``*_native``: bytes, or a buffer still in the
host) and copies only the header: the codes and scales stay views of the record, so a
start-up's vectors need not pass through Python's heap, which never gives memory back.
"""

import json
import struct
from array import array
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from ..storage.driver import native_bytes, native_slice
from ..storage.values import loads
from .quantize import quantize

# A vector's key: (session id, record, text hash); (session id, record) in batches stored
# before the hash was kept, which are taken as they are.
VectorKey = tuple[str, ...]
# Codes or scales: bytes, or a view of a stored record (a memoryview, or a host buffer).
Buffer = Any


@dataclass
class StoredBatch:
    """One record's keys by column, and views of its codes and scales."""

    session_ids: list[str]
    records: list[str]
    hashes: list[str] | None  # None: stored before the text hash was kept
    codes: Buffer
    scales: Buffer
    dims: int

    def __len__(self) -> int:
        return len(self.records)

    @property
    def keys(self) -> list[VectorKey]:
        if self.hashes is None:
            return list(zip(self.session_ids, self.records, strict=True))
        return list(zip(self.session_ids, self.records, self.hashes, strict=True))


def encode_batch(keys: Sequence[VectorKey], codes: bytes, scales: bytes, dimensions: int) -> bytes:
    sessions = sorted({key[0] for key in keys})
    number = {session_id: n for n, session_id in enumerate(sessions)}
    header = json.dumps(
        {
            "sessions": sessions,
            "session": [number[key[0]] for key in keys],
            "records": [key[1] for key in keys],
            "hashes": [key[2] for key in keys],
            "dimensions": dimensions,
            "encoding": "int8",
        }
    ).encode()
    return struct.pack("<I", len(header)) + header + codes + scales


def decode_batch(data: Any) -> StoredBatch:
    """A stored record (bytes, or a host buffer from a ``*_native`` read)."""
    (size,) = struct.unpack("<I", native_bytes(native_slice(data, 0, 4)))
    header = loads(native_bytes(native_slice(data, 4, 4 + size)))
    if "sessions" in header:
        sessions = header["sessions"]
        session_ids = [sessions[n] for n in header["session"]]
        records, hashes = header["records"], header["hashes"]
    else:
        keys = header["keys"]
        session_ids, records = [key[0] for key in keys], [key[1] for key in keys]
        hashes = [key[2] for key in keys] if keys and len(keys[0]) > 2 else None
    dims, start, count = int(header["dimensions"]), 4 + size, len(records)
    if header.get("encoding") != "int8":  # float32s, before int8
        codes, scales = quantize(native_bytes(native_slice(data, start, len(data))), dims)
    else:
        codes = native_slice(data, start, start + count * dims)
        scales = native_slice(data, start + count * dims, start + count * (dims + 4))
    return StoredBatch(session_ids, records, hashes, codes, scales, dims)


def rows_of(codes: Buffer, scales: Buffer, rows: Sequence[int], dims: int) -> tuple[bytes, bytes]:
    """The codes and scales of ``rows`` only, in that order."""
    codes, every_scale = native_bytes(codes), memoryview(native_bytes(scales)).cast("f")
    return (
        b"".join(codes[row * dims : (row + 1) * dims] for row in rows),
        array("f", [every_scale[row] for row in rows]).tobytes(),
    )

"""Our package and every package it needs, as one file the worker writes into Python's
site-packages while Pyodide boots (``fsInit`` in web/worker/site-packages.mjs).

Pyodide's own loader installs a wheel only once Python runs, unpacking it in Python
(zipfile, after importing tarfile and importlib.metadata for it), then loads
pydantic-core's wasm: in Chromium, Pyodide with our packages was ready 0.48 s after a bare
Pyodide, and with this bundle 0.02 s. Here the browser fetches and gunzips the files
beside Pyodide's boot, and JavaScript writes them.

Layout, gzipped: a little-endian u32 with the index's length, the index (JSON: a list of
``[path in site-packages, byte length]``), then every file's bytes in index order. The
name ends in ``.bin``, not ``.gz``: some servers send a ``.gz`` file with a
``Content-Encoding``, and the browser would unzip it before the worker does. The same
wheels as the lock, which still serve pytest-pyodide and anyone installing with
micropip. The same wheels give the same bytes (gzip's mtime 0).
"""

import base64
import gzip
import hashlib
import json
import struct
import zipfile
from pathlib import Path


def needed(lock: dict, root: str) -> list[str]:
    """``root`` and everything it depends on in the lock, transitively, sorted."""
    packages = lock["packages"]
    found: set[str] = set()
    pending = [root]
    while pending:
        name = pending.pop()
        if name not in found:
            found.add(name)
            pending.extend(packages[name]["depends"])
    return sorted(found)


def wheel_files(wheel: Path) -> list[tuple[str, bytes]]:
    """What installing the wheel puts in site-packages: its files at their own paths. A
    wheel with a ``.data`` directory would need more than that, and is refused."""
    files = []
    with zipfile.ZipFile(wheel) as archive:
        for info in archive.infolist():
            if info.is_dir():
                continue
            if info.filename.split("/")[0].endswith(".data"):
                raise SystemExit(f"{wheel.name}: .data directories are not supported")
            files.append((info.filename, archive.read(info)))
    return files


def write_site_bundle(wheels: list[Path], target: Path) -> str:
    """Writes the bundle of ``wheels`` to ``target``; returns its Subresource Integrity
    value (``sha256-...``), which the worker's fetch checks."""
    files = [entry for wheel in wheels for entry in wheel_files(wheel)]
    index = json.dumps([[name, len(data)] for name, data in files]).encode()
    body = struct.pack("<I", len(index)) + index + b"".join(data for _, data in files)
    target.write_bytes(gzip.compress(body, compresslevel=9, mtime=0))
    digest = hashlib.sha256(target.read_bytes()).digest()
    return "sha256-" + base64.b64encode(digest).decode()

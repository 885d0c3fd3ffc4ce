"""Bytecode made at build time, run inside Pyodide under Node (build/compile_wheels.mjs,
build/compile_stdlib.mjs), so it is the runtime's own Python's and the browser compiles
none of it at start-up.

A wheel has its sources replaced (``compile_wheel``), as Pyodide ships its own packages:
each ``x.py`` becomes ``x.pyc`` beside it (a sourceless module) and RECORD is written
again. Pyodide's standard library zip keeps its sources (tracebacks show their lines) and
gets a ``.pyc`` beside each module a start imports (``add_stdlib_bytecode``): it ships
sources only, so every start compiled asyncio, typing, pydantic's ipaddress and the rest
again. The bytecode is checked against nothing (``UNCHECKED_HASH``: the files never
change once built), and the output is byte-identical for the same input: fixed zip dates,
no timestamps in the bytecode.
"""

import base64
import hashlib
import py_compile
import tempfile
import zipfile
from pathlib import Path

FIXED_DATE = (2026, 1, 1, 0, 0, 0)


def _record_line(name: str, data: bytes) -> str:
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{name},sha256={digest},{len(data)}"


def _entry(name: str) -> zipfile.ZipInfo:
    """A deflated, world-readable file at the fixed date: the same bytes every build."""
    info = zipfile.ZipInfo(name, FIXED_DATE)
    info.compress_type = zipfile.ZIP_DEFLATED
    info.external_attr = 0o644 << 16
    return info


def _bytecode(name: str, source: bytes) -> bytes:
    with tempfile.TemporaryDirectory() as scratch:
        source_path = Path(scratch) / "module.py"
        source_path.write_bytes(source)
        compiled = Path(scratch) / "module.pyc"
        py_compile.compile(
            str(source_path),
            cfile=str(compiled),
            dfile=name,  # what a traceback names
            doraise=True,
            invalidation_mode=py_compile.PycInvalidationMode.UNCHECKED_HASH,
        )
        return compiled.read_bytes()


def compile_wheel(source: str, target: str) -> int:
    """``source`` wheel to ``target`` with bytecode; returns the modules compiled."""
    compiled = 0
    entries: list[tuple[str, bytes]] = []
    record_name = ""
    with zipfile.ZipFile(source) as wheel:
        for info in wheel.infolist():
            if info.is_dir():
                continue
            data = wheel.read(info)
            if info.filename.endswith(".dist-info/RECORD"):
                record_name = info.filename
                continue
            if info.filename.endswith(".py"):
                entries.append((info.filename + "c", _bytecode(info.filename, data)))
                compiled += 1
            else:
                entries.append((info.filename, data))
    if not record_name:
        raise ValueError(f"{source} has no RECORD: not a wheel")
    record = [_record_line(name, data) for name, data in entries] + [f"{record_name},,"]
    entries.append((record_name, ("\n".join(record) + "\n").encode()))
    with zipfile.ZipFile(target, "w", zipfile.ZIP_DEFLATED) as out:
        for name, data in entries:
            out.writestr(_entry(name), data)
    return compiled


def add_stdlib_bytecode(source: str, target: str, modules: list[str], mounted_at: str) -> int:
    """``source`` zip to ``target`` with bytecode beside each of ``modules`` (paths of
    sources inside the zip); returns how many were compiled. zipimport looks for
    ``x.pyc`` before ``x.py``. ``mounted_at``: where Python finds the zip, so the code
    names its files as it would had it compiled them at start-up."""
    missing = set(modules)
    with zipfile.ZipFile(source) as stdlib, zipfile.ZipFile(target, "w") as out:
        for info in stdlib.infolist():
            data = stdlib.read(info)
            out.writestr(info, data)
            if info.filename in missing:
                missing.discard(info.filename)
                bytecode = _bytecode(mounted_at + info.filename, data)
                out.writestr(_entry(info.filename + "c"), bytecode)
    if missing:
        raise ValueError(f"not in {source}: {sorted(missing)}")
    return len(set(modules))

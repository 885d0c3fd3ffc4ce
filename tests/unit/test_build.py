"""The offline build: reproducible wheel and lock, dependencies resolved for emscripten."""

import importlib.util
import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("build_dist", ROOT / "build" / "build_dist.py")
build_dist = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(build_dist)
# Downloaded (and hash-checked) by `make dist`, which `make test` runs first.
PINNED = sorted((ROOT / "build" / "out" / "pyodide-wheels").glob("*.whl"))


def test_own_wheel_and_lock_are_byte_identical_across_builds(tmp_path):
    first = build_dist.build_own_wheel(tmp_path / "one")
    second = build_dist.build_own_wheel(tmp_path / "two")
    assert first.name == second.name == "airi_memory-0.1.0-py3-none-any.whl"
    assert build_dist.sha256_of(first) == build_dist.sha256_of(second)
    locks = []
    for name, wheel in (("one", first), ("two", second)):
        runtime = tmp_path / f"runtime-{name}"
        runtime.mkdir()
        locks.append(build_dist.write_lock([*PINNED, wheel], runtime).read_bytes())
    assert locks[0] == locks[1]
    entry = json.loads(locks[0])["packages"]["airi-memory"]
    assert entry["depends"] == ["cachetools", "pydantic", "snowballstemmer", "typing-extensions"]
    assert entry["imports"] == ["airi_memory"]
    assert entry["sha256"] == build_dist.sha256_of(first)


def test_lock_refuses_a_dependency_no_pinned_wheel_gives(tmp_path):
    wheel = build_dist.build_own_wheel(tmp_path / "own")  # needs pydantic, which is absent
    try:
        build_dist.write_lock([wheel], tmp_path)
    except SystemExit as error:
        assert "pydantic" in str(error)
    else:
        raise AssertionError("a lock with a missing dependency was written")


def test_built_lock_pins_every_shipped_wheel():
    lock_path = ROOT / "dist" / "runtime" / "pyodide-lock.json"
    lock = json.loads(lock_path.read_text())
    assert lock["info"]["abi_version"] == "2026_0"
    for name, entry in lock["packages"].items():
        wheel = lock_path.parent / entry["file_name"]
        assert build_dist.sha256_of(wheel) == entry["sha256"], name
    assert {"airi-memory", "pydantic", "pydantic-core", "micropip", "packaging"} <= set(
        lock["packages"]
    )

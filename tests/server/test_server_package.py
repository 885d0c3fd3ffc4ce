"""The sync server ships as a package of its own (server/pyproject.toml), not in the
browser wheel: its wheel holds the migrations, and installed alone it migrates a database."""

import contextlib
import os
import socket
import subprocess
import sys
import time
import zipfile
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parents[2]


def test_the_server_wheel_holds_its_migrations_and_runs_installed(tmp_path: Path) -> None:
    subprocess.run(
        [sys.executable, "-m", "build", "--wheel", "--no-isolation", "--outdir", str(tmp_path),
         str(ROOT / "server")],
        check=True, capture_output=True,
    )  # fmt: skip
    (wheel,) = tmp_path.glob("airi_memory_server-0.1.0-*.whl")
    names = zipfile.ZipFile(wheel).namelist()
    assert "airi_memory_server/migrations/env.py" in names
    assert "airi_memory_server/migrations/script.py.mako" in names
    assert any(n.startswith("airi_memory_server/migrations/versions/0002") for n in names)
    assert not any(n.startswith("airi_memory/") for n in names)  # the core stays its own
    metadata = next(n for n in names if n.endswith("METADATA"))
    assert "Requires-Dist: airi-memory==0.1.0" in zipfile.ZipFile(wheel).read(metadata).decode()

    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-index",
         "--target", str(site), str(wheel)],
        check=True,
    )  # fmt: skip
    environment = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), str(ROOT / "py")])}
    done = subprocess.run(
        [sys.executable, "-m", "airi_memory_server", "--db", str(tmp_path / "s.sqlite3"),
         "migrate"],
        env=environment, cwd=tmp_path, capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert done.stdout.strip().splitlines()[-1] == "schema at revision 0002"
    assert (site / "bin" / "airi-memory-server").exists()


def test_the_demo_server_offers_a_working_sync_key(tmp_path: Path) -> None:
    """`make demo`: the page server starts the sync server and offers it a demo key."""
    ports = [_free_port(), _free_port()]
    command = [sys.executable, str(ROOT / "build" / "serve.py"), "--port", str(ports[0]),
               "--sync-port", str(ports[1]), "--sync-db", str(tmp_path / "demo.sqlite3"),
               "--directory", str(tmp_path)]  # fmt: skip
    page = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        offered = None
        for _ in range(300):
            with contextlib.suppress(httpx.HTTPError):
                reply = httpx.get(f"http://127.0.0.1:{ports[0]}/demo-sync.json", timeout=1)
                if reply.status_code == 200:
                    offered = reply.json()
                    break
            time.sleep(0.1)
        assert offered is not None and offered["endpoint"] == f"http://127.0.0.1:{ports[1]}"
        pulled = httpx.get(
            offered["endpoint"] + "/v1/sync/pull",
            headers={"Authorization": f"Bearer {offered['apiKey']}"}, timeout=5,
        )  # fmt: skip
        assert pulled.status_code == 200 and pulled.json()["operations"] == []
    finally:
        page.terminate()
        page.wait(timeout=10)
    with contextlib.suppress(httpx.HTTPError):  # the sync server went with it
        httpx.get(f"http://127.0.0.1:{ports[1]}/v1/health", timeout=1)
        raise AssertionError("the sync server outlived the demo server")


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]

"""The sync server ships as a package of its own (server/pyproject.toml), not in the
browser wheel: its wheel holds the migrations, and installed alone it migrates a database."""

import os
import subprocess
import sys
import zipfile
from pathlib import Path

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

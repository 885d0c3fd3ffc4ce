"""build/ensure_postgres.py: `make test` on a machine without PostgreSQL stops at once with the
one command to run (or installs it), instead of every sync server test failing on initdb."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "build" / "ensure_postgres.py"
_spec = importlib.util.spec_from_file_location("ensure_postgres", SCRIPT)
ensure_postgres = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ensure_postgres)


def run_check(tmp_path: Path, postgres_lib: Path) -> subprocess.CompletedProcess:
    """The check as make runs it, with a PATH on which there is no apt-get to install with."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--postgres-lib", str(postgres_lib)],
        env={"PATH": str(empty)},
        capture_output=True,
        text=True,
    )


def test_missing_postgres_stops_at_once_with_the_one_command_to_run(tmp_path):
    nowhere = tmp_path / "nowhere"
    result = run_check(tmp_path, nowhere)
    sudo = "" if os.geteuid() == 0 else "sudo "
    assert result.returncode == 1
    assert result.stdout == ""  # no attempt to install
    assert result.stderr.splitlines() == [
        f"The sync server's tests need PostgreSQL's binaries (initdb, pg_ctl) under {nowhere}.",
        "Install them (Debian or Ubuntu), then run make again:",
        f"    {sudo}apt-get update && {sudo}apt-get install -y postgresql",
    ]


def test_a_version_folder_without_initdb_counts_as_missing(tmp_path):
    lib = tmp_path / "postgresql"
    (lib / "15" / "bin").mkdir(parents=True)
    (lib / "15" / "bin" / "psql").write_text("")
    result = run_check(tmp_path, lib)
    assert result.returncode == 1
    assert f"under {lib}." in result.stderr


def test_an_installed_postgres_passes_silently(tmp_path):
    lib = tmp_path / "postgresql"
    (lib / "15" / "bin").mkdir(parents=True)
    (lib / "15" / "bin" / "initdb").write_text("")
    result = run_check(tmp_path, lib)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")


def test_the_newest_major_version_is_chosen(tmp_path):
    for version in ("9", "15", "13"):
        (tmp_path / version / "bin").mkdir(parents=True)
        (tmp_path / version / "bin" / "initdb").write_text("")
    assert ensure_postgres.postgres_bin_dir(tmp_path) == tmp_path / "15" / "bin"

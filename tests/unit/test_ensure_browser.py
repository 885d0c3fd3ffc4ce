"""build/ensure_browser.py: `make test` on a machine without Chromium stops at once with the
one command to run (or installs it), instead of a hundred browser-test errors."""

import importlib.util
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "build" / "ensure_browser.py"
_spec = importlib.util.spec_from_file_location("ensure_browser", SCRIPT)
ensure_browser = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(ensure_browser)


def run_check(tmp_path: Path, chromium: str, chromedriver: str) -> subprocess.CompletedProcess:
    """The check as make runs it, with a PATH on which there is no apt-get to install with."""
    empty = tmp_path / "empty-bin"
    empty.mkdir(exist_ok=True)
    return subprocess.run(
        [sys.executable, str(SCRIPT), "--chromium", chromium, "--chromedriver", chromedriver],
        env={"PATH": str(empty)},
        capture_output=True,
        text=True,
    )


def test_a_missing_browser_stops_at_once_with_the_one_command_to_run(tmp_path):
    nowhere = tmp_path / "nowhere"
    result = run_check(tmp_path, str(nowhere / "chromium"), str(nowhere / "chromedriver"))
    sudo = "" if os.geteuid() == 0 else "sudo "
    assert result.returncode == 1
    assert result.stdout == ""  # no attempt to install
    assert result.stderr.splitlines() == [
        f"The browser tests need Chromium and ChromeDriver; missing: "
        f"{nowhere / 'chromium'}, {nowhere / 'chromedriver'}.",
        "Install them (Debian or Ubuntu), then run make again:",
        f"    {sudo}apt-get update && {sudo}apt-get install -y chromium chromium-driver",
    ]


def test_a_non_executable_chromedriver_counts_as_missing(tmp_path):
    chromedriver = tmp_path / "chromedriver"
    chromedriver.write_text("")
    result = run_check(tmp_path, sys.executable, str(chromedriver))
    assert result.returncode == 1
    assert f"missing: {chromedriver}." in result.stderr


def test_an_installed_browser_passes_silently(tmp_path):
    result = run_check(tmp_path, sys.executable, sys.executable)
    assert (result.returncode, result.stdout, result.stderr) == (0, "", "")

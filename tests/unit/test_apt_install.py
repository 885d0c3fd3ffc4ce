"""build/apt_install.py, which the browser and PostgreSQL checks share: packages are
installed non-interactively after fresh package lists, and a failed step stops it."""

import importlib.util
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
_spec = importlib.util.spec_from_file_location("apt_install", ROOT / "build" / "apt_install.py")
apt_install = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(apt_install)


def fake_apt_get(tmp_path: Path, exit_status: int) -> tuple[Path, Path]:
    """An apt-get that records each call (with DEBIAN_FRONTEND) and exits as told."""
    log = tmp_path / "apt-get.log"
    apt_get = tmp_path / "apt-get"
    apt_get.write_text(f'#!/bin/sh\necho "$DEBIAN_FRONTEND $*" >> {log}\nexit {exit_status}\n')
    apt_get.chmod(0o755)
    return apt_get, log


def test_install_updates_the_package_lists_then_installs_without_questions(tmp_path):
    apt_get, log = fake_apt_get(tmp_path, exit_status=0)
    assert apt_install.install(str(apt_get), ["chromium", "chromium-driver"]) is True
    assert log.read_text().splitlines() == [
        "noninteractive update -qq",
        "noninteractive install -y -qq chromium chromium-driver",
    ]


def test_install_stops_when_apt_get_fails(tmp_path):
    apt_get, log = fake_apt_get(tmp_path, exit_status=100)
    assert apt_install.install(str(apt_get), ["postgresql"]) is False
    assert log.read_text().splitlines() == ["noninteractive update -qq"]

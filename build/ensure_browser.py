"""Make sure the browser tests can start Debian's Chromium and ChromeDriver.

`make test` (and soak, bench, eval) and `.ci/run` run this first. When either file is
missing where tests/browser_flags.py looks, it installs both with apt when it can (as
root, with apt-get on the PATH); otherwise it stops at once with the one command to run,
instead of every browser test failing on a missing /usr/bin/chromedriver. Standard
library only: it runs with the system's python3, before the venv exists.
"""

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser_flags import CHROMEDRIVER, CHROMIUM  # noqa: E402

APT_PACKAGES = ["chromium", "chromium-driver"]


def missing(paths: list[str]) -> list[str]:
    """The paths that are not an executable file."""
    return [path for path in paths if not (os.path.isfile(path) and os.access(path, os.X_OK))]


def install_command(as_root: bool) -> str:
    """What to run by hand: a fresh Debian image has no package lists, hence the update."""
    sudo = "" if as_root else "sudo "
    return f"{sudo}apt-get update && {sudo}apt-get install -y {' '.join(APT_PACKAGES)}"


def install(apt_get: str) -> bool:
    """Install the packages with ``apt_get``, quietly and without questions."""
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"installing {' '.join(APT_PACKAGES)} with apt-get ...", flush=True)
    steps = [[apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", *APT_PACKAGES]]
    return all(
        subprocess.run(step, env=environment, stdout=subprocess.DEVNULL).returncode == 0
        for step in steps
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--chromedriver", default=CHROMEDRIVER)
    args = parser.parse_args(argv)
    wanted = [args.chromium, args.chromedriver]
    if not missing(wanted):
        return 0
    as_root = os.geteuid() == 0
    apt_get = shutil.which("apt-get")
    if as_root and apt_get and install(apt_get) and not missing(wanted):
        return 0
    print(
        f"The browser tests need Chromium and ChromeDriver; missing: {', '.join(missing(wanted))}."
        f"\nInstall them (Debian or Ubuntu), then run make again:\n    {install_command(as_root)}",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())

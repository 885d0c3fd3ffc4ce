"""Install Debian packages a test layer needs, or say at once how to.

Shared by build/ensure_browser.py and build/ensure_postgres.py: when what a layer needs
is missing, install its packages with apt when it can (as root, with apt-get on the
PATH), else stop with the one command to run. Standard library only: it runs with the
system's python3, before the venv exists.
"""

import os
import shutil
import subprocess
import sys
from collections.abc import Callable


def install_command(packages: list[str], as_root: bool) -> str:
    """What to run by hand: a fresh Debian image has no package lists, hence the update."""
    sudo = "" if as_root else "sudo "
    return f"{sudo}apt-get update && {sudo}apt-get install -y {' '.join(packages)}"


def install(apt_get: str, packages: list[str]) -> bool:
    """Install ``packages`` with ``apt_get``, quietly and without questions."""
    environment = {**os.environ, "DEBIAN_FRONTEND": "noninteractive"}
    print(f"installing {' '.join(packages)} with apt-get ...", flush=True)
    steps = [[apt_get, "update", "-qq"], [apt_get, "install", "-y", "-qq", *packages]]
    return all(
        subprocess.run(step, env=environment, stdout=subprocess.DEVNULL).returncode == 0
        for step in steps
    )


def ensure(present: Callable[[], bool], packages: list[str], why: Callable[[], str]) -> int:
    """0 when ``present()`` holds, after installing ``packages`` if needed and possible;
    else 1, with ``why()`` and the command to run on stderr."""
    if present():
        return 0
    as_root = os.geteuid() == 0
    apt_get = shutil.which("apt-get")
    if as_root and apt_get and install(apt_get, packages) and present():
        return 0
    print(
        f"{why()}\nInstall them (Debian or Ubuntu), then run make again:\n"
        f"    {install_command(packages, as_root)}",
        file=sys.stderr,
    )
    return 1

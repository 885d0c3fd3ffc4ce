"""Make sure the sync server's tests can start Debian's PostgreSQL.

`make test` and `.ci/run` run this first. The tests start a throwaway cluster of their
own (tests/postgres_cluster.py) from the `postgresql` package's binaries; when those are
missing it installs the package with apt when it can (as root, with apt-get on the
PATH), else it stops at once with the one command to run. Standard library only: it
runs with the system's python3, before the venv exists. `--postgres-lib` looks somewhere
else than /usr/lib/postgresql (its tests point it at nothing).
"""

import argparse
import os
import shutil
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from postgres_cluster import POSTGRES_LIB, postgres_bin_dir  # noqa: E402

APT_PACKAGES = ["postgresql"]


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
    parser.add_argument("--postgres-lib", type=Path, default=POSTGRES_LIB)
    lib = parser.parse_args(argv).postgres_lib
    if postgres_bin_dir(lib) is not None:
        return 0
    as_root = os.geteuid() == 0
    apt_get = shutil.which("apt-get")
    if as_root and apt_get and install(apt_get) and postgres_bin_dir(lib) is not None:
        return 0
    print(
        "The sync server's tests need PostgreSQL's binaries (initdb, pg_ctl) under "
        f"{lib}.\nInstall them (Debian or Ubuntu), then run make again:\n"
        f"    {install_command(as_root)}",
        file=sys.stderr,
    )
    return 1


if __name__ == "__main__":
    sys.exit(main())

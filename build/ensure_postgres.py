"""Make sure the sync server's tests can start Debian's PostgreSQL.

`make test` and `.ci/run` run this first. The tests start a throwaway cluster of their
own (tests/postgres_cluster.py) from the `postgresql` package's binaries; when those are
missing it installs the package with apt when it can (as root, with apt-get on the
PATH), else it stops at once with the one command to run. Standard library only: it
runs with the system's python3, before the venv exists. `--postgres-lib` looks somewhere
else than /usr/lib/postgresql (its tests point it at nothing).
"""

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "build"), str(ROOT / "tests")]
import apt_install  # noqa: E402
from postgres_cluster import POSTGRES_LIB, postgres_bin_dir  # noqa: E402

APT_PACKAGES = ["postgresql"]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--postgres-lib", type=Path, default=POSTGRES_LIB)
    lib = parser.parse_args(argv).postgres_lib
    return apt_install.ensure(
        lambda: postgres_bin_dir(lib) is not None,
        APT_PACKAGES,
        lambda: f"The sync server's tests need PostgreSQL's binaries (initdb, pg_ctl) under {lib}.",
    )


if __name__ == "__main__":
    sys.exit(main())

"""Make sure the browser tests can start Debian's Chromium and ChromeDriver.

`make test` (and soak, bench, eval) and `.ci/run` run this first. When either file is
missing where tests/browser_flags.py looks, it installs both with apt when it can (as
root, with apt-get on the PATH); otherwise it stops at once with the one command to run,
instead of every browser test failing on a missing /usr/bin/chromedriver. Standard
library only: it runs with the system's python3, before the venv exists.
"""

import argparse
import os
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "build"), str(ROOT / "tests")]
import apt_install  # noqa: E402
from browser_flags import CHROMEDRIVER, CHROMIUM  # noqa: E402

APT_PACKAGES = ["chromium", "chromium-driver"]


def missing(paths: list[str]) -> list[str]:
    """The paths that are not an executable file."""
    return [path for path in paths if not (os.path.isfile(path) and os.access(path, os.X_OK))]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chromium", default=CHROMIUM)
    parser.add_argument("--chromedriver", default=CHROMEDRIVER)
    args = parser.parse_args(argv)
    wanted = [args.chromium, args.chromedriver]
    return apt_install.ensure(
        lambda: not missing(wanted),
        APT_PACKAGES,
        lambda: (
            "The browser tests need Chromium and ChromeDriver; "
            f"missing: {', '.join(missing(wanted))}."
        ),
    )


if __name__ == "__main__":
    sys.exit(main())

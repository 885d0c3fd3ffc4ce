"""A throwaway PostgreSQL cluster for the sync server's tests: Debian's binaries, a
temporary data directory, a free loopback port, trust auth, gone when stopped.

Needs only the `postgresql` package (build/ensure_postgres.py installs it). PostgreSQL
refuses to run as root, so as root the cluster runs as the `postgres` OS user the
package creates. The server's tests connect as a plain role, not the superuser, so that
row-level security applies to them as it would in production.
"""

import os
import pwd
import shutil
import socket
import subprocess
import tempfile
from pathlib import Path

POSTGRES_LIB = Path("/usr/lib/postgresql")
APP_ROLE = "airi_sync"
OS_USER_AS_ROOT = "postgres"


def postgres_bin_dir(lib: Path = POSTGRES_LIB) -> Path | None:
    """The newest installed major version's bin directory with initdb, or None."""
    candidates = sorted(
        (path.parent for path in lib.glob("*/bin/initdb")),
        key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0,
    )
    return candidates[-1] if candidates else None


def free_loopback_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class PostgresCluster:
    """initdb, start, databases for the app role, stop and remove."""

    def __init__(self) -> None:
        bin_dir = postgres_bin_dir()
        if bin_dir is None:
            raise RuntimeError(
                "PostgreSQL is not installed: run `python3 build/ensure_postgres.py` "
                "(or apt-get install -y postgresql)"
            )
        self.bin_dir = bin_dir
        self.root = Path(tempfile.mkdtemp(prefix="airi-sync-pg-"))
        self.data = self.root / "data"
        self.port = free_loopback_port()
        self.os_user = OS_USER_AS_ROOT if os.geteuid() == 0 else None
        if self.os_user:
            entry = pwd.getpwnam(self.os_user)
            os.chown(self.root, entry.pw_uid, entry.pw_gid)

    def _run(self, program: str, *args: str) -> str:
        command = [str(self.bin_dir / program), *args]
        done = subprocess.run(
            command, user=self.os_user, capture_output=True, text=True, cwd=self.root
        )
        if done.returncode != 0:
            raise RuntimeError(f"{program} failed ({done.returncode}): {done.stderr[-2000:]}")
        return done.stdout

    def start(self) -> None:
        self._run(
            "initdb", "-D", str(self.data), "-U", "postgres", "--auth=trust",
            "--no-sync", "-E", "UTF8", "--locale=C",
        )  # fmt: skip
        options = (
            f"-c listen_addresses=127.0.0.1 -p {self.port} -k {self.root} "
            "-c fsync=off -c synchronous_commit=off -c full_page_writes=off "
            "-c max_connections=100"
        )
        log = str(self.root / "server.log")
        self._run("pg_ctl", "-D", str(self.data), "-o", options, "-l", log, "-w", "start")
        self.sql(f"CREATE ROLE {APP_ROLE} LOGIN")

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement as the superuser."""
        return self._run(
            "psql", "-h", "127.0.0.1", "-p", str(self.port), "-U", "postgres",
            "-d", database, "-v", "ON_ERROR_STOP=1", "-qAt", "-c", statement,
        )  # fmt: skip

    def create_database(self, name: str) -> str:
        """A new empty database owned by the app role; its URL for that role."""
        self.sql(f"CREATE DATABASE {name} OWNER {APP_ROLE}")
        return f"postgresql://{APP_ROLE}@127.0.0.1:{self.port}/{name}"

    def stop(self) -> None:
        try:
            self._run("pg_ctl", "-D", str(self.data), "-m", "immediate", "-w", "stop")
        finally:
            shutil.rmtree(self.root, ignore_errors=True)

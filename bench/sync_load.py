"""A bounded load test of the sync server on loopback: several server processes over one
throwaway PostgreSQL, simulated devices pushing and pulling, then an exactness check.

It starts a PostgreSQL cluster (tests/postgres_cluster.py), migrates a database, issues
keys through the server's store, starts `--servers` uvicorn processes on 127.0.0.1 with
the same database URL (stateless processes, as behind a load balancer), and runs
`--clients` asyncio devices spread over `--users` users, each sending its requests
round-robin across the processes: push a batch, pull with its cursor until caught up,
again, for `--seconds`. Afterwards every device pulls to the end once more, and the
check asserts what the protocol promises: every acknowledged operation is in the
database exactly once at its acknowledged seq, nothing else is, and every device saw
every operation of its user exactly once, in seq order. Run with `make bench-sync`;
prints one table and appends a JSON line to build/out/bench-sync.jsonl. Exit status 1
when the check fails. Everything it starts is stopped, also on failure.
"""

import argparse
import asyncio
import itertools
import json
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import uuid
from collections import defaultdict
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
sys.path.insert(0, str(ROOT / "server"))
sys.path.insert(0, str(ROOT / "py"))  # the clock module the server shares with the core
from airi_memory_server import migrate  # noqa: E402
from airi_memory_server.db import create_engine  # noqa: E402
from airi_memory_server.store import SqlSyncStore  # noqa: E402
from postgres_cluster import PostgresCluster, free_loopback_port  # noqa: E402

REQUEST_TIMEOUT_S = 15.0
PUSH_ATTEMPTS = 3  # a failed push is resent with the same ids, as a client would
PULL_LIMIT = 500
SERVER_START_TIMEOUT_S = 30.0
# Past its time, the load phase is cancelled this much later at the latest.
LOAD_GRACE_S = 30.0


@dataclass
class Device:
    """One simulated client: a user's device with its own clock node and pull cursor."""

    number: int
    user: str
    headers: dict[str, str]
    node: str
    last_wall_ms: int = 0
    counter: int = 0
    made: int = 0
    cursor: int = 0
    # (seq, op id) in the order pulled, every page of every pull.
    pulled: list[tuple[int, str]] = field(default_factory=list)
    out_of_order: int = 0

    def stamp(self) -> str:
        """The next hybrid logical clock stamp of this device (docs/sync-protocol.md)."""
        wall = max(self.last_wall_ms, time.time_ns() // 1_000_000)
        self.counter = self.counter + 1 if wall == self.last_wall_ms else 0
        self.last_wall_ms = wall
        return f"{wall:015d}-{self.counter:05d}-{self.node}"

    def next_batch(self, run: str, size: int) -> list[dict[str, Any]]:
        """A session create, then its messages, with a title edit now and then."""
        batch = []
        for _ in range(size):
            session = f"s-{self.node}-{self.made // 50}"
            operation: dict[str, Any] = {
                "id": f"{run}-{self.node}-{self.made}",
                "sessionId": session,
                "hlc": self.stamp(),
                "timestamp": self.last_wall_ms,
                "retries": 0,
            }
            if self.made % 50 == 0:
                operation |= {"type": "create", "resource": "session", "data": {"title": session}}
            elif self.made % 10 == 0:
                operation |= {"type": "update", "resource": "session", "data": {"pinned": True}}
            else:
                operation |= {
                    "type": "create",
                    "resource": "message",
                    "messageId": f"m-{self.made}",
                    "data": {"role": "user", "content": f"message {self.made} " + "x" * 120},
                }
            batch.append(operation)
            self.made += 1
        return batch


@dataclass
class Figures:
    """What every device measured; requests are timed in milliseconds."""

    push_ms: list[float] = field(default_factory=list)
    pull_ms: list[float] = field(default_factory=list)
    pushed_ops: int = 0
    pulled_ops: int = 0
    errors: list[str] = field(default_factory=list)
    # user -> op id -> the seq its push was acknowledged with
    acknowledged: dict[str, dict[str, int]] = field(default_factory=lambda: defaultdict(dict))


class Servers:
    """Round-robin over the processes' base URLs, one request at a time."""

    def __init__(self, base_urls: list[str]) -> None:
        self._next = itertools.cycle(base_urls)

    def url(self, path: str) -> str:
        return next(self._next) + path


async def push(
    client: httpx.AsyncClient, servers: Servers, device: Device, batch: list[dict], figures: Figures
) -> None:
    """Push until acknowledged (bounded): every ack is recorded, every failure counted."""
    for _attempt in range(PUSH_ATTEMPTS):
        started = time.perf_counter()
        try:
            response = await client.post(
                servers.url("/v1/sync/push"), json={"operations": batch}, headers=device.headers
            )
        except httpx.HTTPError as exc:
            figures.errors.append(f"push: {type(exc).__name__}")
            continue
        figures.push_ms.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            figures.errors.append(f"push: HTTP {response.status_code} {response.text[:200]}")
            continue
        results = response.json()["results"]
        if [ack["id"] for ack in results] != [operation["id"] for operation in batch]:
            figures.errors.append("push: acks do not match the batch")
        for ack in results:
            figures.acknowledged[device.user][ack["id"]] = ack["seq"]
        figures.pushed_ops += len(batch)
        return
    figures.errors.append(f"push: gave up after {PUSH_ATTEMPTS} attempts")


async def pull_to_end(
    client: httpx.AsyncClient, servers: Servers, device: Device, figures: Figures
) -> None:
    """Pull pages from the device's cursor until caught up."""
    while True:
        started = time.perf_counter()
        try:
            response = await client.get(
                servers.url("/v1/sync/pull"),
                params={"cursor": device.cursor, "limit": PULL_LIMIT},
                headers=device.headers,
            )
        except httpx.HTTPError as exc:
            figures.errors.append(f"pull: {type(exc).__name__}")
            return
        figures.pull_ms.append((time.perf_counter() - started) * 1000)
        if response.status_code != 200:
            figures.errors.append(f"pull: HTTP {response.status_code} {response.text[:200]}")
            return
        page = response.json()
        for operation in page["operations"]:
            expected = device.pulled[-1][0] + 1 if device.pulled else 1
            if operation["seq"] != expected:
                device.out_of_order += 1
            device.pulled.append((operation["seq"], operation["id"]))
        figures.pulled_ops += len(page["operations"])
        device.cursor = page["cursor"]
        if not page["hasMore"]:
            return


async def run_device(
    client: httpx.AsyncClient,
    servers: Servers,
    device: Device,
    figures: Figures,
    run: str,
    batch_size: int,
    deadline: float,
    max_ops: int,
) -> None:
    while time.monotonic() < deadline and device.made < max_ops:
        await push(client, servers, device, device.next_batch(run, batch_size), figures)
        await pull_to_end(client, servers, device, figures)


async def issue_keys(database_url: str, users: int, devices: int) -> list[Device]:
    """Migrate, then one key per device through the server's own store."""
    engine = create_engine(database_url)
    try:
        await migrate.upgrade(engine)
    finally:
        await engine.dispose()
    store = SqlSyncStore(create_engine(database_url))
    try:
        made = []
        for number in range(devices):
            user = f"bench-user-{number % users}"
            key = await store.issue_key(user)
            headers = {"Authorization": f"Bearer {key.api_key}"}
            made.append(Device(number, user, headers, node=f"dev{number}"))
        return made
    finally:
        await store.close()


def start_servers(database_url: str, count: int, logs: Path) -> list[tuple[str, Any]]:
    """`count` uvicorn processes on loopback over one database, as the README runs them."""
    environment = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join([str(ROOT / "server"), str(ROOT / "py")]),
        "SYNC_DB": database_url,
    }
    started = []
    for number in range(count):
        port = free_loopback_port()
        log = (logs / f"server-{number}.log").open("w")
        process = subprocess.Popen(
            [
                sys.executable, "-m", "uvicorn", "--factory",
                "airi_memory_server.app:create_app_from_env",
                "--host", "127.0.0.1", "--port", str(port), "--no-access-log",
            ],
            env=environment, cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
        )  # fmt: skip
        log.close()
        started.append((f"http://127.0.0.1:{port}", process))
    return started


def wait_until_healthy(servers: list[tuple[str, Any]], logs: Path) -> None:
    deadline = time.monotonic() + SERVER_START_TIMEOUT_S
    for number, (base_url, process) in enumerate(servers):
        while True:
            if process.poll() is not None:
                tail = (logs / f"server-{number}.log").read_text()[-2000:]
                raise RuntimeError(f"server {base_url} exited ({process.returncode}):\n{tail}")
            try:
                if httpx.get(base_url + "/v1/health", timeout=2).status_code == 200:
                    break
            except httpx.HTTPError:
                pass
            if time.monotonic() > deadline:
                raise RuntimeError(f"server {base_url} not healthy in {SERVER_START_TIMEOUT_S}s")
            time.sleep(0.2)


def stop_servers(servers: list[tuple[str, Any]]) -> None:
    """Each process by its own handle: terminate, then kill what does not end."""
    for _, process in servers:
        if process.poll() is None:
            process.terminate()
    for _, process in servers:
        try:
            process.wait(timeout=10)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


def logged_operations(cluster: PostgresCluster, database: str) -> dict[str, list[tuple[int, str]]]:
    """The whole log per user, read as the superuser (past row-level security)."""
    rows = cluster.sql(
        "SELECT u.name, o.seq, o.op_id FROM operations o JOIN users u ON u.id = o.user_id "
        "ORDER BY u.name, o.seq",
        database,
    )
    log: dict[str, list[tuple[int, str]]] = defaultdict(list)
    for line in rows.splitlines():
        user, seq, op_id = line.split("|", 2)
        log[user].append((int(seq), op_id))
    return log


def check(
    log: dict[str, list[tuple[int, str]]], devices: list[Device], figures: Figures
) -> dict[str, Any]:
    """The protocol's promises, each counted: zero everywhere means they held."""
    acknowledged_missing = duplicated = unacknowledged = wrong_seq = seq_gaps = 0
    for user in {device.user for device in devices}:
        entries = log.get(user, [])
        ids = [op_id for _, op_id in entries]
        duplicated += len(ids) - len(set(ids))
        seq_gaps += sum(seq != place for place, (seq, _) in enumerate(entries, start=1))
        seq_of = {op_id: seq for seq, op_id in entries}
        acks = figures.acknowledged.get(user, {})
        acknowledged_missing += sum(op_id not in seq_of for op_id in acks)
        wrong_seq += sum(seq_of.get(op_id, seq) != seq for op_id, seq in acks.items())
        unacknowledged += sum(op_id not in acks for op_id in seq_of)
    devices_not_matching = sum(device.pulled != log.get(device.user, []) for device in devices)
    counts = {
        "acknowledged_missing_from_db": acknowledged_missing,
        "duplicated_in_db": duplicated,
        "in_db_unacknowledged": unacknowledged,
        "acknowledged_at_other_seq": wrong_seq,
        "seq_gaps": seq_gaps,
        "pulled_out_of_order": sum(device.out_of_order for device in devices),
        "devices_whose_pulls_differ_from_log": devices_not_matching,
    }
    return {
        **counts,
        "operations_in_db": sum(len(entries) for entries in log.values()),
        "ok": not any(counts.values()),
    }


def latency(values: list[float]) -> dict[str, float]:
    if len(values) < 2:
        return {"p50": values[0] if values else 0.0, "p95": values[0] if values else 0.0}
    return {"p50": statistics.median(values), "p95": statistics.quantiles(values, n=20)[18]}


async def load(
    base_urls: list[str], devices: list[Device], args: argparse.Namespace
) -> tuple[Figures, float]:
    """The timed phase, then a final pull to the end by every device (not timed)."""
    figures = Figures()
    servers = Servers(base_urls)
    run = uuid.uuid4().hex[:8]
    limits = httpx.Limits(max_connections=len(devices) * 2)
    async with httpx.AsyncClient(timeout=REQUEST_TIMEOUT_S, limits=limits) as client:
        started = time.monotonic()
        deadline = started + args.seconds
        async with asyncio.timeout(args.seconds + LOAD_GRACE_S), asyncio.TaskGroup() as group:
            for device in devices:
                group.create_task(
                    run_device(
                        client, servers, device, figures, run, args.batch, deadline, args.max_ops
                    )
                )
        elapsed = time.monotonic() - started
        drain = Figures()
        for device in devices:
            await pull_to_end(client, servers, device, drain)
        figures.errors += drain.errors
    return figures, elapsed


def report(args: argparse.Namespace, figures: Figures, elapsed: float, verdict: dict) -> dict:
    push, pull = latency(figures.push_ms), latency(figures.pull_ms)
    result = {
        "bench": "sync-load",
        "at": datetime.now(UTC).isoformat(timespec="seconds"),
        "servers": args.servers,
        "devices": args.clients,
        "users": args.users,
        "batch": args.batch,
        "seconds": round(elapsed, 2),
        "pushed_ops": figures.pushed_ops,
        "pushed_ops_per_s": round(figures.pushed_ops / elapsed, 1),
        "pulled_ops": figures.pulled_ops,
        "pulled_ops_per_s": round(figures.pulled_ops / elapsed, 1),
        "push_requests": len(figures.push_ms),
        "push_p50_ms": round(push["p50"], 2),
        "push_p95_ms": round(push["p95"], 2),
        "pull_requests": len(figures.pull_ms),
        "pull_p50_ms": round(pull["p50"], 2),
        "pull_p95_ms": round(pull["p95"], 2),
        "errors": len(figures.errors),
        "error_samples": sorted(set(figures.errors))[:5],
        "check": verdict,
    }
    print(
        f"sync load: {args.servers} server processes, {args.clients} devices over "
        f"{args.users} users, batches of {args.batch}, {elapsed:.1f} s"
    )
    print(f"{'':<6} {'ops':>8} {'ops/s':>9} {'requests':>9} {'p50':>9} {'p95':>9}")
    for kind, data in (("push", push), ("pull", pull)):
        print(
            f"{kind:<6} {result[f'{kind}ed_ops']:>8} {result[f'{kind}ed_ops_per_s']:>9.1f} "
            f"{result[f'{kind}_requests']:>9} {data['p50']:>7.1f}ms {data['p95']:>7.1f}ms"
        )
    print(f"errors: {len(figures.errors)} {result['error_samples'] or ''}")
    held = "held" if verdict["ok"] else "FAILED"
    details = ", ".join(f"{name} {value}" for name, value in verdict.items() if name != "ok")
    print(f"check {held}: {details}")
    return result


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=20.0, help="length of the load phase")
    parser.add_argument("--servers", type=int, default=3, help="uvicorn processes")
    parser.add_argument("--clients", type=int, default=12, help="simulated devices")
    parser.add_argument("--users", type=int, default=4, help="users the devices belong to")
    parser.add_argument("--batch", type=int, default=20, help="operations per push")
    parser.add_argument("--max-ops", type=int, default=20_000, help="operations per device at most")
    parser.add_argument("--jsonl", type=Path, default=ROOT / "build" / "out" / "bench-sync.jsonl")
    args = parser.parse_args()
    # A plain `kill` unwinds like Ctrl-C, through the finally that stops what was started.
    signal.signal(signal.SIGTERM, signal.default_int_handler)

    cluster = PostgresCluster()
    servers: list[tuple[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="airi-bench-sync-") as logs_dir:
        try:
            cluster.start()
            database = "bench_sync"
            database_url = cluster.create_database(database)
            devices = asyncio.run(issue_keys(database_url, args.users, args.clients))
            servers = start_servers(database_url, args.servers, Path(logs_dir))
            wait_until_healthy(servers, Path(logs_dir))
            base_urls = [base_url for base_url, _ in servers]
            figures, elapsed = asyncio.run(load(base_urls, devices, args))
            verdict = check(logged_operations(cluster, database), devices, figures)
            result = report(args, figures, elapsed, verdict)
        finally:
            stop_servers(servers)
            cluster.stop()
    args.jsonl.parent.mkdir(parents=True, exist_ok=True)
    with args.jsonl.open("a") as out:
        out.write(json.dumps(result) + "\n")
    print(f"appended to {args.jsonl}")
    return 0 if verdict["ok"] else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except KeyboardInterrupt:
        print("interrupted; the servers and the cluster are stopped", file=sys.stderr)
        sys.exit(130)

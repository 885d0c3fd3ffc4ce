"""Benchmarks in headless Chromium against the built dist; prints a table and JSON.

Each scenario repeats; we report median and p95 with n, because a 2-core machine is
noisy. Timings come from the page (performance.now) or from Python inside Pyodide.
Run with `make bench`. Nothing here asserts a speed: tests check behaviour, this measures.
"""

import argparse
import json
from pathlib import Path

from playwright.sync_api import sync_playwright

import context_scenarios
import durability_scenarios
import peers
import search_scenarios
import targets
from harness import (
    BOOT,
    CHROMIUM,
    CHROMIUM_FLAGS,
    MAKE_EXPORT,
    ROOT,
    blank_page,
    fresh_profile,
    print_table,
    serve_bench,
    summarise,
)

# The floor of a start: Pyodide alone, loaded from our dist in a module worker (where the
# library runs it too), no packages, to its first Python statement.
BARE_PYODIDE = """async () => {
    const started = performance.now();
    const runtime = `${location.origin}/runtime/`;
    const source = `import { loadPyodide } from '${runtime}pyodide.mjs';
        const pyodide = await loadPyodide({ indexURL: '${runtime}', lockFileURL: '${runtime}pyodide-lock.json', fullStdLib: false });
        postMessage(pyodide.runPython('1 + 1'));`;
    const worker = new Worker(URL.createObjectURL(new Blob([source], { type: 'text/javascript' })), { type: 'module' });
    const answer = await new Promise((resolve, reject) => { worker.onmessage = (e) => resolve(e.data); worker.onerror = reject; });
    worker.terminate();
    if (answer !== 2) throw new Error(`bare Pyodide answered ${answer}`);
    return performance.now() - started;
}"""


def bench_cold_and_warm(playwright, base_url: str, runs: int) -> list[dict]:
    """Cold starts and warm reloads, with and without the experimental startupSnapshot
    option, each run beside bare Pyodide's: each in a browser with a new profile on disk
    (empty HTTP and code caches), reloaded in that browser as a returning user's is."""
    starts: dict[str, list[float]] = {}
    for _ in range(runs):
        with fresh_profile(playwright.chromium) as context:
            page = blank_page(context, base_url)
            starts.setdefault("bare Pyodide: loadPyodide() in a worker, fresh profile", []).append(
                page.evaluate(BARE_PYODIDE)
            )
            page.reload()
            starts.setdefault("  bare Pyodide, warm reload", []).append(page.evaluate(BARE_PYODIDE))
            page.reload()
            starts.setdefault("  bare Pyodide, warm reload again", []).append(
                page.evaluate(BARE_PYODIDE)
            )
        for label, options in (("", None), (", startupSnapshot", {"startupSnapshot": True})):
            with fresh_profile(playwright.chromium) as context:
                page = blank_page(context, base_url)
                result = page.evaluate(BOOT, options)
                starts.setdefault(f"cold start to ready{label}", []).append(result["ready"])
                starts.setdefault(f"  cold start to loaded{label}", []).append(result["loaded"])
                for name, value in result["phases"].items():
                    starts.setdefault(f"  cold{label}: {name} done at", []).append(value)
                page.evaluate("() => memory.close()")
                page.reload()
                warm = page.evaluate(BOOT, options)
                starts.setdefault(f"warm reload to ready{label}", []).append(warm["ready"])
                starts.setdefault(f"  warm reload to loaded{label}", []).append(warm["loaded"])
                for name, value in warm["phases"].items():
                    starts.setdefault(f"  warm{label}: {name} done at", []).append(value)
                # A later visit beside the first reload: Chromium stores a wasm module's
                # compiled code in steps, so the two may differ (the goal is the first's).
                page.evaluate("() => memory.close()")
                page.reload()
                again = page.evaluate(BOOT, options)
                starts.setdefault(f"  warm reload again, to ready{label}", []).append(
                    again["ready"]
                )
    return [summarise(name, values) for name, values in starts.items()]


ROUND_TRIPS = """async (n) => {
    const time = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t; };
    const ping = [], write = [], read = [];
    for (let i = 0; i < n; i++) {
        ping.push(await time(() => memory.ping()));
        write.push(await time(() => memory.storage.setItem(`local:bench/k${i % 20}`, { i, text: 'x'.repeat(200) })));
        read.push(await time(() => memory.storage.getItem(`local:bench/k${i % 20}`)));
    }
    return { ping, write, read };
}"""


def bench_round_trips(browser, base_url: str, calls: int) -> list[dict]:
    context = browser.new_context()
    page = blank_page(context, base_url)
    page.evaluate(BOOT)
    page.evaluate(ROUND_TRIPS, 50)  # warm-up
    result = page.evaluate(ROUND_TRIPS, calls)
    context.close()
    return [
        summarise("facade trivial call (ping)", result["ping"]),
        summarise("storage.setItem local (IndexedDB)", result["write"]),
        summarise("storage.getItem local (IndexedDB)", result["read"]),
    ]


def bench_bulk_insert(browser, base_url: str, runs: int, rows: int) -> list[dict]:
    context = browser.new_context()
    page = blank_page(context, base_url)
    page.evaluate(BOOT)
    inside, outside = [], []
    for _ in range(runs + 1):
        result = page.evaluate(
            """async (rows) => {
                const t = performance.now();
                const r = await memory.diagnostics.bulkInsert(rows);
                return { ...r, total: performance.now() - t };
            }""",
            rows,
        )
        assert result["rows"] == rows
        inside.append(result["insertMs"])
        outside.append(result["total"])
    context.close()
    return [
        summarise(f"bulk insert {rows:,} rows (Python -> DuckDB-WASM)", inside[1:]),
        summarise("  incl. building the rows and the facade call", outside[1:]),
    ]


TRANSFER = (
    """
async () => {"""
    + MAKE_EXPORT
    + """
    const data = makeExport(10, 1000);
    let t = performance.now();
    const report = await memory.importSessions(data);
    const importMs = performance.now() - t;
    t = performance.now();
    const exported = await memory.exportSessions(report.sessionIds);
    const exportMs = performance.now() - t;
    return { importMs, exportMs, messages: exported.sessions.reduce((n, s) => n + s.messages.length, 0) };
}
"""
)


def bench_transfer(browser, base_url: str, runs: int) -> list[dict]:
    imports, exports = [], []
    for _ in range(runs):
        context = browser.new_context()
        page = blank_page(context, base_url)
        page.evaluate(BOOT)
        result = page.evaluate(TRANSFER)
        assert result["messages"] == 10_000
        imports.append(result["importMs"])
        exports.append(result["exportMs"])
        context.close()
    return [
        summarise("import 10,000 messages (10 sessions)", imports),
        summarise("export 10,000 messages", exports),
    ]


FILL = (
    """
async ({ sessions, perSession }) => {"""
    + MAKE_EXPORT
    + """
    for (let s = 0; s < sessions; s += 50) await memory.importSessions(makeExport(50, perSession, s));
    await memory.sessions.persistSessionMessages('');  // waits for the background snapshot
    return (await memory.analytics()).totals;
}
"""
)

LARGE_STORE_QUERIES = """async (n) => {
    const time = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t; };
    const sessions = await memory.sessions.listSessions({ limit: 20 });
    const list = [], latest = [];
    for (let i = 0; i < n; i++) {
        list.push(await time(() => memory.sessions.listSessions({ limit: 20, offset: (i * 20) % 400 })));
        latest.push(await time(() => memory.sessions.latestMessages(sessions[i % sessions.length].sessionId, 50)));
    }
    return { list, latest };
}"""


def bench_large_store(browser, base_url: str, runs: int, calls: int) -> list[dict]:
    context = browser.new_context()
    page = blank_page(context, base_url)
    empty = [page.evaluate(BOOT)["ready"]]
    totals = page.evaluate(FILL, {"sessions": 500, "perSession": 200})
    assert totals["messages"] == 100_000, totals
    full, loaded = [], []
    for _ in range(runs):
        page.reload()
        booted = page.evaluate(BOOT)
        full.append(booted["ready"])
        loaded.append(booted["loaded"])
    queries = page.evaluate(LARGE_STORE_QUERIES, calls)
    context.close()
    return [
        summarise("start-up, empty store (first boot)", empty),
        summarise("start-up, 100,000 messages / 500 sessions", full),
        summarise("  ... loaded (the history in DuckDB)", loaded),
        summarise("  listSessions({limit: 20}) at 100k", queries["list"]),
        summarise("  latest 50 messages of a session at 100k", queries["latest"]),
    ]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=7, help="cold/warm start runs")
    parser.add_argument("--calls", type=int, default=300, help="round trips per kind")
    parser.add_argument("--bulk-runs", type=int, default=5)
    parser.add_argument("--bulk-rows", type=int, default=100_000)
    parser.add_argument(
        "--only",
        choices=[
            "foundation",
            "sessions",
            "durability",
            "context",
            "search",
            "scoped",
            "peers",
            "embedding",
        ],
        default=None,
    )
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "latest.json")
    args = parser.parse_args()
    base_url = serve_bench()
    rows: list[dict] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        if args.only in (None, "foundation"):
            rows += bench_cold_and_warm(playwright, base_url, args.starts)
            rows += bench_round_trips(browser, base_url, args.calls)
            rows += bench_bulk_insert(browser, base_url, args.bulk_runs, args.bulk_rows)
        if args.only in (None, "sessions"):
            rows += bench_transfer(browser, base_url, 3)
            rows += bench_large_store(browser, base_url, 3, 100)
        if args.only in (None, "sessions", "durability"):  # durability: also part of "sessions"
            rows += durability_scenarios.run(browser, base_url, args.calls)
        if args.only in (None, "context"):
            rows += context_scenarios.run(browser, base_url)
        if args.only in (None, "search"):
            rows += search_scenarios.run(browser, base_url)
        if args.only in (None, "search", "scoped"):  # scoped: also part of "search"
            rows += search_scenarios.run_scoped(browser, base_url)
        if args.only in (None, "search", "peers"):  # peers: also part of "search"
            rows += peers.run(browser, base_url)
        if args.only == "embedding":  # also part of "search"
            rows += search_scenarios.run_embedding(browser, base_url)
        browser.close()
    print_table(rows)
    compared = targets.compare(rows)
    targets.print_targets(compared)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps({"rows": rows, "targets": compared}, indent=2) + "\n")


if __name__ == "__main__":
    main()

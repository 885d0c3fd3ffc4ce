"""Benchmarks in headless Chromium against the built dist; prints a table and JSON.

Each scenario repeats; we report median and p95 with n, because a 2-core machine is
noisy. Timings come from the page (performance.now) or from Python inside Pyodide.
Run with `make bench`. Nothing here asserts a speed: tests check behaviour, this measures.
"""

import argparse
import importlib.util
import json
import statistics
import sys
import tempfile
from pathlib import Path

from playwright.sync_api import sync_playwright

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser_flags import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402

_spec = importlib.util.spec_from_file_location("airi_serve", ROOT / "build" / "serve.py")
serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve)

BOOT = """async () => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId: 'bench' });
    return { ready: memory.ready, phases: memory.bootPhases };
}"""


def percentile(values: list[float], fraction: float) -> float:
    ordered = sorted(values)
    index = min(len(ordered) - 1, max(0, round(fraction * (len(ordered) - 1))))
    return ordered[index]


def summarise(name: str, values: list[float], unit: str = "ms") -> dict:
    return {
        "scenario": name,
        "n": len(values),
        "median": statistics.median(values),
        "p95": percentile(values, 0.95),
        "min": min(values),
        "unit": unit,
    }


def blank_page(context, base_url: str):
    """An empty page of the dist's origin (served by Playwright, dist/ stays as built)."""
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.route(
        "**/__bench__.html",
        lambda route: route.fulfill(
            content_type="text/html", body="<!doctype html><title>bench</title>"
        ),
    )
    page.goto(f"{base_url}/__bench__.html")
    return page


def bench_cold_and_warm(browser, base_url: str, runs: int) -> list[dict]:
    cold, warm, phases = [], [], {}
    for _ in range(runs):
        context = browser.new_context()  # fresh profile: empty HTTP and code caches
        page = blank_page(context, base_url)
        result = page.evaluate(BOOT)
        cold.append(result["ready"])
        for name, value in result["phases"].items():
            phases.setdefault(name, []).append(value)
        page.evaluate("() => memory.close()")
        page.reload()
        warm.append(page.evaluate(BOOT)["ready"])
        context.close()
    rows = [summarise("cold start to ready", cold), summarise("warm reload to ready", warm)]
    rows += [summarise(f"  cold: {name} done at", values) for name, values in phases.items()]
    return rows


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


def print_table(rows: list[dict]) -> None:
    print(f"{'scenario':<52} {'n':>4} {'median':>10} {'p95':>10} {'min':>10}")
    for row in rows:
        print(
            f"{row['scenario']:<52} {row['n']:>4} {row['median']:>8.1f}{row['unit']} "
            f"{row['p95']:>8.1f}{row['unit']} {row['min']:>8.1f}{row['unit']}"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--starts", type=int, default=7, help="cold/warm start runs")
    parser.add_argument("--calls", type=int, default=300, help="round trips per kind")
    parser.add_argument("--bulk-runs", type=int, default=5)
    parser.add_argument("--bulk-rows", type=int, default=100_000)
    parser.add_argument("--json", type=Path, default=ROOT / "bench" / "results" / "latest.json")
    args = parser.parse_args()
    server = serve.start_in_thread(ROOT / "dist")
    base_url = f"http://127.0.0.1:{server.server_address[1]}"
    rows: list[dict] = []
    with sync_playwright() as playwright, tempfile.TemporaryDirectory():
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        rows += bench_cold_and_warm(browser, base_url, args.starts)
        rows += bench_round_trips(browser, base_url, args.calls)
        rows += bench_bulk_insert(browser, base_url, args.bulk_runs, args.bulk_rows)
        browser.close()
    server.shutdown()
    print_table(rows)
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(rows, indent=2) + "\n")
    print(json.dumps(rows))


if __name__ == "__main__":
    main()

"""What every benchmark shares: the served dist, a blank page of its origin, booting the
memory system, and medians with p95 (a 2-core machine is noisy)."""

import contextlib
import importlib.util
import statistics
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser_flags import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402 (also re-exported)

_spec = importlib.util.spec_from_file_location("airi_serve", ROOT / "build" / "serve.py")
serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve)
# page.evaluate(BOOT) boots the defaults; page.evaluate(BOOT, {...}) adds or overrides
# options (Playwright passes None as null, and spreading null adds nothing).
# It returns once start-up has loaded everything (``loaded``), so what is measured next
# does not wait on start-up's work behind ready.
BOOT = """async (options) => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId: 'bench', diagnostics: true, ...options });
    const ready = memory.ready;
    await memory.whenLoaded;
    return { ready, loaded: memory.loaded, phases: memory.bootPhases };
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


def ratio(name: str, numerator: dict, denominator: dict) -> dict:
    """How many times one row's timings are another's, at the median, the p95 and the best,
    as a row of its own (unit "x") so the table and the JSON keep one shape."""
    return {
        "scenario": name,
        "n": min(numerator["n"], denominator["n"]),
        "median": numerator["median"] / denominator["median"],
        "p95": numerator["p95"] / denominator["p95"],
        "min": numerator["min"] / denominator["min"],
        "unit": "x",
    }


# The bench's own files, served beside dist/ (which stays as built): a blank page of the
# dist's origin, and the peers' bundle (bench/peers.py builds it). Served, not routed:
# Playwright's routing turns the browser's HTTP cache off, and a warm reload then
# fetched everything again, as no returning user's browser does.
BLANK_PAGE = b"<!doctype html><title>bench</title>"
PEERS_BUNDLE = ROOT / "build" / "out" / "bench-peers.mjs"


class BenchHandler(serve.StaticHandler):
    def do_GET(self) -> None:
        path = self.path.split("?")[0]
        if path == "/__bench__.html":
            body, kind = BLANK_PAGE, "text/html"
        elif path == "/__bench__/peers.mjs":
            body, kind = PEERS_BUNDLE.read_bytes(), "text/javascript"
        else:
            return super().do_GET()
        self.send_body(body, kind)
        return None


def serve_bench() -> str:
    """dist/ and the bench's files on 127.0.0.1, until the process ends; the base URL."""
    server = serve.start_in_thread(ROOT / "dist", handler=BenchHandler)
    return f"http://127.0.0.1:{server.server_address[1]}"


def blank_page(context, base_url: str):
    """An empty page of the dist's origin."""
    page = context.new_page()
    page.set_default_timeout(120_000)
    page.goto(f"{base_url}/__bench__.html")
    return page


@contextlib.contextmanager
def fresh_profile(browser_type):
    """A browser with a new profile on disk, as a first visit finds it, that keeps what it
    caches as a returning user's does (an incognito-like context keeps no large file: the
    wasm was fetched and compiled again at every reload). ``browser_type``: Playwright's
    ``chromium``."""
    with tempfile.TemporaryDirectory() as folder:
        context = browser_type.launch_persistent_context(
            folder, executable_path=str(CHROMIUM), args=CHROMIUM_FLAGS
        )
        try:
            yield context
        finally:
            context.close()


MAKE_EXPORT = """
const makeExport = function (sessions, perSession, offset = 0) {
    const text = 'I remember you said the garden needs more sun in the afternoon, and the basil. ';
    return { version: '1.0.0', exportedAt: Date.now(), sessions: Array.from({ length: sessions }, (_, s) => ({
        meta: { title: `bench session ${offset + s}`, characterId: s % 2 ? 'airi' : 'default' },
        messages: Array.from({ length: perSession }, (_, i) => ({
            role: i % 2 ? 'assistant' : 'user', content: `${i}: ${text}`, createdAt: 1767225600000 + i * 1000,
        })),
    })) };
}
"""


def print_table(rows: list[dict]) -> None:
    print(f"{'scenario':<52} {'n':>4} {'median':>10} {'p95':>10} {'min':>10}")
    for row in rows:
        digits = 2 if row["unit"] == "x" else 1  # ratios near 1 need the second digit
        print(
            f"{row['scenario']:<52} {row['n']:>4} {row['median']:>8.{digits}f}{row['unit']} "
            f"{row['p95']:>8.{digits}f}{row['unit']} {row['min']:>8.{digits}f}{row['unit']}"
        )

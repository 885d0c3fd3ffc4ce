"""What every benchmark shares: the served dist, a blank page of its origin, booting the
memory system, and medians with p95 (a 2-core machine is noisy)."""

import importlib.util
import statistics
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT / "tests"))
from browser_flags import CHROMIUM, CHROMIUM_FLAGS  # noqa: E402, F401 (re-exported)

_spec = importlib.util.spec_from_file_location("airi_serve", ROOT / "build" / "serve.py")
serve = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(serve)
# page.evaluate(BOOT) boots the defaults; page.evaluate(BOOT, {...}) adds or overrides
# options (Playwright passes None as null, and spreading null adds nothing).
BOOT = """async (options) => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId: 'bench', diagnostics: true, ...options });
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

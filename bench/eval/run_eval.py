"""Retrieval quality: recall@1/5/10/25/50 and hit@10 of keyword, semantic and fused search,
per question kind, with each strategy's latency (p50/p95, query embedding included), in
Chromium with the real local model, on two sets:

- ``standard`` (dataset.py): 4 personas, short sessions, facts and paraphrased questions;
- ``long`` (long_dataset.py): 6 long dated conversations (about 4,850 turns), single-hop,
  multi-hop, temporal and open-domain questions, scoped to one conversation each.

    .venv/bin/python bench/eval/run_eval.py [--sets standard,long]      (make eval)

Both fusions are measured at several keyword weights (reciprocal rank, and min-max scaled
scores), and on the long set the defaults once more with ``speakers`` (the user's and the
companion's names); the vectors are computed once per set and reused when the page reloads with
another fusion.
"""

import argparse
import json
import statistics
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import dataset
import long_dataset

from harness import CHROMIUM, CHROMIUM_FLAGS, ROOT, blank_page, serve_bench

SETS = {"standard": dataset.build, "long": long_dataset.build}
KS = (1, 5, 10, 25, 50)
WEIGHTS = (1.0, 0.5, 0.3)  # keyword weight in the fusion
BOOT = """async (retrieval) => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId: 'eval', retention: { enabled: false }, retrieval });
}"""
LOAD = """async (sessions) => {
    const report = await memory.importSessions({ version: '1.0.0', exportedAt: Date.now(), sessions });
    const ids = [];
    for (const sessionId of report.sessionIds) ids.push((await memory.sessions.loadSessionMessages(sessionId)).map((m) => m.id));
    const count = sessions.reduce((n, s) => n + s.messages.length, 0);
    for (let i = 0; i < 6000; i++) {
        const status = await memory.embeddingsStatus();
        if (status.state === 'ready' && status.indexed >= count && !status.pending) return { ids, status };
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error('embedding did not finish');
}"""
ASK = """async ({ questions, strategies, named }) => {
    const out = [];
    for (const q of questions) {
        const row = { ids: {}, ms: {} };
        const speakers = named ? q.speakers : undefined;
        for (const strategy of strategies) {
            const started = performance.now();
            const { results } = await memory.search({ query: q.question, strategy, limit: 50, speakers, filters: { characterIds: [q.persona] } });
            row.ms[strategy] = performance.now() - started;
            row.ids[strategy] = results.map((r) => r.message.id);
        }
        out.push(row);
    }
    return out;
}"""


def metrics(rankings: list[list[str]], answers: list[set[str]]) -> dict[str, float]:
    scores = {f"recall@{k}": 0.0 for k in KS}
    scores["hit@10"] = 0.0
    for ranked, relevant in zip(rankings, answers, strict=True):
        for k in KS:
            scores[f"recall@{k}"] += len(relevant & set(ranked[:k])) / len(relevant)
        scores["hit@10"] += bool(relevant & set(ranked[:10]))
    return {name: round(value / len(answers), 3) for name, value in scores.items()}


def latency(samples: list[float]) -> dict[str, float]:
    ordered = sorted(samples)
    p95 = ordered[min(len(ordered) - 1, round(0.95 * (len(ordered) - 1)))]
    return {"p50": round(statistics.median(ordered), 1), "p95": round(p95, 1)}


def evaluate(browser: Any, base: str, name: str) -> dict[str, Any]:
    """Every retriever and fusion on one set, in a fresh profile."""
    sessions, questions = SETS[name]()
    context = browser.new_context()
    page = blank_page(context, base)
    page.set_default_timeout(1_800_000)
    page.evaluate(BOOT, {"fusion": "rrf", "keywordWeight": 1.0})
    ids = page.evaluate(LOAD, sessions)["ids"]
    answers = [{ids[s][m] for s, m in q["answers"]} for q in questions]
    kinds = ["all", *sorted({q["kind"] for q in questions})]
    runs = [("rrf", 1.0, ["keyword", "semantic", "relevant", "recent"], False)]
    runs += [(fusion, w, ["relevant"], False) for fusion in ("rrf", "scores") for w in WEIGHTS]
    runs += [("scores", 1.0, ["hybrid"], False)]  # the defaults
    if any(q.get("speakers") for q in questions):  # the same, told who the speakers are
        runs += [("scores", 1.0, ["keyword", "semantic", "relevant", "hybrid"], True)]
    quality: dict[str, dict] = {}
    speed: dict[str, dict] = {}
    for n, (fusion, weight, strategies, named) in enumerate(runs):
        if n:
            page.reload()
            page.evaluate(BOOT, {"fusion": fusion, "keywordWeight": weight})
        asked = {"questions": questions, "strategies": strategies, "named": named}
        answered = page.evaluate(ASK, asked)
        for strategy in strategies:
            label = strategy
            if strategy in ("relevant", "hybrid"):
                label = f"{strategy} ({fusion}, keyword x{weight})"
            if named:
                label += " + speakers"
            speed[label] = latency([row["ms"][strategy] for row in answered])
            for kind in kinds:
                chosen = [i for i, q in enumerate(questions) if kind in ("all", q["kind"])]
                quality.setdefault(label, {})[kind] = metrics(
                    [answered[i]["ids"][strategy] for i in chosen], [answers[i] for i in chosen]
                )
    context.close()
    messages = sum(len(s["messages"]) for s in sessions)
    return {"questions": len(questions), "messages": messages, "quality": quality, "speed": speed}


def show(name: str, found: dict[str, Any]) -> None:
    print(f"\n## {name}: {found['questions']} questions, {found['messages']} messages")
    columns = list(found["quality"]["keyword"]["all"])
    print(f"{'retriever':<46} {'questions':<12}" + "".join(f"{c:>10}" for c in columns))
    for label, by_kind in found["quality"].items():
        for kind, scores in by_kind.items():
            print(f"{label:<46} {kind:<12}" + "".join(f"{v:>10.3f}" for v in scores.values()))
    print(f"\n{'strategy':<46} {'p50 ms':>8} {'p95 ms':>8}")
    for label, timing in found["speed"].items():
        print(f"{label:<46} {timing['p50']:>8.1f} {timing['p95']:>8.1f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--sets", default="standard,long", help="comma-separated: " + ",".join(SETS)
    )
    chosen = parser.parse_args().sets.split(",")
    base = serve_bench()
    results = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        for name in chosen:
            results[name] = evaluate(browser, base, name)
            show(name, results[name])
        browser.close()
    out = ROOT / "bench" / "results" / "eval.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Retrieval quality: recall@1/5/10/25 and hit@10 of keyword, semantic and fused search
on the generated set (dataset.py), in Chromium with the real local model.

    .venv/bin/python bench/eval/run_eval.py      (make eval)

Both fusions are measured (reciprocal-rank and normalised scores); the vectors are
computed once and reused when the page reloads with the other fusion.
"""

import json
import sys
from pathlib import Path

from playwright.sync_api import sync_playwright

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
import dataset

from harness import CHROMIUM, CHROMIUM_FLAGS, ROOT, blank_page, serve

KS = (1, 5, 10, 25)
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
    for (let i = 0; i < 3000; i++) {
        const status = await memory.embeddingsStatus();
        if (status.state === 'ready' && status.indexed >= count && !status.pending) return { ids, status };
        await new Promise((resolve) => setTimeout(resolve, 200));
    }
    throw new Error('embedding did not finish');
}"""
ASK = """async ({ questions, strategies }) => {
    const out = [];
    for (const q of questions) {
        const row = {};
        for (const strategy of strategies) {
            const { results } = await memory.search({ query: q.question, strategy, limit: 25, filters: { characterIds: [q.persona] } });
            row[strategy] = results.map((r) => r.message.id);
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


def main() -> None:
    sessions, questions = dataset.build()
    server = serve.start_in_thread(ROOT / "dist")
    base = f"http://127.0.0.1:{server.server_address[1]}"
    results: dict[str, dict] = {}
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_FLAGS)
        context = browser.new_context()
        page = blank_page(context, base)
        page.set_default_timeout(900_000)
        page.evaluate(BOOT, {"fusion": "rrf", "keywordWeight": 1.0})
        loaded = page.evaluate(LOAD, sessions)
        ids = loaded["ids"]
        answers = [{ids[s][m] for s, m in q["answers"]} for q in questions]
        runs = [("rrf", 1.0, ["keyword", "semantic", "relevant"])]
        runs += [(fusion, w, ["relevant"]) for fusion in ("rrf", "scores") for w in WEIGHTS]
        runs += [("rrf", 0.3, ["hybrid"])]
        for n, (fusion, weight, strategies) in enumerate(runs):
            if n:
                page.reload()
                page.evaluate(BOOT, {"fusion": fusion, "keywordWeight": weight})
            ranked = page.evaluate(ASK, {"questions": questions, "strategies": strategies})
            for strategy in strategies:
                fused = f"{strategy} ({fusion}, keyword x{weight})"
                name = strategy if strategy in ("keyword", "semantic") else fused
                for kind in ("all", "keyword", "paraphrase"):
                    chosen = [i for i, q in enumerate(questions) if kind in ("all", q["kind"])]
                    results.setdefault(name, {})[kind] = metrics(
                        [ranked[i][strategy] for i in chosen], [answers[i] for i in chosen]
                    )
        browser.close()
    server.shutdown()
    print(f"{len(questions)} questions, {sum(len(s['messages']) for s in sessions)} messages")
    header = "".join(f"{m:>10}" for m in results["keyword"]["all"])
    print(f"{'retriever':<36} {'questions':<11}{header}")
    for name, by_kind in results.items():
        for kind, scores in by_kind.items():
            print(f"{name:<36} {kind:<11}" + "".join(f"{v:>10.3f}" for v in scores.values()))
    out = ROOT / "bench" / "results" / "eval.json"
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(results, indent=2) + "\n")


if __name__ == "__main__":
    main()

"""Issue 13's targets, each one of our figures as a ratio to a baseline measured in the
same run, in the same browser: the platform's floor or the peer a user would pick
instead. The machine's speed moves between runs; a ratio within one run moves far less.

A target names the rows (``summarise`` scenarios) it compares; a baseline of several
rows is their sum (the memory Orama adds, plus our empty boot). Targets whose rows the
run did not measure (``--only``) are left out of the table.
"""

from dataclasses import dataclass


@dataclass(frozen=True)
class Target:
    name: str
    ours: str
    baseline: tuple[str, ...]
    at_most: float | None = None  # ours / baseline must be at most this
    at_least: float | None = None  # ... or at least this (throughputs)
    limit_ms: float | None = None  # an absolute bound, where the issue gives one


TARGETS = [
    Target("cold start to ready", "cold start to ready",
           ("bare Pyodide: loadPyodide() in a worker, fresh profile",), at_most=1.3),
    Target("warm reload to ready", "warm reload to ready", ("cold start to ready",), at_most=0.6),
    Target("  warm reload again (second reload)", "  warm reload again, to ready",
           ("cold start to ready",), at_most=0.6),
    Target("  cold start, startupSnapshot (experimental)", "cold start to ready, startupSnapshot",
           ("bare Pyodide: loadPyodide() in a worker, fresh profile",), at_most=1.3),
    Target("  warm reload, startupSnapshot (experimental)", "warm reload to ready, startupSnapshot",
           ("cold start to ready",), at_most=0.6),
    Target("addMessage until durable, session of 10", "addMessage, strict (default), session of 10",
           ("idb-keyval set of a message, strict",), at_most=3.0),
    Target("addMessage until durable, session of 10,000",
           "addMessage, strict (default), session of 10,000",
           ("idb-keyval set of a message, strict",), at_most=3.0),
    Target("semantic top-10 at 100k (int8)", "semantic top-10 at 100k, int8 [peer run]",
           ("  plain JS float32 brute force top-10",), at_most=0.8),
    Target("  ... with a filter (a character's user turns)",
           "semantic top-10 at 100k, int8, filtered [peer run]",
           ("  plain JS float32 brute force top-10, same filter",), at_most=0.8),
    Target("keyword (BM25) top-10 at 100k", "keyword (BM25) top-10 at 100k [peer run]",
           ("  Orama fulltext top-10",), at_most=0.75),
    Target("hybrid top-10 at 100k", "hybrid (relevant) top-10 at 100k [peer run]",
           ("  Orama hybrid top-10",), at_most=0.8),
    Target("page memory, 100k messages + vectors", "  reopened: 100k messages + vectors loaded back",
           ("  renderer memory Orama adds", "  booted, empty store"), at_most=0.6),
    Target("vectors searchable after a reopen at 100k",
           "  ... and a semantic search over 100k answered, after ready",
           (), limit_ms=1000),
    Target("background embedding vs the model alone", "background embedding, 640 messages",
           ("  the model alone in its worker, 640 messages",), at_least=0.95),
]  # fmt: skip


def compare(rows: list[dict]) -> list[dict]:
    """One row per target whose rows were measured: ours, the baseline, the ratio of
    the medians, the target, and whether it is met."""
    by_name = {row["scenario"]: row for row in rows}
    found = []
    for target in TARGETS:
        ours = by_name.get(target.ours)
        parts = [by_name.get(name) for name in target.baseline]
        if ours is None or None in parts:
            continue
        entry = {"target": target.name, "ours": ours, "unit": ours["unit"]}
        if target.limit_ms is not None:
            entry |= {"ratio": None, "goal": f"<= {target.limit_ms:.0f} ms",
                      "met": ours["median"] <= target.limit_ms}  # fmt: skip
        else:
            baseline = {
                "median": sum(p["median"] for p in parts),
                "p95": sum(p["p95"] for p in parts),
                "n": min(p["n"] for p in parts),
            }
            ratio = ours["median"] / baseline["median"]
            if target.at_most is not None:
                goal, met = f"<= {target.at_most}x", ratio <= target.at_most
            else:
                goal, met = f">= {target.at_least}x", ratio >= target.at_least
            entry |= {"baseline": baseline, "ratio": ratio, "goal": goal, "met": met}
        found.append(entry)
    return found


def print_targets(found: list[dict]) -> None:
    print(f"\n{'target':<44} {'ours p50':>10} {'p95':>9} {'n':>4} {'base p50':>10} {'p95':>9}"
          f" {'ratio':>7} {'goal':>9} met")  # fmt: skip
    for entry in found:
        ours, unit = entry["ours"], entry["unit"]
        base = entry.get("baseline")
        line = f"{entry['target']:<44} {ours['median']:>8.1f}{unit:<2} {ours['p95']:>7.1f}{unit:<2}"
        line += f" {ours['n']:>4}"
        if base:
            line += f" {base['median']:>8.1f}{unit:<2} {base['p95']:>7.1f}{unit:<2}"
            line += f" {entry['ratio']:>6.2f}x"
        else:
            line += f" {'':>10} {'':>9} {'':>7}"
        line += f" {entry['goal']:>9} {'yes' if entry['met'] else 'NO'}"
        print(line)

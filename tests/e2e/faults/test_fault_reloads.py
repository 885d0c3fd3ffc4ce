"""Fault suite: a page writing without pause is reloaded, closed, or its whole browser is
killed (SIGKILL) at random moments; every acknowledged write must be there afterwards,
in order, exactly once (see writer.Model for every rule). Sync records from the start
(never sending): the outbox must always describe exactly what is stored.

``make test`` runs a few rounds of each; ``make soak`` (AIRI_SOAK=1) runs 100.
"""

import json
import os
import random
import tempfile
from pathlib import Path

from killable import KillableChromium
from writer import READ_BACK, WRITER, Model, check_outbox, pause

SOAK = os.environ.get("AIRI_SOAK") == "1"
OUT = Path(__file__).resolve().parents[3] / "build" / "out"
REPORT = OUT / "faults-report.jsonl"
BOOT = """async () => {
  const { createMemorySystem } = await import('/airi-memory.mjs');
  window.memory = await createMemorySystem({ userId: 'faults', retention: { enabled: false },
    sync: { enabled: true, endpoint: 'http://127.0.0.1:9', apiKey: 'never-sent', autoSync: false } });
}"""
NEW_SESSIONS = """async () => {
  const ids = [];
  for (const title of ['first', 'second']) ids.push((await memory.sessions.createSession({ title })).sessionId);
  return ids;
}"""


def report(name: str, **figures) -> None:
    """One line per run, for the stop note: rounds, acknowledged writes checked, lost."""
    REPORT.parent.mkdir(parents=True, exist_ok=True)
    with REPORT.open("a") as file:
        file.write(json.dumps({"test": name, "soak": SOAK, **figures}) + "\n")


class Rounds:
    """Write, strike, reopen, check; again and again, on one durable profile."""

    def __init__(self, url: str, seed: int) -> None:
        self.url = url
        self.rng = random.Random(seed)
        self.model = Model()
        self.writing: list[str] = []
        self.operations = 0  # in the outbox at the last check

    def bind(self, context) -> None:
        context.expose_binding("intend", lambda _source, text: self.model.intend(text))
        context.expose_binding("ack", lambda _source, text: self.model.ack(text))

    def open(self, page) -> None:
        page.goto(f"{self.url}/__e2e__/page.html")
        page.evaluate(BOOT)
        if not self.writing:
            self.writing = page.evaluate(NEW_SESSIONS)

    def check(self, page) -> list[dict]:
        stored = page.evaluate(READ_BACK)
        self.operations = check_outbox(stored)
        return self.model.check(stored, set(self.writing))

    def write(self, page, round_number: int) -> None:
        live = self.check(page)
        arguments = {
            "seed": self.rng.randrange(1, 2**31 - 1),
            "sessionIds": self.writing,
            "live": live,
            "prefix": f"r{round_number}",
        }
        page.evaluate(WRITER, arguments)
        page.wait_for_timeout(pause(self.rng) * 1000)  # bindings are served meanwhile


def test_reloads_and_closes_mid_write_lose_nothing(web):
    rounds_wanted = 100 if SOAK else 4
    rounds = Rounds(web.base_url, seed=9)
    context = web.page.context
    rounds.bind(context)
    page = web.page
    rounds.open(page)
    for number in range(rounds_wanted):
        rounds.write(page, number)
        if number % 2:
            page.close()  # the tab closed: its worker ends with whatever is in flight
            page = context.new_page()
        else:
            page.reload()  # a reload: the same, and the page comes back at once
        rounds.open(page)
    rounds.check(page)
    assert rounds.model.acknowledged > rounds_wanted * 3  # the page did write each round
    assert rounds.operations > rounds.model.acknowledged  # each write left its operations
    report("reloads", rounds=rounds_wanted, acknowledged=rounds.model.acknowledged, lost=0)


def test_the_whole_browser_killed_mid_write_loses_nothing(playwright, base_url):
    kills_wanted = 100 if SOAK else 2
    rounds = Rounds(base_url, seed=17)
    with tempfile.TemporaryDirectory(prefix="airi-kill-") as folder:
        chromium = KillableChromium(playwright, Path(folder) / "profile")
        try:
            for number in range(kills_wanted + 1):
                context = chromium.start()
                rounds.bind(context)
                page = context.pages[0] if context.pages else context.new_page()
                page.set_default_timeout(60_000)
                rounds.open(page)
                if number == kills_wanted:
                    rounds.check(page)
                    break
                rounds.write(page, number)
                chromium.kill()
        except BaseException:
            chromium.keep_evidence(OUT / "kill-evidence")
            raise
        finally:
            if chromium.process and chromium.process.poll() is None:
                chromium.kill()
    assert rounds.model.acknowledged > kills_wanted * 3
    assert rounds.operations > rounds.model.acknowledged  # each write left its operations
    report("kills", kills=kills_wanted, acknowledged=rounds.model.acknowledged, lost=0)

"""Fault suite: three tabs write to one session at once and take snapshots; one of them
is frozen (CDP Page.setWebLifecycleState) and busy with an import while the others
write and prune the journal; forged messages flood the tabs' BroadcastChannel. All tabs
converge on the same messages in the same order, nothing acknowledged is lost, and a
reload agrees.
"""

import json
import os

from browser_flags import CHROMIUM  # noqa: F401  (the e2e conftest starts it)

SOAK = os.environ.get("AIRI_SOAK") == "1"
BOOT = """async () => {
  const { createMemorySystem } = await import('/airi-memory.mjs');
  window.memory = await createMemorySystem({ userId: 'tabs', retention: { enabled: false }, tabPollMs: 300 });
}"""
# Each tab adds `count` messages and snapshots every `every` of them; acks each one.
WRITE = """async ({ sessionId, tab, count, every }) => {
  window.done = (async () => {
    for (let i = 0; i < count; i++) {
      const content = `${tab}-${i}`;
      const saved = await memory.sessions.addMessage(sessionId, { role: 'user', content });
      window.ack(JSON.stringify({ tab, content, id: saved.id }));
      if (every && i % every === every - 1) await memory.sessions.snapshot();
    }
  })();
}"""
FORGE = """async (sessionId) => {
  const channel = new BroadcastChannel('airi-memory');
  const forged = [{ journalKey: `local:memory:sessions:${sessionId}` }, { journalKey: 'outbox:x' },
                  { journal: 'not a number' }, 'garbage', null, { journal: 1e12 }];
  for (let i = 0; i < 200; i++) channel.postMessage(forged[i % forged.length]);
  channel.close();
}"""
CONTENTS = """async (sessionId) => {
  await memory.sessions.sync();
  return (await memory.sessions.loadSessionMessages(sessionId)).map((m) => m.content);
}"""
BIG_IMPORT = """async (count) => {
  const messages = Array.from({ length: count }, (_, i) => ({ role: 'user', content: `imported ${i}`, createdAt: 1767225600000 + i }));
  window.importing = memory.importSessions({ version: '1.0.0', exportedAt: 1767225600000,
    sessions: [{ meta: { sessionId: 'big', title: 'Imported' }, messages }] }, { keepIds: true });
}"""


def test_three_tabs_one_frozen_and_forged_hints_converge(web):
    per_tab, imported = (120, 3000) if SOAK else (25, 1000)
    context = web.page.context
    acked: dict[str, list[str]] = {}
    context.expose_binding(
        "ack", lambda _s, text: acked.setdefault(json.loads(text)["tab"], []).append(
            json.loads(text)["content"]
        )
    )  # fmt: skip
    tabs = [web.page, context.new_page(), context.new_page()]
    for page in tabs:
        page.set_default_timeout(120_000)
        page.goto(f"{web.base_url}/__e2e__/page.html")
        page.evaluate(BOOT)
    sid = tabs[0].evaluate(
        "async () => (await memory.sessions.createSession({ title: 'Shared' })).sessionId"
    )
    frozen = tabs[2]
    frozen.evaluate(BIG_IMPORT, imported)  # busy: a long import in its write queue
    frozen.evaluate(WRITE, {"sessionId": sid, "tab": "c", "count": per_tab, "every": 0})
    cdp = context.new_cdp_session(frozen)
    cdp.send("Page.setWebLifecycleState", {"state": "frozen"})
    for page, tab in ((tabs[0], "a"), (tabs[1], "b")):  # both snapshot: the journal is pruned
        page.evaluate(WRITE, {"sessionId": sid, "tab": tab, "count": per_tab, "every": 10})
    tabs[1].evaluate(FORGE, sid)
    for page in tabs[:2]:
        page.evaluate("() => window.done")
    tabs[0].evaluate("() => memory.sessions.snapshot()")
    cdp.send("Page.setWebLifecycleState", {"state": "active"})
    frozen.evaluate("() => Promise.all([window.done, window.importing])")
    frozen.evaluate("() => memory.sessions.snapshot()")  # the lagging tab snapshots last
    tabs[1].evaluate(FORGE, sid)

    seen = [page.evaluate(CONTENTS, sid) for page in tabs]
    assert seen[0] == seen[1] == seen[2], "the tabs disagree"
    stored = seen[0]
    assert len(stored) == len(set(stored)) == 3 * per_tab
    for tab, contents in acked.items():
        assert len(contents) == per_tab, f"tab {tab} was not acknowledged every write"
        positions = [stored.index(c) for c in contents]
        assert positions == sorted(positions), f"tab {tab}'s messages out of order"
    tabs[1].reload()
    tabs[1].evaluate(BOOT)
    assert tabs[1].evaluate(CONTENTS, sid) == stored
    assert len(tabs[1].evaluate(CONTENTS, "big")) == imported
    listed = tabs[1].evaluate(
        "async () => (await memory.sessions.getAllSessions()).map((m) => m.title)"
    )
    assert sorted(listed) == ["Imported", "Shared"]

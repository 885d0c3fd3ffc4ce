"""Fault suite: JSON nested thousands of levels deep, from the page's calls and from the
disk. In Pyodide, Python's recursive JSON parser overflows the WebAssembly stack on such
text and the interpreter dies for good; a record like that would stop every start-up.
Calls are refused with InvalidValueError, records are quarantined, and the system lives.
"""

from browser_flags import CHROMIUM  # noqa: F401  (the e2e conftest starts it)

BOOT = """async () => {
  window.settle = (promise) => Promise.race([promise.then((value) => ({ ok: true, value }),
    (error) => ({ ok: false, name: error.name, message: error.message })),
    new Promise((resolve) => setTimeout(() => resolve({ ok: false, name: 'StillPending' }), 20000))]);
  window.nested = (levels) => { let value = 0; for (let i = 0; i < levels; i++) value = { a: value }; return value; };
  const { createMemorySystem } = await import('/airi-memory.mjs');
  window.memory = await createMemorySystem({ userId: 'deep', retention: { enabled: false },
    context: { datetime: false }, embeddings: { provider: 'none' } });
}"""
# Overwrites the stored record of the session's first message with text nested `levels`
# deep, as another tool or a damaged disk could, and drops any snapshot; returns its
# IndexedDB key.
DAMAGE = """async ([sessionId, levels]) => {
  const db = await new Promise((resolve) => { const r = indexedDB.open('keyval-store'); r.onsuccess = () => resolve(r.result); });
  const store = db.transaction('keyval', 'readwrite').objectStore('keyval');
  const keys = await new Promise((resolve) => { const r = store.getAllKeys(); r.onsuccess = () => resolve(r.result); });
  const key = keys.filter((k) => k.includes(`memory:messages:${sessionId}:`)).sort()[0];
  store.put('{"a":'.repeat(levels) + '0' + '}'.repeat(levels), key);
  for (const snapshot of keys.filter((k) => k.includes('memory:snapshot'))) store.delete(snapshot); // so start-up reads the records
  await new Promise((resolve) => { store.transaction.oncomplete = resolve; });
  db.close();
  return key;
}"""


def test_deep_nesting_from_calls_and_from_disk_never_kills_the_system(web):
    web.open_harness()
    web.evaluate(BOOT)
    refused = web.evaluate(
        """async () => {
            const { sessionId } = await memory.sessions.createSession({ title: 'deep' });
            for (const content of ['first', 'second', 'third'])
                await memory.sessions.addMessage(sessionId, { role: 'user', content });
            const calls = {
                setItem: () => memory.storage.setItem('local:notes', nested(10000)),
                setItemShallower: () => memory.storage.setItem('local:notes', nested(3000)),
                addMessage: () => memory.sessions.addMessage(sessionId, { role: 'user', content: 'x', extra: nested(3000) }),
                importSessions: () => memory.importSessions('{"sessions":' + '['.repeat(20000) + ']'.repeat(20000) + '}'),
            };
            const outcomes = {};
            for (const [name, call] of Object.entries(calls)) outcomes[name] = await settle(call());
            return { sessionId, outcomes, ping: (await settle(memory.ping())).value,
                     notes: await memory.storage.getItem('local:notes') };
        }"""
    )
    for name, outcome in refused["outcomes"].items():
        assert not outcome["ok"], (name, outcome)
        assert outcome["name"] == "InvalidValueError", (name, outcome)
        assert "deep" in outcome["message"] or "levels" in outcome["message"], (name, outcome)
    assert refused["ping"] == "pong"
    assert refused["notes"] is None  # nothing stored
    session = refused["sessionId"]
    damaged = web.evaluate(DAMAGE, [session, 10_000])
    web.page.reload()
    web.evaluate(BOOT)  # start-up reads every record: it goes on past the damaged one
    after = web.evaluate(
        """async (sessionId) => ({
            contents: (await memory.sessions.loadSessionMessages(sessionId)).map((m) => m.content),
            quarantined: (await memory.sessions.stats()).quarantined.map((q) => q.key),
            ping: await memory.ping(),
        })""",
        session,
    )
    assert after["contents"] == ["second", "third"]
    assert after["ping"] == "pong"
    assert any(damaged.endswith(key.split(":", 1)[1]) for key in after["quarantined"]), (
        damaged,
        after["quarantined"],
    )

"""Fault suite: IndexedDB refuses a commit. Injected (the `testHooks` option makes the next
commit fail with QuotaExceededError or AbortError after its writes were made, as a full
disk or a browser abort would) and real (CDP's Storage.overrideQuotaForOrigin shrinks the
origin's quota). The caller gets StorageQuotaError / StorageWriteError, the database holds
byte for byte what it held before, the mirror and reads agree, later writes work, and a
reload finds every acknowledged write.
"""

import random

import pytest
from conftest import RecordedPage

from browser_flags import CHROMIUM, CHROMIUM_FLAGS

BOOT = """async (options) => {
  // A call that never settles (Pyodide once never saw a real QuotaExceededError) fails
  // the test after 30 s instead of hanging it.
  window.settle = (promise) => Promise.race([promise.then((value) => ({ ok: true, value }),
    (error) => ({ ok: false, name: error.name, message: error.message })),
    new Promise((resolve) => setTimeout(() => resolve({ ok: false, name: 'StillPending' }), 30000))]);
  const { createMemorySystem } = await import('/airi-memory.mjs');
  window.memory = await createMemorySystem({ userId: 'faults', retention: { enabled: false },
    context: { datetime: false }, embeddings: { provider: 'none' }, ...options });
}"""
# Every record of the database, as text (bytes as length and a checksum): what a failed
# write must leave exactly as it was.
RAW = """async () => {
  const db = await new Promise((resolve, reject) => {
    const request = indexedDB.open('keyval-store');
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  });
  const store = db.transaction('keyval').objectStore('keyval');
  const read = (request) => new Promise((resolve) => { request.onsuccess = () => resolve(request.result); });
  const [keys, values] = await Promise.all([read(store.getAllKeys()), read(store.getAll())]);
  db.close();
  const text = (value) => typeof value === 'string' ? value
    : ArrayBuffer.isView(value) ? `bytes ${value.byteLength} ${new Uint8Array(value.buffer).reduce((a, b) => (a * 31 + b) >>> 0, 7)}`
    : JSON.stringify(value);
  return keys.map((key, i) => [key, text(values[i])]);
}"""
STATE = """async (sessionId) => ({
  messages: (await memory.sessions.loadSessionMessages(sessionId)).map((m) => m.content),
  titles: (await memory.sessions.listSessions({ limit: 100 })).map((s) => s.title).sort(),
  mirrored: (await memory.query(
    'SELECT count(*)::INTEGER AS n FROM chat_messages WHERE session_id = ?', [sessionId]))[0].n,
})"""
# One write of each kind the library makes; `tag` keeps their contents apart.
WRITES = {
    "addMessage": "(s, tag) => memory.sessions.addMessage(s, { role: 'user', content: `turn ${tag}` })",
    "createSession": "(s, tag) => memory.sessions.createSession({ title: `new ${tag}` })",
    "renameSession": "(s, tag) => memory.sessions.renameSession(s, `renamed ${tag}`)",
    "forkSession": "(s, tag) => memory.sessions.forkSession({ fromSessionId: s, atIndex: 2, title: `fork ${tag}` })",
    "snapshot": "(s, tag) => memory.sessions.snapshot()",
    "deleteSession": "(s, tag) => memory.sessions.deleteSession(window.doomed)",
    # Last: a background snapshot it may start must not take a later test's fault.
    "importSessions": """(s, tag) => memory.importSessions({ version: '1.0.0', exportedAt: 1767225600000,
        sessions: [{ meta: { title: `imported ${tag}` }, messages: Array.from({ length: 50 },
          (_, i) => ({ role: 'user', content: `imported ${tag} ${i}`, createdAt: 1767225600000 + i })) }] })""",
}
EXPECTED_ERROR = {"QuotaExceededError": "StorageQuotaError", "AbortError": "StorageWriteError"}


def raw(web) -> list:
    return web.evaluate(RAW)


@pytest.mark.parametrize("fault", ["QuotaExceededError", "AbortError"])
def test_a_refused_commit_stores_nothing_and_later_writes_work(web, fault):
    web.open_harness()
    web.evaluate(BOOT, {"testHooks": True})
    session = web.evaluate(
        """async () => {
            const { sessionId } = await memory.sessions.createSession({ title: 'kept' });
            for (const content of ['one', 'two']) await memory.sessions.addMessage(sessionId, { role: 'user', content });
            window.doomed = (await memory.sessions.createSession({ title: 'doomed' })).sessionId;
            await memory.sessions.snapshot(); // nothing in the background takes the fault
            return sessionId;
        }"""
    )
    web.evaluate("(name) => { window.faultName = name; }", fault)
    acked = ["one", "two"]
    for kind, write in WRITES.items():
        before, state = raw(web), web.evaluate(STATE, session)
        failed = web.evaluate(
            f"async ([s, tag]) => {{ await memory._test.failCommits(faultName); return settle(({write})(s, tag)); }}",
            [session, kind],
        )
        assert not failed["ok"], (kind, failed)
        assert failed["name"] == EXPECTED_ERROR[fault], (kind, failed)
        assert "nothing" in failed["message"] and "stored" in failed["message"], failed
        assert raw(web) == before, kind
        assert web.evaluate(STATE, session) == state, kind
        done = web.evaluate(f"async ([s, tag]) => settle(({write})(s, tag))", [session, kind])
        assert done["ok"], (kind, done)
        if kind == "addMessage":
            acked.append(f"turn {kind}")
    after = web.evaluate(STATE, session)
    assert after["messages"] == acked and after["mirrored"] == len(acked)
    assert "renamed renameSession" in after["titles"]
    assert "doomed" not in after["titles"]
    stats = web.evaluate("async () => memory.sessions.stats()")
    assert stats["journal"]["snapshotFailures"] == 1, stats["journal"]
    web.page.reload()
    web.evaluate(BOOT, {})
    reloaded = web.evaluate(STATE, session)
    assert reloaded == after


def test_a_small_real_quota_refuses_a_write_whole_and_lifting_it_lets_writes_on(
    playwright, base_url, tmp_path
):
    """On a profile of its own: Chromium applies a quota override only there."""
    context = playwright.chromium.launch_persistent_context(
        tmp_path / "profile", executable_path=CHROMIUM, args=CHROMIUM_FLAGS
    )
    requests: list[str] = []
    context.on("request", lambda request: requests.append(request.url))
    try:
        page = context.new_page()
        page.set_default_timeout(60_000)
        fill_past_a_small_quota(RecordedPage(page, base_url, requests))
    finally:
        context.close()
    assert all(url.startswith(("http://127.0.0.1:", "blob:", "data:")) for url in requests)


def fill_past_a_small_quota(web) -> None:
    web.open_harness()
    # Before the database opens: Chromium reads the quota when it opens it.
    cdp = web.page.context.new_cdp_session(web.page)
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": web.base_url, "quotaSize": 600_000})
    web.evaluate(BOOT, {})
    session = web.evaluate(
        "async () => (await memory.sessions.createSession({ title: 'quota' })).sessionId"
    )
    acked, refused, before = [], None, None
    for i in range(60):  # 60 x 40 kB is far past the 400 kB left
        before = raw(web)
        content = f"{i} " + random.randbytes(20_000).hex()  # 40 kB that no disk compresses
        outcome = web.evaluate(
            "async ([s, content]) => settle(memory.sessions.addMessage(s, { role: 'user', content }))",
            [session, content],
        )
        if not outcome["ok"]:
            refused = outcome
            break
        acked.append(content)
    assert refused is not None, "the quota never ran out"
    assert refused["name"] == "StorageQuotaError", refused
    assert len(acked) >= 1, "the quota refused the first write: nothing to compare"
    assert raw(web) == before
    assert web.evaluate(STATE, session)["messages"] == acked
    cdp.send("Storage.overrideQuotaForOrigin", {"origin": web.base_url})  # back to normal
    later = web.evaluate(
        "async (s) => settle(memory.sessions.addMessage(s, { role: 'user', content: 'after' }))",
        session,
    )
    assert later["ok"], later
    web.page.reload()
    web.evaluate(BOOT, {})
    assert web.evaluate(STATE, session)["messages"] == [*acked, "after"]

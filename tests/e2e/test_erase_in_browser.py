"""eraseMemorySystem: everything the library stored goes (IndexedDB records of its mounts,
the second copy in OPFS), other code's records stay, and never while a system is open."""

import time

BOOT = """async () => {
  const { createMemorySystem } = await import('/airi-memory.mjs');
  window.memory = await createMemorySystem({ userId: 'erased', retention: { enabled: false },
    embeddings: { backgroundIndexing: false } });
  await memory.whenLoaded;
  return memory.restored;
}"""
WRITE = """async () => {
  const { sessionId } = await memory.sessions.createSession({ title: 'to erase' });
  for (let i = 0; i < 5; i++) {
    await memory.sessions.addMessage(sessionId, { role: 'user', content: `secret ${i}` });
  }
  await memory.storage.setItem('local:app:note', { text: 'secret note' });
  await memory.storage.setItemRaw('local:app:bytes', new Uint8Array([1, 2, 3]));
  return sessionId;
}"""
# Opens the store the library shares with unstorage (AIRI's own code), without the library.
OPEN_STORE = """() => new Promise((resolve, reject) => {
    const request = indexedDB.open('keyval-store');
    request.onupgradeneeded = () => request.result.createObjectStore('keyval');
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  })"""
STORE_KEYS = f"""async () => {{
  const db = await ({OPEN_STORE})();
  const keys = await new Promise((resolve, reject) => {{
    const request = db.transaction('keyval').objectStore('keyval').getAllKeys();
    request.onsuccess = () => resolve(request.result);
    request.onerror = () => reject(request.error);
  }});
  db.close();
  return keys;
}}"""
# Another app's record in the same store.
PUT_FOREIGN = f"""async () => {{
  const db = await ({OPEN_STORE})();
  const transaction = db.transaction('keyval', 'readwrite');
  transaction.objectStore('keyval').put('dark', 'airi-app:theme');
  await new Promise((resolve) => {{ transaction.oncomplete = resolve; }});
  db.close();
}}"""
# The names in OPFS, as a path list ('airi-memory-copy/<store>/<file>').
OPFS_PATHS = """async () => {
  const paths = [];
  const walk = async (folder, prefix) => {
    for await (const [name, handle] of folder.entries()) {
      paths.push(prefix + name);
      if (handle.kind === 'directory') await walk(handle, `${prefix}${name}/`);
    }
  };
  await walk(await navigator.storage.getDirectory(), '');
  return paths.sort();
}"""
ERASE = """async () => {
  const { eraseMemorySystem } = await import('/airi-memory.mjs');
  try {
    return { erased: await eraseMemorySystem() };
  } catch (error) {
    return { name: error.name, message: error.message };
  }
}"""


def _ours(keys: list[str]) -> list[str]:
    return [key for key in keys if key.startswith(("airi-local:", "airi-sync-queue:"))]


def test_erase_removes_the_librarys_records_and_copy_and_keeps_the_rest(web):
    web.open_harness()
    assert web.evaluate(BOOT) is None
    web.evaluate(WRITE)
    web.evaluate(PUT_FOREIGN)
    web.evaluate("() => memory.close()")
    keys = web.evaluate(STORE_KEYS)
    ours = _ours(keys)
    assert len(ours) > 10 and "airi-copy:clock" in keys and "airi-app:theme" in keys
    copy_files = [p for p in web.evaluate(OPFS_PATHS) if p.count("/") == 2]
    assert copy_files and all(
        p.startswith("airi-memory-copy/keyval-store~keyval/") for p in copy_files
    )

    outcome = web.evaluate(ERASE)

    assert outcome == {"erased": {"records": len(ours), "copyFiles": len(copy_files)}}
    assert web.evaluate(STORE_KEYS) == ["airi-app:theme"]
    assert web.evaluate(OPFS_PATHS) == []
    # Nothing comes back at the next start: no copy to restore from, no sessions.
    assert web.evaluate(BOOT) is None
    assert web.evaluate("() => memory.sessions.listSessions()") == []
    assert web.evaluate("() => memory.storage.getItem('local:app:note')") is None
    web.evaluate("() => memory.storage.setItem('local:app:after', 1)")
    web.evaluate("() => memory.close()")
    again = web.evaluate(ERASE)["erased"]
    assert again["records"] == 1 and again["copyFiles"] >= 1  # the new tab's log
    assert web.evaluate(ERASE) == {"erased": {"records": 0, "copyFiles": 0}}


def test_erase_refuses_while_another_tab_has_the_system_open(web):
    web.open_harness()
    web.evaluate(BOOT)
    session_id = web.evaluate(WRITE)
    other = web.page.context.new_page()
    other.goto(f"{web.base_url}/__e2e__/page.html")

    outcome = other.evaluate(ERASE)

    assert outcome["name"] == "MemoryInUseError", outcome
    assert "close it there" in outcome["message"] and "nothing was erased" in outcome["message"]
    messages = web.evaluate("(id) => memory.sessions.getSessionMessages(id)", session_id)
    assert [m["content"] for m in messages] == [f"secret {i}" for i in range(5)]
    assert len(_ours(other.evaluate(STORE_KEYS))) > 10
    assert any(p.startswith("airi-memory-copy/") for p in other.evaluate(OPFS_PATHS))

    # An erase asked for while the tab is open goes ahead once that tab closes its system.
    other.evaluate(f"() => {{ window.erasing = ({ERASE})(); }}")
    web.evaluate("() => memory.close()")
    assert other.evaluate("() => window.erasing")["erased"]["records"] > 10
    assert _ours(other.evaluate(STORE_KEYS)) == [] and other.evaluate(OPFS_PATHS) == []


def test_a_system_opened_during_an_erase_waits_for_it(web):
    web.open_harness()
    # Holding the lock an erase holds, as an erase in progress does.
    web.evaluate(
        """() => { navigator.locks.request('airi-memory-open:keyval-store~keyval',
             () => new Promise((release) => { window.releaseErase = release; })); }"""
    )
    web.evaluate(
        """async () => {
             const { openMemorySystem } = await import('/airi-memory.mjs');
             window.opening = openMemorySystem({ userId: 'waits' });
             window.readyAt = null;
             opening.whenReady.then(() => { window.readyAt = performance.now(); });
           }"""
    )
    time.sleep(8)  # a boot takes about 2 s here
    assert web.evaluate("() => window.readyAt") is None
    released_at = web.evaluate("() => { releaseErase(); return performance.now(); }")
    web.page.wait_for_function("() => window.readyAt !== null", timeout=60_000)
    assert web.evaluate("() => window.readyAt") > released_at
    web.evaluate("() => opening.close()")

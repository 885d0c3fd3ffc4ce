"""Fault suite: Chromium deletes the origin's whole IndexedDB, and the store comes back
from its second copy in OPFS (web/worker/opfs-copy.mjs).

Chromium does this at the second start after a crash that tore a LevelDB log record
(docs/DESIGN-notes.md, "A crash can make Chromium delete the whole IndexedDB"). The first
test makes that happen for real: it appends a record header with no data to the log, as
a SIGKILL between LevelDB's two writes leaves it. The others delete the IndexedDB folder
while the browser is down, which leaves what Chromium's recovery leaves: nothing.
"""

import json
import shutil
import tempfile
import time
from pathlib import Path

import pytest
from killable import KillableChromium

BOOT = """async () => {
  const { createMemorySystem } = await import('/airi-memory.mjs');
  window.memory = await createMemorySystem({ userId: 'wiped', retention: { enabled: false },
    embeddings: { backgroundIndexing: false }, testHooks: true });
  window.copyEvents = [];
  memory.addEventListener('storage-copy-failed', (event) => copyEvents.push(event.detail));
  return memory.restored;
}"""
# `turns` messages into the first session (made if none), each tab's own app values.
WRITE = """async ({ turns, tag }) => {
  let sessionId = (await memory.sessions.listSessions())[0]?.sessionId;
  if (!sessionId) sessionId = (await memory.sessions.createSession({ title: 'kept' })).sessionId;
  for (let i = 0; i < turns; i++) {
    await memory.sessions.addMessage(sessionId, { role: 'user', content: `${tag} ${i}` });
  }
  await memory.storage.setItem(`local:app:${tag}`, { tag, turns });
  await memory.storage.setItemRaw(`local:app:${tag}-bytes`, new Uint8Array([1, 2, 3, turns % 256]));
  return sessionId;
}"""
READ_BACK = """async (tags) => {
  const sessions = await memory.sessions.listSessions();
  const messages = {};
  for (const s of sessions) {
    messages[s.title] = (await memory.sessions.getSessionMessages(s.sessionId)).map((m) => m.content);
  }
  const app = {};
  for (const tag of tags) {
    app[tag] = await memory.storage.getItem(`local:app:${tag}`);
    const bytes = await memory.storage.getItemRaw(`local:app:${tag}-bytes`);
    app[`${tag}-bytes`] = bytes ? Array.from(bytes) : null;
  }
  return { messages, app };
}"""
# The copy's files, as the page sees OPFS: {name: size}.
COPY_FILES = """async () => {
  const root = await navigator.storage.getDirectory();
  let folder;
  try {
    folder = await root.getDirectoryHandle('airi-memory-copy');
  } catch {
    return {};
  }
  const files = {};
  // Under the copy's own lock (the origin's, the worker's too): no compaction mid-listing.
  for await (const [storeName, store] of folder.entries()) {
    await navigator.locks.request(`airi-memory-copy:${storeName}`, async () => {
      for await (const [name, file] of store.entries()) files[name] = (await file.getFile()).size;
    });
  }
  return files;
}"""
# Whether any of the copy's files holds `text` (as UTF-8).
COPY_HOLDS = """async (text) => {
  const wanted = new TextEncoder().encode(text);
  const root = await navigator.storage.getDirectory();
  const folder = await root.getDirectoryHandle('airi-memory-copy');
  const holds = async (store) => {
    for await (const [, file] of store.entries()) {
      const bytes = new Uint8Array(await (await file.getFile()).arrayBuffer());
      search: for (let i = 0; i + wanted.length <= bytes.length; i++) {
        for (let j = 0; j < wanted.length; j++) if (bytes[i + j] !== wanted[j]) continue search;
        return true;
      }
    }
    return false;
  };
  for await (const [storeName, store] of folder.entries()) {
    if (await navigator.locks.request(`airi-memory-copy:${storeName}`, () => holds(store))) return true;
  }
  return false;
}"""
SLOT_BYTES = "(files) => Math.max(files['slot-0'] ?? 0, files['slot-1'] ?? 0)"
# Bytes appended to every closed tab's log, as a crash mid-append leaves them.
TEAR_COPY_LOGS = """async () => {
  const root = await navigator.storage.getDirectory();
  const folder = await root.getDirectoryHandle('airi-memory-copy');
  let torn = 0;
  for await (const [, store] of folder.entries()) {
    for await (const [name, file] of store.entries()) {
      if (!name.startsWith('log-')) continue;
      const size = (await file.getFile()).size;
      const writable = await file.createWritable({ keepExistingData: true });
      await writable.seek(size);
      await writable.write(new Uint8Array([0, 0, 0, 40, 9, 9, 9, 9, 1, 2]));
      await writable.close();
      torn += 1;
    }
  }
  return torn;
}"""


class Browser:
    """One profile, started and killed as the test says."""

    def __init__(self, playwright, base_url: str, folder: Path) -> None:
        self.chromium = KillableChromium(playwright, folder / "profile")
        self.base_url = base_url

    def page(self, boot: bool = True):
        context = self.chromium.start()
        page = context.pages[0] if context.pages else context.new_page()
        page.set_default_timeout(120_000)
        page.goto(f"{self.base_url}/__e2e__/page.html")
        if boot:
            page.evaluate(BOOT)
        return page

    def new_tab(self, page):
        tab = page.context.new_page()
        tab.set_default_timeout(120_000)
        tab.goto(f"{self.base_url}/__e2e__/page.html")
        tab.evaluate(BOOT)
        return tab

    def kill(self) -> None:
        self.chromium.kill()

    def delete_indexeddb(self) -> None:
        """What Chromium leaves when it deletes a store it found corrupt."""
        shutil.rmtree(self.chromium.stored)

    def tear_leveldb_log(self) -> None:
        """A record header with no data at the end of the newest LevelDB log: what a kill
        between LevelDB's header and data writes leaves."""
        logs = sorted(self.chromium.stored.glob("*.leveldb/*.log"))
        with logs[-1].open("ab") as log:
            log.write(bytes([0x12, 0x34, 0x56, 0x78, 0x64, 0x00, 0x01]))

    def chromium_log(self) -> str:
        return self.chromium.log.read_text(errors="replace")


@pytest.fixture
def browser_on_disk(playwright, base_url):
    with tempfile.TemporaryDirectory(prefix="airi-wiped-") as folder:
        browser = Browser(playwright, base_url, Path(folder))
        try:
            yield browser
        finally:
            process = browser.chromium.process
            if process and process.poll() is None:
                browser.kill()


def wait_for_copy(page, holds: str, timeout_s: float = 60) -> dict:
    """The copy's files once `holds(files)` is true in the page (a compaction runs in the
    background); TimeoutError with the last files seen."""
    deadline = time.monotonic() + timeout_s
    while True:
        files = page.evaluate(COPY_FILES)
        if page.evaluate(f"({holds})({json.dumps(files)})"):
            return files
        if time.monotonic() > deadline:
            raise TimeoutError(f"the copy never came to {holds}: {files}")
        time.sleep(0.25)


def turns(tag: str, count: int, start: int = 0) -> list[str]:
    return [f"{tag} {i}" for i in range(start, start + count)]


def test_a_store_chromium_deletes_after_a_torn_log_comes_back_whole(browser_on_disk):
    browser = browser_on_disk
    page = browser.page()
    page.evaluate(WRITE, {"turns": 20, "tag": "first"})
    browser.kill()
    browser.tear_leveldb_log()

    page = browser.page()  # LevelDB drops the torn record and appends after it
    page.evaluate(WRITE, {"turns": 20, "tag": "second"})
    browser.kill()

    page = browser.page(boot=False)
    restored = page.evaluate(BOOT)
    log = browser.chromium_log()
    assert "IndexedDB recovering from a corrupted (and deleted) database" in log  # the wipe
    assert restored["from"] is None  # IndexedDB was empty
    assert restored["through"] >= 44  # every write numbered: 2 x (20 turns + 2 values) + 1
    stored = page.evaluate(READ_BACK, ["first", "second"])
    assert stored["messages"] == {"kept": turns("first", 20) + turns("second", 20)}
    assert stored["app"] == {
        "first": {"tag": "first", "turns": 20},
        "first-bytes": [1, 2, 3, 20],
        "second": {"tag": "second", "turns": 20},
        "second-bytes": [1, 2, 3, 20],
    }
    # The restored store is the store: the next start needs no restore.
    page.evaluate(WRITE, {"turns": 1, "tag": "third"})
    page.reload()
    assert page.evaluate(BOOT) is None
    assert page.evaluate(READ_BACK, [])["messages"]["kept"][-2:] == ["second 19", "third 0"]


def test_two_tabs_writes_come_back_in_commit_order(browser_on_disk):
    browser = browser_on_disk
    first = browser.page()
    session_id = first.evaluate(WRITE, {"turns": 2, "tag": "a"})
    second = browser.new_tab(first)
    # The tabs take turns on the same records: the last write of each must win, whichever
    # tab made it (a restore that replayed one tab's log after the other's would leave
    # one of the two keys wrong).
    for round_number in range(6):
        for tab, tag in ((first, "a"), (second, "b")):
            tab.evaluate(
                """async ({ sessionId, value, key }) => {
                  await memory.storage.setItem(`local:app:${key}`, value);
                  await memory.sessions.addMessage(sessionId, { role: 'user', content: value });
                }""",
                {
                    "sessionId": session_id,
                    "value": f"{tag}{round_number}",
                    "key": "shared" if tag == "b" or round_number < 5 else "other",
                },
            )
    first.evaluate("() => memory.storage.setItem('local:app:other', 'a last')")
    second.evaluate("() => memory.storage.setItem('local:app:shared', 'b last')")
    second.evaluate(
        """async () => {
          await memory.storage.setItem('local:app:gone', 'soon');
          const { sessionId } = await memory.sessions.createSession({ title: 'deleted' });
          await memory.sessions.addMessage(sessionId, { role: 'user', content: 'never back' });
          await memory.sessions.deleteSession(sessionId);
        }"""
    )
    first.evaluate("() => memory.storage.removeItem('local:app:gone')")
    browser.kill()

    page = browser.page(boot=False)
    assert page.evaluate(TEAR_COPY_LOGS) == 2  # both tabs died mid-append
    browser.kill()
    browser.delete_indexeddb()

    page = browser.page(boot=False)
    restored = page.evaluate(BOOT)
    assert restored is not None and restored["from"] is None
    interleaved = [f"{tag}{n}" for n in range(6) for tag in "ab"]
    found = page.evaluate(
        """async () => ({
          shared: await memory.storage.getItem('local:app:shared'),
          other: await memory.storage.getItem('local:app:other'),
          gone: await memory.storage.getItem('local:app:gone'),
          sessions: (await memory.sessions.listSessions()).map((s) => s.title),
        })"""
    )
    assert found == {"shared": "b last", "other": "a last", "gone": None, "sessions": ["kept"]}
    stored = page.evaluate(READ_BACK, [])
    assert stored["messages"]["kept"] == turns("a", 2) + interleaved


def test_a_large_copy_is_compacted_and_an_older_store_gets_its_copy(browser_on_disk):
    browser = browser_on_disk
    page = browser.page()
    page.evaluate(WRITE, {"turns": 3, "tag": "a"})
    # 6 x 0.9 MB: this tab's log passes the 4 MB at which the copy writes a slot.
    page.evaluate(
        """async () => {
          for (let i = 0; i < 6; i++) await memory.storage.setItem(`local:app:big-${i}`, `${i}`.repeat(900000));
        }"""
    )
    one_log = "Object.keys(files).filter((name) => name.startsWith('log-')).length === 1"
    files = wait_for_copy(page, f"(files) => ({SLOT_BYTES})(files) > 4000000 && {one_log}")
    logs = [size for name, size in files.items() if name.startswith("log-")]
    assert len(logs) == 1 and logs[0] < 1_000_000  # the slot holds what the log held
    page.evaluate(
        """async () => {
          await memory.storage.setItem('local:app:big-0', 'small now');
          await memory.storage.removeItem('local:app:big-1');
        }"""
    )
    # A delete rewrites the copy soon after (10 s): what was deleted leaves its files.
    deleted = "1" * 1000
    assert page.evaluate(COPY_HOLDS, deleted)
    wait_for_copy(page, "(files) => files['slot-1'] > 3000000 && !('slot-0' in files)")
    assert not page.evaluate(COPY_HOLDS, deleted)
    assert page.evaluate(COPY_HOLDS, "2" * 1000)
    browser.kill()
    browser.delete_indexeddb()

    page = browser.page(boot=False)
    assert page.evaluate(BOOT)["from"] is None
    big = """async () => {
      const values = [];
      for (let i = 0; i < 6; i++) {
        const value = await memory.storage.getItem(`local:app:big-${i}`);
        values.push(value === null ? null : value.length > 20 ? [value[0], value.length] : value);
      }
      return values;
    }"""
    kept = [f"{i}" for i in range(2, 6)]
    assert page.evaluate(big) == ["small now", None, *[[i, 900000] for i in kept]]
    assert page.evaluate(READ_BACK, [])["messages"] == {"kept": turns("a", 3)}
    browser.kill()

    # A store written before there was a copy (the copy's folder gone): its first start
    # copies it whole, so a deletion after that loses nothing.
    shutil.rmtree(browser.chromium.profile / "Default" / "File System")
    page = browser.page()
    wait_for_copy(page, f"(files) => ({SLOT_BYTES})(files) > 3500000 && {one_log}")
    browser.kill()
    browser.delete_indexeddb()
    page = browser.page(boot=False)
    assert page.evaluate(BOOT)["from"] is None
    assert page.evaluate(big) == ["small now", None, *[[i, 900000] for i in kept]]
    assert page.evaluate(READ_BACK, [])["messages"] == {"kept": turns("a", 3)}


def test_a_write_its_copy_misses_stands_and_the_copy_is_rewritten(browser_on_disk):
    browser = browser_on_disk
    page = browser.page()
    page.evaluate(WRITE, {"turns": 3, "tag": "a"})
    page.evaluate("() => memory._test.failCopies(1)")
    page.evaluate(WRITE, {"turns": 1, "tag": "b"})  # resolves: IndexedDB has it
    events = page.evaluate("copyEvents")
    assert [event["message"] for event in events] == ["injected by a test"]
    wait_for_copy(page, f"(files) => ({SLOT_BYTES})(files) > 0")  # rewritten from IndexedDB
    browser.kill()
    browser.delete_indexeddb()

    page = browser.page(boot=False)
    assert page.evaluate(BOOT)["from"] is None
    stored = page.evaluate(READ_BACK, ["a", "b"])
    assert stored["messages"] == {"kept": [*turns("a", 3), "b 0"]}
    assert stored["app"]["b"] == {"tag": "b", "turns": 1}


def test_a_store_that_lost_its_last_writes_gets_them_replayed(browser_on_disk):
    browser = browser_on_disk
    page = browser.page()
    page.evaluate(WRITE, {"turns": 5, "tag": "a"})
    browser.kill()
    older = browser.chromium.profile.with_name("IndexedDB-older")
    shutil.copytree(browser.chromium.stored, older)
    page = browser.page()
    page.evaluate(WRITE, {"turns": 5, "tag": "b"})
    page.evaluate("() => memory.storage.removeItem('local:app:a')")
    browser.kill()
    # IndexedDB as it was before the last start's writes: behind its copy, not empty.
    shutil.rmtree(browser.chromium.stored)
    shutil.copytree(older, browser.chromium.stored)

    page = browser.page(boot=False)
    restored = page.evaluate(BOOT)
    assert restored["records"] is None  # only the missing writes, replayed in order
    assert 0 < restored["from"] < restored["through"]
    stored = page.evaluate(READ_BACK, ["a", "b"])
    assert stored["messages"] == {"kept": turns("a", 5) + turns("b", 5)}
    assert stored["app"] == {
        "a": None,  # its removal was one of the lost writes
        "a-bytes": [1, 2, 3, 5],
        "b": {"tag": "b", "turns": 5},
        "b-bytes": [1, 2, 3, 5],
    }


def test_a_delete_leaves_every_live_tabs_copy_files(browser_on_disk):
    browser = browser_on_disk
    deleting = browser.page()
    deleting.evaluate(WRITE, {"turns": 1, "tag": "kept"})
    writing = browser.new_tab(deleting)
    secret = "a secret only the other tab wrote " + "s" * 200
    doomed = writing.evaluate(
        """async (secret) => {
          const { sessionId } = await memory.sessions.createSession({ title: 'doomed' });
          await memory.sessions.addMessage(sessionId, { role: 'user', content: secret });
          return sessionId;
        }""",
        secret,
    )
    assert deleting.evaluate(COPY_HOLDS, secret)  # in the writing tab's log
    deleting.evaluate(
        """async (id) => {
          await memory.sessions.sync();
          await memory.sessions.deleteSession(id);
        }""",
        doomed,
    )
    # The deleting tab rewrites the copy 10 s later, and the writing tab, told, drops
    # what that slot covers from its own log: both tabs still open.
    deadline = time.monotonic() + 40
    while deleting.evaluate(COPY_HOLDS, secret):
        assert time.monotonic() < deadline, deleting.evaluate(COPY_FILES)
        time.sleep(0.5)
    # The writing tab's log goes on taking writes, and they come back after a loss.
    session_id = writing.evaluate(
        "() => memory.sessions.listSessions().then((s) => s[0].sessionId)"
    )
    writing.evaluate(
        "(id) => memory.sessions.addMessage(id, { role: 'user', content: 'after the trim' })",
        session_id,
    )
    browser.kill()
    browser.delete_indexeddb()

    page = browser.page(boot=False)
    assert page.evaluate(BOOT)["from"] is None
    assert page.evaluate(READ_BACK, [])["messages"] == {"kept": ["kept 0", "after the trim"]}
    assert not page.evaluate(COPY_HOLDS, secret)


def test_a_delete_from_a_tab_gone_before_its_slot_leaves_the_copy_at_the_next_start(
    browser_on_disk,
):
    """A tab rewrites the copy 10 s after a delete. One killed (or closed) sooner leaves
    a file saying so, and the next start writes the slot: the deleted records do not
    wait in the closed tab's log for the next compaction (16 closed logs, or 4 MB)."""
    browser = browser_on_disk
    page = browser.page()
    page.evaluate(WRITE, {"turns": 1, "tag": "kept"})
    secret = "a secret deleted just before the tab went " + "s" * 200
    page.evaluate(
        """async (secret) => {
          const { sessionId } = await memory.sessions.createSession({ title: 'doomed' });
          await memory.sessions.addMessage(sessionId, { role: 'user', content: secret });
          await memory.sessions.deleteSession(sessionId);
        }""",
        secret,
    )
    wait_for_copy(
        page, "(files) => Object.keys(files).some((name) => name.startsWith('erase-due-'))"
    )
    assert page.evaluate(COPY_HOLDS, secret)
    browser.kill()

    page = browser.page()
    deadline = time.monotonic() + 30
    while page.evaluate(COPY_HOLDS, secret):
        assert time.monotonic() < deadline, page.evaluate(COPY_FILES)
        time.sleep(0.5)
    files = wait_for_copy(
        page, "(files) => !Object.keys(files).some((name) => name.startsWith('erase-due-'))"
    )
    assert any(name.startswith("slot-") for name in files)
    assert page.evaluate(READ_BACK, [])["messages"] == {"kept": ["kept 0"]}
    # What the slot holds comes back whole after a loss.
    browser.kill()
    browser.delete_indexeddb()
    page = browser.page(boot=False)
    assert page.evaluate(BOOT)["from"] is None
    assert page.evaluate(READ_BACK, ["kept"])["messages"] == {"kept": ["kept 0"]}

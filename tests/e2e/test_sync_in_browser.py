"""Cloud sync end to end: two browser profiles (two devices) syncing through the real
sync server (its CLI, SQLite, on loopback), each page talking to nothing but its own
origin and the endpoint it was given."""

import http.server
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from sync_harness import SyncServerProcess


@pytest.fixture
def sync_server(tmp_path) -> Iterator[SyncServerProcess]:
    server = SyncServerProcess(tmp_path / "sync.sqlite3")
    server.start()
    yield server
    server.kill()


def boot_with_sync(page: Any, endpoint: str, api_key: str, **sync: Any) -> None:
    """The memory system booted in ``page`` (a Playwright page), syncing as the key's user;
    the automatic runner off unless asked, so a test says when a run happens."""
    page.evaluate(
        """async (sync) => {
            const { createMemorySystem } = await import('/airi-memory.mjs');
            window.memory = await createMemorySystem({ userId: 'alice', sync });
        }""",
        {"enabled": True, "endpoint": endpoint, "apiKey": api_key, "autoSync": False, **sync},
    )


def open_device(profiles, endpoint: str, api_key: str, **sync: Any) -> Any:
    """A new browser profile (a device) with the memory system booted and syncing."""
    device = profiles.open()
    device.open_harness()
    boot_with_sync(device.page, endpoint, api_key, **sync)
    return device


def sync_now(device: Any) -> dict[str, Any]:
    return device.evaluate("() => memory.sync.processSyncQueue()")


def conversation(device: Any) -> dict[str, Any]:
    return device.evaluate(
        """async () => {
            const out = {};
            for (const meta of await memory.sessions.getAllSessions()) {
                const messages = await memory.sessions.loadSessionMessages(meta.sessionId);
                out[meta.sessionId] = { meta, messages };
            }
            return out;
        }"""
    )


def test_writes_on_one_device_appear_on_the_other(profiles, sync_server):
    key = sync_server.create_user("alice")
    phone = open_device(profiles, sync_server.url, key)
    laptop = open_device(profiles, sync_server.url, key)
    written = phone.evaluate(
        """async () => {
            const s = await memory.sessions.createSession({ title: 'Kyoto' });
            await memory.sessions.addMessage(s.sessionId, { role: 'user', content: 'Temples in May?' });
            await memory.sessions.addMessage(s.sessionId, { role: 'assistant', content: 'Go early.' });
            const keys = await memory.storage.getKeys('outbox');
            return { keys, op: await memory.storage.getItem(keys[1]),
                     status: await memory.sync.status() };
        }"""
    )
    # The seed's key shape and fields, in IndexedDB beside the records they describe.
    assert len(written["keys"]) == 5 and all(k.startswith("outbox:") for k in written["keys"])
    op = written["op"]
    assert {"id", "type", "resource", "data", "timestamp", "retries"} <= set(op)
    assert (op["type"], op["resource"], op["data"]["content"]) == (
        "create",
        "message",
        "Temples in May?",
    )
    assert written["status"]["pending"] == 5 and written["status"]["apiKey"] == "set"
    assert key not in str(written["status"])
    # The real unstorage, mounted as the seed mounts it, reads the same operations.
    seen = phone.evaluate(
        """async (key) => {
            const { createSeedStorage } = await import('/__e2e__/unstorage.mjs');
            return await createSeedStorage().getItem(key);
        }""",
        written["keys"][1],
    )
    assert seen == op

    assert sync_now(phone)["pushed"] == 5
    assert sync_now(laptop)["pulled"] == 5
    assert conversation(laptop) == conversation(phone)
    found = laptop.evaluate("() => memory.search({ query: 'temples', strategy: 'keyword' })")
    assert [hit["message"]["content"] for hit in found["results"]][:1] == ["Temples in May?"]
    assert len(sync_server.operations(key)) == 5
    # Nothing but the page's own origin and the endpoint it was given.
    assert {url.split("/")[2] for url in profiles.requests} <= {
        phone.base_url.split("/")[2], sync_server.url.split("/")[2],
    }  # fmt: skip


def test_offline_edits_converge_and_a_delete_wins(profiles, sync_server):
    key = sync_server.create_user("alice")
    phone = open_device(profiles, sync_server.url, key)
    laptop = open_device(profiles, sync_server.url, key)
    ids = phone.evaluate(
        """async () => {
            const kept = await memory.sessions.createSession({ title: 'Plans' });
            const doomed = await memory.sessions.createSession({ title: 'Doomed' });
            return { kept: kept.sessionId, doomed: doomed.sessionId };
        }"""
    )
    sync_now(phone)
    sync_now(laptop)
    # Both offline: the browser says so, and a run sends nothing.
    for device in (phone, laptop):
        device.page.context.set_offline(True)
    report = sync_now(phone)
    assert report["error"].startswith("offline") and report["pushed"] == 0
    laptop.evaluate(
        """async ({ kept, doomed }) => {
            await memory.sessions.renameSession(kept, 'Plans (laptop)');
            await memory.sessions.renameSession(doomed, 'an older edit');
            await memory.sessions.addMessage(kept, { role: 'user', content: 'from the laptop' });
        }""",
        ids,
    )
    phone.evaluate(
        """async ({ kept, doomed }) => {
            await new Promise((done) => setTimeout(done, 20));  // a later wall clock
            await memory.sessions.pinSession(kept, true);
            await memory.sessions.deleteSession(doomed);
            await memory.sessions.addMessage(kept, { role: 'user', content: 'from the phone' });
        }""",
        ids,
    )
    for device in (phone, laptop):
        device.page.context.set_offline(False)
    for device in (phone, laptop, phone):
        assert "error" not in sync_now(device)
    phone_view, laptop_view = conversation(phone), conversation(laptop)
    assert set(phone_view) == set(laptop_view) == {ids["kept"]}
    meta = laptop_view[ids["kept"]]["meta"]
    assert (meta["title"], meta["pinned"]) == ("Plans (laptop)", True)
    assert phone_view[ids["kept"]]["meta"] == meta
    contents = {m["content"] for m in laptop_view[ids["kept"]]["messages"]}
    assert contents == {m["content"] for m in phone_view[ids["kept"]]["messages"]}
    assert contents == {"from the laptop", "from the phone"}


class FaultyProxy:
    """A real HTTP hop in front of the sync server that answers the next ``fail`` pushes
    with a 500 (with CORS headers, so the page sees the status, not a network error), and
    at push number ``cut_at_push`` forwards it, calls ``on_cut`` (which kills the server)
    and closes the connection without an answer."""

    def __init__(self, upstream: str) -> None:
        proxy = self
        self.fail = 0
        self.pushes = 0
        self.cut_at_push: int | None = None
        self.on_cut: Any = None
        self.push_delay_s = 0.0  # each push waits this long before it is forwarded

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _forward(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else None
                if self.command == "POST" and proxy.fail > 0:
                    proxy.fail -= 1
                    return self._answer(500, b'{"error":"internal","message":"injected"}', {})
                if self.command == "POST":
                    proxy.pushes += 1
                    time.sleep(proxy.push_delay_s)
                headers = {k: v for k, v in self.headers.items() if k.lower() != "host"}
                request = urllib.request.Request(
                    upstream + self.path, body, headers, method=self.command
                )
                try:
                    with urllib.request.urlopen(request, timeout=30) as reply:
                        status, data, got = reply.status, reply.read(), reply.headers
                except urllib.error.HTTPError as error:
                    status, data, got = error.code, error.read(), error.headers
                except urllib.error.URLError:
                    self.close_connection = True  # the server is gone: so is the answer
                    return None
                if self.command == "POST" and proxy.pushes == proxy.cut_at_push:
                    proxy.on_cut()
                    self.close_connection = True
                    return None
                self._answer(status, data, dict(got.items()))

            def _answer(self, status: int, data: bytes, headers: dict[str, str]) -> None:
                self.send_response(status)
                for name, value in headers.items():
                    skipped = ("content-length", "date", "server", "connection")
                    if name.lower() not in (*skipped, "access-control-allow-origin"):
                        self.send_header(name, value)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = do_OPTIONS = _forward

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


def test_the_server_killed_mid_push_loses_nothing_and_applies_nothing_twice(profiles, sync_server):
    key = sync_server.create_user("alice")
    proxy = FaultyProxy(sync_server.url)
    proxy.cut_at_push, proxy.on_cut = 3, sync_server.kill
    try:
        phone = open_device(profiles, proxy.url, key)
        made = phone.evaluate(
            """async () => {
                const sessions = [];
                for (let s = 0; s < 6; s++) {
                    const messages = Array.from({ length: 250 }, (_, i) => ({
                        id: `m${s}-${i}`, role: i % 2 ? 'assistant' : 'user',
                        content: `turn ${i} of session ${s}`, createdAt: 1764547200000 + i,
                    }));
                    sessions.push({ meta: { sessionId: `s${s}`, title: `Session ${s}`,
                        createdAt: 1764547200000, updatedAt: 1764547200000 }, messages });
                }
                const file = { version: '1.0.0', exportedAt: 1764547200000, sessions };
                await memory.importSessions(file, { keepIds: true });
                return (await memory.sync.status()).pending;
            }"""
        )
        assert made == 6 * 251
        # The third push reaches the server, which applies it and dies before it answers.
        first = sync_now(phone)
        assert "cannot reach" in first["error"] and first["pending"] == made - 2 * 200
        assert sync_server.stored_count() == 3 * 200
        sync_server.start()  # same port, same database
        second = sync_now(phone)
        assert "error" not in second and second["pending"] == 0
        assert second["pushed"] == made - 2 * 200  # the third batch again, applied once
        stored = sync_server.operations(key)
        assert len(stored) == len({op["id"] for op in stored}) == made
        laptop = open_device(profiles, sync_server.url, key)
        sync_now(laptop)
        assert conversation(laptop) == conversation(phone)
    finally:
        proxy.server.shutdown()


def test_dead_letters_after_three_failures_and_their_retry_from_the_page(profiles, sync_server):
    key = sync_server.create_user("alice")
    proxy = FaultyProxy(sync_server.url)
    try:
        phone = open_device(profiles, proxy.url, key)
        phone.evaluate("() => memory.sessions.createSession({ title: 'Flaky' })")
        proxy.fail = 4
        reports = [sync_now(phone) for _ in range(4)]
        assert all("answered 500" in r["error"] for r in reports)
        assert [r["failed"] for r in reports] == [0, 0, 0, 1]
        letters = phone.evaluate("() => memory.sync.deadLetters()")
        assert [(d["retries"], d["resource"]) for d in letters] == [(4, "session")]
        phone.page.reload()  # dead letters are durable: IndexedDB, not the memory root
        boot_with_sync(phone.page, proxy.url, key)
        again = phone.evaluate(
            """async () => {
                const letters = await memory.sync.deadLetters();
                const retried = await memory.sync.retry(letters.map((d) => d.id));
                return { retried, report: await memory.sync.processSyncQueue(),
                         status: await memory.sync.status() };
            }"""
        )
        assert again["retried"] == 1 and again["report"]["pushed"] == 1
        assert (again["status"]["failed"], again["status"]["pending"]) == (0, 0)
        assert len(sync_server.operations(key)) == 1
    finally:
        proxy.server.shutdown()


def test_auto_sync_brings_a_write_across_without_a_call(profiles, sync_server):
    key = sync_server.create_user("alice")
    phone = open_device(profiles, sync_server.url, key, autoSync=True, syncInterval=1000)
    laptop = open_device(profiles, sync_server.url, key, autoSync=True, syncInterval=1000)
    sid = phone.evaluate(
        "async () => (await memory.sessions.createSession({ title: 'Auto' })).sessionId"
    )
    laptop.page.wait_for_function(
        "async (sid) => (await memory.sessions.getSession(sid))?.title === 'Auto'",
        arg=sid,
        polling=200,
    )
    # The phone's run ends after the laptop could pull (it removes what was sent, then
    # pulls): its status settles at nothing pending, with a success after the write.
    phone.page.wait_for_function(
        """async () => { const s = await memory.sync.status();
                         return s.running && s.pending === 0 && s.lastError === null; }""",
        polling=200,
    )


def open_demo_with_sync(device: Any, endpoint: str, api_key: str) -> None:
    """The demo's sync panel filled in by hand and applied, automatic sync off."""
    device.page.wait_for_selector("#sync-status:not(:empty)")
    device.page.fill("#sync-endpoint", endpoint)
    device.page.fill("#sync-key", api_key)
    device.page.uncheck("#sync-auto")
    device.page.click("#sync-apply")
    device.page.wait_for_selector("#sync-output:has-text('Sync is on.')")


def test_the_demo_page_syncs_from_its_panel(profiles, sync_server):
    key = sync_server.create_user("demo")
    phone = profiles.open()
    phone.open_demo("Synced chat")
    phone.send_in_demo("hello from the demo")
    open_demo_with_sync(phone, sync_server.url, key)
    phone.page.click("#sync-now")
    phone.page.wait_for_selector("#sync-status[data-pending='0']")
    contents = [op.get("data", {}).get("content") for op in sync_server.operations(key)]
    assert "hello from the demo" in contents
    # An operation the server refuses shows as a dead letter, which the page discards.
    phone.page.fill("#kv-key", "outbox:0-bad")
    phone.page.fill("#kv-value", '{"id": "0-bad", "type": "explode"}')
    phone.page.click("#kv-write")
    phone.page.click("#sync-now")
    phone.page.wait_for_selector("#dead-letters li[data-id='0-bad']")
    assert phone.page.get_attribute("#sync-status", "data-failed") == "1"
    phone.page.click("#dead-letters li[data-id='0-bad'] .discard-letter")
    phone.page.wait_for_selector("#sync-status[data-failed='0']")

    laptop = profiles.open()
    laptop.page.goto(f"{laptop.base_url}/demo/")
    laptop.page.wait_for_selector("#status[data-state=ready]", timeout=60_000)
    open_demo_with_sync(laptop, sync_server.url, key)
    laptop.page.click("#sync-now")
    laptop.page.wait_for_selector("#sync-output:has-text('pulled')")
    assert laptop.evaluate(
        """async () => (await memory.sessions.getAllSessions()).map((s) => s.title)"""
    ) == ["Synced chat"]


def test_one_tab_runs_sync_at_a_time(profiles, sync_server):
    """Two tabs of one profile asked to sync at once: the second waits for the first's
    Web Lock, then finds nothing left to push; the server has each operation once."""
    key = sync_server.create_user("alice")
    proxy = FaultyProxy(sync_server.url)
    proxy.push_delay_s = 0.4
    try:
        first = open_device(profiles, proxy.url, key)
        second = first.page.context.new_page()
        second.goto(f"{first.base_url}/__e2e__/page.html")
        boot_with_sync(second, proxy.url, key)
        made = first.evaluate(
            """async () => {
                const s = await memory.sessions.createSession({ title: 'Two tabs' });
                for (let i = 0; i < 450; i++) {
                    await memory.sessions.addMessage(s.sessionId, { role: 'user', content: `m${i}` });
                }
                window.run = memory.sync.processSyncQueue();
                return (await memory.sync.status()).pending;
            }"""
        )
        assert made == 1 + 2 * 450  # 5 pushes of 200, 0.4 s each
        held = second.evaluate(
            """async () => {
                for (let i = 0; i < 100; i++) {
                    const { held } = await navigator.locks.query();
                    if (held.some((lock) => lock.name === 'airi-memory-sync')) return true;
                    await new Promise((resolve) => setTimeout(resolve, 20));
                }
                return false;
            }"""
        )
        assert held  # the first tab's run holds the lock
        waited = second.evaluate("() => memory.sync.processSyncQueue()")
        ran = first.evaluate("() => window.run")
        assert ran["pushed"] == made and "error" not in ran
        assert waited["pushed"] == 0 and waited["pending"] == 0 and "error" not in waited
        assert proxy.pushes == 5 and len(sync_server.operations(key)) == made
    finally:
        proxy.server.shutdown()


def test_a_device_restored_from_its_copy_syncs_on_with_nothing_lost_or_twice(profiles, sync_server):
    key = sync_server.create_user("alice")
    phone = open_device(profiles, sync_server.url, key)
    laptop = open_device(profiles, sync_server.url, key)
    session_id = phone.evaluate(
        """async () => {
            const { sessionId } = await memory.sessions.createSession({ title: 'Trip' });
            await memory.sessions.addMessage(sessionId, { role: 'user', content: 'one' });
            await memory.sessions.addMessage(sessionId, { role: 'user', content: 'two' });
            return sessionId;
        }"""
    )
    assert sync_now(phone)["pushed"] == 5  # the session, then each message and the session's update
    # Written after the push: in the outbox only, when IndexedDB goes.
    phone.evaluate(
        "(id) => memory.sessions.addMessage(id, { role: 'user', content: 'three, unsent' })",
        session_id,
    )
    sync_now(laptop)
    laptop.evaluate(
        "(id) => memory.sessions.addMessage(id, { role: 'assistant', content: 'four, elsewhere' })",
        session_id,
    )
    assert sync_now(laptop)["pushed"] == 2
    pending = phone.evaluate("() => memory.sync.status()")
    assert pending["pending"] == 2
    # IndexedDB lost while the phone's system is closed (as Chromium's recovery leaves
    # it), its copy in OPFS kept.
    phone.evaluate(
        """async () => {
            await memory.close();
            await new Promise((resolve, reject) => {
                const request = indexedDB.deleteDatabase('keyval-store');
                request.onsuccess = resolve;
                request.onerror = () => reject(request.error);
            });
        }"""
    )

    boot_with_sync(phone.page, sync_server.url, key)

    restored = phone.evaluate("() => memory.restored")
    assert restored["records"] > 0 and restored["from"] is None
    status = phone.evaluate("() => memory.sync.status()")
    assert status["pending"] == 2 and status["device"] == pending["device"]  # "three" kept
    report = sync_now(phone)
    # Pulled: the laptop's two, and its own two echoed back (as for any device).
    assert (report["pushed"], report["pulled"]) == (2, 4) and "error" not in report
    sync_now(laptop)
    expected = ["one", "two", "three, unsent", "four, elsewhere"]
    for device in (phone, laptop):
        messages = conversation(device)[session_id]["messages"]
        assert sorted(m["content"] for m in messages) == sorted(expected)
    assert len(sync_server.operations(key)) == 9  # each operation once on the server

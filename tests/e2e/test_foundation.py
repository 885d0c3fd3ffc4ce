"""The foundation end to end: the built dist in Chromium, driven through the JS facade."""

import json
from pathlib import Path

import pytest

# The demo's last state, for a person to look at (build/out is git-ignored).
ROOT_SCREENSHOT = Path(__file__).resolve().parents[2] / "build" / "out" / "demo-sessions.png"

SESSION_KEY = "local:chat/sessions/abc"
SESSION = {"sessionId": "abc", "title": "Hello", "tags": ["x"], "pinned": False, "n": 3}


def test_boot_reports_ready_versions_and_mounts(web):
    web.open_harness()
    summary = web.boot("alice")
    assert summary["userId"] == "alice"
    assert summary["versions"]["pyodide"] == "314.0.7"
    assert summary["versions"]["python"].startswith("3.14")
    assert summary["versions"]["duckdb"].startswith("v1.4")
    assert summary["versions"]["duckdbWasm"] == "1.32.0"
    assert summary["mounts"] == ["", "local", "outbox"]
    assert 0 < summary["bootMs"] <= summary["ready"] < summary["loaded"]
    assert web.evaluate("() => memory.ping()") == "pong"


SNAPSHOT_BOOT = """async ([startupSnapshot, userId]) => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId, startupSnapshot });
    const sid = (await memory.sessions.createSession({ title: 't' })).sessionId;
    await memory.sessions.addMessage(sid, { role: 'user', content: 'purple frogs sing' });
    const found = await memory.search({ query: 'frogs', strategy: 'keyword' });
    return { outcome: memory.startupSnapshot, phases: Object.keys(memory.bootPhases),
             python: memory.versions.python, found: found.results.map((h) => h.message.content) };
}"""


def test_startup_snapshot_restores_python_or_boots_as_usual(web):
    """The experimental startupSnapshot option: Python restored from the build's snapshot
    works as a booted one; a snapshot that cannot be read leaves a normal boot, and says
    why; without the option nothing is fetched."""
    web.open_harness()
    fetched = []
    web.page.on("request", lambda r: fetched.append(r.url) if "snapshot" in r.url else None)
    plain = web.evaluate(SNAPSHOT_BOOT, [False, "plain"])
    assert plain["outcome"] == "off" and "snapshot" not in plain["phases"] and not fetched
    web.evaluate("() => memory.close()")
    web.page.reload()
    used = web.evaluate(SNAPSHOT_BOOT, [True, "used"])
    assert used["outcome"] == "used" and used["phases"][0] == "snapshot"
    assert used["found"] == ["purple frogs sing"] and used["python"].startswith("3.14")
    assert len(fetched) == 1
    web.evaluate("() => memory.close()")
    web.page.route("**/pyodide-snapshot.bin.gz", lambda route: route.fulfill(body=b"not gzip"))
    web.page.reload()
    broken = web.evaluate(SNAPSHOT_BOOT, [True, "broken"])
    assert broken["outcome"].startswith("failed: ") and broken["found"] == ["purple frogs sing"]
    with pytest.raises(Exception, match="startupSnapshot option must be true or false"):
        web.evaluate(
            "async () => (await import('/airi-memory.mjs')).openMemorySystem({ startupSnapshot: 1 })"
        )


def test_a_start_writes_the_packages_bundle_and_refuses_one_that_does_not_match(web):
    """Our Python packages come from the build's one bundle (site-packages-<hash>.bin),
    written into site-packages while Pyodide boots: no wheel is fetched. A bundle that is
    not the build's (a stale cache, a broken server) fails the boot with an error that
    names it, not with an import error from deep inside Python."""
    web.open_harness()
    fetched = []
    web.page.on("request", lambda request: fetched.append(request.url))
    web.boot("bundle")
    bundles = [url for url in fetched if "/site-packages-" in url]
    assert len(bundles) == 1 and bundles[0].endswith(".bin")
    assert not [url for url in fetched if url.endswith(".whl")]
    assert web.evaluate("() => memory.ping()") == "pong"
    web.evaluate("() => memory.close()")
    web.page.route("**/site-packages-*.bin", lambda route: route.fulfill(body=b"stale"))
    web.page.reload()
    with pytest.raises(Exception, match=r"Python packages \(site-packages-[0-9a-f]{16}\.bin\)"):
        web.boot("stale")


def test_value_survives_reload_and_unstorage_reads_it(web):
    web.open_harness()
    web.boot()
    web.evaluate("([k, v]) => memory.storage.setItem(k, v)", [SESSION_KEY, SESSION])
    web.page.reload()
    web.boot()
    assert web.evaluate("(k) => memory.storage.getItem(k)", SESSION_KEY) == SESSION
    seen_by_unstorage = web.evaluate(
        """async (k) => {
            const { createSeedStorage, rawGet } = await import('/__e2e__/unstorage.mjs');
            const storage = createSeedStorage();
            return { value: await storage.getItem(k), raw: await rawGet('airi-local:chat:sessions:abc') };
        }""",
        SESSION_KEY,
    )
    assert seen_by_unstorage["value"] == SESSION
    assert json.loads(seen_by_unstorage["raw"]) == SESSION  # JSON text, as unstorage writes


def test_python_reads_what_unstorage_wrote(web):
    web.open_harness()
    web.evaluate(
        """async () => {
            const { createSeedStorage } = await import('/__e2e__/unstorage.mjs');
            const storage = createSeedStorage();
            await storage.setItem('local:chat/index/alice', { activeSessionId: 's1', sessions: ['s1'] });
            await storage.setItem('local:counter', 5);
            await storage.setItem('local:greeting', 'hello there');
            await storage.setItem('outbox:op-1', { type: 'create', retries: 0 });
            await storage.setItemRaw('local:blob', new Uint8Array([1, 2, 255]));
        }"""
    )
    web.boot()
    read = web.evaluate(
        """async () => ({
            index: await memory.storage.getItem('local:chat:index:alice'),
            counter: await memory.storage.getItem('local/counter'),
            greeting: await memory.storage.getItem('local:greeting'),
            op: await memory.storage.getItem('outbox:op-1'),
            blob: Array.from(await memory.storage.getItemRaw('local:blob')),
            local: (await memory.storage.getKeys('local')).sort(),
            outbox: await memory.storage.getKeys('outbox'),
        })"""
    )
    assert read["index"] == {"activeSessionId": "s1", "sessions": ["s1"]}
    assert read["counter"] == 5
    assert read["greeting"] == "hello there"
    assert read["op"] == {"type": "create", "retries": 0}
    assert read["blob"] == [1, 2, 255]
    # Unlike unstorage's driver, each mount lists only its own keys.
    assert read["local"] == [
        "local:blob",
        "local:chat:index:alice",
        "local:counter",
        "local:greeting",
    ]
    assert read["outbox"] == ["outbox:op-1"]


def test_clearing_one_mount_leaves_the_other(web):
    web.open_harness()
    web.boot()
    keys = web.evaluate(
        """async () => {
            await memory.storage.setItem('local:keep', 1);
            await memory.storage.setItem('outbox:drop', 2);
            await memory.storage.clear('outbox');
            return { local: await memory.storage.getKeys('local'),
                     outbox: await memory.storage.getKeys('outbox') };
        }"""
    )
    assert keys == {"local": ["local:keep"], "outbox": []}


@pytest.mark.parametrize(
    ("script", "name", "words"),
    [
        ("memory.storage.setItem('', 1)", "InvalidKeyError", ["storage key", "''"]),
        ("memory.storage.setItem('local:../up', 1)", "InvalidKeyError", ["local:../up"]),
        ("memory.storage.getItem('local:x$')", "InvalidKeyError", ["local:x$"]),
        (
            "memory.storage.setItem('local:f', { f: () => 1 })",
            "DataCloneError",
            ["could not be cloned"],
        ),
        ("memory.query('DELETE FROM t')", "ReadOnlyQueryError", ["DELETE"]),
        ("memory.query('SELECT * FROM nowhere_table')", "SqlError", ["nowhere_table"]),
    ],
)
def test_bad_input_rejects_with_a_clear_error_and_writes_nothing(web, script, name, words):
    web.open_harness()
    web.boot()
    before = web.evaluate("() => memory.storage.getKeys()")
    error = web.evaluate(
        f"""async () => {{
            try {{ await {script}; return null; }}
            catch (e) {{ return {{ isError: e instanceof Error, name: e.name, message: e.message }}; }}
        }}"""
    )
    assert error is not None, f"{script} did not fail"
    assert error["isError"]
    assert error["name"] == name, error
    for word in words:
        assert word in error["message"], error
    assert web.evaluate("() => memory.storage.getKeys()") == before


def test_query_binds_parameters_and_returns_plain_rows(web):
    web.open_harness()
    web.boot()
    rows = web.evaluate(
        "() => memory.query('SELECT $1::INTEGER + 1 AS n, $2 AS s, 1.5::DOUBLE AS d', [41, \"a'b\"])"
    )
    assert rows == [{"n": 42, "s": "a'b", "d": 1.5}]


def test_bulk_insert_of_100k_rows_moves_by_column(web):
    web.open_harness()
    web.boot()
    refused = web.evaluate(
        "() => memory.diagnostics.bulkInsert(10).then(() => 'ran', (e) => e.message)"
    )
    assert "diagnostics: true" in refused
    web.evaluate(
        """async () => {
            await memory.close();
            const { createMemorySystem } = await import('/airi-memory.mjs');
            window.memory = await createMemorySystem({ userId: 'e2e', diagnostics: true });
        }"""
    )
    result = web.evaluate("() => memory.diagnostics.bulkInsert(100000)")
    assert result["rows"] == 100000
    assert result["insertMs"] > 0


def test_close_rejects_later_calls(web):
    web.open_harness()
    web.boot()
    message = web.evaluate(
        """async () => {
            await memory.close();
            try { await memory.ping(); return 'still answering'; }
            catch (e) { return e.message; }
        }"""
    )
    assert message == "airi-memory is closed"


def test_demo_page_shows_ready_and_writes_a_key(web):
    web.page.goto(f"{web.base_url}/")
    web.page.wait_for_selector("#status[data-state=ready]", timeout=60_000)
    assert web.page.text_content("dd[data-field=Pyodide]") == "314.0.7"
    web.page.wait_for_selector("dd[data-field=DuckDB]:has-text('v1.4')")
    assert web.page.text_content("dd[data-field='Loaded after']").endswith(" ms")
    web.page.fill("#kv-key", "local:demo/note")
    web.page.fill("#kv-value", '{"text": "from the demo"}')
    web.page.click("#kv-write")
    web.page.wait_for_function(
        "document.getElementById('kv-output').textContent.includes('written')"
    )
    web.page.click("#kv-read")
    web.page.wait_for_function(
        "document.getElementById('kv-output').textContent.includes('from the demo')"
    )
    assert "local:demo:note" in web.page.text_content("#mounts")


def test_demo_sessions_panel_creates_sends_exports_and_imports(web, tmp_path):
    page = web.page
    web.open_demo("Demo chat")
    web.send_in_demo("hello from the demo")
    assert page.text_content("#messages li:first-child .role") == "system"
    with page.expect_download() as download_info:
        page.click("#export-sessions")
    download = download_info.value
    assert download.suggested_filename == "airi-conversations-export.json"
    exported = json.loads(Path(download.path()).read_text())
    assert [len(e["messages"]) for e in exported["sessions"]] == [2]
    path = tmp_path / "import.json"
    path.write_text(json.dumps(exported))
    page.set_input_files("#import-file", str(path))
    page.wait_for_function(
        "document.getElementById('session-output').textContent.includes('imported 1 session')"
    )
    page.click("[data-action=fork]")
    page.wait_for_selector("#session-list li.active button:has-text('(fork)')")
    assert page.locator("#session-list li").count() == 3
    page.screenshot(path=str(ROOT_SCREENSHOT))

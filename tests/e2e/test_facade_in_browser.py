"""The generated facade in Chromium: boot progress, calls queued before ready, and every
entry of the generated method map present on the facade."""

import itertools


def test_open_queues_calls_until_ready_and_reports_boot_progress(web):
    web.open_harness()
    seen = web.evaluate(
        """async () => {
            const { openMemorySystem } = await import('/airi-memory.mjs');
            const steps = [];
            const events = [];
            const memory = openMemorySystem({ userId: 'early', onProgress: (step) => steps.push(step) });
            memory.addEventListener('boot-progress', (event) => events.push(event.detail.phase));
            const readyAtOnce = memory.ready;
            // Made at once, before boot is done: queued, then answered.
            const session = memory.sessions.createSession({ title: 'made before ready' });
            const pong = memory.ping();
            const storedAfter = session.then((meta) => memory.sessions.getSession(meta.sessionId));
            const booted = await memory.whenReady;
            const result = {
                readyAtOnce: readyAtOnce ?? null,
                same: booted === memory,
                readyMs: memory.ready,
                userId: memory.userId,
                title: (await session).title,
                stored: (await storedAfter).title,
                pong: await pong,
                fractions: steps.map((step) => step.fraction),
                phases: steps.map((step) => step.phase),
                events,
            };
            await memory.close();
            return result;
        }"""
    )
    assert seen["readyAtOnce"] is None
    assert seen["same"] is True
    assert seen["readyMs"] > 0
    assert seen["userId"] == "early"
    assert seen["title"] == seen["stored"] == "made before ready"
    assert seen["pong"] == "pong"
    fractions = seen["fractions"]
    assert fractions[0] == 0 and fractions[-1] == 1, fractions
    assert all(a < b for a, b in itertools.pairwise(fractions)), fractions
    assert seen["phases"][0] == "start" and seen["phases"][-1] == "python"
    # DuckDB starts beside, and ready does not wait for it (test_staged_start_in_browser.py).
    assert set(seen["phases"]) == {"start", "pyodide", "imports", "python"}
    assert seen["events"] == seen["phases"]


def test_calls_before_ready_reject_with_the_boot_error(web):
    web.open_harness()
    seen = web.evaluate(
        """async () => {
            const { openMemorySystem, createMemorySystem } = await import('/airi-memory.mjs');
            const memory = openMemorySystem({ retention: { intervalMs: 1 } });  // below its bound
            const early = memory.ping().then(() => 'answered', (error) => error.name + ': ' + error.message);
            const boot = await memory.whenReady.then(() => 'ready', (error) => error.message);
            const created = await createMemorySystem({ cache: { maxSize: 0 } }).then(() => 'ready', (error) => error.name);
            return { early: await early, boot, created };
        }"""
    )
    assert seen["early"].startswith("InvalidValueError: invalid option 'retention.intervalMs'"), (
        seen
    )
    assert seen["early"].endswith(seen["boot"])
    assert seen["created"] == "InvalidValueError"


def test_every_generated_method_is_on_the_facade(web):
    web.open_harness()
    missing = web.evaluate(
        """async () => {
            const { createMemorySystem } = await import('/airi-memory.mjs');
            const { METHODS } = await import('/airi-memory-methods.mjs');
            const memory = await createMemorySystem({ userId: 'map' });
            const missing = Object.keys(METHODS).filter((name) =>
                typeof name.split('.').reduce((at, part) => at?.[part], memory) !== 'function');
            const count = Object.keys(METHODS).length;
            await memory.close();
            return { missing, count };
        }"""
    )
    assert missing["missing"] == []
    assert missing["count"] > 60


def test_demo_shows_boot_progress(web):
    web.page.goto(f"{web.base_url}/demo/")
    web.page.wait_for_selector("#status[data-state=ready]", timeout=60_000)
    bar = web.evaluate(
        "() => ({ value: document.getElementById('boot-progress').value,"
        " hidden: document.getElementById('boot-progress').hidden })"
    )
    assert bar == {"value": 1, "hidden": True}

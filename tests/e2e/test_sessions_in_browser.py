"""Sessions end to end: the facade in Chromium, IndexedDB across reloads."""

import json
from pathlib import Path

FIXTURES = Path(__file__).parent / "fixtures"


def test_200_messages_survive_a_reload_in_order(web):
    web.open_harness()
    web.boot()
    sid = web.evaluate(
        """async () => {
            const { sessionId } = await memory.sessions.createSession({ title: 'Long chat', characterId: 'airi' });
            for (let i = 0; i < 200; i++) {
                await memory.sessions.addMessage(sessionId, { role: i % 2 ? 'assistant' : 'user', content: `turn ${i}` });
            }
            memory.sessions.activeSessionId = sessionId;
            await memory.sessions.activeSessionIdSaved;
            return sessionId;
        }"""
    )
    web.page.reload()
    web.boot()
    result = web.evaluate(
        """async (sid) => {
            const all = await memory.sessions.loadSessionMessages(sid);
            const streamed = [];
            for await (const message of memory.sessions.streamMessages(sid, { batchSize: 64 })) streamed.push(message.content);
            return {
                contents: all.map((m) => m.content),
                roles: all.slice(0, 2).map((m) => m.role),
                streamed,
                latest: (await memory.sessions.latestMessages(sid, 3)).map((m) => m.content),
                active: await memory.sessions.getActiveSessionId('airi'),
                listed: (await memory.sessions.listSessions({ limit: 20 })).map((m) => m.title),
            };
        }""",
        sid,
    )
    expected = [f"turn {i}" for i in range(200)]
    assert result["contents"] == expected
    assert result["streamed"] == expected
    assert result["roles"] == ["user", "assistant"]
    assert result["latest"] == ["turn 197", "turn 198", "turn 199"]
    assert result["active"] == sid
    assert result["listed"] == ["Long chat"]


def test_fork_keeps_the_parent_intact_across_reload(web):
    web.open_harness()
    web.boot()
    ids = web.evaluate(
        """async () => {
            const { sessionId } = await memory.sessions.createSession({ title: 'Parent' });
            for (let i = 0; i < 12; i++) await memory.sessions.addMessage(sessionId, { role: 'user', content: `p${i}` });
            const fork = await memory.sessions.forkSession({ fromSessionId: sessionId, atIndex: 10, reason: 'trying-different-approach' });
            await memory.sessions.addMessage(fork.sessionId, { role: 'user', content: 'What if we tried X instead?' });
            return { parent: sessionId, fork: fork.sessionId };
        }"""
    )
    web.page.reload()
    web.boot()
    result = web.evaluate(
        """async ({ parent, fork }) => ({
            parent: (await memory.sessions.loadSessionMessages(parent)).map((m) => m.content),
            fork: (await memory.sessions.loadSessionMessages(fork)).map((m) => m.content),
            meta: await memory.sessions.getSession(fork),
        })""",
        ids,
    )
    assert result["parent"] == [f"p{i}" for i in range(12)]
    assert result["fork"] == [f"p{i}" for i in range(10)] + ["What if we tried X instead?"]
    assert result["meta"]["parentSessionId"] == ids["parent"]
    assert result["meta"]["forkReason"] == "trying-different-approach"


def test_import_airi_and_seed_files_then_reload(web):
    web.open_harness()
    web.boot()
    airi = json.loads((FIXTURES / "airi-chat-sessions.json").read_text())
    seed = json.loads((FIXTURES / "seed-export.json").read_text())
    reports = web.evaluate(
        "async ([airi, seed]) => [await memory.importSessions(airi), await memory.importSessions(seed)]",
        [airi, seed],
    )
    assert [(r["format"], r["sessions"], r["messages"]) for r in reports] == [
        ("airi", 2, 5),
        ("seed", 1, 3),
    ]
    web.page.reload()
    web.boot()
    titles = web.evaluate(
        "async () => (await memory.sessions.getAllSessions()).map((m) => m.title).sort()"
    )
    assert titles == ["Garden plans", "New Conversation", "Weekend trip"]
    exported = web.evaluate("() => memory.exportSessions()")
    assert sum(len(entry["messages"]) for entry in exported["sessions"]) == 8


def test_malformed_or_oversized_import_leaves_the_store_as_it_was(web):
    web.open_harness()
    web.boot()
    outcome = web.evaluate(
        """async () => {
            const { sessionId } = await memory.sessions.createSession({ title: 'Keep' });
            await memory.sessions.addMessage(sessionId, { role: 'user', content: 'precious' });
            const before = await memory.storage.getKeys('local');
            const errors = [];
            const attempts = [
                { version: '1.0.0', exportedAt: 1, sessions: [
                    { meta: { title: 'ok' }, messages: [{ role: 'user', content: 'fine' }] },
                    { meta: { title: 'bad' }, messages: [{ role: 'user', content: 'x' }, { role: 'wizard', content: 'y' }] },
                ] },
                { version: '1.0.0', sessions: [{ meta: {}, messages: [{ role: 'user', content: 'x'.repeat(1000001) }] }] },
                { nothing: true },
            ];
            for (const data of attempts) {
                try { await memory.importSessions(data); errors.push(null); }
                catch (e) { errors.push({ name: e.name, message: e.message }); }
            }
            return { before, after: await memory.storage.getKeys('local'), errors,
                     sessions: (await memory.sessions.getAllSessions()).length };
        }"""
    )
    assert outcome["after"] == outcome["before"]
    assert outcome["sessions"] == 1
    first, oversized, unknown = outcome["errors"]
    assert (
        first["name"] == "InvalidValueError" and "sessions[1].messages[1].role" in first["message"]
    )
    assert "sessions[0].messages[0].content" in oversized["message"]
    assert "not a conversation export" in unknown["message"]


def test_analytics_and_storage_estimate(web):
    web.open_harness()
    web.boot()
    result = web.evaluate(
        """async () => {
            const { sessionId } = await memory.sessions.createSession();
            await memory.sessions.addMessage(sessionId, { role: 'user', content: 'abcdefgh', note: null });
            const [stored] = await memory.sessions.loadSessionMessages(sessionId);
            if (stored.note !== null) throw new Error('a null field did not round-trip');
            return { analytics: await memory.analytics(), estimate: await memory.estimateStorage() };
        }"""
    )
    assert result["analytics"]["totals"] == {
        "sessions": 1,
        "messages": 1,
        "characters": 8,
        "estimatedTokens": 2,
    }
    assert result["estimate"]["quota"] > 0 and result["estimate"]["usage"] >= 0


def test_two_tabs_see_each_others_writes_and_lose_nothing(web):
    web.open_harness()
    web.boot()
    other = web.page.context.new_page()
    other.set_default_timeout(60_000)
    other.goto(f"{web.base_url}/__e2e__/page.html")
    boot = "async () => { const { createMemorySystem } = await import('/airi-memory.mjs'); window.memory = await createMemorySystem({ userId: 'e2e' }); window.changes = []; memory.addEventListener('change', (e) => changes.push(e.detail)); }"
    web.evaluate(boot)
    other.evaluate(boot)
    sid = web.evaluate(
        "async () => (await memory.sessions.createSession({ title: 'Shared' })).sessionId"
    )
    other.wait_for_function("changes.length > 0")
    # Both tabs write at the same time: each call starts the loop and returns at once.
    writes = """([sid, tab]) => {
        window.writing = (async () => {
            for (let i = 0; i < 20; i++) await memory.sessions.addMessage(sid, { role: 'user', content: `${tab} ${i}` });
        })();
    }"""
    web.evaluate(writes, [sid, "one"])
    other.evaluate(writes, [sid, "two"])
    web.evaluate("() => window.writing")
    other.evaluate("() => window.writing")
    web.page.wait_for_function(
        "async (sid) => (await memory.sessions.loadSessionMessages(sid)).length === 40", arg=sid
    )
    other.wait_for_function(
        "async (sid) => (await memory.sessions.loadSessionMessages(sid)).length === 40", arg=sid
    )
    assert (
        other.evaluate("(sid) => memory.sessions.getSession(sid).then((m) => m.title)", sid)
        == "Shared"
    )
    other.close()
    web.page.reload()
    web.boot()
    contents = web.evaluate(
        "async (sid) => (await memory.sessions.loadSessionMessages(sid)).map((m) => m.content)", sid
    )
    assert sorted(contents) == sorted(
        [f"one {i}" for i in range(20)] + [f"two {i}" for i in range(20)]
    )

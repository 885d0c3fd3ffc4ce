"""Ready does not wait for DuckDB-WASM: the sessions are read from IndexedDB, and the
methods that need only them, the app's storage or context answer at once; the rest wait
for start-up to load the history into DuckDB (``whenLoaded``). DuckDB's WASM is held back
(or missing) at a server of the test's own, so the order is certain, not a race."""

import threading

import pytest
from conftest import Profiles, serve

FIRST_OPEN = """async () => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    const memory = await createMemorySystem({ userId: 'staged' });
    const meta = await memory.sessions.createSession({ title: 'kept' });
    await memory.sessions.addMessage(meta.sessionId, { role: 'user', content: 'hello' });
    await memory.close();
    return meta.sessionId;
}"""

REOPEN = """async () => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    const memory = await createMemorySystem({ userId: 'staged' });
    window.memory = memory;
    const sessions = await memory.sessions.listSessions();
    await memory.storage.setItem('local:app:1', { x: 1 });
    const state = { messages: 'waiting', write: 'waiting', loaded: 'waiting' };
    const failed = (error) => `${error.name}: ${error.message}`;
    const sid = sessions[0].sessionId;
    window.state = state;
    window.waiting = [
        memory.sessions.loadSessionMessages(sid).then(
            (messages) => { state.messages = messages.map((m) => m.content); },
            (error) => { state.messages = failed(error); }),
        memory.sessions.addMessage(sid, { role: 'user', content: 'after' }).then(
            (message) => { state.write = message.content; },
            (error) => { state.write = failed(error); }),
        memory.whenLoaded.then(() => { state.loaded = 'loaded'; },
            (error) => { state.loaded = failed(error); }),
    ];
    await new Promise((resolve) => setTimeout(resolve, 500));
    return {
        titles: sessions.map((s) => s.title),
        stored: await memory.storage.getItem('local:app:1'),
        profile: await memory.context.setUserProfile({ name: 'Ada' }),
        duckdb: memory.versions.duckdb, duckdbPhase: memory.bootPhases.duckdb ?? null,
        state: { ...state },
    };
}"""

SETTLED = """async () => {
    await Promise.all(window.waiting);
    return { state, duckdb: memory.versions.duckdb, ready: memory.ready, loaded: memory.loaded ?? null,
             phases: memory.bootPhases,
             messages: (await memory.sessions.loadSessionMessages(
                 (await memory.sessions.listSessions())[0].sessionId)).map((m) => m.content) };
}"""


REOPENED = """async () => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    const memory = await (await createMemorySystem({ userId: 'staged' })).whenLoaded;
    const [session] = await memory.sessions.listSessions();
    return (await memory.sessions.loadSessionMessages(session.sessionId)).map((m) => m.content);
}"""


class _DuckDbWasm:
    """The server's handling of DuckDB's WASM: served, held until released, or missing."""

    def __init__(self) -> None:
        self.mode = "served"
        self.released = threading.Event()

    def handler(self) -> type:
        wasm = self

        class Handler(serve.StaticHandler):
            def do_GET(self) -> None:
                if self.answered_for_duckdb():
                    return None
                return super().do_GET()

            def do_HEAD(self) -> None:
                if self.answered_for_duckdb():
                    return None
                return super().do_HEAD()

            def answered_for_duckdb(self) -> bool:
                """Whether DuckDB's WASM is missing (answered 404 here); held, until then."""
                if "/duckdb/" not in self.path or not self.path.endswith(".wasm"):
                    return False
                if wasm.mode == "missing":
                    self.send_error(404)
                    return True
                if wasm.mode == "held":
                    wasm.released.wait(60)
                return False

        return Handler


@pytest.fixture
def duckdb_wasm(browser, served_root):
    wasm = _DuckDbWasm()
    server = serve.start_in_thread(served_root, handler=wasm.handler())
    profiles = Profiles(browser, f"http://127.0.0.1:{server.server_address[1]}")
    yield wasm, profiles.open()
    wasm.released.set()
    for context in profiles.contexts:
        context.close()
    server.shutdown()


def reopened_with(duckdb_wasm, mode: str) -> dict:
    """A store of one session and message, reopened with DuckDB's files ``mode``: what
    answered within half a second of ready."""
    wasm, web = duckdb_wasm
    web.open_harness()
    web.evaluate(FIRST_OPEN)
    web.page.reload()
    wasm.mode = mode
    return web.evaluate(REOPEN)


def test_sessions_answer_while_duckdb_starts_and_the_rest_waits_for_it(duckdb_wasm):
    wasm, web = duckdb_wasm
    early = reopened_with(duckdb_wasm, "held")
    assert early["titles"] == ["kept"]
    assert early["stored"] == {"x": 1}
    assert early["profile"] == {"name": "Ada"}
    assert early["duckdb"] is None and early["duckdbPhase"] is None
    # Half a second after ready, with DuckDB's WASM still on its way: nothing answered.
    assert early["state"] == {"messages": "waiting", "write": "waiting", "loaded": "waiting"}
    wasm.released.set()
    settled = web.evaluate(SETTLED)
    assert settled["state"] == {"messages": ["hello"], "write": "after", "loaded": "loaded"}
    assert settled["messages"] == ["hello", "after"]
    assert settled["duckdb"].startswith("v1.4")
    assert 0 < settled["ready"] < settled["loaded"]
    phases = settled["phases"]
    assert phases["python"] < phases["duckdb"] <= phases["loaded"]


def test_a_duckdb_that_cannot_start_fails_the_calls_that_need_it_not_the_sessions(duckdb_wasm):
    wasm, web = duckdb_wasm
    early = reopened_with(duckdb_wasm, "missing")
    assert early["titles"] == ["kept"] and early["stored"] == {"x": 1}
    failed = web.evaluate("async () => { await Promise.all(window.waiting); return state; }")
    for outcome in failed.values():
        assert outcome == (
            "SqlEngineStoppedError: DuckDB's worker stopped: it could not start: its WASM "
            "could not be fetched (HTTP 404)"
        ), failed
    # The write was never made: with DuckDB back, a reopened system has what was acknowledged.
    wasm.mode = "served"
    web.page.reload()
    assert web.evaluate(REOPENED) == ["hello"]


LETTERS = """
    // A stand-in model from the app: letters counted into 26 dimensions.
    const embed = async ({ texts }) => texts.map((text) => Array.from({ length: 26 }, (_, i) =>
        [...text.toLowerCase()].filter((c) => c.charCodeAt(0) - 97 === i).length));
    const options = { userId: 'staged', embeddings: { provider: 'custom', model: 'letters', dimensions: 26, embed } };
"""

EMBEDDED = f"""async () => {{
    const {{ createMemorySystem }} = await import('/airi-memory.mjs');
    {LETTERS}
    const memory = await createMemorySystem(options);
    const {{ sessionId }} = await memory.sessions.createSession({{}});
    for (const content of ['aaaa bbbb', 'zzzz yyyy', 'mmmm nnnn']) {{
        await memory.sessions.addMessage(sessionId, {{ role: 'user', content }});
    }}
    for (let i = 0; i < 200; i++) {{
        const status = await memory.embeddingsStatus();
        if (status.state === 'ready' && status.indexed === 3) break;
        await new Promise((resolve) => setTimeout(resolve, 50));
    }}
    const indexed = (await memory.embeddingsStatus()).indexed;
    await memory.close();
    return indexed;
}}"""

SEARCHED_EARLY = f"""async () => {{
    const {{ createMemorySystem }} = await import('/airi-memory.mjs');
    {LETTERS}
    const memory = window.memory = await createMemorySystem(options);
    const contents = (found) => found.results.map((hit) => hit.message.content);
    const state = window.state = {{ keyword: 'waiting', loaded: 'waiting' }};
    window.waiting = [
        memory.search({{ query: 'mmmm', strategy: 'keyword' }}).then((found) => {{ state.keyword = contents(found); }}),
        memory.whenLoaded.then(() => {{ state.loaded = 'loaded'; }}),
    ];
    const semantic = contents(await memory.search({{ query: 'zzz m', strategy: 'semantic', limit: 2 }}));
    return {{ semantic, status: await memory.embeddingsStatus(), duckdb: memory.versions.duckdb, state: {{ ...state }} }};
}}"""


def test_a_semantic_search_answers_from_stored_vectors_while_duckdb_starts(duckdb_wasm):
    """At 100,000 messages the mirror is loaded over a second after ready; semantic search
    does not wait for it: the stored vectors are searched, and the winners read from
    IndexedDB (and checked against the text each vector was made from, hashed in Pyodide
    as DuckDB hashes it). Keyword search still waits for DuckDB."""
    wasm, web = duckdb_wasm
    web.open_harness()
    assert web.evaluate(EMBEDDED) == 3
    web.page.reload()
    wasm.mode = "held"
    early = web.evaluate(SEARCHED_EARLY)
    assert early["semantic"] == ["zzzz yyyy", "mmmm nnnn"]
    assert (early["status"]["state"], early["status"]["searchable"]) == ("loading", True)
    assert early["duckdb"] is None
    assert early["state"] == {"keyword": "waiting", "loaded": "waiting"}
    wasm.released.set()
    settled = web.evaluate(
        """async () => {
            await Promise.all(window.waiting);
            for (let i = 0; i < 200 && (await memory.embeddingsStatus()).state !== 'ready'; i++) {
                await new Promise((resolve) => setTimeout(resolve, 50));
            }
            const found = await memory.search({ query: 'zzz m', strategy: 'semantic', limit: 2 });
            return { state, semantic: found.results.map((hit) => hit.message.content),
                     status: await memory.embeddingsStatus() };
        }"""
    )
    assert settled["state"] == {"keyword": ["mmmm nnnn"], "loaded": "loaded"}
    assert settled["semantic"] == ["zzzz yyyy", "mmmm nnnn"]
    assert (settled["status"]["indexed"], settled["status"]["searchable"]) == (3, True)

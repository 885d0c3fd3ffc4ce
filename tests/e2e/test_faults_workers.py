"""Workers that die or hang: DuckDB's, the embedding model's, the memory system's own.

Every call settles within a bound with an error naming what stopped, writes still reach
IndexedDB without DuckDB, and close() ends. Crashes come from the `testHooks` option:
`memory._test.crash(target)` terminates that inner worker once it has a call in flight and
sends the error event a crashed worker sends; `memory._test.block(ms)` keeps the memory
system's worker busy, as a worker stuck in a loop. Hangs need no hook: a query that runs
for minutes, with a short `timeouts.sqlMs`.
"""

QUIET = {"retention": {"enabled": False}, "context": {"datetime": False}}
NO_EMBEDDINGS = {**QUIET, "embeddings": {"provider": "none"}}
# 4e10 pairs in a nested loop: DuckDB-WASM is busy with it for minutes.
ENDLESS_QUERY = (
    "SELECT count(*) AS n FROM range(200000) a, range(200000) b WHERE a.range + b.range = 7"
)
# window.memory with these options, plus two helpers: settle(promise) gives its outcome
# with the time it came, and within(promise, ms) rejects (StillPending) if it takes longer,
# so a call that never settles fails the test instead of hanging it.
BOOT = """async (options) => {
    window.settle = (promise) => promise.then(
        (value) => ({ ok: true, value, at: performance.now() }),
        (error) => ({ ok: false, name: error.name, message: error.message, at: performance.now() }));
    window.within = (promise, ms) => Promise.race([promise, new Promise((_, reject) => setTimeout(
        () => reject(Object.assign(new Error(`still pending after ${ms} ms`), { name: 'StillPending' })),
        ms))]);
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId: 'faults', ...options });
}"""
MEMORIES = [
    "I adopted a grey cat called Miso last spring.",
    "My favourite food is ramen with an extra egg.",
    "Our car broke down on the motorway yesterday.",
]


def boot(web, **options) -> None:
    web.evaluate(BOOT, options)


def assert_engine_stopped(outcome: dict, *words: str) -> None:
    assert not outcome["ok"], outcome
    assert outcome["name"] == "SqlEngineStoppedError", outcome
    assert outcome["message"].startswith("DuckDB's worker stopped: "), outcome
    for word in words:
        assert word in outcome["message"], outcome


def test_a_crashed_duckdb_fails_calls_at_once_and_writes_still_land(web):
    web.open_harness()
    boot(web, testHooks=True, **NO_EMBEDDINGS)
    run = web.evaluate(
        """async (sql) => {
            const { sessionId } = await memory.sessions.createSession({ title: 'Crash' });
            await memory.sessions.addMessage(sessionId, { role: 'user', content: 'before the crash' });
            await memory.query('SELECT 1 AS n'); // mirror flushed: DuckDB's next call is the query below
            const query = settle(within(memory.query(sql), 30000));
            // Once DuckDB's worker is busy with that query, a snapshot holds the write queue
            // while it waits on DuckDB (asked at once, it could finish first: it is quick).
            await new Promise((resolve) => setTimeout(resolve, 500));
            const snapshot = settle(within(memory.sessions.snapshot(), 30000));
            const crash = await memory._test.crash('duckdb');
            const crashedAt = performance.now();
            const [queried, snapshotted] = await Promise.all([query, snapshot]);
            const laterFrom = performance.now();
            const later = await settle(within(memory.query('SELECT 1 AS n'), 10000));
            const writeFrom = performance.now();
            const write = await settle(within(memory.sessions.addMessage(
                sessionId, { role: 'user', content: 'after the crash' }), 10000));
            return { sessionId, crash, crashedAt, queried, snapshotted, later, laterFrom, write, writeFrom };
        }""",
        ENDLESS_QUERY,
    )
    assert run["crash"] == {"busy": True}
    for outcome in (run["queried"], run["snapshotted"]):
        assert_engine_stopped(outcome, "terminated by a test")
        assert outcome["at"] - run["crashedAt"] < 5000, outcome
    assert_engine_stopped(run["later"], "terminated by a test")
    assert run["later"]["at"] - run["laterFrom"] < 2000
    assert run["write"]["ok"], run["write"]  # IndexedDB took it: DuckDB is only the mirror
    assert run["write"]["value"]["content"] == "after the crash"
    assert run["write"]["at"] - run["writeFrom"] < 5000
    web.page.reload()
    boot(web, **NO_EMBEDDINGS)
    contents = web.evaluate(
        "async (sid) => (await memory.sessions.loadSessionMessages(sid)).map((m) => m.content)",
        run["sessionId"],
    )
    assert contents == ["before the crash", "after the crash"]


def test_a_hung_duckdb_call_ends_at_sql_ms_and_so_does_every_later_one(web):
    web.open_harness()
    boot(web, timeouts={"sqlMs": 3000}, **NO_EMBEDDINGS)
    run = web.evaluate(
        """async (sql) => {
            const hooks = typeof memory._test;
            const from = performance.now();
            const hung = await settle(within(memory.query(sql), 20000));
            const laterFrom = performance.now();
            const later = await settle(within(memory.query('SELECT 1 AS n'), 10000));
            return { hooks, hung, tookMs: hung.at - from, later, laterMs: later.at - laterFrom };
        }""",
        ENDLESS_QUERY,
    )
    assert run["hooks"] == "undefined"  # no test hooks unless asked for
    assert_engine_stopped(run["hung"], "queryReadOnly did not finish within 3000 ms")
    assert 2900 <= run["tookMs"] < 8000, run
    assert_engine_stopped(run["later"], "queryReadOnly did not finish within 3000 ms")
    assert run["laterMs"] < 2000


def test_a_crashed_embedding_worker_fails_the_search_and_the_next_call_starts_a_new_one(web):
    web.open_harness()
    boot(web, testHooks=True, **QUIET, embeddings={"backgroundIndexing": False})
    run = web.evaluate(
        """async (memories) => {
            const { sessionId } = await memory.sessions.createSession({ title: 'About me' });
            for (const content of memories) await memory.sessions.addMessage(sessionId, { role: 'user', content });
            const ask = () => memory.search({ query: 'Do I have any animals at home?', strategy: 'semantic', limit: 1 });
            const search = settle(within(ask(), 60000));
            const crash = await memory._test.crash('embedder'); // while the model loads or embeds
            const crashedAt = performance.now();
            const failed = await search;
            const status = await memory.embeddingsStatus();
            const indexed = await settle(within(memory.indexEmbeddings(), 60000));
            const again = await settle(within(ask(), 30000));
            return { crash, crashedAt, failed, status, indexed, again };
        }""",
        MEMORIES,
    )
    assert run["crash"] == {"busy": True}
    failed = run["failed"]
    assert not failed["ok"] and failed["name"] == "ProviderError", failed
    stopped = "EmbedderStoppedError: the embedding model's worker stopped: terminated by a test"
    assert stopped in failed["message"], failed
    assert failed["at"] - run["crashedAt"] < 5000, failed
    assert "the embedding model's worker stopped" in run["status"]["lastError"], run["status"]
    # A fresh worker: everything gets embedded and the search answers.
    assert run["indexed"]["ok"], run["indexed"]
    assert run["indexed"]["value"]["state"] == "ready"
    assert (run["indexed"]["value"]["indexed"], run["indexed"]["value"]["pending"]) == (3, 0)
    assert run["again"]["ok"], run["again"]
    assert run["again"]["value"]["results"][0]["message"]["content"] == MEMORIES[0]


def test_a_model_that_does_not_load_in_time_fails_the_search_within_the_bound(web):
    web.open_harness()
    boot(
        web,
        **QUIET,
        embeddings={"backgroundIndexing": False},
        timeouts={"embeddingLoadMs": 100},  # no model loads that fast
    )
    run = web.evaluate(
        """async (memories) => {
            const { sessionId } = await memory.sessions.createSession({ title: 'About me' });
            for (const content of memories) await memory.sessions.addMessage(sessionId, { role: 'user', content });
            const from = performance.now();
            const failed = await settle(within(
                memory.search({ query: 'pets', strategy: 'semantic' }), 20000));
            return { failed, tookMs: failed.at - from, status: await memory.embeddingsStatus() };
        }""",
        MEMORIES,
    )
    failed = run["failed"]
    assert not failed["ok"] and failed["name"] == "ProviderError", failed
    stopped = "the embedding model's worker stopped: a call did not finish within 100 ms"
    assert stopped in failed["message"], failed
    assert run["tookMs"] < 3000, run
    assert "did not finish within 100 ms" in run["status"]["lastError"], run["status"]


def test_close_ends_in_time_while_a_query_runs_and_writes_are_queued(web):
    web.open_harness()
    boot(web, timeouts={"closeMs": 2000}, **NO_EMBEDDINGS)
    run = web.evaluate(
        """async (sql) => {
            const { sessionId } = await memory.sessions.createSession({ title: 'Closing' });
            const query = settle(within(memory.query(sql), 20000));
            const snapshot = settle(within(memory.sessions.snapshot(), 20000));
            const write = settle(within(memory.sessions.addMessage(
                sessionId, { role: 'user', content: 'queued beside the query' }), 20000));
            await new Promise((resolve) => setTimeout(resolve, 300)); // all three reach Python
            const from = performance.now();
            const closed = await settle(within(memory.close(), 15000));
            const closeMs = performance.now() - from;
            const [queried, snapshotted, written] = await Promise.all([query, snapshot, write]);
            const later = await settle(within(memory.ping(), 1000));
            return { closed, closeMs, queried, snapshotted, written, later };
        }""",
        ENDLESS_QUERY,
    )
    assert run["closed"]["ok"], run["closed"]
    assert run["closeMs"] < 2000 + 2000 + 1500, run  # closeMs, the facade's grace, slack
    queried = run["queried"]
    assert not queried["ok"], queried  # endless: only the close ends it
    assert queried["name"] in ("SqlEngineStoppedError", "MemoryClosedError"), queried
    # DuckDB-WASM polls a running query, so the snapshot may finish beside it or be cut
    # short by the close; either way it and the queued write settle.
    for outcome in (run["snapshotted"], run["written"]):
        assert outcome.get("name") != "StillPending", outcome
        if not outcome["ok"]:
            assert outcome["name"] in ("SqlEngineStoppedError", "MemoryClosedError"), outcome
    assert run["later"]["name"] == "MemoryClosedError", run["later"]
    assert run["later"]["message"] == "airi-memory is closed"


def test_close_ends_in_time_when_the_worker_answers_nothing(web):
    web.open_harness()
    boot(web, testHooks=True, timeouts={"closeMs": 1000}, **NO_EMBEDDINGS)
    run = web.evaluate(
        """async () => {
            await memory._test.block(30000);
            const ping = settle(within(memory.ping(), 15000));
            const from = performance.now();
            const closed = await settle(within(memory.close(), 15000));
            const closeMs = performance.now() - from;
            const again = await settle(within(memory.close(), 1000)); // closing twice is fine
            return { closed, closeMs, again, ping: await ping, later: await settle(memory.ping()) };
        }"""
    )
    assert run["closed"]["ok"], run["closed"]
    assert 2900 <= run["closeMs"] < 1000 + 2000 + 1500, run  # the worker never answered
    assert run["again"]["ok"], run["again"]
    for outcome in (run["ping"], run["later"]):
        assert not outcome["ok"] and outcome["name"] == "MemoryClosedError", outcome

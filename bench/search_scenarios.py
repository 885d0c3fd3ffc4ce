"""Search benchmarks at 100,000 stored messages: BM25 and substring, the vector scan (random
vectors stand in for 100k real embeddings, which would take half an hour to compute
here; the scan costs the same), hybrid, the renderer's memory; and background embedding
with the real model, watching the main thread for long tasks."""

import random
import time
from pathlib import Path

from eval import dataset as eval_dataset
from harness import blank_page, fresh_profile, summarise

SYLLABLES = [
    "ka",
    "lo",
    "mi",
    "re",
    "su",
    "to",
    "na",
    "pe",
    "di",
    "gu",
    "ba",
    "fo",
    "ze",
    "ri",
    "ma",
    "no",
    "shi",
    "te",
    "ku",
    "ya",
]


def vocabulary(size: int = 3000, seed: int = 7) -> list[str]:
    rng = random.Random(seed)
    words = set()
    while len(words) < size:
        words.add("".join(rng.choice(SYLLABLES) for _ in range(rng.randint(2, 4))))
    return sorted(words)


def corpus(sessions: int, per_session: int, seed: int = 11) -> list[list[str]]:
    """Sentences of 8-24 words drawn with a Zipf-like skew, as real vocabularies are."""
    rng = random.Random(seed)
    words = vocabulary()
    weights = [1 / (rank + 1) for rank in range(len(words))]
    return [
        [" ".join(rng.choices(words, weights, k=rng.randint(8, 24))) for _ in range(per_session)]
        for _ in range(sessions)
    ]


BOOT = """async (options) => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId: 'bench', retention: { enabled: false }, diagnostics: true, ...options });
    window.readyAt = performance.now();
    await memory.whenLoaded; // what is measured next (memory too) is the loaded system's
    return memory.ready;
}"""

# The first ``scoped`` sessions belong to character 'scoped': one conversation among many.
FILL = """async ({ sessions, scoped }) => {
    const character = (n) => n < scoped ? 'scoped' : n % 3 ? 'airi' : 'neko';
    for (let s = 0; s < sessions.length; s += 50) {
        await memory.importSessions({ version: '1.0.0', exportedAt: Date.now(), sessions: sessions.slice(s, s + 50).map((texts, i) => ({
            meta: { title: `session ${s + i}`, characterId: character(s + i) },
            messages: texts.map((content, j) => ({ role: j % 2 ? 'assistant' : 'user', content, createdAt: 1767225600000 + (s + i) * 3600000 + j * 1000 })),
        })) });
    }
    await memory.sessions.snapshot();  // as a store that has lived a while: terms clustered
    return await memory.diagnostics.fillVectors();
}"""

QUERIES = """async ({ keywords, substrings, n }) => {
    const time = async (fn) => { const t = performance.now(); const r = await fn(); return [performance.now() - t, r]; };
    const vector = () => Array.from({ length: 384 }, () => Math.random() - 0.5);
    const out = { keyword: [], substring: [], semantic: [], hybrid: [], filtered: [], found: 0 };
    for (let i = 0; i < n; i++) {
        const query = keywords[i % keywords.length];
        const [ms, r] = await time(() => memory.search({ query, strategy: 'keyword', limit: 10 }));
        out.keyword.push(ms); out.found += r.results.length;
        out.substring.push((await time(() => memory.searchMessages(substrings[i % substrings.length], { limit: 10 })))[0]);
        out.semantic.push((await time(() => memory.search({ query: '', vector: vector(), strategy: 'semantic', limit: 10 })))[0]);
        out.hybrid.push((await time(() => memory.search({ query, vector: vector(), strategy: 'hybrid', limit: 10 })))[0]);
        out.filtered.push((await time(() => memory.search({ query, vector: vector(), strategy: 'relevant', limit: 10,
            filters: { characterIds: ['neko'], roles: ['user'] } })))[0]);
    }
    return out;
}"""

# One conversation's search (characterIds), per strategy, beside the floors every call
# pays: a round trip from the page to the worker (ping), and, inside the worker, one
# statement's trip to DuckDB's worker and back (diagnostics.sqlRoundTrips: prepared, as
# searches send theirs). ``inside`` is the search's own tookMs, measured in the worker:
# the rest of its time is the page-to-worker trip.
SCOPED = """async ({ keywords, n }) => {
    const out = { ping: [], floor: [] };
    const vector = () => Array.from({ length: 384 }, () => Math.random() - 0.5);
    const asks = {
        keyword: (query) => ({ query, strategy: 'keyword' }),
        semantic: () => ({ vector: vector(), strategy: 'semantic' }),
        relevant: (query) => ({ query, vector: vector(), strategy: 'relevant' }),
        hybrid: (query) => ({ query, vector: vector(), strategy: 'hybrid' }),
    };
    for (const name of Object.keys(asks)) { out[name] = []; out[name + ' inside'] = []; }
    for (let i = 0; i < n; i++) {
        let t = performance.now();
        await memory.ping();
        out.ping.push(performance.now() - t);
        out.floor.push((await memory.diagnostics.sqlRoundTrips(1))[0]);
        for (const [name, ask] of Object.entries(asks)) {
            const query = { ...ask(keywords[i % keywords.length]), limit: 10, filters: { characterIds: ['scoped'] } };
            t = performance.now();
            const found = await memory.search(query);
            out[name].push(performance.now() - t);
            out[name + ' inside'].push(found.tookMs);
        }
    }
    return out;
}"""

QUERY_EMBEDDING = """async (n) => {
    const times = [];
    for (let i = 0; i < n; i++) {
        await memory.search({ query: `what did I say about the garden ${i}?`, strategy: 'semantic', limit: 10 });
        times.push((await memory.embeddingsStatus()).queryEmbeddingMs);
    }
    return times;
}"""

EMBED_RATE = """async (texts) => {
    const longTasks = [];
    new PerformanceObserver((list) => { for (const e of list.getEntries()) longTasks.push(e.duration); })
        .observe({ type: 'longtask', buffered: false });
    const { sessionId } = await memory.sessions.createSession({});
    await memory.sessions.addMessage(sessionId, { role: 'user', content: 'warm up the model' });
    await memory.indexEmbeddings();  // loads the model: not part of the rate
    await memory.importSessions({ version: '1.0.0', exportedAt: Date.now(), sessions: [{ meta: { title: 'rate' },
        messages: texts.map((content, i) => ({ role: i % 2 ? 'assistant' : 'user', content, createdAt: 1767225600000 + i })) }] });
    const t = performance.now();
    const status = await memory.indexEmbeddings();
    const seconds = (performance.now() - t) / 1000;
    await new Promise((resolve) => setTimeout(resolve, 100));
    return { rate: texts.length / seconds, indexed: status.indexed, longTasks };
}"""


# The floor of background embedding: the same texts straight to the model's worker, in
# the batches the pipeline makes (16, sorted by length), with nothing else around it.
MODEL_ALONE = """async ({ texts, batch }) => {
    const worker = new Worker('/runtime/embedder.mjs', { type: 'module' });
    let next = 0;
    const call = (message) => new Promise((resolve, reject) => {
        const id = ++next;
        const listen = (e) => {
            if (e.data.id !== id) return;
            worker.removeEventListener('message', listen);
            e.data.ok ? resolve(e.data.value) : reject(new Error(e.data.error));
        };
        worker.addEventListener('message', listen);
        worker.postMessage({ id, ...message });
    });
    await call({ kind: 'load' });
    await call({ kind: 'embed', texts: ['warm up the model'] });
    const sorted = [...texts].sort((a, b) => a.length - b.length);
    const t = performance.now();
    let vectors = 0;
    for (let i = 0; i < sorted.length; i += batch) vectors += (await call({ kind: 'embed', texts: sorted.slice(i, i + batch) })).length / 384;
    const seconds = (performance.now() - t) / 1000;
    worker.terminate();
    if (vectors !== texts.length) throw new Error(`${vectors} vectors for ${texts.length} texts`);
    return texts.length / seconds;
}"""

TABLES_MB = """async () => (await memory.query(
    "SELECT sum(memory_usage_bytes) / 1e6 AS mb FROM duckdb_memory() WHERE tag = 'IN_MEMORY_TABLE'"))[0].mb"""

# A reopen as a returning user's tab makes it, asking a semantic search (the query's
# vector given: no model) as soon as the system is ready: when it answers is when the
# stored vectors are searchable, whatever the load behind ready is still doing.
REOPEN_AND_SEARCH = """async ({ options, dims }) => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem({ userId: 'bench', retention: { enabled: false }, diagnostics: true, ...options });
    window.readyAt = performance.now();
    const vector = Array.from({ length: dims }, () => Math.random() - 0.5);
    const found = await memory.search({ query: '', vector, strategy: 'semantic', limit: 10 });
    const answeredMs = performance.now() - readyAt;
    await memory.whenLoaded;
    return { ready: memory.ready, answeredMs, results: found.results.length };
}"""


VECTORS_LOADED = """async () => {
    for (let waited = 0; waited < 300000; waited += 50) {
        const status = await memory.embeddingsStatus();
        const sinceReadyMs = performance.now() - readyAt; // the load behind ready included
        if (status.state !== 'starting' && status.state !== 'loading') return { ...status, sinceReadyMs };
        await new Promise((resolve) => setTimeout(resolve, 50));
    }
    throw new Error('stored vectors did not load within 5 minutes');
}"""


REOPENS = 3  # reopens of the 100k store: start-up at that size, a median of a few
# How long a page idles before its memory is read as what it holds. A load leaves garbage
# (the IndexedDB reads, Arrow buffers, Orama's build) that V8's memory reducer collects
# only once the page has been quiet a while: after a 100k reopen, 668 MB at once and
# still at 20 s, 528 MB from 30 s on (measured here).
SETTLE_S = 45


def renderer_memory_mb() -> float:
    """Resident memory of the largest Chromium renderer (the page and all its workers)."""
    largest = 0
    for proc in Path("/proc").iterdir():
        try:
            if b"--type=renderer" not in (proc / "cmdline").read_bytes():
                continue
            for line in (proc / "status").read_text().splitlines():
                if line.startswith("VmRSS:"):
                    largest = max(largest, int(line.split()[1]))
        except (OSError, ValueError):
            continue
    return largest / 1024


def settled_memory_mb() -> float:
    """Renderer memory after the page has idled ``SETTLE_S``."""
    time.sleep(SETTLE_S)
    return renderer_memory_mb()


def run(browser, base_url: str) -> list[dict]:
    # A profile on disk: the reopens below are a returning user's, whose browser kept the
    # wasm and its compiled code (an incognito-like context compiles it again each time).
    with fresh_profile(browser.browser_type) as context:
        rows = run_in(context, base_url)
    return rows + run_embedding(browser, base_url)


def run_in(context, base_url: str) -> list[dict]:
    """The 100k store's rows, in ``context``."""
    rows = []
    page = blank_page(context, base_url)
    blank = renderer_memory_mb()
    page.evaluate(BOOT, {"embeddings": {"backgroundIndexing": False}})
    booted = renderer_memory_mb()
    before = settled_memory_mb()
    filled = page.evaluate(FILL, {"sessions": corpus(500, 200), "scoped": 0})
    assert filled["vectors"] == 100_000, filled
    words = vocabulary()
    rng = random.Random(3)
    keywords = [" ".join(rng.choices(words[:1500], k=rng.randint(1, 3))) for _ in range(50)]
    substrings = [w[:5] for w in rng.choices(words, k=50)]
    page.evaluate(QUERIES, {"keywords": keywords, "substrings": substrings, "n": 10})  # warm-up
    result = page.evaluate(QUERIES, {"keywords": keywords, "substrings": substrings, "n": 100})
    after = renderer_memory_mb()
    compact_mb = page.evaluate(TABLES_MB)
    embedding = page.evaluate(QUERY_EMBEDDING, 20)[2:]  # the first loads the model
    loaded = renderer_memory_mb()
    started, answered, searchable, vectors_ms = [], [], [], []
    for _ in range(REOPENS):  # a new page: what a returning user's tab holds once it is back
        page.close()
        page = blank_page(context, base_url)
        reopened = page.evaluate(
            REOPEN_AND_SEARCH,
            {"options": {"embeddings": {"backgroundIndexing": False}}, "dims": 384},
        )
        assert reopened["results"] == 10, reopened
        started.append(reopened["ready"])
        answered.append(reopened["answeredMs"])
        status = page.evaluate(VECTORS_LOADED)
        assert status["indexed"] == 100_000, status
        searchable.append(status["sinceReadyMs"])
        vectors_ms.append(status["loadMs"])
    reopened = renderer_memory_mb()  # the last reopen's
    reopened_settled = settled_memory_mb()
    rows += [
        summarise("keyword (BM25) top-10 at 100k", result["keyword"]),
        summarise("substring (searchMessages) at 100k", result["substring"]),
        summarise("semantic top-10 over 100k x 384 (no query embedding)", result["semantic"]),
        summarise("  the query's own embedding (MiniLM)", embedding),
        summarise("hybrid top-10 at 100k", result["hybrid"]),
        summarise("relevant top-10 with character+role filters", result["filtered"]),
        summarise("  DuckDB tables, vectors as int8 (default)", [compact_mb], "MB"),
        summarise("renderer memory: blank page", [blank], "MB"),
        summarise("  booted, empty store", [before], "MB"),
        summarise("    booted, at once (before the page idled)", [booted], "MB"),
        summarise("  100k messages + 100k vectors (at once)", [after], "MB"),
        summarise("  ... and the model loaded (at once)", [loaded], "MB"),
        summarise("  reopened: 100k messages + vectors loaded back", [reopened_settled], "MB"),
        summarise("    reopened, at once (before the page idled)", [reopened], "MB"),
        summarise("start-up at 100k: ready", started),
        summarise("  ... and a semantic search over 100k answered, after ready", answered),
        summarise("  ... and 100k vectors loaded beside the mirror, after ready", searchable),
        summarise("    of which the vectors' own work", vectors_ms),
    ]
    return rows


def run_scoped(browser, base_url: str, calls: int = 100) -> list[dict]:
    """Search inside one conversation of 600 turns, in stores of 6,000 and 100,000."""
    rows = []
    words = vocabulary()
    rng = random.Random(5)
    keywords = [" ".join(rng.choices(words[:1500], k=rng.randint(1, 3))) for _ in range(50)]
    for sessions in (30, 500):
        context = browser.new_context()
        page = blank_page(context, base_url)
        page.evaluate(BOOT, {"embeddings": {"backgroundIndexing": False}})
        page.evaluate(FILL, {"sessions": corpus(sessions, 200), "scoped": 3})
        page.evaluate(SCOPED, {"keywords": keywords, "n": 10})  # warm-up
        found = page.evaluate(SCOPED, {"keywords": keywords, "n": calls})
        context.close()
        size = f"{sessions * 200 // 1000}k"
        rows.append(summarise(f"one conversation (600) of {size}: ping floor", found["ping"]))
        rows.append(summarise("  one DuckDB statement, inside the worker", found["floor"]))
        for name in ("keyword", "semantic", "relevant", "hybrid"):
            rows.append(summarise(f"  {name} top-10 (vectors given: no embedding)", found[name]))
            rows.append(summarise("    of which inside the worker", found[f"{name} inside"]))
    return rows


def run_embedding(browser, base_url: str, runs: int = 3, count: int = 640) -> list[dict]:
    """Background embedding of real chat turns, each run in a fresh page: 40 batches of
    16, so a whole window (32 batches) is stored as one record, and the next window read,
    within what is timed."""
    sessions, _ = eval_dataset.build()  # English chat turns, as people write them
    texts = [m["content"] for s in sessions for m in s["messages"]][:count]
    rates, alone, tasks = [], [], []
    for _ in range(runs):
        context = browser.new_context()
        page = blank_page(context, base_url)
        page.evaluate(BOOT, {"embeddings": {"backgroundIndexing": False}})
        result = page.evaluate(EMBED_RATE, texts)
        context.close()
        rates.append(result["rate"])
        tasks += result["longTasks"]
        context = browser.new_context()
        alone.append(
            blank_page(context, base_url).evaluate(MODEL_ALONE, {"texts": texts, "batch": 16})
        )
        context.close()
    return [
        summarise(f"background embedding, {len(texts)} messages", rates, "msg/s"),
        summarise(f"  the model alone in its worker, {len(texts)} messages", alone, "msg/s"),
        summarise(f"  main-thread long tasks meanwhile ({len(tasks)})", tasks or [0.0]),
    ]

"""What strict durability costs per chat turn (issue 9): addMessage awaited until it
resolves, with durability 'strict' (the default: IndexedDB flushed the commit to disk)
and 'relaxed' (the browser has it), at a session of 10 messages and of 10,000, beside
the platform's floor, one plain IndexedDB put of a message's JSON text per transaction
awaited until `complete`, with either durability; the peers': idb-keyval's `set` of the
same text (default durability, and strict), and AIRI's own persistence (the whole
session record rewritten through unstorage); and the floor of any write guarded against
other tabs (a read, then the writes and the commit: two round trips to IndexedDB). All
in one browser run.

Each durability has its own memory system in its own browser profile on disk (an
incognito context keeps IndexedDB and OPFS in memory, where "strict" flushes nothing),
so its own IndexedDB: the library keeps every userId in one store, so distinct userIds
would share the journal, the mirror and the snapshots, and a snapshot that one side's
turns set off would land in the other's timings). Only one system is open at a time:
each is closed before another is opened. The floor has a context of its own too, its
database beside neither store, and runs while no system is open.

Machine noise (a 2-core machine) comes in bursts, so strict and relaxed are measured in
alternating blocks: each round runs a block of each, the order flipping from round to
round (strict first, then relaxed first, ...); within a block the two session sizes
alternate turn by turn. The floor's blocks follow the same order after the round's
memory systems. Background embedding and retention are off: they would write and
compute beside the turns and blur what durability alone costs. The sessions grow by the
turns measured (10 becomes about 350), as in the addMessage benchmark.
"""

import contextlib

import peers
from harness import BOOT, MAKE_EXPORT, blank_page, fresh_profile, ratio, summarise

DURABILITIES = ("strict", "relaxed")
SIZES = {"small": 10, "large": 10_000}
ROUNDS = 4  # even: each durability goes first in half of them
WARMUP = 10  # turns (and floor puts) per block before timing: the first after a boot are slow

PREFILL = (
    """
async () => {"""
    + MAKE_EXPORT
    + """
    const small = (await memory.importSessions(makeExport(1, 10))).sessionIds[0];
    const large = (await memory.importSessions(makeExport(1, 10000, 1))).sessionIds[0];
    await memory.sessions.persistSessionMessages('');  // waits for the background snapshot
    return { small, large };
}
"""
)

TURNS = """async ({ small, large, warmup, start, stop }) => {
    const time = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t; };
    const turn = (sessionId, content) => memory.sessions.addMessage(sessionId, { role: 'user', content });
    for (let i = 0; i < warmup; i++) {
        await turn(small, `warm-up turn ${i} about the garden`);
        await turn(large, `warm-up turn ${i} about the garden`);
    }
    const times = { small: [], large: [] };
    for (let i = start; i < stop; i++) {
        times.small.push(await time(() => turn(small, `new turn ${i} about the garden`)));
        times.large.push(await time(() => turn(large, `new turn ${i} about the garden`)));
    }
    return times;
}"""

OPEN_FLOOR = """async () => {
    const request = indexedDB.open('bench-durability-floor');
    request.onupgradeneeded = () => request.result.createObjectStore('messages');
    window.floorDb = await new Promise((resolve, reject) => {
        request.onsuccess = () => resolve(request.result);
        request.onerror = () => reject(request.error);
    });
}"""

# A message as addMessage stores it (id of 21 characters, role, content, createdAt), as
# JSON text, under a key of its own: one transaction per put, as one per turn.
FLOOR_PUTS = """async ({ durability, warmup, start, stop }) => {
    const put = (key, i) => new Promise((resolve, reject) => {
        const message = { id: `floor${String(i).padStart(16, '0')}`, role: 'user',
                          content: `new turn ${i} about the garden`, createdAt: Date.now() };
        const transaction = floorDb.transaction('messages', 'readwrite', { durability });
        transaction.oncomplete = resolve;
        transaction.onerror = transaction.onabort = () => reject(transaction.error);
        transaction.objectStore('messages').put(JSON.stringify(message), key);
    });
    for (let i = 0; i < warmup; i++) await put(`${durability}:warm-up:${start}:${i}`, i);
    const times = [];
    for (let i = start; i < stop; i++) {
        const t = performance.now();
        await put(`${durability}:${i}`, i);
        times.push(performance.now() - t);
    }
    return times;
}"""

# The floor of a write guarded against other tabs, as ours is: one strict transaction that
# reads a record first (the session, whose updatedAt the guard checks) and only once the
# read is back puts the message and the record and commits: two round trips to IndexedDB
# where a blind put takes one. No journal, no copy, no Python.
FLOOR_GUARDED = """async ({ warmup, start, stop }) => {
    const guarded = (key, i) => new Promise((resolve, reject) => {
        const message = { id: `floor${String(i).padStart(16, '0')}`, role: 'user',
                          content: `new turn ${i} about the garden`, createdAt: Date.now() };
        const transaction = floorDb.transaction('messages', 'readwrite', { durability: 'strict' });
        transaction.oncomplete = resolve;
        transaction.onerror = transaction.onabort = () => reject(transaction.error);
        const store = transaction.objectStore('messages');
        const session = store.get('guarded:session');
        session.onsuccess = () => {
            const meta = session.result ? JSON.parse(session.result) : { title: 'floor', updatedAt: 0 };
            store.put(JSON.stringify(message), key);
            store.put(JSON.stringify({ ...meta, updatedAt: meta.updatedAt + 1 }), 'guarded:session');
            transaction.commit();
        };
    });
    for (let i = 0; i < warmup; i++) await guarded(`guarded:warm-up:${start}:${i}`, i);
    const times = [];
    for (let i = start; i < stop; i++) {
        const t = performance.now();
        await guarded(`guarded:${i}`, i);
        times.push(performance.now() - t);
    }
    return times;
}"""

# The peer's floor: idb-keyval's `set` of the same message (its own store, its own
# transaction per call), awaited: once with the browser's default durability (relaxed in
# Chromium), and once through a store like idb-keyval's own `createStore` whose
# transactions are strict, as ours are by default: "until durable" on both sides.
KEYVAL_SETS = """async ({ durability, warmup, start, stop }) => {
    const { set, promisifyRequest } = await import('/__bench__/peers.mjs');
    if (!window.strictKeyval) {
        const request = indexedDB.open('keyval-store-strict');
        request.onupgradeneeded = () => request.result.createObjectStore('keyval');
        const db = promisifyRequest(request);
        window.strictKeyval = (mode, callback) => db.then((opened) =>
            callback(opened.transaction('keyval', mode, { durability: 'strict' }).objectStore('keyval')));
    }
    const store = durability === 'strict' ? window.strictKeyval : undefined;
    const message = (i) => JSON.stringify({ id: `floor${String(i).padStart(16, '0')}`, role: 'user',
                                            content: `new turn ${i} about the garden`, createdAt: Date.now() });
    for (let i = 0; i < warmup; i++) await set(`keyval:${durability}:warm-up:${start}:${i}`, message(i), store);
    const times = [];
    for (let i = start; i < stop; i++) {
        const t = performance.now();
        await set(`keyval:${durability}:${i}`, message(i), store);
        times.push(performance.now() - t);
    }
    return times;
}"""

# The peer a user would pick instead: AIRI's own persistence, through the real unstorage
# mounted as AIRI mounts it (its IndexedDB driver, idb-keyval's default store and
# durability). Every turn rewrites the whole session record and the session index, as
# AIRI does; the records start as the sessions ours are measured on (10 and 10,000).
AIRI_REWRITES = (
    """
async ({ warmup, start, stop }) => {"""
    + MAKE_EXPORT
    + """
    const { createStorage, indexedDbDriver, memoryDriver } = await import('/__bench__/peers.mjs');
    if (!window.airi) {
        const storage = createStorage({ driver: memoryDriver() });
        storage.mount('local', indexedDbDriver({ base: 'airi-local' }));
        const [small, large] = [makeExport(1, 10).sessions[0], makeExport(1, 10000, 1).sessions[0]];
        const records = { small, large };
        for (const [name, record] of Object.entries(records)) {
            record.meta = { ...record.meta, sessionId: `airi-${name}`, userId: 'local', createdAt: Date.now(), updatedAt: Date.now() };
            record.messages.forEach((m, i) => { m.id = `m${String(i).padStart(20, '0')}`; });
        }
        window.airi = { storage, records };
    }
    const { storage, records } = window.airi;
    const index = () => ({ userId: 'local', characters: { default: { activeSessionId: 'airi-large',
        sessions: Object.fromEntries(Object.values(records).map((r) => [r.meta.sessionId, r.meta])) } } });
    const turn = async (record, content) => {
        record.messages.push({ role: 'user', content, id: `x${record.messages.length}`, createdAt: Date.now() });
        record.meta.updatedAt = Date.now();
        await storage.setItem(`local:chat/sessions/${record.meta.sessionId}`, record);
        await storage.setItem('local:chat/index/local', index());
    };
    const time = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t; };
    for (let i = 0; i < warmup; i++) {
        await turn(records.small, `warm-up turn ${i} about the garden`);
        await turn(records.large, `warm-up turn ${i} about the garden`);
    }
    const times = { small: [], large: [] };
    for (let i = start; i < stop; i++) {
        times.small.push(await time(() => turn(records.small, `new turn ${i} about the garden`)));
        times.large.push(await time(() => turn(records.large, `new turn ${i} about the garden`)));
    }
    return times;
}
"""
)

CLOSE = "() => memory.close()"


def _options(durability: str) -> dict:
    return {
        "durability": durability,
        "retention": {"enabled": False},
        "embeddings": {"backgroundIndexing": False},
    }


def run(browser, base_url: str, calls: int) -> list[dict]:
    """``calls`` timed turns per durability and session size, and floor puts per durability."""
    with contextlib.ExitStack() as profiles:

        def on_disk():
            """A blank page in a profile of its own, on disk."""
            return blank_page(profiles.enter_context(fresh_profile(browser.browser_type)), base_url)

        pages = {durability: on_disk() for durability in DURABILITIES}
        peers.bundle()
        return _measure(pages, on_disk(), calls)


def _measure(pages: dict, floor_page, calls: int) -> list[dict]:
    sessions = {}
    for durability, page in pages.items():
        page.evaluate(BOOT, _options(durability))
        sessions[durability] = page.evaluate(PREFILL)
        page.evaluate(CLOSE)
    floor_page.evaluate(OPEN_FLOOR)
    ours = {(durability, size): [] for durability in DURABILITIES for size in SIZES}
    floor = {durability: [] for durability in DURABILITIES}
    keyval = {durability: [] for durability in ("default", "strict")}
    guarded, airi = [], {size: [] for size in SIZES}
    for round_number in range(ROUNDS):
        order = DURABILITIES if round_number % 2 == 0 else DURABILITIES[::-1]
        share = {
            "warmup": WARMUP,
            "start": calls * round_number // ROUNDS,
            "stop": calls * (round_number + 1) // ROUNDS,
        }
        for durability in order:
            page = pages[durability]
            page.evaluate(BOOT, _options(durability))
            times = page.evaluate(TURNS, {**sessions[durability], **share})
            page.evaluate(CLOSE)
            for size in SIZES:
                ours[durability, size] += times[size]
        for durability in order:
            floor[durability] += floor_page.evaluate(
                FLOOR_PUTS, {"durability": durability, **share}
            )
        for durability in keyval:
            keyval[durability] += floor_page.evaluate(
                KEYVAL_SETS, {"durability": durability, **share}
            )
        guarded += floor_page.evaluate(FLOOR_GUARDED, share)
        for size, times in floor_page.evaluate(AIRI_REWRITES, share).items():
            airi[size] += times

    raw_strict = summarise("raw IndexedDB put of a message, strict", floor["strict"])
    raw_relaxed = summarise("raw IndexedDB put of a message, relaxed", floor["relaxed"])
    keyval_set = summarise("idb-keyval set of a message", keyval["default"])
    keyval_strict = summarise("idb-keyval set of a message, strict", keyval["strict"])
    guarded_put = summarise("raw guarded put (read, then write and commit), strict", guarded)
    rows = [
        raw_strict,
        raw_relaxed,
        keyval_set,
        keyval_strict,
        guarded_put,
        ratio("  raw strict / raw relaxed", raw_strict, raw_relaxed),
        ratio("  raw guarded put / idb-keyval set, strict", guarded_put, keyval_strict),
    ]
    for size, count in SIZES.items():
        of = f"session of {count:,}"
        strict = summarise(f"addMessage, strict (default), {of}", ours["strict", size])
        relaxed = summarise(f"addMessage, relaxed, {of}", ours["relaxed", size])
        rewrite = summarise(f"AIRI's whole-session rewrite (unstorage), {of}", airi[size])
        rows += [
            strict,
            relaxed,
            rewrite,
            ratio(f"  ours strict / raw strict, {of}", strict, raw_strict),
            ratio(f"  ours strict / idb-keyval set, strict, {of}", strict, keyval_strict),
            ratio(f"  ours strict / idb-keyval set (default durability), {of}", strict, keyval_set),
            ratio(f"  ours strict / raw guarded put, {of}", strict, guarded_put),
            ratio(f"  ours strict / AIRI's rewrite, {of}", strict, rewrite),
            ratio(f"  ours relaxed / raw relaxed, {of}", relaxed, raw_relaxed),
            ratio(f"  ours strict / ours relaxed, {of}", strict, relaxed),
        ]
    return rows

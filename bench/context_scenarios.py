"""Context benchmarks: composeMessages on a 10,000-message session within a 120k budget,
exact token counting throughput, and applyRetentionPolicy over 10,000 sessions."""

from harness import BOOT, MAKE_EXPORT, blank_page, summarise

COMPOSE = (
    """
async ({ calls }) => {"""
    + MAKE_EXPORT
    + """
    const time = async (fn) => { const t = performance.now(); await fn(); return performance.now() - t; };
    const report = await memory.importSessions(makeExport(1, 10000));
    const sid = report.sessionIds[0];
    await memory.context.ingestContext({ sourceType: 'module:discord', sourceId: 'bot', content: { activeChannel: 'general' } });
    const first = await time(() => memory.composeMessages(sid, { model: 'gpt-4o' }));
    const composed = await memory.composeMessages(sid, { model: 'gpt-4o' });
    const warm = [], estimate = [];
    for (let i = 0; i < calls; i++) warm.push(await time(() => memory.composeMessages(sid, { model: 'gpt-4o' })));
    for (let i = 0; i < calls; i++) estimate.push(await time(() => memory.composeMessages(sid, { maxTokens: 120000, reserveTokens: 8000 })));
    // A chat turn: a new message, then the prompt for the reply.
    const turn = [];
    for (let i = 0; i < calls; i++) {
        await memory.sessions.addMessage(sid, { role: 'user', content: `new turn ${i} about the garden` });
        turn.push(await time(() => memory.composeMessages(sid, { model: 'gpt-4o' })));
    }
    return { first, warm, estimate, turn, sent: composed.messages.length, tokens: composed.tokens, encoding: composed.encoding };
}
"""
)

TOKENS = """async ({ runs }) => {
    const sentences = ['The quick brown fox jumps over the lazy dog. ', 'I remember you said the garden needs more sun. ',
                       '今日はとても良い天気ですね。', 'Ceci est une phrase en français, avec des accents. '];
    const texts = Array.from({ length: 5000 }, (_, i) => sentences[i % 4].repeat(1 + (i % 7)) + ` #${i}`);
    const bytes = texts.reduce((n, t) => n + new TextEncoder().encode(t).length, 0);
    await memory.countTokens(['warm up'], 'o200k_base');
    await memory.countTokens(['warm up'], 'cl100k_base');
    const rates = { o200k_base: [], cl100k_base: [] };
    for (let r = 0; r < runs; r++) {
        for (const encoding of Object.keys(rates)) {
            const t = performance.now();
            for (let i = 0; i < texts.length; i += 1000) await memory.countTokens(texts.slice(i, i + 1000), encoding);
            rates[encoding].push(bytes / 1e6 / ((performance.now() - t) / 1000));
        }
    }
    return { rates, bytes };
}"""

RETENTION = """async ({ sessions }) => {
    const day = 24 * 3600 * 1000, now = Date.now();
    for (let s = 0; s < sessions; s += 2000) {
        await memory.importSessions({ version: '1.0.0', exportedAt: now, sessions: Array.from({ length: 2000 }, (_, i) => {
            const age = ((s + i) % 60) * day;  // half are older than 30 days
            return { meta: { title: `s${s + i}`, createdAt: now - age - day, updatedAt: now - age, pinned: (s + i) % 97 === 0 },
                     messages: [{ role: 'user', content: 'hi', createdAt: now - age }] };
        }) });
    }
    const t = performance.now();
    const report = await memory.applyRetentionPolicy({ maxSessions: 1000 });
    return { total: performance.now() - t, inside: report.durationMs,
             archived: report.archivedInactive.length + report.archivedOverLimit.length, active: report.activeSessions };
}"""


def run(browser, base_url: str) -> list[dict]:
    rows = []
    context = browser.new_context()
    page = blank_page(context, base_url)
    page.evaluate(BOOT)
    compose = page.evaluate(COMPOSE, {"calls": 100})
    tokens = page.evaluate(TOKENS, {"runs": 5})
    context.close()
    rows += [
        summarise(f"composeMessages 10k msgs, gpt-4o (sent {compose['sent']})", compose["warm"]),
        summarise("  first call (counts every message)", [compose["first"]]),
        summarise("  estimate, maxTokens 120k", compose["estimate"]),
        summarise("  right after addMessage (a chat turn)", compose["turn"]),
    ]
    for encoding, rates in tokens["rates"].items():
        rows.append(summarise(f"exact token counting, {encoding}", rates, "MB/s"))
    retention = [], []
    for _ in range(3):
        context = browser.new_context()
        page = blank_page(context, base_url)
        page.evaluate(BOOT, {"retention": {"enabled": False}})
        result = page.evaluate(RETENTION, {"sessions": 10_000})
        assert result["active"] <= 1000 and result["archived"] > 5000, result
        retention[0].append(result["total"])
        retention[1].append(result["inside"])
        context.close()
    rows += [
        summarise("applyRetentionPolicy over 10,000 sessions", retention[0]),
        summarise("  inside Python", retention[1]),
    ]
    return rows

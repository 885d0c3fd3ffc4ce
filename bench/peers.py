"""Search against its floor and its peer, in one page (issue 13): our keyword, semantic
and hybrid top-10 over 100,000 stored messages beside Orama's fulltext, vector and hybrid
search over the same texts and the same vectors, and beside a plain JavaScript
brute-force cosine scan of those vectors in one flat Float32Array.

The same vectors: the store's own int8 codes, read back batch by batch through
``diagnostics.storedVectors`` and normalised to float32, so Orama and the scan rank
exactly what we rank.
Each side runs its queries in a block of its own (see ``QUERIES``). Orama runs with
English stemming and stop words (@orama/stemmers, @orama/stopwords), its vector search
with similarity -1 so that it ranks every vector, as we do.
"""

import subprocess

from harness import PEERS_BUNDLE, ROOT, blank_page, summarise
from search_scenarios import BOOT, FILL, corpus, renderer_memory_mb, settled_memory_mb, vocabulary

ENTRY = ROOT / "bench" / "peers" / "entry.mjs"
BUNDLE = PEERS_BUNDLE  # served by the bench server (harness.BenchHandler)
DIMS = 384
# A filter as an app passes one: a character's own turns (a sixth of the docs: FILL gives
# every third session to 'neko', and every other message is the user's).
FILTER = {"characterIds": ["neko"], "roles": ["user"]}

# Every stored message's text and vector, in doc order, as Orama's documents and as one
# flat Float32Array (unit length: cosine is then a dot product). The text as search
# indexed it (folded: the bench's words are lower-case ASCII, so the same words).
LOAD = """async ({ dims }) => {
    const peers = await import('/__bench__/peers.mjs');
    const texts = [], roles = [], characters = [];
    const parts = [];
    for (let batch = 0; ; batch++) {
        const stored = await memory.diagnostics.storedVectors(batch);
        if (!stored.texts.length) break;
        const codes = new Int8Array(stored.codes.buffer, stored.codes.byteOffset, stored.codes.length);
        const block = new Float32Array(codes.length);
        for (let r = 0; r < stored.texts.length; r++) {
            let norm = 0;
            for (let i = r * dims; i < (r + 1) * dims; i++) norm += codes[i] * codes[i];
            norm = Math.sqrt(norm) || 1;
            for (let i = r * dims; i < (r + 1) * dims; i++) block[i] = codes[i] / norm;
        }
        texts.push(...stored.texts);
        roles.push(...stored.roles);
        characters.push(...stored.characterIds);
        parts.push(block);
    }
    const flat = new Float32Array(texts.length * dims);
    let at = 0;
    for (const block of parts) { flat.set(block, at); at += block.length; }
    window.peers = { ...peers, texts, roles, characters, flat, dims };
    return texts.length;
}"""

BUILD_ORAMA = """async () => {
    const { create, insertMultiple, stemmer, stopwords, texts, flat, dims } = window.peers;
    const started = performance.now();
    const db = create({
        schema: { content: 'string', embedding: `vector[${dims}]` },
        components: { tokenizer: { stemming: true, stemmer, stopWords: stopwords } },
    });
    // Orama takes vectors as plain arrays (as an app would hand them over), and keeps them.
    for (let first = 0; first < texts.length; first += 1000) {
        const docs = texts.slice(first, first + 1000).map((content, i) => ({
            content, embedding: Array.from(flat.subarray((first + i) * dims, (first + i + 1) * dims)) }));
        await insertMultiple(db, docs, 1000);
    }
    window.peers.orama = db;
    return performance.now() - started;
}"""

# Each side's queries in a block of its own, ours first, with the same texts and vectors
# (vectors drawn like the stored ones, uniform codes, so scores spread alike). Orama runs
# on the page's thread: interleaved with it, our searches (timed on the page too) paid for
# the garbage its queries left, collected while ours were awaited. ``inside`` is our
# search's own tookMs, measured in the worker.
QUERIES = """async ({ keywords, n, filter }) => {
    const { search, orama, flat, dims, roles, characters } = window.peers;
    const time = async (fn) => { const t = performance.now(); const r = await fn(); return [performance.now() - t, r]; };
    const count = flat.length / dims;
    // The docs a filter allows, as a mask made per query: the filter comes with the query.
    const allowed = () => Uint8Array.from({ length: count },
        (_, d) => filter.characterIds.includes(characters[d]) && filter.roles.includes(roles[d]));
    const scan = (query, allow = null) => {  // top 10 by dot product, kept in a small sorted array
        const best = [], scores = [];
        for (let d = 0, base = 0; d < count; d++, base += dims) {
            if (allow !== null && !allow[d]) continue;
            let dot = 0;
            for (let i = 0; i < dims; i++) dot += query[i] * flat[base + i];
            if (best.length < 10 || dot > scores[best.length - 1]) {
                let at = Math.min(best.length, 9);
                while (at > 0 && scores[at - 1] < dot) { scores[at] = scores[at - 1]; best[at] = best[at - 1]; at--; }
                scores[at] = dot; best[at] = d;
                if (best.length > 10) { best.length = 10; scores.length = 10; }
            }
        }
        return best;
    };
    const asks = Array.from({ length: n }, (_, i) => {
        const raw = Array.from({ length: dims }, () => Math.random() - 0.5);
        const norm = Math.sqrt(raw.reduce((s, x) => s + x * x, 0));
        const vector = Float32Array.from(raw, (x) => x / norm);
        return { term: keywords[i % keywords.length], vector, asList: Array.from(vector) };
    });
    const out = { keyword: [], keywordInside: [], oramaKeyword: [], semantic: [], scan: [], oramaVector: [],
                  hybrid: [], oramaHybrid: [], semanticFiltered: [], scanFiltered: [], found: { keyword: 0, oramaKeyword: 0 } };
    for (const { term, asList } of asks) {
        const [ms, r] = await time(() => memory.search({ query: term, strategy: 'keyword', limit: 10 }));
        out.keyword.push(ms); out.keywordInside.push(r.tookMs); out.found.keyword += r.results.length;
        out.semantic.push((await time(() => memory.search({ vector: asList, strategy: 'semantic', limit: 10 })))[0]);
        out.hybrid.push((await time(() => memory.search({ query: term, vector: asList, strategy: 'relevant', limit: 10 })))[0]);
        out.semanticFiltered.push((await time(() => memory.search({ vector: asList, strategy: 'semantic', limit: 10, filters: filter })))[0]);
    }
    for (const { term, vector } of asks) {
        const [ms, r] = await time(() => search(orama, { term, properties: ['content'], limit: 10 }));
        out.oramaKeyword.push(ms); out.found.oramaKeyword += r.hits.length;
        out.scan.push((await time(async () => scan(vector)))[0]);
        out.scanFiltered.push((await time(async () => scan(vector, allowed())))[0]);
        out.oramaVector.push((await time(() => search(orama, { mode: 'vector',
            vector: { value: vector, property: 'embedding' }, similarity: -1, limit: 10 })))[0]);
        out.oramaHybrid.push((await time(() => search(orama, { mode: 'hybrid', term, properties: ['content'],
            vector: { value: vector, property: 'embedding' }, similarity: -1, limit: 10 })))[0]);
    }
    return out;
}"""


def bundle() -> None:
    """The peers as one ES module for the bench page (esbuild, from node_modules)."""
    BUNDLE.parent.mkdir(parents=True, exist_ok=True)
    esbuild = str(ROOT / "node_modules" / ".bin" / "esbuild")
    subprocess.run(
        [esbuild, str(ENTRY), "--bundle", "--format=esm", f"--outfile={BUNDLE}", "--log-level=warning"],
        check=True,
    )  # fmt: skip


def run(browser, base_url: str, calls: int = 50) -> list[dict]:
    bundle()
    context = browser.new_context()
    page = blank_page(context, base_url)
    page.evaluate(BOOT, {"embeddings": {"backgroundIndexing": False}})
    filled = page.evaluate(FILL, {"sessions": corpus(500, 200), "scoped": 0})
    assert filled["vectors"] == 100_000, filled
    assert page.evaluate(LOAD, {"dims": DIMS}) == 100_000
    before_orama = settled_memory_mb()  # what the fill and the load left is collected first
    build_ms = page.evaluate(BUILD_ORAMA)
    orama_at_once = renderer_memory_mb() - before_orama
    orama_mb = settled_memory_mb() - before_orama
    words = vocabulary()
    keywords = [" ".join(words[(i * 37) % 1500 : (i * 37) % 1500 + 1 + i % 3]) for i in range(50)]
    asks = {"keywords": keywords, "filter": FILTER}
    page.evaluate(QUERIES, {**asks, "n": 5})  # warm-up
    found = page.evaluate(QUERIES, {**asks, "n": calls})
    context.close()
    return [
        summarise("peers at 100k: Orama build (insertMultiple)", [build_ms]),
        summarise("  renderer memory Orama adds", [orama_mb], "MB"),
        summarise("    Orama adds, at once (before the page idled)", [orama_at_once], "MB"),
        summarise("keyword (BM25) top-10 at 100k [peer run]", found["keyword"]),
        summarise("  of which inside the worker", found["keywordInside"]),
        summarise("  Orama fulltext top-10", found["oramaKeyword"]),
        summarise("semantic top-10 at 100k, int8 [peer run]", found["semantic"]),
        summarise("  plain JS float32 brute force top-10", found["scan"]),
        summarise("  Orama vector top-10 (similarity -1)", found["oramaVector"]),
        summarise("semantic top-10 at 100k, int8, filtered [peer run]", found["semanticFiltered"]),
        summarise("  plain JS float32 brute force top-10, same filter", found["scanFiltered"]),
        summarise("hybrid (relevant) top-10 at 100k [peer run]", found["hybrid"]),
        summarise("  Orama hybrid top-10", found["oramaHybrid"]),
        summarise("  results per keyword query: ours", [found["found"]["keyword"] / calls], "n"),
        summarise(
            "  results per keyword query: Orama", [found["found"]["oramaKeyword"] / calls], "n"
        ),
    ]

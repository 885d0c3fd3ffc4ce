"""Search in Chromium with the real local model (all-MiniLM-L6-v2 on onnxruntime-web),
served from our own origin; embeddings survive a reload without being computed again."""

from pathlib import Path

# The demo's search panel, for a person to look at (build/out is git-ignored).
SCREENSHOT = Path(__file__).resolve().parents[2] / "build" / "out" / "demo-search.png"

MEMORIES = [
    "I adopted a grey cat called Miso last spring.",
    "My favourite food is ramen with an extra egg.",
    "Our car broke down on the motorway yesterday.",
    "I have been learning to play the violin for two years.",
    "My sister lives in Lisbon and works as an architect.",
]
WAIT_INDEXED = """async (count) => {
    for (let i = 0; i < 600; i++) {
        const status = await memory.embeddingsStatus();
        if (status.state === 'ready' && status.indexed >= count && !status.pending) return status;
        await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return await memory.embeddingsStatus();
}"""


def model_requests(web):
    return [url for url in web.requests if url.endswith("/onnx/model.onnx")]


def test_semantic_search_with_the_real_model_survives_a_reload(web):
    web.open_harness()
    web.boot()
    web.evaluate(
        """async (memories) => {
            window.progress = [];
            memory.addEventListener('embedding-progress', (event) => progress.push(event.detail));
            const { sessionId } = await memory.sessions.createSession({ title: 'About me' });
            for (const content of memories) await memory.sessions.addMessage(sessionId, { role: 'user', content });
        }""",
        MEMORIES,
    )
    status = web.evaluate(WAIT_INDEXED, len(MEMORIES))
    assert status["state"] == "ready" and status["indexed"] == 5, status
    assert status["model"] == "all-MiniLM-L6-v2" and status["dimensions"] == 384
    progress = web.evaluate("() => progress")
    assert any(
        p.get("phase") == "model" and p["loaded"] == p["total"] > 20_000_000 for p in progress
    )
    assert any(p.get("state") == "indexing" for p in progress)
    assert len(model_requests(web)) == 1  # from our own origin (the guard checks every request)
    result = web.evaluate(
        """async () => {
            const ask = async (query) => (await memory.search({ query, strategy: 'semantic', limit: 5 })).results;
            return { pet: await ask('Do I have any animals at home?'),
                     music: await ask('Which instrument am I practising?'),
                     family: await ask('Where does my sibling live?') };
        }"""
    )
    # Paraphrases share no keywords with the memory they ask about, yet rank it first,
    # and it scores clearly above the unrelated ones.
    for key, expected in [("pet", 0), ("music", 3), ("family", 4)]:
        hits = result[key]
        assert hits[0]["message"]["content"] == MEMORIES[expected], (key, hits)
        assert hits[0]["score"] > hits[1]["score"] + 0.05, (key, hits)
        assert hits[0]["retrievers"] == ["semantic"]
    # Stored vectors were embedded together, grouped by length; each query alone. The
    # same words must give the same vector either way (right row, padding masked out).
    same = web.evaluate(
        """async (memories) => Promise.all(memories.map(async (query) =>
            (await memory.search({ query, strategy: 'semantic', limit: 1 })).results[0]))""",
        MEMORIES,
    )
    for memory, hit in zip(MEMORIES, same, strict=True):
        assert hit["message"]["content"] == memory and hit["score"] > 0.999, (memory, hit)
    web.page.reload()
    web.boot()
    status = web.evaluate(WAIT_INDEXED, len(MEMORIES))
    assert status["indexed"] == 5 and status["pending"] == 0
    assert len(model_requests(web)) == 1  # nothing embedded again: the model was not loaded
    again = web.evaluate(
        "async () => (await memory.search({ query: 'my pet', strategy: 'hybrid', limit: 1 })).results"
    )
    assert again[0]["message"]["content"] == MEMORIES[0]
    assert len(model_requests(web)) == 2  # the query itself needed the model


def test_keyword_search_filters_and_substring_from_the_page(web):
    web.open_harness()
    web.boot()
    result = web.evaluate(
        """async () => {
            await memory.configureEmbeddings({ provider: 'none' });
            const a = (await memory.sessions.createSession({ characterId: 'airi' })).sessionId;
            const b = (await memory.sessions.createSession({ characterId: 'neko' })).sessionId;
            await memory.sessions.addMessage(a, { role: 'user', content: 'How do I configure the providers?' });
            await memory.sessions.addMessage(a, { role: 'assistant', content: 'Open the settings page and pick a provider.' });
            await memory.sessions.addMessage(b, { role: 'user', content: '東京タワーに行きたい' });
            const ask = async (query) => (await memory.search(query)).results.map((r) => [r.message.content, r.matchedTerms, r.retrievers]);
            return {
                keyword: await ask({ query: 'provider configuration', strategy: 'keyword' }),
                assistant: await ask({ query: 'provider', strategy: 'keyword', filters: { roles: ['assistant'] } }),
                neko: await ask({ query: '東京', strategy: 'relevant', filters: { characterIds: ['neko'] } }),
                substring: (await memory.searchMessages('SETTINGS')).map((r) => r.message.content),
                status: await memory.embeddingsStatus(),
                bad: await memory.search({ query: 'x', filters: { dateRange: [2, 1] } }).catch((e) => [e.name, e.message]),
            };
        }"""
    )
    assert [hit[0] for hit in result["keyword"]] == [
        "How do I configure the providers?",
        "Open the settings page and pick a provider.",
    ]
    assert sorted(result["keyword"][0][1]) == ["configur", "provid"]
    assert result["assistant"] == [
        ["Open the settings page and pick a provider.", ["provid"], ["keyword"]]
    ]
    assert result["neko"] == [["東京タワーに行きたい", ["東京"], ["keyword"]]]
    assert result["substring"] == ["Open the settings page and pick a provider."]
    assert result["status"]["state"] == "off"
    assert result["bad"][0] == "InvalidValueError" and "dateRange" in result["bad"][1]


def test_demo_search_panel_shows_progress_scores_and_terms(web):
    page = web.page
    web.open_demo("Search me")
    for text in MEMORIES[:3]:
        web.send_in_demo(text)
    page.wait_for_function(
        "document.getElementById('embedding-label').textContent.includes('3 of 3 messages embedded')",
        timeout=120_000,
    )
    assert page.eval_on_selector("#embedding-progress", "bar => bar.value === bar.max")
    page.fill("#search-query", "my favourite food")
    page.select_option("#search-strategy", "relevant")
    page.click("#search-button")
    page.wait_for_selector("#search-results li")
    first = page.text_content("#search-results li:first-child")
    assert MEMORIES[1] in first and "semantic" in first and "terms: favourit, food" in first
    page.check("input[name=search-role][value=assistant]")
    page.click("#search-button")
    page.wait_for_function(
        "document.getElementById('search-output').textContent.startsWith('0 result')"
    )
    page.screenshot(path=str(SCREENSHOT), full_page=True)


def test_an_app_supplied_embedding_function(web):
    web.open_harness()
    result = web.evaluate(
        """async () => {
            const { createMemorySystem } = await import('/airi-memory.mjs');
            const asked = [];
            // A stand-in model from the app: letters counted into 26 dimensions.
            const embed = async ({ texts, model }) => {
                asked.push([model, texts.length]);
                return texts.map((text) => Array.from({ length: 26 }, (_, i) =>
                    [...text.toLowerCase()].filter((c) => c.charCodeAt(0) - 97 === i).length));
            };
            window.memory = await createMemorySystem({ userId: 'e2e',
                embeddings: { provider: 'custom', model: 'letters', dimensions: 26, embed } });
            const { sessionId } = await memory.sessions.createSession({});
            for (const content of ['aaaa bbbb', 'zzzz yyyy']) await memory.sessions.addMessage(sessionId, { role: 'user', content });
            for (let i = 0; i < 100; i++) {
                const status = await memory.embeddingsStatus();
                if (status.state === 'ready' && status.indexed === 2) break;
                await new Promise((resolve) => setTimeout(resolve, 50));
            }
            const found = await memory.search({ query: 'zzz', strategy: 'semantic', limit: 1 });
            return { asked, status: await memory.embeddingsStatus(), top: found.results[0].message.content };
        }"""
    )
    assert result["top"] == "zzzz yyyy"
    assert result["status"]["provider"] == "custom" and result["status"]["indexed"] == 2
    assert result["asked"][0][0] == "letters" and sum(n for _, n in result["asked"]) == 3
    assert not model_requests(web)  # the local model was never fetched


def test_each_text_gets_its_own_vector_from_a_mixed_batch(web):
    """The embedder worker runs texts of similar length together: in any order and mix of
    lengths, a text's vector is the one it gets alone (right row, padding masked out)."""
    texts = [
        "My sister lives in Lisbon and works as an architect who designs libraries, "
        "schools and the occasional bridge over the river Tagus.",
        "Hi!",
        "I adopted a grey cat called Miso last spring.",
        "Ok",
        "Our car broke down on the motorway yesterday.",
        " ".join(["The violin lesson ran long again."] * 40),  # past the 256-token limit
    ]
    web.open_harness()
    result = web.evaluate(
        """async (texts) => {
            const worker = new Worker('/runtime/embedder.mjs', { type: 'module' });
            let next = 0;
            const waiting = new Map();
            worker.onmessage = ({ data }) => data.event || waiting.get(data.id)(data);
            const embed = (texts) => new Promise((resolve) => {
                waiting.set(++next, resolve);
                worker.postMessage({ id: next, kind: 'embed', texts });
            });
            const together = await embed(texts);
            const alone = [];
            for (const text of texts) alone.push(Array.from((await embed([text])).value));
            worker.terminate();
            return { ok: together.ok, together: Array.from(together.value), alone };
        }""",
        texts,
    )
    assert result["ok"] and len(result["together"]) == len(texts) * 384
    for row, alone in enumerate(result["alone"]):
        together = result["together"][row * 384 : (row + 1) * 384]
        cosine = sum(a * b for a, b in zip(together, alone, strict=True))
        assert cosine > 0.9999, (texts[row][:40], cosine)

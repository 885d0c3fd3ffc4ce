"""Context, composition, summarisation and retention through the facade in Chromium."""

from pathlib import Path

import pytest

from llm_server import LlmServer

# The demo's prompt panel, for a person to look at (build/out is git-ignored).
SCREENSHOT = Path(__file__).resolve().parents[2] / "build" / "out" / "demo-prompt.png"


@pytest.fixture
def llm():
    server = LlmServer()
    yield server
    server.close()


def test_compose_with_js_providers_and_exact_counts(web):
    web.open_harness()
    web.boot()
    # The tokenizers (megabytes) are fetched on first use, not at start-up.
    assert not [url for url in web.requests if "/tokenizers/" in url]
    result = web.evaluate(
        """async () => {
            let asked = 0;
            await memory.context.registerProvider('module:game', () => ({ level: ++asked }));
            await memory.context.registerProvider('module:broken', () => { throw new Error('no game running'); });
            await memory.context.ingestContext({ sourceType: 'module:discord', sourceId: 'bot',
                content: { activeChannel: 'general' }, strategy: 'replace-self', priority: 2 });
            const { sessionId } = await memory.sessions.createSession({ systemPrompt: 'You are AIRI.' });
            await memory.sessions.addMessage(sessionId, { role: 'user', content: 'hello world' });
            const first = await memory.composeMessages(sessionId, { model: 'gpt-4o' });
            const second = await memory.composeMessages(sessionId, { model: 'gpt-4o', details: true });
            await memory.context.unregisterProvider('module:game');
            const third = await memory.composeMessages(sessionId, { maxTokens: 1000 });
            return { first, second, third, counts: await memory.countTokens(['hello world', 'お誕生日おめでとう'], 'cl100k_base'),
                     snapshot: await memory.context.getContextsSnapshot() };
        }"""
    )
    first, second = result["first"], result["second"]
    assert first["encoding"] == "o200k_base" and first["exact"] is True
    assert second["context"]["module:game"] == {"level": 2}
    assert next(iter(second["context"])) == "module:discord"  # priority 2 comes first
    assert "module:broken" in second["contextErrors"]
    assert "no game running" in second["contextErrors"]["module:broken"]
    assert second["messages"][0] == {"role": "system", "content": "You are AIRI."}
    lines = second["messages"][1]["content"][0]["text"].split("\n")
    assert lines[0] == 'Module module:discord: {"activeChannel": "general"}'
    assert any(line.startswith("Module module:datetime: {") for line in lines)
    assert second["messages"][2] == {"role": "user", "content": "hello world"}
    assert second["parts"][2]["tokens"] == 2 + 3  # exact o200k count plus chat format
    assert result["counts"] == [2, 9]
    fetched = sorted(url.rsplit("/", 1)[1] for url in web.requests if "/tokenizers/" in url)
    assert fetched == ["cl100k_base.mjs", "o200k_base.mjs"]
    assert "module:game" not in result["third"]["context"]
    assert result["snapshot"]["module:datetime"]["timezone"]  # the browser's own time zone


def test_summaries_through_a_js_callback_and_a_real_http_provider(web, llm):
    web.open_harness()
    # A callback summariser given at creation.
    report = web.evaluate(
        """async () => {
            const { createMemorySystem } = await import('/airi-memory.mjs');
            const seen = [];
            window.memory = await createMemorySystem({ userId: 'e2e', summarizer: { provider: 'callback', model: 'page-llm',
                summarize: async ({ messages, model }) => { seen.push(model); return `about ${messages[0].content.split('\\n').length - 1} turns`; } } });
            const { sessionId } = await memory.sessions.createSession({ systemPrompt: 'You are AIRI.' });
            for (let i = 0; i < 12; i++) await memory.sessions.addMessage(sessionId, { role: 'user', content: `turn ${i}` });
            const report = await memory.summarizeOldContext(sessionId, 4);
            const messages = await memory.sessions.loadSessionMessages(sessionId);
            const composed = await memory.composeMessages(sessionId, { maxTokens: 2000, contextPlacement: 'none' });
            return { report, seen, summary: messages.at(-1), sent: composed.messages.map((m) => m.content), sessionId };
        }"""
    )
    assert report["report"]["summarized"] == 8 and report["seen"] == ["page-llm"]
    assert report["summary"]["content"] == "Previous conversation summary: about 8 turns"
    assert report["summary"]["summary"]["provider"] == "callback"
    assert report["sent"] == ["You are AIRI.", "Previous conversation summary: about 8 turns",
                              "turn 8", "turn 9", "turn 10", "turn 11"]  # fmt: skip
    # Then an OpenAI-compatible server on another local port, over fetch.
    result = web.evaluate(
        """async ([sessionId, baseUrl]) => {
            const status = await memory.configureSummarizer({ provider: 'openai', baseUrl, model: 'tiny', apiKey: 'sk-e2e-secret', timeoutMs: 500 });
            for (let i = 12; i < 16; i++) await memory.sessions.addMessage(sessionId, { role: 'user', content: `turn ${i}` });
            const report = await memory.summarizeOldContext(sessionId, 4);
            return { status, report, exported: JSON.stringify(await memory.exportSessions()),
                     info: JSON.stringify(await memory.info()) };
        }""",
        [report["sessionId"], llm.base_url],
    )
    assert result["status"]["config"]["apiKey"] == "set"
    assert result["report"]["summarized"] == 4 and result["report"]["covers"] == 12
    request = llm.requests[0]
    assert request["authorization"] == "Bearer sk-e2e-secret"
    assert (
        "(Summary of what came before: about 8 turns)" in request["body"]["messages"][0]["content"]
    )
    assert "sk-e2e-secret" not in result["exported"] and "sk-e2e-secret" not in result["info"]


def test_provider_failures_reach_the_page_as_one_clear_error(web, llm):
    web.open_harness()
    web.boot()
    outcomes = {}
    for mode in ["500", "malformed", "slow"]:
        llm.mode, llm.delay = mode, 1.5
        outcomes[mode] = web.evaluate(
            """async (baseUrl) => {
                await memory.configureSummarizer({ provider: 'openai', baseUrl, timeoutMs: 400 });
                const { sessionId } = await memory.sessions.createSession({});
                for (let i = 0; i < 6; i++) await memory.sessions.addMessage(sessionId, { role: 'user', content: `turn ${i}` });
                const before = await memory.sessions.loadSessionMessages(sessionId);
                try { await memory.summarizeOldContext(sessionId, 2); return { failed: false }; }
                catch (e) {
                    const after = await memory.sessions.loadSessionMessages(sessionId);
                    return { failed: true, name: e.name, message: e.message, unchanged: JSON.stringify(before) === JSON.stringify(after) };
                }
            }""",
            llm.base_url,
        )
    for mode, words in {
        "500": "HTTP 500",
        "malformed": "not a chat completion",
        "slow": "no reply",
    }.items():
        outcome = outcomes[mode]
        assert outcome["failed"] and outcome["name"] == "ProviderError", (mode, outcome)
        assert words in outcome["message"] and outcome["unchanged"], (mode, outcome)


def test_retention_from_the_page(web):
    web.open_harness()
    result = web.evaluate(
        """async () => {
            const { createMemorySystem } = await import('/airi-memory.mjs');
            window.memory = await createMemorySystem({ userId: 'e2e', retention: { runAtStart: false, policy: { maxSessions: 2 } } });
            const ids = [];
            for (let i = 0; i < 4; i++) ids.push((await memory.sessions.createSession({ title: `s${i}` })).sessionId);
            await memory.sessions.pinSession(ids[0]);
            const report = await memory.applyRetentionPolicy();
            const status = await memory.retention.status();
            const stopped = await memory.retention.stop();
            let bad = null;
            try { await memory.applyRetentionPolicy({ maxSessions: 'many' }); } catch (e) { bad = { name: e.name, message: e.message }; }
            const archived = Object.fromEntries((await memory.sessions.getAllSessions()).map((s) => [s.title, s.archived]));
            return { report, status, stopped, bad, archived };
        }"""
    )
    assert result["archived"] == {"s0": False, "s1": True, "s2": True, "s3": False}
    assert len(result["report"]["archivedOverLimit"]) == 2
    assert result["status"]["scheduled"] is True and result["status"]["intervalMs"] == 3_600_000
    assert result["stopped"]["scheduled"] is False
    assert (
        result["bad"]["name"] == "InvalidValueError" and "maxSessions" in result["bad"]["message"]
    )


def test_demo_prompt_preview_context_and_retention(web):
    page = web.page
    web.open_demo("Preview chat")
    for text in ["hello there", "what is the weather like?", "tell me a story", "another one"]:
        web.send_in_demo(text)
    page.wait_for_selector("#prompt-parts tr[data-kind=history]:has-text('another one')")
    kinds = page.eval_on_selector_all("#prompt-parts tr", "rows => rows.map(r => r.dataset.kind)")
    assert kinds == ["system", "context", "history", "history", "history", "history"]
    assert "exact with o200k_base" in page.text_content("#prompt-output")
    assert page.eval_on_selector("#budget-meter", "m => m.max") == 112_000
    page.click("#set-module")
    page.wait_for_function(
        "document.getElementById('context-snapshot').textContent.includes('voiceConnected')"
    )
    assert "module:datetime" in page.text_content("#context-snapshot")
    page.fill("#summary-threshold", "2")
    page.click("#summarize-now")
    page.wait_for_selector("#prompt-parts tr[data-kind=summary]")
    assert '"method": "extractive"' in page.text_content("#retention-report")
    assert "covered by the summary" in page.text_content("#prompt-output")
    page.click("#run-retention")
    page.wait_for_function(
        "document.getElementById('retention-report').textContent.includes('archivedInactive')"
    )
    assert "run(s)" in page.text_content("#retention-status")
    page.screenshot(path=str(SCREENSHOT), full_page=True)

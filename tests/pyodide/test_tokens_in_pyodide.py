"""Exact token counts through the browser's token port (gpt-tokenizer), and composition
with them. The context contract itself runs in test_contracts_in_pyodide."""

from pytest_pyodide import run_in_pyodide


@run_in_pyodide(packages=["airi-memory"])
async def exact_counts(selenium) -> list:
    from js import airiHost

    from airi_memory.browser.tokenizer import GptTokenizer

    counter = GptTokenizer(airiHost.tokens)
    texts = ["hello world", "antidisestablishmentarianism", "2 + 2 = 4", "お誕生日おめでとう",
             "<|endoftext|>", ""]  # fmt: skip
    return [
        sorted(counter.encodings),
        await counter.count("cl100k_base", texts),
        await counter.count("o200k_base", texts),
    ]


def test_exact_token_counts_in_the_browser(browser_host):
    encodings, cl100k, o200k = exact_counts(browser_host)
    assert encodings == ["cl100k_base", "o200k_base"]
    # cl100k figures as OpenAI's tiktoken cookbook gives them; special-token text is
    # counted as plain text, never refused.
    assert cl100k[:4] == [2, 6, 7, 9] and cl100k[5] == 0
    assert o200k[0] == 2 and o200k[3] < cl100k[3]  # o200k is denser on Japanese
    assert cl100k[4] > 1 and o200k[4] > 1


@run_in_pyodide(packages=["airi-memory"])
async def compose_with_exact_counts(selenium) -> dict:
    from js import airiHost

    from airi_memory.browser.host import open_browser_system

    await airiHost.idb.open("keyval-store", "keyval").clear("")
    options = {"retention": {"enabled": False}, "context": {"datetime": False}}
    system = await open_browser_system(airiHost, options, local_model=False)
    sid = (await system.sessions.create_session({"systemPrompt": "hello world"}))["sessionId"]
    await system.sessions.add_message(sid, {"role": "user", "content": "2 + 2 = 4"})
    composed = await system.compose_messages(sid, {"model": "gpt-4-turbo", "details": True})
    estimated = await system.compose_messages(
        sid, {"model": "gpt-4-turbo", "encoding": "estimate", "details": True}
    )
    return {"exact": composed, "estimate": estimated}


def test_composition_counts_exactly_for_openai_models(browser_host):
    result = compose_with_exact_counts(browser_host)
    exact = result["exact"]
    assert exact["encoding"] == "cl100k_base" and exact["exact"] is True
    # 3 tokens of chat format per message (OpenAI's rule), 3 to prime the reply.
    assert [p["tokens"] for p in exact["parts"]] == [2 + 3, 7 + 3]
    assert exact["tokens"]["total"] == 5 + 10 + 3
    estimate = result["estimate"]
    assert estimate["exact"] is False and [p["tokens"] for p in estimate["parts"]] == [3 + 3, 3 + 3]

"""The OpenAI-compatible provider on CPython: against a real local HTTP server where the
network path matters, through the in-process transport where only the replies do."""

import asyncio
import json

import pytest

from airi_memory.errors import InvalidValueError, ProviderError
from airi_memory.http import HttpReply
from airi_memory.http.fake import FakeTransport, HttpRequest
from airi_memory.llm import LlmConfig
from airi_memory.llm.providers import CallbackLlm
from airi_memory.native.host import open_native_system
from llm_server import LlmServer

SECRET = "sk-test-do-not-leak"


@pytest.fixture
def llm():
    server = LlmServer()
    yield server
    server.close()


async def summarising_system(base_url, http=None, **extra):
    """A system whose summariser is the provider at ``base_url``, reached through ``http``
    (urllib unless given)."""
    config = {"provider": "openai", "baseUrl": base_url, "model": "tiny", "apiKey": SECRET,
              **extra}  # fmt: skip
    options = {
        "summarizer": config,
        "retention": {"enabled": False},
        "context": {"datetime": False},
    }
    system = await open_native_system(None, options, http=http)
    sid = (await system.sessions.create_session({"systemPrompt": "You are Airi."}))["sessionId"]
    for i in range(8):
        await system.sessions.add_message(sid, {"role": "user", "content": f"turn {i}"})
    return system, sid


async def test_summary_from_a_chat_completions_server(llm):
    system, sid = await summarising_system(llm.base_url)
    report = await system.summarizer.summarize_old_context(sid, 3)
    assert report["summarized"] == 5 and report["method"] == "llm"
    request = llm.requests[0]
    assert request["path"] == "/v1/chat/completions"
    assert request["authorization"] == f"Bearer {SECRET}"
    assert request["body"]["model"] == "tiny"
    assert request["body"]["messages"][0]["role"] == "user"
    assert "user: turn 4" in request["body"]["messages"][0]["content"]
    summary = (await system.sessions.load_session_messages(sid))[-1]
    assert summary["content"] == "Previous conversation summary: a short summary"
    assert summary["summary"]["provider"] == "openai" and summary["summary"]["model"] == "tiny"
    # The key is used, never shown or exported.
    status = await system.dispatch("summarizerStatus", [])
    assert status["value"]["config"]["apiKey"] == "set"
    assert SECRET not in json.dumps(status) and SECRET not in json.dumps(await system.info())
    assert SECRET not in json.dumps(await system.export_sessions())
    assert SECRET not in repr(system.options)


@pytest.mark.parametrize(
    ("mode", "words"),
    [
        ("500", ["HTTP 500", "upstream exploded"]),
        ("malformed", ["not a chat completion", "definitely not json"]),
        ("no-choices", ["not a chat completion", "choices"]),
        ("slow", ["no reply", "within 0.3 s"]),
    ],
)
async def test_failing_server_changes_nothing(llm, mode, words):
    llm.mode, llm.delay = mode, 1.5
    system, sid = await summarising_system(llm.base_url, timeoutMs=300)
    before = await system.sessions.load_session_messages(sid)
    reply = await system.dispatch("summarizeOldContext", [sid, 3])
    assert reply["ok"] is False and reply["error"]["name"] == "ProviderError"
    for word in words:
        assert word in reply["error"]["message"]
    assert SECRET not in json.dumps(reply)
    assert await system.sessions.load_session_messages(sid) == before
    assert system.summarizer.failures[sid]["attempts"] == 1
    llm.mode = "ok"  # the provider recovers: the retry succeeds
    assert (await system.summarizer.summarize_old_context(sid, 3))["summarized"] == 5


async def test_unreachable_server_and_bad_config(llm):
    port = llm.port
    llm.close()
    system, sid = await summarising_system(llm.base_url)
    with pytest.raises(ProviderError, match=f"cannot reach http://127.0.0.1:{port}"):
        await system.summarizer.summarize_old_context(sid, 3)
    bad = await system.dispatch("configureSummarizer", [{"provider": "carrier-pigeon"}])
    assert bad["error"]["name"] == "InvalidValueError" and "provider" in bad["error"]["message"]
    cleared = await system.dispatch("configureSummarizer", [None])
    assert cleared["value"]["configured"] is False
    report = await system.summarizer.summarize_old_context(sid, 3)
    assert report["method"] == "extractive"


async def settled(system, state, indexed=None):
    """The status once in ``state`` (with ``indexed`` vectors, when given: a pass that
    ended before the last writes is "ready" too)."""
    for _ in range(300):
        status = await system.embeddings.status()
        if status["state"] == state and indexed in (None, status["indexed"]):
            return status
        await asyncio.sleep(0.02)
    raise AssertionError(f"embeddings never reached {state}: {status}")


async def test_embeddings_from_an_openai_compatible_server(llm):
    config = {"provider": "openai", "baseUrl": llm.base_url, "model": "tiny-embed",
              "dimensions": 48, "apiKey": SECRET}  # fmt: skip
    system = await open_native_system(None, {"embeddings": config, "retention": {"enabled": False}})
    sid = (await system.sessions.create_session({}))["sessionId"]
    for text in ["orange juice please", "the train is late"]:
        await system.sessions.add_message(sid, {"role": "user", "content": text})
    status = await settled(system, "ready", indexed=2)
    assert status["indexed"] == 2 and status["apiKey"] == "set"
    request = llm.requests[0]
    assert request["path"] == "/v1/embeddings" and request["authorization"] == f"Bearer {SECRET}"
    assert request["body"]["model"] == "tiny-embed"
    assert sorted(request["body"]["input"]) == ["orange juice please", "the train is late"]
    found = await system.searcher.search(
        {"query": "orange juice", "strategy": "semantic", "limit": 1}
    )
    assert [h["message"]["content"] for h in found["results"]] == ["orange juice please"]
    assert SECRET not in json.dumps(await system.embeddings.status())


@pytest.mark.parametrize(
    ("mode", "words"), [("500", "HTTP 500"), ("malformed", "not an embeddings list")]
)
async def test_a_failing_embeddings_server(llm, mode, words):
    llm.mode = mode
    config = {"provider": "openai", "baseUrl": llm.base_url, "dimensions": 48}
    system = await open_native_system(None, {"embeddings": config, "retention": {"enabled": False}})
    sid = (await system.sessions.create_session({}))["sessionId"]
    await system.sessions.add_message(sid, {"role": "user", "content": "kept whatever happens"})
    status = await settled(system, "error")
    assert words in status["lastError"] and status["indexed"] == 0
    reply = await system.dispatch("search", [{"query": "kept", "strategy": "semantic"}])
    assert reply["error"]["name"] == "ProviderError" and words in reply["error"]["message"]
    assert [m["content"] for m in await system.sessions.load_session_messages(sid)] == [
        "kept whatever happens"
    ]
    wrong = await system.dispatch("configureEmbeddings", [{"provider": "openai", "dimensions": 3}])
    assert (
        wrong["error"]["name"] == "InvalidValueError" and "dimensions" in wrong["error"]["message"]
    )


def leaky_body() -> str:
    """A provider error that echoes the key, its header and a URL with a key in its
    query, then goes on for pages."""
    return json.dumps(
        {
            "error": f"invalid key {SECRET}",
            "seen": f"Authorization: Bearer {SECRET}-2",
            "docs": "https://provider.example/help?key=sk-in-query#frag",
            "trace": "z" * 5000,
        }
    )


def assert_redacted(text: str) -> None:
    assert SECRET not in text and "sk-in-query" not in text and "z" * 300 not in text
    assert "https://provider.example/help" in text and "HTTP 500" in text


def failing_with(status, body):
    """An in-process provider that answers every request with ``status`` and ``body``."""

    async def reply(request: HttpRequest) -> HttpReply:
        return HttpReply(status, body)

    return FakeTransport(reply)


IN_PROCESS_URL = "https://provider.example/v1"  # answered by a FakeTransport, never dialled


async def test_the_in_process_transport_times_out_as_the_real_ones_do():
    async def never(request: HttpRequest) -> HttpReply:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    with pytest.raises(ProviderError, match=f"no reply from {IN_PROCESS_URL} within 0.05 s"):
        await FakeTransport(never).post_json(IN_PROCESS_URL, {}, "{}", 0.05)


async def test_provider_errors_are_stored_and_shown_redacted():
    http = failing_with(500, leaky_body())
    system, sid = await summarising_system(IN_PROCESS_URL, http)
    reply = await system.dispatch("summarizeOldContext", [sid, 3])
    assert reply["error"]["name"] == "ProviderError"
    assert_redacted(reply["error"]["message"])
    assert len(reply["error"]["message"]) < 400
    status = await system.dispatch("summarizerStatus", [])
    assert_redacted(status["value"]["failures"][sid]["error"])
    assert SECRET not in json.dumps(status)
    stored = await system.storage.get_item(system.summarizer.failures_key)
    assert_redacted(stored[sid]["error"])
    [request] = http.requests
    assert request.url == "https://provider.example/v1/chat/completions"
    assert request.headers["Authorization"] == f"Bearer {SECRET}"
    assert request.json()["model"] == "tiny"


async def test_embedding_provider_errors_are_shown_redacted():
    config = {"provider": "openai", "baseUrl": IN_PROCESS_URL, "dimensions": 48,
              "apiKey": SECRET}  # fmt: skip
    options = {"embeddings": config, "retention": {"enabled": False}}
    http = failing_with(500, leaky_body())
    system = await open_native_system(None, options, http=http)
    sid = (await system.sessions.create_session({}))["sessionId"]
    await system.sessions.add_message(sid, {"role": "user", "content": "hello"})
    assert_redacted((await settled(system, "error"))["lastError"])
    assert [r.json()["input"] for r in http.requests] == [["hello"]]


@pytest.mark.parametrize(
    "base_url",
    [
        "http://api.example.com/v1",
        "http://10.0.0.2:8080/v1",
        "https://api.example.com/v1?key=sk-in-query",
        "https://user:sk-in-query@api.example.com/v1",
        "ftp://api.example.com/v1",
        "api.example.com/v1",
    ],
)
async def test_base_urls_that_would_expose_the_key_are_refused(base_url):
    system = await open_native_system(None, {"retention": {"enabled": False}})
    for method, provider in (("configureSummarizer", "openai"), ("configureEmbeddings", "openai")):
        reply = await system.dispatch(method, [{"provider": provider, "baseUrl": base_url}])
        assert reply["error"]["name"] == "InvalidValueError"
        assert "baseUrl" in reply["error"]["message"]
        assert "sk-in-query" not in reply["error"]["message"]
    with pytest.raises(InvalidValueError, match=r"summarizer\.baseUrl"):
        await open_native_system(None, {"summarizer": {"provider": "openai", "baseUrl": base_url}})


@pytest.mark.parametrize(
    "base_url",
    ["http://127.0.0.1:11434/v1", "http://localhost:1234/v1", "http://[::1]:8080/v1",
     "https://api.example.com/v1"],
)  # fmt: skip
async def test_https_and_loopback_base_urls_are_accepted(base_url):
    system = await open_native_system(None, {"retention": {"enabled": False}})
    reply = await system.dispatch(
        "configureSummarizer", [{"provider": "openai", "baseUrl": base_url, "apiKey": SECRET}]
    )
    assert reply["value"]["config"]["baseUrl"] == base_url
    assert reply["value"]["config"]["apiKey"] == "set"


async def test_an_app_callbacks_error_is_stored_redacted_too():
    async def failing(request):
        raise RuntimeError(f"proxy https://llm.example/v1?token={SECRET} said Bearer {SECRET}")

    system = await open_native_system(
        None, {"retention": {"enabled": False}, "context": {"datetime": False}}
    )
    config = LlmConfig(provider="callback", apiKey="sk-unrelated-key")
    system.summarizer.provider = CallbackLlm(config, failing)
    sid = (await system.sessions.create_session({}))["sessionId"]
    for i in range(6):
        await system.sessions.add_message(sid, {"role": "user", "content": f"turn {i}"})
    with pytest.raises(ProviderError):
        await system.summarizer.summarize_old_context(sid, 2)
    stored = (await system.storage.get_item(system.summarizer.failures_key))[sid]["error"]
    assert stored == (
        "the app's LLM callback failed: proxy https://llm.example/v1 said Bearer [redacted]"
    )

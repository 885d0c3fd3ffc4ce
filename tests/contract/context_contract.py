"""The context contract: context store, composition, retention, summarisation; run on
CPython and in Pyodide (IndexedDB, DuckDB-WASM). Self-contained, as the sessions
contract, so that it runs inside Pyodide too. LLMs here are Python functions behind the
callback provider; the HTTP provider is tested against a real server elsewhere.
"""

import asyncio

from airi_memory.errors import ContextTooLongError, InvalidValueError, ProviderError
from airi_memory.llm import LlmConfig
from airi_memory.llm.providers import CallbackLlm
from contract.common import DAY, QUIET, START, Clock, eventually, expect_error


def context(source_type, content, **extra):
    return {"sourceType": source_type, "sourceId": extra.pop("sourceId", "a"), "content": content,
            **extra}  # fmt: skip


# --- context store ----------------------------------------------------------------
async def case_context_strategies_priority_and_expiry(open_system):
    clock = Clock()
    system = await open_system(clock=clock, **QUIET)
    c = system.context
    await c.ingest(context("module:discord", {"channel": "general"}))
    await c.ingest(context("module:discord", {"channel": "random"}))  # replace-self
    assert await c.current() == {"module:discord": {"channel": "random"}}
    for n in range(25):
        await c.ingest(context("sensor:chat", {"n": n}, strategy="append-self"))
    current = await c.current()
    assert current["sensor:chat"] == [{"n": n} for n in range(5, 25)]  # capped at 20 per source
    await c.ingest(context("module:urgent", {"alarm": True}, priority=5))
    await c.ingest(context("module:soon-gone", {"x": 1}, expiresAt=clock.now + 1000))
    assert list(await c.current()) == [
        "module:urgent", "module:discord", "sensor:chat", "module:soon-gone",
    ]  # fmt: skip
    clock.now += 1000
    assert "module:soon-gone" not in await c.current()
    # Two sources of one type both show, oldest first; removing one leaves the other.
    await c.ingest(context("module:minecraft", {"server": "a"}, sourceId="one"))
    await c.ingest(context("module:minecraft", {"server": "b"}, sourceId="two"))
    assert (await c.current())["module:minecraft"] == [{"server": "a"}, {"server": "b"}]
    assert await c.remove("module:minecraft", "one") == 1
    assert (await c.current())["module:minecraft"] == {"server": "b"}
    entries = await c.entries()
    assert entries[0]["sourceType"] == "module:urgent" and entries[0]["priority"] == 5
    assert await c.remove("sensor:chat") == 20
    assert await c.clear() == 3  # discord, urgent, minecraft "two"
    assert await c.current() == {}
    await expect_error(InvalidValueError, c.ingest(context("x", "not an object")), "content")
    await expect_error(InvalidValueError, c.ingest(context("x", {}, strategy="merge")), "strategy")
    await expect_error(InvalidValueError, c.ingest({"sourceId": "a", "content": {}}), "sourceType")


async def case_providers_are_asked_before_each_composition(open_system):
    clock = Clock()
    system = await open_system(clock=clock, retention={"enabled": False})
    sid = (await system.sessions.create_session())["sessionId"]
    await system.sessions.add_message(sid, {"role": "user", "content": "hi"})
    calls = []

    async def weather():
        calls.append(1)
        return {"sky": "clear", "calls": len(calls)}

    async def broken():
        raise RuntimeError("sensor offline")

    async def nothing():
        return None

    system.context.register_provider("sensor:weather", weather)
    system.context.register_provider("sensor:broken", broken)
    system.context.register_provider("sensor:nothing", nothing)
    await system.context.set_user_profile({"name": "Alice", "likes": ["tea"]})
    await system.context.set_module_state("discord", {"voiceConnected": False})
    first = await system.compose_messages(sid, {"maxTokens": 4000})
    second = await system.compose_messages(sid, {"maxTokens": 4000})
    assert second["context"]["sensor:weather"] == {"sky": "clear", "calls": 2}
    assert first["contextErrors"] == {"sensor:broken": "RuntimeError: sensor offline"}
    assert "sensor:nothing" not in second["context"]
    assert second["context"]["module:user-profile"] == {"name": "Alice", "likes": ["tea"]}
    assert second["context"]["module:discord"] == {"voiceConnected": False}
    stamp = second["context"]["module:datetime"]
    assert stamp["timestamp"] >= START and stamp["formatted"].startswith("2026-01-01T00:00:")
    assert stamp["formatted"].endswith("Z") and stamp["timezone"] == "UTC"
    restarted = await open_system(clock=clock, retention={"enabled": False})
    assert await restarted.context.get_user_profile() == {"name": "Alice", "likes": ["tea"]}
    await restarted.context.set_user_profile(None)
    assert await restarted.context.get_user_profile() is None


# --- composition ------------------------------------------------------------------
async def chat(system, contents, system_prompt="You are Airi."):
    """A session with a system prompt and one message per (role, text) pair."""
    meta = await system.sessions.create_session({"systemPrompt": system_prompt})
    sid = meta["sessionId"]
    added = []
    for role, text, *extra in contents:
        message = {"role": role, "content": text, **(extra[0] if extra else {})}
        added.append(await system.sessions.add_message(sid, message))
    return sid, added


async def case_compose_orders_parts_and_prunes_oldest_first(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    # Each text is 40 characters: 10 estimated tokens.
    turns = [("user" if i % 2 == 0 else "assistant", f"{i:02d}" + "x" * 38) for i in range(10)]
    sid, added = await chat(system, turns, "S" * 40)
    await system.context.ingest(context("module:discord", {"channel": "general"}))
    line = 'Module module:discord: {"channel": "general"}'
    context_tokens = -(-len(line) // 4)
    # Budget for the system prompt, the context and exactly three turns.
    budget = 10 + context_tokens + 30
    composed = await system.compose_messages(
        sid, {"maxTokens": budget + 7, "reserveTokens": 7, "details": True}
    )
    assert composed["messages"][0] == {"role": "system", "content": "S" * 40}
    assert composed["messages"][1] == {"role": "user", "content": [{"type": "text", "text": line}]}
    assert [m["content"][:2] for m in composed["messages"][2:]] == ["07", "08", "09"]
    assert composed["tokens"] == {
        "system": 10, "context": context_tokens, "summary": 0, "recall": 0, "history": 30,
        "total": budget, "budget": budget, "maxTokens": budget + 7, "reserveTokens": 7,
    }  # fmt: skip
    assert composed["droppedMessages"] == 7 and composed["encoding"] == "estimate"
    assert [p["kind"] for p in composed["parts"]] == ["system", "context"] + ["history"] * 3
    assert composed["parts"][2]["messageId"] == added[7]["id"]
    # One token less and the oldest of the three goes.
    smaller = await system.compose_messages(sid, {"maxTokens": budget - 1})
    assert [m["content"][:2] for m in smaller["messages"][2:]] == ["08", "09"]
    # The app's system prompt replaces the stored one; no context, no context message.
    await system.context.clear()
    plain = await system.compose_messages(sid, {"maxTokens": 1000, "systemPrompt": "Be brief."})
    assert plain["messages"][0] == {"role": "system", "content": "Be brief."}
    assert len(plain["messages"]) == 11 and plain["contextPlacement"] == "none"


async def case_compose_refuses_what_cannot_fit(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    sid, _ = await chat(system, [("user", "u" * 400)], "S" * 400)
    await expect_error(ContextTooLongError, system.compose_messages(sid, {"maxTokens": 90}), "100")
    error = await expect_error(
        ContextTooLongError, system.compose_messages(sid, {"maxTokens": 150}), "newest message"
    )
    assert "100 tokens" in str(error) and "50" in str(error)
    await expect_error(InvalidValueError, system.compose_messages(sid, {}), "model or maxTokens")
    await expect_error(
        InvalidValueError, system.compose_messages(sid, {"model": "mystery-1"}), "unknown model"
    )
    await expect_error(
        InvalidValueError,
        system.compose_messages(sid, {"maxTokens": 10, "reserveTokens": 10}),
        "reserveTokens",
    )
    await expect_error(
        InvalidValueError, system.compose_messages(sid, {"maxTokens": 10, "colour": 1}), "colour"
    )


async def case_compose_keeps_tool_calls_with_their_results(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    call = {"tool_calls": [{"id": "c1", "type": "function",
                            "function": {"name": "look", "arguments": "{}"}}]}  # fmt: skip
    turns = [
        ("user", "u" * 40),
        ("assistant", "", call),
        ("tool", "r" * 40, {"tool_call_id": "c1"}),
        ("tool", "s" * 40, {"tool_call_id": "c1"}),
        ("assistant", "a" * 40),
        ("error", "the provider failed"),
    ]
    sid, _ = await chat(system, turns, "")
    everything = await system.compose_messages(sid, {"maxTokens": 1000})
    roles = [m["role"] for m in everything["messages"]]
    assert roles == ["system", "user", "assistant", "tool", "tool", "assistant"]  # no error role
    assert everything["messages"][2]["tool_calls"] == call["tool_calls"]
    assert everything["messages"][3] == {"role": "tool", "content": "r" * 40, "tool_call_id": "c1"}
    unit = everything["tokens"]["history"] - 20  # the call and its two results
    # A budget that fits the last answer and the two results but not their call: the
    # results are not sent alone.
    tight = await system.compose_messages(sid, {"maxTokens": 10 + unit - 1})
    assert [m["role"] for m in tight["messages"]] == ["system", "assistant"]
    whole = await system.compose_messages(sid, {"maxTokens": 10 + unit})
    assert [m["role"] for m in whole["messages"]] == [
        "system", "assistant", "tool", "tool", "assistant",
    ]  # fmt: skip
    # History that starts with orphan tool results (their call was deleted) skips them.
    messages = await system.sessions.load_session_messages(sid)
    await system.sessions.delete_message(sid, messages[2]["id"])
    orphaned = await system.compose_messages(sid, {"maxTokens": 1000})
    assert [m["role"] for m in orphaned["messages"]] == ["system", "user", "assistant"]


async def case_compose_airi_placement_and_presets(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    sid, _ = await chat(system, [("user", "hello"), ("assistant", "hi"), ("user", "news?")])
    await system.context.ingest(context("module:discord", {"channel": "general"}))
    composed = await system.compose_messages(
        sid, {"maxTokens": 1000, "contextPlacement": "last-user", "details": True}
    )
    block = '[Context]\n- module:discord: {"channel": "general"}'
    assert composed["messages"][-1] == {"role": "user", "content": f"news?\n\n{block}"}
    assert len(composed["messages"]) == 4
    assert composed["parts"][-1]["withContext"] is True
    assert composed["tokens"]["context"] == -(-len(block) // 4)
    gpt = await system.compose_messages(sid, {"model": "gpt-4o-2024-08-06"})
    assert gpt["tokens"]["maxTokens"] == 120_000 and gpt["tokens"]["reserveTokens"] == 8_000
    claude = await system.compose_messages(sid, {"model": "claude-3.5-sonnet"})
    assert claude["tokens"]["budget"] == 160_000 and claude["encoding"] == "estimate"
    local = await system.compose_messages(sid, {"model": "local", "maxTokens": 6000})
    assert local["tokens"]["maxTokens"] == 6000
    # An app-defined preset.
    custom = await open_system(
        clock=Clock(), models={"my-llama": {"maxTokens": 2048, "reserveTokens": 256}}, **QUIET
    )
    sid2, _ = await chat(custom, [("user", "hello")])
    assert (await custom.compose_messages(sid2, {"model": "my-llama"}))["tokens"]["budget"] == 1792


async def case_token_counts_are_cached_per_message(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    sid, added = await chat(system, [("user", f"message {i}") for i in range(50)])
    await system.compose_messages(sid, {"maxTokens": 100_000})
    first = system.tokens.stats()
    assert first["misses"] == 51  # the system prompt and fifty messages, counted once
    await system.compose_messages(sid, {"maxTokens": 100_000})
    assert system.tokens.stats()["misses"] == first["misses"]  # nothing counted again
    # A new message: only it is counted; the session's units grow instead of being rebuilt.
    await system.sessions.add_message(sid, {"role": "assistant", "content": "x" * 40})
    grown = await system.compose_messages(sid, {"maxTokens": 100_000})
    assert system.tokens.stats()["misses"] == first["misses"] + 1
    assert grown["tokens"]["history"] == 50 * 3 + 10 and len(grown["messages"]) == 52
    # A changed message: the session is read again, but only the changed text is counted.
    await system.sessions.update_message(sid, added[0]["id"], {"content": "changed " * 10})
    third = await system.compose_messages(sid, {"maxTokens": 100_000, "details": True})
    assert system.tokens.stats()["misses"] == first["misses"] + 2
    assert third["parts"][1]["tokens"] == 20
    assert third["messages"][1]["content"] == "changed " * 10
    assert await system.count_tokens(["abcd", "abcde", ""]) == [1, 2, 0]
    await expect_error(InvalidValueError, system.count_tokens(["x"], "p50k_base"), "p50k_base")


# --- retention --------------------------------------------------------------------
async def aged_sessions(system, clock, ages):
    """Sessions last updated ``age`` days ago, oldest first; returns their ids by name."""
    ids = {}
    for name, age, extra in ages:
        clock.now = START - age * DAY
        ids[name] = (await system.sessions.create_session({"title": name, **extra}))["sessionId"]
    clock.now = START
    return ids


async def case_retention_archives_deletes_and_caps(open_system):
    clock = Clock()
    system = await open_system(clock=clock, **QUIET)
    ids = await aged_sessions(
        system,
        clock,
        [
            ("ancient", 120, {}),
            ("ancient-pinned", 120, {"pinned": True}),
            ("old", 40, {}),
            ("recent-1", 3, {}),
            ("recent-2", 2, {}),
            ("recent-3", 1, {}),
        ],
    )
    policy = {"maxSessions": 2, "archiveAfter": 30 * DAY, "maxAge": 90 * DAY}
    report = await system.apply_retention_policy(policy)
    assert report["archivedInactive"] == [ids["old"], ids["ancient"]]
    assert report["deletedExpired"] == []  # deleteArchived is off
    # Four are active and two may be: the least recently updated unpinned ones go.
    assert report["archivedOverLimit"] == [ids["recent-1"], ids["recent-2"]]
    assert report["activeSessions"] == 2  # the newest, and the pinned one
    titles = {m["title"]: m for m in await system.sessions.get_all_sessions()}
    assert titles["ancient"]["archived"] and titles["old"]["archived"]
    assert not titles["ancient-pinned"]["archived"] and not titles["recent-3"]["archived"]
    # With deleteArchived, archived sessions created more than maxAge ago go.
    deleting = await system.apply_retention_policy({**policy, "deleteArchived": True})
    assert deleting["deletedExpired"] == [ids["ancient"]]
    assert await system.sessions.get_session(ids["ancient"]) is None
    assert await system.sessions.get_session(ids["ancient-pinned"]) is not None
    # Nothing more to do: a second run changes nothing; what changed survives a restart.
    again = await system.apply_retention_policy({**policy, "deleteArchived": True})
    assert again["archivedInactive"] == again["deletedExpired"] == again["archivedOverLimit"] == []
    restarted = await open_system(clock=clock, **QUIET)
    kept = {m["title"]: m["archived"] for m in await restarted.sessions.get_all_sessions()}
    assert kept == {"ancient-pinned": False, "old": True, "recent-1": True, "recent-2": True,
                    "recent-3": False}  # fmt: skip
    await expect_error(InvalidValueError, system.apply_retention_policy({"maxAge": -1}), "maxAge")


async def case_retention_of_many_sessions_keeps_other_tabs_edits(open_system):
    clock = Clock()
    system = await open_system(clock=clock, **QUIET)
    ids = await aged_sessions(system, clock, [(f"s{i:03d}", 40 + i % 3, {}) for i in range(100)])
    other_tab = await open_system(clock=clock, **QUIET)
    tagged = [ids["s007"], ids["s093"]]
    for sid in tagged:  # edits this tab has not seen (a tag is not activity)
        await other_tab.sessions.tag_session(sid, ["tagged elsewhere"])
    # A rename is activity: retention decides on what the store holds, not on this tab's
    # older picture, so the session renamed a moment ago in the other tab stays active.
    renamed = ids["s050"]
    await other_tab.sessions.rename_session(renamed, "renamed elsewhere")
    report = await system.apply_retention_policy()
    assert sorted(report["archivedInactive"]) == sorted(set(ids.values()) - {renamed})
    restarted = await open_system(clock=clock, **QUIET)
    stored = {m["sessionId"]: m for m in await restarted.sessions.get_all_sessions()}
    assert len(stored) == 100
    assert [sid for sid, m in stored.items() if not m["archived"]] == [renamed]
    assert [stored[sid]["tags"] for sid in tagged] == [["tagged elsewhere"]] * 2
    assert stored[renamed]["title"] == "renamed elsewhere"
    assert stored[ids["s051"]]["title"] == "s051"


async def case_retention_scheduler_runs_at_start_and_on_interval(open_system):
    """On the system's clock: a run at start, one per interval, none once stopped, and
    never two at once. The case moves the clock; no wall-clock time is waited for."""
    clock = Clock()
    quiet = await open_system(clock=clock, **QUIET)
    await aged_sessions(quiet, clock, [("stale", 45, {}), ("fresh", 1, {})])
    system = await open_system(
        clock=clock, retention={"intervalMs": 20}, context={"datetime": False}
    )
    scheduler = system.scheduler
    await eventually(lambda: scheduler.runs == 1 and clock.sleepers == 1, "the run at start")
    await clock.advance(19)
    assert scheduler.runs == 1 and clock.sleepers == 1  # the interval has not passed
    for runs in (2, 3):
        await clock.advance(20)
        ran = lambda n=runs: scheduler.runs == n and clock.sleepers == 1  # noqa: E731
        await eventually(ran, f"run {runs}")
    status = await scheduler.stop()
    assert status["runs"] == 3 and status["scheduled"] is False and clock.sleepers == 0
    assert status["lastReport"]["sessions"]["archivedInactive"] == []  # archived by the first
    archived = {m["title"]: m["archived"] for m in await system.sessions.get_all_sessions()}
    assert archived == {"stale": True, "fresh": False}
    await clock.advance(10 * 20)
    assert scheduler.runs == 3  # stopped means stopped
    # Never two at once: while the app's own run holds the scheduler, ticks are skipped,
    # and another run waits for it.
    release = asyncio.Event()

    async def slow():
        await release.wait()
        return {"slow": True}

    held = asyncio.ensure_future(scheduler.exclusive(slow))
    scheduler.start(run_now=False)
    waiting = asyncio.ensure_future(system.apply_retention_policy())
    await eventually(lambda: clock.sleepers == 1, "the scheduler waits for its interval")
    for skipped in (1, 2):
        await clock.advance(20)
        await eventually(lambda n=skipped: scheduler.skipped == n, f"{skipped} ticks skipped")
    assert scheduler.status()["inProgress"] and not waiting.done() and scheduler.runs == 3
    release.set()
    assert await held == {"slow": True}
    assert (await waiting)["archivedInactive"] == []
    await scheduler.stop()


# --- summarisation ----------------------------------------------------------------
def recording_llm(replies, failures=0):
    """A callback LLM that fails ``failures`` times, then answers from ``replies``."""
    seen = []

    async def complete(request):
        seen.append(request)
        if len(seen) <= failures:
            raise RuntimeError("model overloaded")
        return replies[min(len(seen) - failures, len(replies)) - 1]

    return seen, CallbackLlm(LlmConfig(provider="callback", model="test-model"), complete)


async def case_summaries_cover_old_turns_once(open_system):
    clock = Clock()
    system = await open_system(clock=clock, **QUIET)
    turns = [("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(12)]
    sid, added = await chat(system, turns)
    before = (await system.sessions.get_session(sid))["updatedAt"]
    seen, system.summarizer.provider = recording_llm(["first summary", "second summary"])
    report = await system.summarizer.summarize_old_context(sid, 4)
    assert report["summarized"] == 8 and report["covers"] == 8 and report["method"] == "llm"
    prompt = seen[0]["messages"][0]["content"]
    assert prompt.startswith("Summarize this conversation concisely:\n")
    assert "user: turn 0\nassistant: turn 1" in prompt and "turn 8" not in prompt
    messages = await system.sessions.load_session_messages(sid)
    summary = messages[-1]
    assert summary["role"] == "system"
    assert summary["content"] == "Previous conversation summary: first summary"
    assert summary["summary"]["covers"] == [m["id"] for m in added[:8]]
    assert summary["summary"]["provider"] == "callback"
    assert len(messages) == 14  # nothing deleted: the turns stay stored and searchable
    assert (await system.sessions.get_session(sid))["updatedAt"] == before
    composed = await system.compose_messages(sid, {"maxTokens": 10_000})
    assert [m["content"] for m in composed["messages"]] == [
        "You are Airi.", "Previous conversation summary: first summary",
        "turn 8", "turn 9", "turn 10", "turn 11",
    ]  # fmt: skip
    assert composed["coveredBySummary"] == 8
    # Nothing new to summarise: no call. Four more turns: only they are sent, with the
    # summary so far, and the new summary replaces the old one.
    assert (await system.summarizer.summarize_old_context(sid, 4))["summarized"] == 0
    assert len(seen) == 1
    for i in range(12, 16):
        await system.sessions.add_message(sid, {"role": "user", "content": f"turn {i}"})
    second = await system.summarizer.summarize_old_context(sid, 4)
    assert second["summarized"] == 4 and second["covers"] == 12
    prompt = seen[1]["messages"][0]["content"]
    assert "first summary" in prompt and "turn 8" in prompt and "turn 3" not in prompt
    restarted = await open_system(clock=clock, **QUIET)
    messages = await restarted.sessions.load_session_messages(sid)
    summaries = [m for m in messages if "summary" in m]
    assert len(summaries) == 1 and summaries[0]["summary"]["supersedes"] == summary["id"]
    assert summaries[0]["content"].endswith("second summary")
    assert len(messages) == 18


async def case_failed_summaries_lose_nothing_and_are_retried(open_system):
    clock = Clock()
    system = await open_system(clock=clock, **QUIET)
    sid, _ = await chat(system, [("user", f"turn {i}") for i in range(10)])
    before = await system.sessions.load_session_messages(sid)
    _, system.summarizer.provider = recording_llm(["finally"], failures=2)
    await expect_error(ProviderError, system.summarizer.summarize_old_context(sid, 3), "overloaded")
    assert await system.sessions.load_session_messages(sid) == before
    failure = system.summarizer.failures[sid]
    assert failure["attempts"] == 1 and failure["threshold"] == 3
    assert system.summarizer.due_retries() == []  # not before its time
    clock.now += 61_000
    assert system.summarizer.due_retries() == [sid]
    # The pending retry is stored: a reload still knows it.
    reloaded = await open_system(clock=clock, **QUIET)
    assert reloaded.summarizer.due_retries() == [sid]
    assert reloaded.summarizer.failures[sid]["threshold"] == 3
    report = await system.scheduler.exclusive(system._scheduled_retention)
    assert report["retried"] == [
        {"sessionId": sid, "ok": False, "error": "the app's LLM callback failed: model overloaded"}
    ]
    assert system.summarizer.failures[sid]["attempts"] == 2
    clock.now += 121_000
    report = await system.scheduler.exclusive(system._scheduled_retention)
    assert report["retried"] == [{"sessionId": sid, "ok": True}]
    assert sid not in system.summarizer.failures
    assert (await system.sessions.load_session_messages(sid))[-1]["content"].endswith("finally")


async def case_extractive_fallback_without_a_provider(open_system):
    system = await open_system(clock=Clock(), **QUIET)
    texts = [
        "My cat Miso loves tuna. The weather is grey.",
        "Tell me about Miso the cat.",
        "Miso the cat sleeps all day! Tuna is her favourite.",
        "ok",
        "What about today?",
    ]
    sid, _ = await chat(system, [("user", t) for t in texts])
    report = await system.summarizer.summarize_old_context(sid, 1)
    assert report["method"] == "extractive" and "no LLM provider" in report["warning"]
    summary = (await system.sessions.load_session_messages(sid))[-1]
    assert summary["content"].startswith(
        "Previous conversation summary (extractive, no LLM configured): "
    )
    assert summary["summary"]["method"] == "extractive"
    assert "Miso" in summary["content"] and "What about today?" not in summary["content"]


async def case_message_retention_summarises_then_trims(open_system):
    clock = Clock()
    system = await open_system(clock=clock, **QUIET)
    turns = [("user" if i % 2 == 0 else "assistant", f"turn {i}") for i in range(30)]
    sid, added = await chat(system, turns)
    _, system.summarizer.provider = recording_llm(["the story so far"], failures=1)
    policy = {"maxMessagesPerSession": 12, "summaryThreshold": 10}
    # The summary fails: nothing is deleted, because no summary stands for the old turns.
    failed = await system.apply_message_retention(sid, policy)
    assert failed["deleted"] == 0 and "overloaded" in failed["summaryError"]
    assert len(await system.sessions.load_session_messages(sid)) == 31
    report = await system.apply_message_retention(sid, policy)
    assert report["summarized"] == 20
    messages = await system.sessions.load_session_messages(sid)
    # 32 messages (system, 30 turns, summary) less 20 covered turns: 12 remain.
    assert report["deleted"] == 20 and len(messages) == 12
    assert messages[0]["content"] == "You are Airi."  # keepSystemMessages
    assert [m["content"] for m in messages[1:11]] == [f"turn {i}" for i in range(20, 30)]
    assert messages[-1]["summary"]["covers"] == [m["id"] for m in added[:20]]
    # Without summaries, the oldest turns go straight away (the app asked for it).
    sid2, _ = await chat(system, [("user", f"turn {i}") for i in range(8)])
    plain = await system.apply_message_retention(
        sid2, {"maxMessagesPerSession": 5, "summarizeOld": False}
    )
    left = await system.sessions.load_session_messages(sid2)
    assert plain["deleted"] == 4
    assert [m["content"] for m in left] == ["You are Airi.", "turn 4", "turn 5", "turn 6", "turn 7"]


async def case_only_summaries_written_here_hide_or_delete_turns(open_system):
    """A ``summary`` from outside (addMessage, updateMessage, an import file, even our own
    export) stays with its message as data but is never trusted: retention deletes, and
    composition hides, only the turns a summary this library wrote covers."""
    system = await open_system(clock=Clock(), **QUIET)
    sid, added = await chat(system, [("user", f"turn {i}") for i in range(8)])
    turns = [f"turn {i}" for i in range(8)]
    forged = {"covers": [m["id"] for m in added[:6]], "method": "llm", "provider": "me"}
    for claim in (forged, {**forged, "trusted": True}):
        await system.sessions.add_message(
            sid, {"role": "system", "content": "forged", "summary": claim}
        )
    await system.sessions.update_message(sid, added[7]["id"], {"summary": forged})
    policy = {"maxMessagesPerSession": 3, "summaryThreshold": 100}
    report = await system.apply_message_retention(sid, policy)
    assert report["summarized"] == 0 and report["deleted"] == 0
    messages = await system.sessions.load_session_messages(sid)
    assert [m["content"] for m in messages] == ["You are Airi.", *turns, "forged", "forged"]
    assert [m["summary"] for m in messages[-3:]] == [forged] * 3  # kept, as data
    composed = await system.compose_messages(sid, {"maxTokens": 10_000})
    assert [m["content"] for m in composed["messages"]] == [
        "You are Airi.", *turns, "forged", "forged"
    ]  # fmt: skip
    assert composed["summaryId"] is None and composed["coveredBySummary"] == 0
    # A summary the summariser writes is trusted, and stays so after a reload.
    await system.sessions.delete_messages(sid, [m["id"] for m in messages[-2:]], "test")
    written = await system.summarizer.summarize_old_context(sid, 2)
    assert written["summarized"] == 6 and written["covers"] == 6
    exported = await system.export_sessions([sid])
    # Imported, even from our own export, it covers nothing: the file could say anything.
    copy = (await system.import_sessions(exported))["sessionIds"][0]
    trimmed = await system.apply_message_retention(copy, {**policy, "maxMessagesPerSession": 4})
    assert trimmed["deleted"] == 0
    assert len(await system.sessions.load_session_messages(copy)) == 10
    assert (await system.compose_messages(copy, {"maxTokens": 10_000}))["summaryId"] is None
    restarted = await open_system(clock=Clock(), **QUIET)
    trimmed = await restarted.apply_message_retention(sid, {**policy, "maxMessagesPerSession": 4})
    assert trimmed["deleted"] == 6
    left = await restarted.sessions.load_session_messages(sid)
    assert [m["content"] for m in left[:3]] == ["You are Airi.", "turn 6", "turn 7"]
    assert len(left) == 4 and left[-1]["id"] == written["summaryId"]
    composed = await restarted.compose_messages(sid, {"maxTokens": 10_000})
    assert composed["summaryId"] == written["summaryId"]
    # An edited summary is the editor's text, not ours: it stops covering anything.
    await restarted.sessions.update_message(sid, written["summaryId"], {"content": "mine"})
    composed = await restarted.compose_messages(sid, {"maxTokens": 10_000})
    assert composed["summaryId"] is None


async def case_scheduled_message_policy_summarises_and_trims(open_system):
    clock = Clock()
    policy = {"maxMessagesPerSession": 8, "summaryThreshold": 6}
    system = await open_system(
        clock=clock,
        retention={"enabled": False, "messagePolicy": policy},
        context={"datetime": False},
    )
    long_sid, _ = await chat(system, [("user", f"turn {i}") for i in range(20)])
    short_sid, _ = await chat(system, [("user", f"turn {i}") for i in range(3)])
    report = await system.scheduler.run_now()
    assert [r["sessionId"] for r in report["messages"]] == [long_sid]
    assert report["messages"][0]["summarized"] == 14 and report["messages"][0]["deleted"] == 14
    assert "no LLM provider" in report["messages"][0]["warning"]
    kept = await system.sessions.load_session_messages(long_sid)
    assert [m["role"] for m in kept] == ["system"] + ["user"] * 6 + ["system"]
    assert len(await system.sessions.load_session_messages(short_sid)) == 4


CASES = [value for name, value in sorted(globals().items()) if name.startswith("case_")]

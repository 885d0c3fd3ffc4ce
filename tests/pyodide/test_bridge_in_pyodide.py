"""The worker's way into Python (``BrowserApi.start``) inside Pyodide in Chromium, over a
real system on IndexedDB and DuckDB-WASM: a call begins before ``start`` returns, and
every call settles its caller's promise exactly once."""

from pytest_pyodide import run_in_pyodide


@run_in_pyodide(packages=["airi-memory"])
async def answers_through_start(selenium) -> dict:
    import asyncio
    import json

    from js import airiHost

    from airi_memory.browser.host import BrowserApi, open_browser_system

    await airiHost.idb.open("keyval-store", "keyval").clear("")
    system = await open_browser_system(airiHost, {"userId": "bridge"}, local_model=False)
    api = BrowserApi(system)
    seen: dict = {}

    def call(label: str, method: str, args: list) -> None:
        seen[label] = []
        api.start(
            method,
            args,
            lambda reply: seen[label].append(("resolve", reply)),
            lambda name, message: seen[label].append(("reject", name, message)),
        )

    try:
        # Nothing to wait for: answered before start returned, not at a later turn.
        call("ping", "ping", [])
        at_once = list(seen["ping"])
        # A write waits on IndexedDB: begun now (the write is in the queue), answered later.
        call("created", "sessions.createSession", [{"title": "over the bridge"}])
        before = list(seen["created"])
        call("unknown", "no.suchMethod", [])
        for _ in range(200):
            if seen["created"]:
                break
            await asyncio.sleep(0.01)

        # An answer the caller's own function refuses still settles the promise, once.
        def refuses(reply: str) -> None:
            raise ValueError("the page is gone")

        refused: list = []
        api.start("ping", [], refuses, lambda name, message: refused.append((name, message)))
        created = json.loads(seen["created"][0][1]) if seen["created"] else None
        listed = await system.dispatch("sessions.listSessions", [])
    finally:
        await system.scheduler.stop()
        await system.embeddings.stop()
        await system.close()
    return {
        "at_once": at_once,
        "before": before,
        "created": created,
        "created_calls": len(seen["created"]),
        "unknown": [(kind, json.loads(reply)) for kind, reply in seen["unknown"]],
        "refused": refused,
        "listed_titles": [s["title"] for s in listed["value"]],
    }


def test_a_call_begins_at_once_and_settles_once(browser_host):
    result = answers_through_start(browser_host)
    assert result["at_once"] == [("resolve", '{"ok": true, "value": "pong"}')]
    assert result["before"] == []
    assert result["created_calls"] == 1
    assert result["created"]["ok"] is True
    assert result["created"]["value"]["sessionId"]
    assert result["listed_titles"] == ["over the bridge"]
    [(kind, reply)] = result["unknown"]
    assert kind == "resolve"
    assert reply["ok"] is False
    assert reply["error"]["name"] == "UnknownMethodError"
    assert result["refused"] == [("ValueError", "the page is gone")]

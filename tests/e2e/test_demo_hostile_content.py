"""The demo page shows stored and typed content as text: markup and script in a session
title, tags, messages, search results, the prompt preview, the context snapshot and the
storage panel never run and never become elements (a page that rendered them as HTML
would hand whoever wrote a message, an import file or a synced session the page)."""

import json
from pathlib import Path

# The demo holding hostile content, for a person to look at (build/out is git-ignored).
SCREENSHOT = Path(__file__).resolve().parents[2] / "build" / "out" / "demo-hostile.png"

TITLE = '</title><b>bold</b><img src=x onerror="window.__pwned=6">'
TAGS = ['<img src=x onerror="window.__pwned=7">', "<script>window.__pwned=8</script>"]
# Each holds "pineapple", so one keyword search finds them all.
MESSAGES = [
    '<img src=x onerror="window.__pwned=1"> pineapple',
    "<script>window.__pwned=2</script> pineapple",
    '"><svg onload=window.__pwned=3> pineapple',
    '<a href="javascript:window.__pwned=4">pineapple</a>',
    "javascript:window.__pwned=5 pineapple",
]
MODULE_STATE = {"note": MESSAGES[0], "channel": MESSAGES[2]}
KV_KEY = "local:demo/<svg onload=window.__pwned=9>"
KV_KEY_LISTED = "local:demo:<svg onload=window.__pwned=9>"  # unstorage's "/" -> ":"
KV_VALUE = '<img src=x onerror="window.__pwned=10">'

# What the demo's own markup puts in each container, and nothing else.
OWN_ELEMENTS = {
    "#session-list": ["button", "li"],
    "#messages": ["li", "span"],
    "#search-results": ["li", "small"],
    "#prompt-parts": ["td", "tr"],
    "#mounts": ["h3", "li", "ul"],
}
TEXT_ONLY = [
    "#active-title",
    "#session-output",
    "#search-output",
    "#prompt-output",
    "#context-snapshot",
    "#retention-report",
    "#kv-output",
]


def test_demo_shows_markup_and_script_as_text(web):
    page = web.page
    page.set_default_timeout(
        120_000
    )  # the demo loads its embedding model too: slow on a busy machine
    page.goto(f"{web.base_url}/demo/")
    page.wait_for_selector("#status[data-state=ready]", timeout=60_000)
    # The search panel mounts last; its label is written once its listeners are attached.
    page.wait_for_function("document.getElementById('embedding-label').textContent !== ''")

    page.fill("#new-session-title", TITLE)
    page.click("#new-session")
    page.wait_for_function(
        "(title) => document.querySelector('#session-list li.active button')?.textContent === title",
        arg=TITLE,
    )
    stored_tags = web.evaluate(
        """async (tags) => {
            const { sessionId } = document.querySelector('#session-list li.active button').dataset;
            await memory.sessions.tagSession(sessionId, tags);
            return (await memory.sessions.getSession(sessionId)).tags;
        }""",
        TAGS,
    )
    assert stored_tags == TAGS

    for sent, text in enumerate(MESSAGES, start=1):
        page.fill("#message-input", text)
        page.click("#send-message")
        page.wait_for_function(
            "(count) => document.querySelectorAll('#messages li').length === count",
            arg=sent + 1,  # the system prompt comes first
        )
    page.wait_for_function(
        "document.querySelectorAll('#prompt-parts tr[data-kind=history]').length === 5"
    )

    page.fill("#module-name", "hostile")
    page.fill("#module-state", json.dumps(MODULE_STATE))
    page.click("#set-module")
    page.wait_for_function(
        "document.getElementById('context-snapshot').textContent.includes('module:hostile')"
    )
    # Every message is still a history row here; summarising below folds the oldest away.
    prompt_parts_text = page.inner_text("#prompt-parts")
    snapshot_text = page.inner_text("#context-snapshot")

    page.fill("#search-query", "pineapple")
    page.select_option("#search-strategy", "keyword")
    page.click("#search-button")
    page.wait_for_function("document.querySelectorAll('#search-results li').length === 5")

    page.fill("#summary-threshold", "2")
    page.click("#summarize-now")
    page.wait_for_selector("#prompt-parts tr[data-kind=summary]")

    page.fill("#kv-key", KV_KEY)
    page.fill("#kv-value", KV_VALUE)
    page.click("#kv-write")
    page.wait_for_function(
        "(key) => document.getElementById('kv-output').textContent === `written ${key}`",
        arg=KV_KEY,
    )
    page.click("#kv-read")
    page.wait_for_function(
        "(value) => document.getElementById('kv-output').textContent === value", arg=KV_VALUE
    )
    page.wait_for_function(
        "(key) => document.getElementById('mounts').textContent.includes(key)", arg=KV_KEY_LISTED
    )
    page.wait_for_timeout(500)  # an injected <img src=x> would have failed to load by now

    page_state = web.evaluate(
        """({ ownElements, textOnly }) => {
            const inside = (selector) => [...new Set(
                [...document.querySelectorAll(`${selector} *`)].map((element) => element.localName))].sort();
            const text = (selector) => document.querySelector(selector).innerText;
            return {
                pwned: typeof window.__pwned,
                documentTitle: document.title,
                titleElements: document.querySelectorAll('title').length,
                scripts: document.scripts.length,
                injected: document.querySelectorAll(
                    'img, svg, iframe, object, embed, a, b, mark, script:not([src]), [onerror], [onload]').length,
                inside: Object.fromEntries(Object.keys(ownElements).map((selector) => [selector, inside(selector)])),
                childElements: Object.fromEntries(textOnly.map((selector) =>
                    [selector, document.querySelector(selector).childElementCount])),
                sessionButtons: [...document.querySelectorAll('#session-list li button')].map((b) => b.textContent),
                activeTitle: text('#active-title'),
                messagesText: text('#messages'),
                resultTexts: [...document.querySelectorAll('#search-results li')].map((li) => li.firstChild.nodeValue),
                resultsText: text('#search-results'),
                promptPartsText: text('#prompt-parts'),
                mountsText: text('#mounts'),
                kvOutput: text('#kv-output'),
            };
        }""",
        {"ownElements": OWN_ELEMENTS, "textOnly": TEXT_ONLY},
    )
    page.screenshot(path=str(SCREENSHOT), full_page=True)

    assert page_state["pwned"] == "undefined"
    assert page_state["documentTitle"] == "airi-memory demo"
    assert page_state["titleElements"] == 1
    assert page_state["scripts"] == 1  # the demo's own <script type=module src=demo.mjs>
    assert page_state["injected"] == 0
    assert page_state["inside"] == OWN_ELEMENTS
    assert page_state["childElements"] == dict.fromkeys(TEXT_ONLY, 0)
    assert not [url for url in web.requests if url.split("?")[0].endswith("/x")]

    assert page_state["sessionButtons"] == [TITLE]
    assert page_state["activeTitle"] == TITLE
    for text in MESSAGES:
        assert text in page_state["messagesText"]
        assert text in prompt_parts_text
        assert text in page_state["resultsText"]
    assert sorted(page_state["resultTexts"]) == sorted(MESSAGES)
    assert page_state["resultsText"].count(f"terms: pineappl ({TITLE}, user)") == 5
    for value in MODULE_STATE.values():
        assert json.dumps(value) in snapshot_text  # the snapshot is JSON, quotes escaped
    assert MESSAGES[3] in page_state["promptPartsText"]  # still a history row after summarising
    assert KV_KEY_LISTED in page_state["mountsText"]
    assert page_state["kvOutput"] == KV_VALUE


def test_demo_shows_each_turn_once_when_a_message_is_sent_while_a_session_opens(web):
    """The message list drawn by the new session's render and by the send's render at once
    held a turn twice (both cleared the list, then both added theirs)."""
    page = web.page
    page.goto(f"{web.base_url}/demo/")
    page.wait_for_selector("#status[data-state=ready]", timeout=60_000)
    for round_number in range(5):
        page.fill("#new-session-title", f"Race {round_number}")
        page.click("#new-session")  # no wait: the send below races the session's render
        page.fill("#message-input", f"turn {round_number}")
        page.click("#send-message")
        page.wait_for_function(
            "(text) => [...document.querySelectorAll('#messages li')].some((li) => li.textContent.endsWith(text))",
            arg=f"turn {round_number}",
        )
        page.wait_for_timeout(300)  # a late render, if any, has drawn by now
        rows = page.evaluate(
            "[...document.querySelectorAll('#messages li')].map((li) => li.textContent)"
        )
        assert rows == ["systemYou are AIRI, a friendly companion.", f"userturn {round_number}"], (
            rows
        )

"""Fault suite, fuzzed input in Chromium (issue 9): the CPython fuzz suite's families,
cases and checks (tests/faults/test_fuzzed_input.py), sent through the JS facade of the
built dist, as an app calls it. What an app's values become on the way (the facade's
checks, the structured clone to the worker, Pyodide's conversion, IndexedDB) is under
test too. After a refusal the store must be as it was: every record of IndexedDB
('keyval-store' / 'keyval'), the root (in-memory) mount read through the facade, the
export and the live context.

``make test`` runs a few examples per family; ``AIRI_SOAK=1`` runs 1,000 per family.

How Python values reach the page: as one ASCII JSON text the page decodes (``to_page``,
``DECODE``), not through Playwright's argument serialisation, which drops an own
``__proto__`` key (its page-side parser skips it), cannot send a set, and recurses (the
context family sends values nested 1,500 deep). NaN, ±Infinity and -0 are tagged; lone
surrogates travel as ``\\udXXX`` escapes, so no hop has to carry one raw. Replies come back
the same way.

What no JS value corresponds to, or only approximately, is mapped or filtered so that
the expectation (computed from the case, in Python) stays right: see ``as_in_javascript``
and ``to_page``.
"""

import json
import math
import re
import sys
from collections.abc import Coroutine, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from conftest import RecordedPage
from hypothesis import strategies as st

from contract.common import QUIET
from faults.harness import MAX_SESSIONS_KEPT, SOAK, FuzzHarness
from faults.inputs import (
    Case,
    add_message_cases,
    context_cases,
    import_cases,
    search_cases,
    storage_cases,
)
from faults.test_fuzzed_input import (
    CONTEXT_FOUND,
    IMPORT_FOUND,
    MESSAGE_FOUND,
    SEARCH_FOUND,
    STORAGE_FOUND,
    check_add_message,
    check_context,
    check_import,
    check_search,
    check_storage,
    fuzz,
    open_session,
    seed_messages,
)

# An example costs a few round trips to the worker (two looks at the whole store): a
# handful per family in `make test`, the suite's full 1,000 per family in a soak.
IMPORT_EXAMPLES = 1000 if SOAK else 25
FAMILY_EXAMPLES = 1000 if SOAK else 15
# The system the CPython suite opens (QUIET, user "tester"); no embedding model: CPython
# has none either, and a background indexer would write to IndexedDB between two looks.
BOOT_OPTIONS = {**QUIET, "userId": "tester", "embeddings": {"provider": "none"}}
CALL_MS = 30_000  # a call, or a look at the store, that takes longer has hung
BOOT_MS = 120_000  # Pyodide, the wheel and DuckDB-WASM on a slow two-core machine
# The facade refuses arguments nested deeper than this before the worker sees them, with
# an error naming no field (tests/e2e/faults/test_fault_deep_nesting.py covers it).
FACADE_MAX_DEPTH = int(
    re.search(
        r"const MAX_ARGUMENT_DEPTH = (\d+);",
        (Path(__file__).resolve().parents[3] / "web" / "airi-memory.mjs").read_text(),
    ).group(1)
)
FACADE_DEPTH_HINT = "cannot be sent to the worker"
JS_SAFE = 2**53  # |n| up to this is exactly a JS number

TOOLS = r"""({ callMs, bootMs }) => {
  const settle = (promise, ms) => Promise.race([
    promise.then((value) => ({ ok: true, value }), (error) => ({ ok: false, error: {
      name: String(error?.name ?? 'Error'), message: String(error?.message ?? error),
      ...(error?.detail !== undefined && { detail: String(error.detail) }) } })),
    new Promise((resolve) => setTimeout(() => resolve({ timedOut: ms }), ms)),
  ]);
  // Python's to_page: dicts are {o: [[key, value], ...]} (so '__proto__' stays an own
  // key), {f: text} a number JSON has no form for, {s: [...]} a Set, {b: [...]} bytes.
  const decode = (value) => {
    if (Array.isArray(value)) return value.map(decode);
    if (value === null || typeof value !== 'object') return value;
    if ('o' in value) return Object.fromEntries(value.o.map(([key, item]) => [key, decode(item)]));
    if ('f' in value) return Number(value.f);
    if ('s' in value) return new Set(value.s.map(decode));
    return Uint8Array.from(value.b);
  };
  // The same encoding back, as ASCII: a lone surrogate or any other character is \uXXXX.
  const encode = (value) => {
    if (typeof value === 'number' && (!Number.isFinite(value) || Object.is(value, -0))) {
      return { f: Object.is(value, -0) ? '-0' : String(value) };
    }
    if (value === undefined) return null;
    if (value === null || typeof value !== 'object') return value;
    if (Array.isArray(value)) return value.map(encode);
    if (ArrayBuffer.isView(value)) return { b: Array.from(new Uint8Array(value.buffer, value.byteOffset, value.byteLength)) };
    return { o: Object.entries(value).map(([key, item]) => [key, encode(item)]) };
  };
  const ascii = (value) => JSON.stringify(encode(value)).replace(/[\u007f-\uffff]/g,
    (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
  const request = (open) => new Promise((resolve, reject) => {
    const r = open();
    r.onsuccess = () => resolve(r.result);
    r.onerror = () => reject(r.error);
  });
  // Every record of the library's database, values as text (bytes as length and checksum).
  const records = async () => {
    const db = await request(() => indexedDB.open('keyval-store'));
    try {
      const store = db.transaction('keyval').objectStore('keyval');
      const [keys, values] = await Promise.all([request(() => store.getAllKeys()), request(() => store.getAll())]);
      const text = (value) => {
        if (typeof value === 'string') return value;
        if (value instanceof ArrayBuffer || ArrayBuffer.isView(value)) {
          const bytes = value instanceof ArrayBuffer ? new Uint8Array(value)
            : new Uint8Array(value.buffer, value.byteOffset, value.byteLength);
          return `bytes ${bytes.length} ${bytes.reduce((sum, b) => (sum * 31 + b) >>> 0, 7)}`;
        }
        return `${Object.prototype.toString.call(value)} ${JSON.stringify(value)}`;
      };
      return keys.map((key, i) => [key, text(values[i])]);
    } finally {
      db.close();
    }
  };
  const boot = async (options) => {
    const { createMemorySystem } = await import('/airi-memory.mjs');
    window.memory = await createMemorySystem(options);
  };
  window.fuzzTools = {
    boot: async (options) => ascii(await settle(boot(options), bootMs)),
    call: async (method, argsText) => {
      const path = method.split('.');
      const name = path.pop();
      const owner = path.reduce((object, part) => object[part], window.memory);
      const args = decode(JSON.parse(argsText));
      return ascii(await settle((async () => owner[name](...args))(), callMs));
    },
    state: async () => ascii(await settle((async () => {
      const exported = await memory.exportSessions();
      delete exported.exportedAt;
      const mounts = memory.mounts.filter(Boolean).map((mount) => `${mount}:`);
      const rootKeys = (await memory.storage.getKeys('')).filter((key) => !mounts.some((m) => key.startsWith(m)));
      const root = await Promise.all(rootKeys.map(async (key) => [key, await memory.storage.getItemRaw(key)]));
      return { raw: { indexedDB: await records(), root: Object.fromEntries(root) }, export: exported,
               context: await memory.context.getContexts() };
    })(), callMs)),
    sessionCount: async () => ascii(await settle((async () => (await memory.exportSessions()).sessions.length)(), callMs)),
    // A new, empty system: the old one closed and everything it stored erased, its
    // second copy in OPFS included (else the next boot would restore from it).
    fresh: async (options) => ascii(await settle((async () => {
      await memory.close();
      const { eraseMemorySystem } = await import('/airi-memory.mjs');
      await eraseMemorySystem();
      await boot(options);
    })(), bootMs)),
    now: () => Date.now(),
  };
}"""


class NotInJavaScript(TypeError):
    """A Python value no JS value the facade can send corresponds to."""


def as_in_javascript(value: Any) -> Any:
    """``value`` as a JS app holds it, where that differs in what the checks expect.

    - An integer beyond 2**53 is the double JS reads it as (2**53 + 1 becomes 2**53,
      10**400 Infinity). Other numbers need no mapping: Pyodide makes a safe integer an
      int and any other number a float (1.0 arrives as 1, -0 as 0), and the checks
      compare numbers by value.
    - A high surrogate followed by a low one is one character in JS (a JS string is
      UTF-16 code units), two in a Python string: it is joined, as the page will see it.
      Lone surrogates stay lone: JS strings hold them as Python strings do.
    """
    if isinstance(value, str):
        return value.encode("utf-16-le", "surrogatepass").decode("utf-16-le", "surrogatepass")
    if isinstance(value, int) and not isinstance(value, bool) and abs(value) > JS_SAFE:
        try:
            return float(value)
        except OverflowError:
            return math.inf if value > 0 else -math.inf
    if isinstance(value, list | tuple):
        return [as_in_javascript(item) for item in value]
    if isinstance(value, dict):
        return {as_in_javascript(key): as_in_javascript(item) for key, item in value.items()}
    return value


def to_page(value: Any) -> Any:
    """``value`` in the encoding the page's ``decode`` reads (a JSON value). Raises
    NotInJavaScript for what has no JS counterpart the facade can send: ``object()`` or a
    complex number (a function or a Symbol in its place makes postMessage throw
    DataCloneError, the browser's own error, outside the library's contract), and a dict
    with a key that is not a string (a JS object's keys are strings: ``{1: x}`` would be
    ``{"1": x}``, another input). A set becomes a Set and bytes a Uint8Array, what an app
    would pass; Pyodide makes them a set and a memoryview, refused like CPython's."""
    if value is None or isinstance(value, bool | int | str):
        return value
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return {"f": "NaN" if math.isnan(value) else "Infinity" if value > 0 else "-Infinity"}
    if isinstance(value, list | tuple):
        return [to_page(item) for item in value]
    if isinstance(value, dict):
        if not all(isinstance(key, str) for key in value):
            raise NotInJavaScript(f"a dict key that is not a string in {value!r:.80}")
        return {"o": [[key, to_page(item)] for key, item in value.items()]}
    if isinstance(value, set | frozenset):
        return {"s": [to_page(item) for item in value]}
    if isinstance(value, bytes):
        return {"b": list(value)}
    raise NotInJavaScript(f"no JS value for {type(value).__name__}")


def from_page(value: Any) -> Any:
    """A reply the page's ``encode`` wrote, as Python values."""
    if isinstance(value, list):
        return [from_page(item) for item in value]
    if not isinstance(value, dict):
        return value
    if "o" in value:
        return {key: from_page(item) for key, item in value["o"]}
    if "f" in value:
        return float(value["f"])
    return bytes(value["b"])


@contextmanager
def deep_recursion() -> Iterator[None]:
    """Room for values nested 1,500 levels (the context family's deepest): Python's JSON
    encoder, ``to_page`` and ``as_in_javascript`` recurse once per level, past the
    default limit of 1,000."""
    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(max(limit, 10_000))
    try:
        yield
    finally:
        sys.setrecursionlimit(limit)


def page_text(args: list[Any]) -> str:
    """The arguments as the ASCII JSON text the page decodes."""
    with deep_recursion():
        return json.dumps(to_page(args), ensure_ascii=True, allow_nan=False)


def nesting(args: list[Any]) -> int:
    """How deep the facade finds ``args`` nested (its own count: the list of arguments is
    level 0, a set counts as a level but is not looked into), without recursion."""
    deepest, pending = 0, [(args, 0)]
    while pending:
        item, depth = pending.pop()
        if isinstance(item, list | tuple | dict | set | frozenset):
            deepest = max(deepest, depth)
            children = item.values() if isinstance(item, dict) else item
            if not isinstance(item, set | frozenset):
                pending.extend((child, depth + 1) for child in children)
    return deepest


def sendable(case: Case) -> bool:
    try:
        page_text(case.args)
    except NotInJavaScript:
        return False
    return True


def in_browser(case: Case) -> Case:
    """``case`` as a JS app makes the call: numbers as JS holds them (in the arguments and
    in what the import check compares against), and, when the facade will refuse the
    arguments as too deep, its wording among the hints."""
    hints = case.hints
    if nesting(case.args) > FACADE_MAX_DEPTH:
        hints = (*hints, FACADE_DEPTH_HINT)
    extra = dict(case.extra)
    with deep_recursion():
        if "sessions" in extra:
            extra["sessions"] = as_in_javascript(extra["sessions"])
        return Case(as_in_javascript(case.args), case.expect, hints, case.note, extra)


def browser_cases(cases: st.SearchStrategy[Case]) -> st.SearchStrategy[Case]:
    return cases.filter(sendable).map(in_browser)


def browser_found(found: tuple[Case, ...]) -> tuple[Case, ...]:
    return tuple(in_browser(case) for case in found if sendable(case))


class BrowserHarness(FuzzHarness):
    """The checks' harness over the facade in a page: each call is one ``page.evaluate``
    that settles within 30 s (a hang fails the test instead of stopping it)."""

    def __init__(self, web: RecordedPage) -> None:
        self.web = web
        web.open_harness()
        web.evaluate(TOOLS, {"callMs": CALL_MS, "bootMs": BOOT_MS})
        self._value("boot", BOOT_OPTIONS)

    def _reply(self, tool: str, *args: Any) -> Any:
        """A tool's settled reply; a call that never settled fails here."""
        reply = from_page(
            json.loads(self.web.evaluate(f"(args) => fuzzTools.{tool}(...args)", args))
        )
        assert "timedOut" not in reply, (
            f"{tool}{args!r:.300} did not settle in {reply['timedOut']} ms"
        )
        return reply

    def _value(self, tool: str, *args: Any) -> Any:
        reply = self._reply(tool, *args)
        assert reply["ok"], f"{tool} failed: {reply['error']}"
        return reply["value"]

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Drives a check to its end without an event loop: this harness's methods never
        suspend, and Playwright's sync API refuses to run inside a running asyncio loop."""
        try:
            coroutine.send(None)
        except StopIteration as done:
            return done.value
        coroutine.close()
        raise AssertionError("a check awaited something other than the harness")

    async def call(self, method: str, *args: Any) -> dict[str, Any]:
        return self._reply("call", method, page_text(list(args)))

    async def state(self) -> dict[str, Any]:
        return self._value("state")

    async def fresh_if_full(self) -> None:
        if self._value("sessionCount") > MAX_SESSIONS_KEPT:
            self._value("fresh", BOOT_OPTIONS)

    async def now(self) -> int:
        return self.web.evaluate("() => fuzzTools.now()")

    def close(self) -> None:
        """Its outcome is not checked: after a failed check, a close that fails too must
        not hide that failure (the fixture closes the page in any case)."""
        self._reply("call", "close", "[]")


def test_fuzzed_import_files_in_the_browser(web):
    fuzz(
        BrowserHarness(web),
        browser_cases(import_cases()),
        IMPORT_EXAMPLES,
        check_import,
        found=browser_found(IMPORT_FOUND),
    )


def test_fuzzed_storage_calls_in_the_browser(web):
    fuzz(
        BrowserHarness(web),
        browser_cases(storage_cases()),
        FAMILY_EXAMPLES,
        check_storage,
        found=browser_found(STORAGE_FOUND),
    )


def test_fuzzed_search_queries_in_the_browser(web):
    fuzz(
        BrowserHarness(web),
        browser_cases(search_cases()),
        FAMILY_EXAMPLES,
        check_search,
        seed_messages,
        browser_found(SEARCH_FOUND),
    )


def test_fuzzed_context_messages_in_the_browser(web):
    fuzz(
        BrowserHarness(web),
        browser_cases(context_cases()),
        FAMILY_EXAMPLES,
        check_context,
        found=browser_found(CONTEXT_FOUND),
    )


def test_fuzzed_messages_in_the_browser(web):
    fuzz(
        BrowserHarness(web),
        browser_cases(add_message_cases()),
        FAMILY_EXAMPLES,
        check_add_message,
        open_session,
        browser_found(MESSAGE_FOUND),
    )

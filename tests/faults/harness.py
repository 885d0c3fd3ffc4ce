"""What every fuzzed-input test shares: how many examples, one open system per test, a
snapshot of everything stored, and what a proper refusal looks like.

``make test`` runs a fast subset; ``make soak`` (``AIRI_SOAK=1``) runs the numbers the
fault suite promises: 1,000 import files, and 1,000 each of storage calls, search
queries, context messages and added messages.

The checks drive a ``FuzzHarness``: ``Harness`` here (``dispatch`` on CPython) or the
browser's (the JS facade in Chromium, tests/e2e/faults/test_fault_fuzz_in_browser.py).
"""

import asyncio
import copy
import math
import os
import re
from abc import ABC, abstractmethod
from collections.abc import Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from hypothesis import HealthCheck, settings

from airi_memory import errors
from airi_memory.api import MemorySystem
from contract.common import QUIET
from native_systems import system_factory

SOAK = os.environ.get("AIRI_SOAK") == "1"
# Examples per test: (fast, soak). In a soak, each family reaches 1,000 inputs.
IMPORT_EXAMPLES = 1000 if SOAK else 80
FAMILY_EXAMPLES = 1000 if SOAK else 50

settings.register_profile(
    "airi-fuzz",
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
    print_blob=True,
)
FUZZ = settings.get_profile("airi-fuzz")

# A store holding more sessions than this is replaced by a fresh one before the next
# example: each example exports everything twice, and the export grows with every import.
MAX_SESSIONS_KEPT = 40


def library_error_names() -> set[str]:
    """Names of the errors the library raises on purpose; anything else escaped a check."""
    found, pending = set(), [errors.AiriMemoryError]
    while pending:
        kind = pending.pop()
        found.add(kind.__name__)
        pending.extend(kind.__subclasses__())
    return found


LIBRARY_ERRORS = library_error_names()


class FuzzHarness(ABC):
    """One memory system, reused across a test's examples, as the checks see it: calls by
    ``dispatch`` name answered ``{ok, value}`` or ``{ok: false, error: {name, message}}``,
    and everything stored as one comparable value."""

    session_id = ""  # the session a family works in, when it needs one

    @abstractmethod
    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        """Run a check (a coroutine over this harness) to its end; return its result."""

    @abstractmethod
    async def call(self, method: str, *args: Any) -> dict[str, Any]:
        """What a JS app gets back: one reply, ``ok`` with a value or with one error."""

    async def value(self, method: str, *args: Any) -> Any:
        reply = await self.call(method, *args)
        assert reply["ok"], f"{method} failed: {reply['error']}"
        return reply["value"]

    @abstractmethod
    async def state(self) -> dict[str, Any]:
        """Everything stored: ``raw`` (beneath the public API), ``export`` (without its
        time) and ``context`` (the live entries)."""

    @abstractmethod
    async def fresh_if_full(self) -> None:
        """A new, empty system when this one holds more sessions than is cheap to export."""

    @abstractmethod
    async def now(self) -> int:
        """The system's clock, in epoch milliseconds (what expiry is measured against)."""

    @abstractmethod
    def close(self) -> None: ...


class Harness(FuzzHarness):
    """One memory system (memory drivers, native DuckDB) on its own event loop, reused
    across a test's examples: opening one per example would mostly time DuckDB set-up."""

    def __init__(self, tmp_path: Any) -> None:
        self.tmp_path = tmp_path
        self.loop = asyncio.new_event_loop()
        # The loop runs in a thread of its own: in a pytest run that also drove a browser,
        # Playwright's sync API holds the main thread's running loop.
        self.thread = ThreadPoolExecutor(max_workers=1, thread_name_prefix="fuzz-loop")
        self.system = self.run(self._open())

    async def _open(self) -> MemorySystem:
        return await system_factory("memory", self.tmp_path)(**QUIET)

    def run(self, coroutine: Coroutine[Any, Any, Any]) -> Any:
        return self.thread.submit(self.loop.run_until_complete, coroutine).result()

    async def call(self, method: str, *args: Any) -> dict[str, Any]:
        return await self.system.dispatch(method, list(args))

    async def fresh_if_full(self) -> None:
        if len(self.system.sessions.session_ids()) > MAX_SESSIONS_KEPT:
            await self.system.close()
            self.system = await self._open()

    async def state(self) -> dict[str, Any]:
        """Everything stored, to compare before and after a refused call: each mount's raw
        keys and values beneath the public API, the export, and the live context."""
        raw = {}
        for mount in self.system.storage.get_mounts():
            driver = mount.driver
            raw[mount.base] = {
                key: await driver.get_item_raw(key) for key in sorted(await driver.get_keys(""))
            }
        export = await self.value("exportSessions")
        del export["exportedAt"]
        return copy.deepcopy(
            {"raw": raw, "export": export, "context": await self.value("context.getContexts")}
        )

    async def now(self) -> int:
        return self.system.sessions.clock()

    def close(self) -> None:
        self.run(self.system.close())
        self.thread.submit(self.loop.close).result()
        self.thread.shutdown()


def assert_refused(reply: dict[str, Any], hints: tuple[str, ...]) -> None:
    """One error, of the library's own kinds (a bare TypeError or KeyError is a check that
    is missing), whose message names the offending field or key (one of ``hints``)."""
    assert reply["ok"] is False, f"accepted, but should have been refused: {reply}"
    error = reply["error"]
    assert error["name"] in LIBRARY_ERRORS, (
        f"unhandled {error['name']}: {error['message']}\n{error.get('detail', '')}"
    )
    assert "detail" not in error, error
    if hints:
        message = error["message"]
        assert any(hint in message or unescaped(hint) in unescaped(message) for hint in hints), (
            f"the error does not name any of {hints}: {error['message']!r}"
        )


_ESCAPE = re.compile(r"\\(?:U([0-9a-fA-F]{8})|u([0-9a-fA-F]{4})|x([0-9a-fA-F]{2}))")


def unescaped(text: str) -> str:
    """``text`` with repr's ``\\x``, ``\\u`` and ``\\U`` escapes written as their characters:
    whether repr escapes a character depends on the Unicode version of the Python that
    made the message (CPython here, a newer one in Pyodide: U+13440 is unassigned in one
    and printable in the other), so a hint and a message are compared this way."""

    def character(found: re.Match[str]) -> str:
        code = int(next(group for group in found.groups() if group), 16)
        return chr(code) if code <= 0x10FFFF else found[0]  # a value's own backslash text

    return _ESCAPE.sub(character, text)


def key_hints(*keys: object) -> tuple[str, ...]:
    """How an error names a key: its repr (cut to 40 characters for long keys), up to its
    first character beyond ASCII. Whether repr escapes that one depends on the Unicode
    version of the Python that made the message (CPython here, a newer one in Pyodide:
    U+31350 is unassigned in one and printable in the other)."""
    hints = []
    for key in keys:
        for shown in (repr(key), repr(key[:40]) if isinstance(key, str) else repr(key)):
            if isinstance(key, str):
                ascii_part = key[: next((i for i, c in enumerate(key) if ord(c) > 0x7E), len(key))]
                shown = shown[: len(repr(ascii_part)) - 1]  # the opening quote and the ASCII
            hints.append(shown[:12])
    return tuple(hints)


def same_json(left: Any, right: Any) -> bool:
    """Equal as JSON values, where NaN equals NaN (unstorage reads ``"NaN"`` back as NaN)."""
    if isinstance(left, float) and isinstance(right, float) and math.isnan(left):
        return math.isnan(right)
    if isinstance(left, dict) and isinstance(right, dict):
        return left.keys() == right.keys() and all(same_json(left[k], right[k]) for k in left)
    if isinstance(left, list | tuple) and isinstance(right, list | tuple):
        return len(left) == len(right) and all(map(same_json, left, right))
    return (left == right and type(left) is type(right)) or _same_number(left, right)


def _same_number(left: Any, right: Any) -> bool:
    numbers = (int, float)
    if isinstance(left, bool) or isinstance(right, bool):
        return False
    if not (isinstance(left, numbers) and isinstance(right, numbers)):
        return False
    # A JavaScript number is a double: an integral float comes back from the page as the
    # int it prints as (5.925766177780713e16 as 59257661777807130), equal as doubles.
    both_ints = isinstance(left, int) and isinstance(right, int)
    return left == right if both_ints else float(left) == float(right)

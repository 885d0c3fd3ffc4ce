"""What every contract shares: a hand-moved clock, an error expectation, quiet options.
Inside Pyodide the runner installs this source as ``contract.common`` before a contract."""

DAY = 24 * 60 * 60 * 1000
START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
# No background work a case did not ask for: no retention runs, no clock-dependent context.
QUIET = {"retention": {"enabled": False}, "context": {"datetime": False}}


class Clock:
    """A clock the test moves by hand (each reading adds 1 ms, so writes stay ordered)."""

    def __init__(self, now=START):
        self.now = now

    def __call__(self):
        self.now += 1
        return self.now


async def expect_error(kind, coroutine, *words):
    """Await ``coroutine``; it must raise ``kind`` with every one of ``words`` in it."""
    try:
        await coroutine
    except kind as error:
        for word in words:
            assert word in str(error), f"{word!r} not in {error}"
        return error
    raise AssertionError(f"expected {kind.__name__}")

"""What every contract shares: a hand-moved clock, an error expectation, quiet options.
Inside Pyodide the runner installs this source as ``contract.common`` before a contract."""

import asyncio

DAY = 24 * 60 * 60 * 1000
START = 1_767_225_600_000  # 2026-01-01T00:00:00Z
# No background work a case did not ask for: no retention runs, no clock-dependent context.
QUIET = {"retention": {"enabled": False}, "context": {"datetime": False}}


class Clock:
    """A clock the test moves by hand (each reading adds 1 ms, so writes stay ordered).

    It is also the system's sleep: a background wait (the retention interval, the
    indexer's settle and retry) ends only when ``advance`` moves the clock past it, never
    by wall-clock time, so a case says exactly when time passes."""

    def __init__(self, now=START):
        self.now = now
        self._sleepers = []  # (wake-up time, future)

    def __call__(self):
        self.now += 1
        return self.now

    async def sleep(self, seconds):
        wake = asyncio.get_running_loop().create_future()
        sleeper = (self.now + round(seconds * 1000), wake)
        self._sleepers.append(sleeper)
        try:
            await wake
        finally:
            if sleeper in self._sleepers:  # cancelled while asleep
                self._sleepers.remove(sleeper)

    @property
    def sleepers(self):
        return len(self._sleepers)

    async def advance(self, ms):
        """Move the clock on by ``ms`` and let every sleeper due by then run."""
        self.now += ms
        due = [s for s in self._sleepers if s[0] <= self.now]
        for sleeper in due:
            self._sleepers.remove(sleeper)
            if not sleeper[1].done():
                sleeper[1].set_result(None)
        await asyncio.sleep(0)


async def eventually(check, what):
    """Wait until ``check()`` holds. The 10-second bound only ends a hung case: nothing
    here depends on how long anything takes."""
    for _ in range(1000):
        if check():
            return
        await asyncio.sleep(0.01)
    raise AssertionError(f"never happened: {what}")


async def expect_error(kind, coroutine, *words):
    """Await ``coroutine``; it must raise ``kind`` with every one of ``words`` in it."""
    try:
        await coroutine
    except kind as error:
        for word in words:
            assert word in str(error), f"{word!r} not in {error}"
        return error
    raise AssertionError(f"expected {kind.__name__}")

"""Runs retention at start-up and then every ``intervalMs`` (an hour by default), never two
runs at once: a tick that finds a run in progress is skipped, and a run the app asks
for waits for the current one to end. ``stop()`` ends the loop."""

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from typing import Any

Job = Callable[[], Awaitable[dict[str, Any]]]


class RetentionScheduler:
    def __init__(
        self,
        job: Job,
        interval_ms: int,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        """``sleep`` waits between runs: the system's time, so a test moves it by hand."""
        self.job = job
        self.interval_ms = interval_ms
        self.sleep = sleep
        self.last_report: dict[str, Any] | None = None
        self.last_error: str | None = None
        self.runs = 0
        self.skipped = 0
        self._lock = asyncio.Lock()
        self._task: asyncio.Task[None] | None = None

    @property
    def running(self) -> bool:
        return self._task is not None and not self._task.done()

    def start(self, run_now: bool = True) -> None:
        if not self.running:
            self._task = asyncio.get_running_loop().create_task(self._loop(run_now))

    async def stop(self) -> dict[str, Any]:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None
        return self.status()

    async def _loop(self, run_now: bool) -> None:
        if run_now:
            await self._tick()
        while True:
            await self.sleep(self.interval_ms / 1000)
            await self._tick()

    async def _tick(self) -> None:
        if self._lock.locked():
            self.skipped += 1
            return
        try:
            await self.run_now()
        except Exception as error:  # reported in status; the next tick tries again
            self.last_error = f"{type(error).__name__}: {error}"[:300]

    async def run_now(self) -> dict[str, Any]:
        report = await self.exclusive(self.job)
        self.runs += 1
        self.last_report = report
        self.last_error = None
        return report

    async def exclusive(self, job: Job) -> dict[str, Any]:
        """Run ``job`` (the scheduled one, or the app's own policy) when no other runs."""
        async with self._lock:
            return await job()

    def status(self) -> dict[str, Any]:
        return {
            "scheduled": self.running,
            "intervalMs": self.interval_ms,
            "inProgress": self._lock.locked(),
            "runs": self.runs,
            "skipped": self.skipped,
            "lastReport": self.last_report,
            "lastError": self.last_error,
        }

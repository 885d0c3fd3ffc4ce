"""One serialised write queue, as the seed's ``enqueuePersist``: tasks run one at a time in
order; a failed task rejects its own caller, is remembered, and does not stop the queue.
And the jobs a write starts to run after it (a snapshot, a repair)."""

import asyncio
from collections import deque
from collections.abc import Awaitable, Callable
from typing import Any, TypeVar

T = TypeVar("T")


class PersistQueue:
    def __init__(self, remember_failures: int = 20) -> None:
        self._lock = asyncio.Lock()
        self._pending = 0
        self.failures: deque[dict[str, Any]] = deque(maxlen=remember_failures)
        self.completed = 0

    async def run(self, label: str, task: Callable[[], Awaitable[T]]) -> T:
        self._pending += 1
        try:
            async with self._lock:
                try:
                    result = await task()
                except Exception as error:
                    self.failures.append(
                        {"task": label, "error": f"{type(error).__name__}: {error}"}
                    )
                    raise
                self.completed += 1
                return result
        finally:
            self._pending -= 1

    async def drain(self) -> None:
        """Wait until every task queued before this call has finished."""
        async with self._lock:
            return

    def stats(self) -> dict[str, Any]:
        return {
            "pending": self._pending,
            "completed": self.completed,
            "failures": list(self.failures),
        }


class Background:
    """Jobs run after the current call returns; a reference is kept until each ends."""

    def __init__(self) -> None:
        self._running: set[asyncio.Task[Any]] = set()

    def start(self, job: Callable[[], Awaitable[Any]]) -> None:
        task = asyncio.get_running_loop().create_task(job())
        self._running.add(task)
        task.add_done_callback(self._done)

    def _done(self, task: "asyncio.Task[Any]") -> None:
        """Forget a finished job; its failure is already in ``problems`` (snapshot,
        sync), so it is only collected here, not raised into the void."""
        self._running.discard(task)
        if not task.cancelled():
            task.exception()

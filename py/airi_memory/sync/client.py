"""The sync runner: push the outbox, then pull other devices' operations, on demand or on
an interval; its status for the page.

One run at a time in this tab (and, through the host's ``exclusive`` lock, across tabs:
Web Locks in the browser). A failed run backs off exponentially with jitter; a run
waits while the host says it is offline. Push is idempotent on the server by operation
id, so a batch whose answer was lost is simply sent again. Errors are kept redacted:
the API key never appears in status, reports or events.
"""

import asyncio
import contextlib
import json
import random
from collections.abc import Awaitable, Callable
from typing import Any

from ..errors import InvalidValueError, ProviderError
from ..http import HttpTransport
from ..llm.openai_protocol import ERROR_CHARS, redacted
from ..models import validate_or_raise
from ..sessions import SessionStore
from ..sessions.changes import Change
from . import hlc, layout
from .config import SyncConfig
from .outbox import Outbox
from .pull import merge_page
from .recorder import OutboxRecorder

PUSH_BATCH = 200  # operations per push (the server takes up to 500)
PUSH_BODY_CHARS = 900_000  # per push body (the server takes up to 1 MiB)
PULL_PAGE = 500
BACKFILL_MESSAGES = 2000  # messages per backfill write
BACKOFF_FIRST_S = 1.0
BACKOFF_MAX_S = 300.0
WAKE_DEBOUNCE_S = 1.0
OFFLINE_POLL_S = 2.0
Emit = Callable[[str, dict[str, Any]], None]
Exclusive = Callable[[str, Callable[[], Awaitable[Any]]], Awaitable[Any]]


class SyncStopped(Exception):
    """A run ended early: the reason is in ``status().lastError``."""


class SyncClient:
    def __init__(
        self,
        sessions: SessionStore,
        http: HttpTransport | None,
        emit: Emit | None = None,
        sleep: Callable[[float], Awaitable[None]] = asyncio.sleep,
        exclusive: Exclusive | None = None,
        online: Callable[[], bool] | None = None,
    ) -> None:
        self.sessions = sessions
        self.storage = sessions.storage
        self.http = http
        self.emit = emit
        self.sleep = sleep
        self.exclusive = exclusive
        self.online = online or (lambda: True)
        self.recorder = OutboxRecorder(sessions.storage, sessions.clock, sessions.writer_id)
        self.outbox = Outbox(sessions.storage)
        self.config = SyncConfig()
        self.in_flight = 0
        self.failures = 0  # failed runs in a row (backoff)
        self.last_success_at: int | None = None
        self.last_attempt_at: int | None = None
        self.last_error: str | None = None
        self.last_report: dict[str, Any] | None = None
        self._lock = asyncio.Lock()
        self._wake = asyncio.Event()
        self._task: asyncio.Task[None] | None = None

    async def open(self, config: SyncConfig | None) -> None:
        """Attach the recorder to the writer (recording if any tab ever turned sync on),
        then apply the options' config."""
        await self.recorder.refresh()
        self.sessions.writer.recorder = self.recorder
        self.sessions.write_listeners.append(lambda _deleted: self._wake.set())
        if config is not None:
            await self.configure(config)
        elif self.recorder.recording:
            await self.sessions.writer.run("startSync", self._start)  # a backfill cut short

    # --- configuration and status -----------------------------------------------------
    async def configure(self, raw: Any) -> dict[str, Any]:
        config = raw if isinstance(raw, SyncConfig) else validate_or_raise(SyncConfig, raw, "sync")
        await self._stop_loop()
        self.config = config
        if config.enabled:
            await self.sessions.writer.run("startSync", self._start)
            if config.auto_sync:
                self._task = asyncio.get_running_loop().create_task(self._loop())
        return await self.status()

    async def status(self) -> dict[str, Any]:
        counts = await self.outbox.count()
        return {
            **self.config.public(),
            "recording": self.recorder.recording,
            "device": self.recorder.device or None,
            "running": self._task is not None and not self._task.done(),
            "online": self.online(),
            "pending": counts["pending"],
            "inFlight": self.in_flight,
            "failed": counts["failed"],
            "lastAttemptAt": self.last_attempt_at,
            "lastSuccessAt": self.last_success_at,
            "lastError": self.last_error,
            "lastReport": self.last_report,
        }

    async def dead_letters(self) -> list[dict[str, Any]]:
        return await self.outbox.dead_letters()

    async def retry(self, op_ids: list[str]) -> int:
        moved = await self.outbox.retry(_ids(op_ids, "sync.retry"))
        self._wake.set()
        return moved

    async def discard(self, op_ids: list[str]) -> int:
        return await self.outbox.discard(_ids(op_ids, "sync.discard"))

    async def close(self) -> None:
        await self._stop_loop()

    # --- one run: push, then pull -------------------------------------------------------
    async def process_sync_queue(self) -> dict[str, Any]:
        """Push everything pending, then pull until the server has no more; the report."""
        if not self.config.enabled:
            raise InvalidValueError("sync is off: configureSync({enabled: true, endpoint, apiKey})")
        if self.exclusive is None:
            return await self._run()
        return await self.exclusive("airi-memory-sync", self._run)

    async def _run(self) -> dict[str, Any]:
        async with self._lock:
            report: dict[str, Any] = {"pushed": 0, "pulled": 0, "failed": 0, "skipped": []}
            now = self.sessions.clock
            self.last_attempt_at = now()
            started = now()
            if not self.online():  # not a failure: nothing counts, no backoff grows
                report.update(pending=(await self.outbox.count())["pending"], durationMs=0)
                report["error"] = self.last_error = "offline: the browser has no network"
                return report
            try:
                await self._push(report)
                await self._pull(report)
            except SyncStopped as stopped:
                self.failures += 1
                self.last_error = str(stopped)
                report["error"] = self.last_error
            else:
                self.failures = 0
                self.last_error = None
                self.last_success_at = now()
            report["pending"] = (await self.outbox.count())["pending"]
            report["durationMs"] = now() - started
            self.last_report = report
            return report

    async def _call(self, method: str, path: str, body: Any = None) -> Any:
        """One request to the endpoint; the parsed 200 answer, or a status and error."""
        assert self.http is not None and self.config.api_key is not None
        headers = {"Authorization": f"Bearer {self.config.api_key.get_secret_value()}"}
        text = None
        if body is not None:
            headers["Content-Type"] = "application/json"
            text = json.dumps(body, ensure_ascii=False, separators=(",", ":"))
        url = self.config.base_url + path
        self.in_flight += 1
        try:
            reply = await self.http.request(
                method, url, headers, text, self.config.timeout_ms / 1000
            )
        except ProviderError as error:
            raise SyncStopped(self._redacted(str(error))) from None
        finally:
            self.in_flight -= 1
        if reply.status == 401:
            raise SyncStopped("the sync server refused the API key (401): check apiKey")
        try:
            parsed = json.loads(reply.text) if reply.text else None
        except ValueError:
            parsed = None
        return reply.status, parsed

    async def _push(self, report: dict[str, Any]) -> None:
        pending = await self.outbox.pending()
        total, size = len(pending), PUSH_BATCH
        while pending:
            batch, chars = [], 0
            for op_id, op in pending[:size]:
                chars += len(json.dumps(op, ensure_ascii=False)) + 1
                if batch and chars > PUSH_BODY_CHARS:
                    break
                batch.append((op_id, op))
            status, answer = await self._call(
                "POST", "/v1/sync/push", {"operations": [op for _, op in batch]}
            )
            if status == 200:
                await self.outbox.sent([op_id for op_id, _ in batch])
                pending = pending[len(batch) :]
                report["pushed"] += len(batch)
                self._progress("push", report["pushed"], total)
                continue
            reason = self._redacted(_server_error(status, answer))
            refused = _refused_index(status, answer, len(batch))
            if status == 413 and len(batch) > 1:
                size = max(1, len(batch) // 2)  # split and send again
                continue
            if refused is not None or status == 413:
                index = refused or 0
                report["failed"] += await self.outbox.failed(
                    [batch[index]], reason, self.sessions.clock(), final=True
                )
                pending.remove(batch[index])
                continue  # nothing of the batch was applied: the rest goes again
            report["failed"] += await self.outbox.failed(
                batch, reason, self.sessions.clock(), final=False
            )
            raise SyncStopped(reason)

    async def _pull(self, report: dict[str, Any]) -> None:
        from urllib.parse import urlencode  # here: 25 ms of every start, for sync only

        while True:
            state = await self.storage.get_item(layout.STATE)
            cursor = state.get("cursor", 0) if isinstance(state, dict) else 0
            query = urlencode({"cursor": cursor, "limit": PULL_PAGE})
            status, page = await self._call("GET", f"/v1/sync/pull?{query}")
            if status != 200 or not isinstance(page, dict):
                raise SyncStopped(self._redacted(_server_error(status, page)))
            operations = [op for op in page.get("operations") or [] if _well_formed(op)]
            next_cursor = page.get("cursor")
            if not isinstance(next_cursor, int) or next_cursor < cursor:
                raise SyncStopped("the sync server answered a pull without a valid cursor")

            async def decide(ops: list[dict[str, Any]] = operations, at: int = next_cursor):
                return await merge_page(self.storage, self.recorder, ops, at)

            applied = await self.sessions.apply_remote(decide)
            report["pulled"] += len(page.get("operations") or [])
            report["skipped"] += applied["skipped"]
            self._progress("pull", report["pulled"], None)
            if not page.get("hasMore"):
                return

    async def _start(self) -> None:
        """Recording on (for good), then, once, operations for what was stored before:
        in the write queue, so no write falls between the two."""
        state = await self.recorder.start()
        if state.get("backfilled"):
            return
        done = set(state.get("backfilledSessions") or [])
        for meta in sorted(self.sessions.view.metas.values(), key=lambda m: m.created_at):
            if meta.session_id in done:
                continue
            messages = await self.sessions.load_session_messages(meta.session_id)
            changes = [
                Change("create", meta.session_id, data=_without(meta.to_wire(), "sessionId"))
            ]
            for message in messages:
                changes.append(
                    Change("create", meta.session_id, message["id"], _without(message, "id"))
                )
            done.add(meta.session_id)
            await self._backfilled(changes, {"backfilledSessions": sorted(done)})
        await self._backfilled([], {"backfilled": True, "backfilledSessions": []})

    async def _backfilled(self, changes: list[Change], state: dict[str, Any]) -> None:
        """One backfill write: the operations and how far the backfill got."""
        book = self.recorder.bookkeeping(changes)
        book.patches.append((layout.STATE, state))
        await self.sessions.writer.write(bookkeeping=book)
        await self.recorder.refresh()

    def _redacted(self, text: str) -> str:
        return redacted(text, self.config.api_key, ERROR_CHARS)

    def _progress(self, phase: str, done: int, total: int | None) -> None:
        if self.emit:
            self.emit("sync-progress", {"phase": phase, "done": done, "total": total})

    # --- the automatic runner -----------------------------------------------------------
    async def _loop(self) -> None:
        while True:
            if self.online():
                with contextlib.suppress(Exception):  # in status; the next run tries again
                    await self.process_sync_queue()
            await self._pause()

    async def _pause(self) -> None:
        """The interval, or a backoff after failures, cut short by a local write; while
        offline, a short look until the network is back."""
        if not self.online():
            await self.sleep(OFFLINE_POLL_S)
            return
        if self.failures:
            wait = min(BACKOFF_MAX_S, BACKOFF_FIRST_S * 2 ** (self.failures - 1))
            await self.sleep(wait * random.uniform(0.5, 1.0))
            return
        self._wake.clear()
        sleeper = asyncio.ensure_future(self.sleep(self.config.sync_interval / 1000))
        woken = asyncio.ensure_future(self._wake.wait())
        await asyncio.wait([sleeper, woken], return_when=asyncio.FIRST_COMPLETED)
        for waiter in (sleeper, woken):
            waiter.cancel()
        if woken.done() and not woken.cancelled():
            await self.sleep(WAKE_DEBOUNCE_S)

    async def _stop_loop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._task
            self._task = None


def _without(record: dict[str, Any], name: str) -> dict[str, Any]:
    return {k: v for k, v in record.items() if k != name}


def _ids(op_ids: Any, method: str) -> list[str]:
    if not isinstance(op_ids, list) or not all(isinstance(i, str) and i for i in op_ids):
        raise InvalidValueError(f"{method} expects a list of operation ids")
    return op_ids


def _server_error(status: int, answer: Any) -> str:
    detail = answer if isinstance(answer, dict) else {}
    message = str(detail.get("message") or "")[:200]
    field = f" ({detail['field']})" if isinstance(detail.get("field"), str) else ""
    return f"the sync server answered {status}{field}: {message}".rstrip(": ")


def _refused_index(status: int, answer: Any, size: int) -> int | None:
    """Which operation of the batch the server refused (422 or 409 naming it), if one."""
    field = answer.get("field") if isinstance(answer, dict) else None
    if status not in (409, 422) or not isinstance(field, str):
        return None
    head = field.split("]", 1)[0]
    if not head.startswith("operations["):
        return None
    index = head[len("operations[") :]
    return int(index) if index.isdigit() and int(index) < size else None


def _well_formed(op: Any) -> bool:
    """A pulled operation the merge can read (the server checked them on push)."""
    if not isinstance(op, dict) or op.get("type") not in ("create", "update", "delete"):
        return False
    if op.get("resource") not in ("session", "message") or not isinstance(op.get("sessionId"), str):
        return False
    if (op["resource"] == "message") != isinstance(op.get("messageId"), str):
        return False
    try:
        hlc.parse(op.get("hlc", ""))
    except (ValueError, TypeError):
        return False
    return op.get("data") is None or isinstance(op.get("data"), dict)

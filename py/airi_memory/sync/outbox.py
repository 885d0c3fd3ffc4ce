"""The outbox's operations and its dead letters, as the runner and the page see them.

Pending operations are read in key order, which is the order they were made in (see
``layout``). A dead letter keeps the operation with why it failed; the page can list,
retry (back into the outbox, retries reset) or discard them.
"""

from typing import Any

from ..storage import Storage
from . import layout

MAX_RETRIES = 3  # failed sends an operation may have; the next failure makes it a dead letter


def op_id_of(key: str) -> str:
    return key.split(":", 1)[1]


class Outbox:
    def __init__(self, storage: Storage) -> None:
        self.storage = storage

    async def pending(self) -> list[tuple[str, Any]]:
        """(id, operation) of everything waiting to be pushed, oldest first."""
        found = await self.storage.get_all(layout.OUTBOX + ":")
        failed = layout.FAILED + ":"
        return [(op_id_of(key), value) for key, value in found if not key.startswith(failed)]

    async def dead_letters(self) -> list[dict[str, Any]]:
        found = await self.storage.get_all(layout.FAILED + ":")
        return [value if isinstance(value, dict) else {"value": value} for _, value in found]

    async def count(self) -> dict[str, int]:
        keys = await self.storage.get_keys(layout.OUTBOX)
        failed = sum(key.startswith(layout.FAILED + ":") for key in keys)
        return {"pending": len(keys) - failed, "failed": failed}

    async def sent(self, op_ids: list[str]) -> None:
        """The server has these: they leave the outbox."""
        await self.storage.write_batch(removes=[layout.op_key(i) for i in op_ids])

    async def failed(self, ops: list[tuple[str, Any]], reason: str, now: int, final: bool) -> int:
        """A send of ``ops`` failed: each counts one more retry, and moves to the dead
        letters when ``final`` (the server refused it) or past ``MAX_RETRIES``. One batch;
        returns how many became dead letters."""
        sets, removes, dead = [], [], 0
        for op_id, op in ops:
            record = dict(op) if isinstance(op, dict) else {"id": op_id, "value": op}
            retries = record.get("retries")
            record["retries"] = (retries if isinstance(retries, int) else 0) + 1
            if final or record["retries"] > MAX_RETRIES:
                dead += 1
                removes.append(layout.op_key(op_id))
                sets.append(
                    (layout.failed_key(op_id), {**record, "error": reason, "failedAt": now})
                )
            else:
                sets.append((layout.op_key(op_id), record))
        await self.storage.write_batch(sets, removes)
        return dead

    async def retry(self, op_ids: list[str]) -> int:
        """Dead letters back into the outbox, retries reset; returns how many."""
        found = await self.storage.get_items([layout.failed_key(i) for i in op_ids])
        sets, removes = [], []
        for op_id, item in zip(op_ids, found, strict=True):
            if isinstance(item["value"], dict):
                op = {k: v for k, v in item["value"].items() if k not in ("error", "failedAt")}
                sets.append((layout.op_key(op_id), {**op, "retries": 0}))
                removes.append(item["key"])
        if sets:
            await self.storage.write_batch(sets, removes)
        return len(sets)

    async def discard(self, op_ids: list[str]) -> int:
        keys = [layout.failed_key(i) for i in op_ids]
        present = [item["key"] for item in await self.storage.get_items(keys) if item["value"]]
        if present:
            await self.storage.write_batch(removes=present)
        return len(present)

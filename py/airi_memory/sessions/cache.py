"""The message cache of the seed's ``CacheConfig``, on cachetools.

``lru`` is cachetools' ``TTLCache`` (least recently used, entries expire after ``ttl``);
``lfu`` is its ``LFUCache`` with the same expiry checked on read. Writes invalidate,
except an appended message, which a cached session takes in.
"""

import time
from collections.abc import Callable
from typing import Any

from cachetools import LFUCache, TTLCache

from ..models import CacheConfig


class MessageCache:
    def __init__(self, config: CacheConfig, clock: Callable[[], float] = time.monotonic) -> None:
        self.config = config
        self._clock = clock
        seconds = config.ttl / 1000
        if config.strategy == "lru":
            self._entries: Any = TTLCache(config.max_size, seconds, timer=clock)
        else:
            self._entries = LFUCache(config.max_size)
        self._seconds = seconds
        self._generations: dict[str, int] = {}
        self.hits = 0
        self.misses = 0

    def get(self, session_id: str) -> list[dict[str, Any]] | None:
        entry = self._entries.get(session_id)
        if entry is not None and self.config.strategy == "lfu":
            stored_at, entry = entry
            if self._clock() - stored_at > self._seconds:
                self._entries.pop(session_id, None)
                entry = None
        if entry is None:
            self.misses += 1
            return None
        self.hits += 1
        return entry

    def generation(self, session_id: str) -> int:
        """Take before reading; ``put`` with it stores nothing if a write came in between."""
        return self._generations.get(session_id, 0)

    def put(self, session_id: str, messages: list[dict[str, Any]], generation: int) -> None:
        if generation != self.generation(session_id):
            return  # a write invalidated the session while these messages were being read
        if self.config.strategy == "lfu":
            self._entries[session_id] = (self._clock(), messages)
        else:
            self._entries[session_id] = messages

    def append(self, session_id: str, message: dict[str, Any]) -> None:
        """A message added at the end: a cached session gets it (in a new list, so a
        reader holding the old one is not surprised) instead of being read again."""
        self._generations[session_id] = self.generation(session_id) + 1
        entry = self._entries.get(session_id)
        if entry is None:
            return
        if self.config.strategy == "lfu":
            stored_at, messages = entry
            self._entries[session_id] = (stored_at, [*messages, message])
        else:
            self._entries[session_id] = [*entry, message]

    def invalidate(self, session_id: str) -> None:
        self._generations[session_id] = self.generation(session_id) + 1
        self._entries.pop(session_id, None)

    def stats(self) -> dict[str, Any]:
        return {
            "hits": self.hits,
            "misses": self.misses,
            "size": len(self._entries),
            **self.config.to_wire(),
        }

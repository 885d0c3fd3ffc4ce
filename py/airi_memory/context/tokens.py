"""Token counting: the seed's estimate everywhere, exact OpenAI encodings where the host
has a tokenizer (gpt-tokenizer in the browser), and model presets with their budgets.

Counts are cached per message id and text, so composing the same long session again
only counts what changed.
"""

import json
import math
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from cachetools import LRUCache
from pydantic import BaseModel, ConfigDict, Field

from ..errors import InvalidValueError
from ..models import message_text

ESTIMATE = "estimate"
EXACT_ENCODINGS = ("o200k_base", "cl100k_base")
CACHED_COUNTS = 200_000


class TokenCounter(ABC):
    """Port: exact token counts for OpenAI encodings, many texts per call."""

    encodings: frozenset[str] = frozenset()

    @abstractmethod
    async def count(self, encoding: str, texts: Sequence[str]) -> list[int]: ...


def estimate_tokens(text: str) -> int:
    """The seed's rough estimate: one token per four characters."""
    return math.ceil(len(text) / 4)


class ModelPreset(BaseModel):
    """A model's prompt budget: ``maxTokens`` in all, of which ``reserveTokens`` are kept
    for the reply; ``messageOverhead`` tokens per message and ``replyPriming`` per request
    are what OpenAI's chat format adds around the text."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    max_tokens: int = Field(alias="maxTokens", ge=1)
    reserve_tokens: int = Field(default=0, alias="reserveTokens", ge=0)
    encoding: str = ESTIMATE
    message_overhead: int = Field(default=0, alias="messageOverhead", ge=0)
    reply_priming: int = Field(default=0, alias="replyPriming", ge=0)


def _openai(max_tokens: int, reserve: int, encoding: str = "o200k_base") -> ModelPreset:
    return ModelPreset(
        max_tokens=max_tokens,
        reserve_tokens=reserve,
        encoding=encoding,
        message_overhead=3,
        reply_priming=3,
    )


# The seed's defaults (GPT-4o 120k with 8k for the reply, Claude 3.5 180k with 20k, local
# models 4k-8k), matched by name prefix, longest first. Apps add or override in options.
PRESETS: dict[str, ModelPreset] = {
    "gpt-4o": _openai(120_000, 8_000),
    "gpt-4.1": _openai(120_000, 8_000),
    "gpt-5": _openai(120_000, 8_000),
    "o1": _openai(120_000, 8_000),
    "o3": _openai(120_000, 8_000),
    "o4": _openai(120_000, 8_000),
    "gpt-4-turbo": _openai(120_000, 8_000, "cl100k_base"),
    "gpt-4": _openai(8_192, 1_024, "cl100k_base"),
    "gpt-3.5-turbo": _openai(16_000, 2_000, "cl100k_base"),
    "claude-3.5": ModelPreset(max_tokens=180_000, reserve_tokens=20_000),
    "claude-3-5": ModelPreset(max_tokens=180_000, reserve_tokens=20_000),
    "claude": ModelPreset(max_tokens=180_000, reserve_tokens=20_000),
    "local": ModelPreset(max_tokens=4_096, reserve_tokens=512),
    "local-8k": ModelPreset(max_tokens=8_192, reserve_tokens=1_024),
}


def find_preset(model: str, extra: dict[str, ModelPreset]) -> ModelPreset:
    presets = {**PRESETS, **extra}
    for prefix in sorted(presets, key=len, reverse=True):
        if model == prefix or model.startswith(prefix):
            return presets[prefix]
    raise InvalidValueError(
        f"unknown model {model!r}: pass maxTokens, or add it under the 'models' option "
        f"(known: {', '.join(sorted(presets))})"
    )


def message_token_text(message: dict[str, Any]) -> str:
    """What of a stored or composed message the model reads: its words and tool calls."""
    text = message_text(message)
    if message.get("tool_calls"):
        text += json.dumps(message["tool_calls"], ensure_ascii=False, separators=(",", ":"))
    return text


@dataclass
class Tokens:
    """Counts texts with one encoding, caching by a caller's key (a message id)."""

    counter: TokenCounter | None

    def __post_init__(self) -> None:
        self._cache: LRUCache[tuple[str, str], tuple[int, int]] = LRUCache(CACHED_COUNTS)
        self.hits = 0
        self.misses = 0

    def encodings(self) -> list[str]:
        return [ESTIMATE, *sorted(self.counter.encodings if self.counter else ())]

    def check(self, encoding: str) -> str:
        if encoding not in self.encodings():
            raise InvalidValueError(
                f"token encoding {encoding!r} is not available here; available: "
                f"{', '.join(self.encodings())}"
            )
        return encoding

    async def count(self, encoding: str, texts: Sequence[str]) -> list[int]:
        if self.check(encoding) == ESTIMATE or not texts:
            return [estimate_tokens(t) for t in texts]
        assert self.counter is not None
        return await self.counter.count(encoding, texts)

    async def count_keyed(self, encoding: str, items: Sequence[tuple[str, str]]) -> list[int]:
        """Counts of ``(key, text)`` pairs; a key whose text is unchanged is not recounted."""
        found: list[int | None] = []
        missing: list[int] = []
        for index, (key, text) in enumerate(items):
            hit = self._cache.get((encoding, key))
            if hit is not None and hit[0] == hash(text):
                found.append(hit[1])
            else:
                found.append(None)
                missing.append(index)
        self.hits += len(items) - len(missing)
        self.misses += len(missing)
        if missing:
            counts = await self.count(encoding, [items[i][1] for i in missing])
            for index, count in zip(missing, counts, strict=True):
                key, text = items[index]
                self._cache[(encoding, key)] = (hash(text), count)
                found[index] = count
        return [int(c or 0) for c in found]

    def stats(self) -> dict[str, Any]:
        return {"cached": len(self._cache), "hits": self.hits, "misses": self.misses}

"""Summarising old turns (the seed's ``summarizeOldContext``), kept as a stored message.

The messages between the system prompt and the last ``threshold`` turns are summarised
into one ``system`` message, ``Previous conversation summary: ...``, whose ``summary.covers``
lists the ids it stands for. A newer summary folds in the previous one and replaces it, so
nothing is summarised twice and composition sends one summary instead of the turns it
covers. The turns themselves stay stored and searchable. With no provider configured,
an extractive summary (sentences picked from the turns) is written and labelled so. A
failed provider call changes nothing and the session is retried later.
"""

import asyncio
import math
import re
from collections import Counter
from collections.abc import Callable
from typing import Any

from pydantic import SecretStr

from ..context.summaries import split_session
from ..context.tokens import estimate_tokens, message_token_text
from ..errors import InvalidValueError, ProviderError
from ..llm import LlmProvider
from ..llm.openai_protocol import ERROR_CHARS, redacted
from ..models import WRITTEN_HERE, ChatHistoryItem, validate_or_raise
from ..sessions import SessionStore
from ..storage import Storage
from ..storage.keys import key_segment

SUMMARY_PREFIX = "Previous conversation summary: "
EXTRACTIVE_PREFIX = "Previous conversation summary (extractive, no LLM configured): "
NO_PROVIDER = "no LLM provider is configured, so an extractive summary was written instead"
DEFAULT_CHUNK_TOKENS = 12_000
RETRY_FIRST_MS = 60_000
RETRY_MAX_MS = 3_600_000
# Sentence ends, CJK full stops and fullwidth marks included (written as escapes).
_SENTENCE_END = re.compile(r"(?<=[.!?\u3002\uff01\uff1f])\s*|\n+")
_WORD = re.compile(r"\w+", re.UNICODE)


class Summarizer:
    def __init__(
        self,
        sessions: SessionStore,
        storage: Storage,
        provider: LlmProvider | None,
        clock: Callable[[], int],
    ) -> None:
        self.sessions = sessions
        self.storage = storage  # where failed summaries wait for their retry
        self.provider = provider
        self.clock = clock
        # Sessions whose last attempt failed: {attempts, error, retryAt, threshold}; stored,
        # so that a reload still retries them.
        self.failures: dict[str, dict[str, Any]] = {}
        self.failures_key = f"local:memory:summary-retries:{key_segment(sessions.user_id)}"
        self._locks: dict[str, asyncio.Lock] = {}

    async def load(self) -> None:
        stored = await self.storage.get_item(self.failures_key)
        self.failures = stored if isinstance(stored, dict) else {}

    async def _save(self) -> None:
        await self.storage.set_item(self.failures_key, self.failures)

    async def forget(self, session_id: str) -> None:
        if self.failures.pop(session_id, None) is not None:
            await self._save()

    def due_retries(self) -> list[str]:
        now = self.clock()
        return [sid for sid, f in self.failures.items() if f["retryAt"] <= now]

    async def summarize_old_context(self, session_id: str, threshold: int = 50) -> dict[str, Any]:
        if not isinstance(threshold, int) or isinstance(threshold, bool) or threshold < 1:
            raise InvalidValueError("summarizeOldContext threshold must be a positive integer")
        await self.sessions.ensure_session(session_id)
        lock = self._locks.setdefault(session_id, asyncio.Lock())
        async with lock:  # one summary of a session at a time (scheduler and app alike)
            try:
                report = await self._summarize(session_id, threshold)
            except ProviderError as error:
                await self._failed(session_id, error, threshold)
                raise
        await self.forget(session_id)
        return report

    async def _failed(self, session_id: str, error: Exception, threshold: int) -> None:
        attempts = self.failures.get(session_id, {}).get("attempts", 0) + 1
        delay = min(RETRY_FIRST_MS * 2 ** (attempts - 1), RETRY_MAX_MS)
        self.failures[session_id] = {
            "attempts": attempts,
            # Stored: no key, token, URL query or long provider text (the app's callback
            # errors included, which nothing upstream redacted).
            "error": redacted(str(error), self._api_key(), ERROR_CHARS),
            "retryAt": self.clock() + delay,
            "threshold": threshold,
        }
        await self._save()

    def _api_key(self) -> SecretStr | None:
        return self.provider.config.api_key if self.provider else None

    async def _summarize(self, session_id: str, threshold: int) -> dict[str, Any]:
        messages = await self.sessions.load_session_messages(session_id)
        split = split_session(messages)
        conversation = split.history(messages)
        cut = max(len(conversation) - threshold, 0)
        while 0 < cut < len(conversation) and conversation[cut].get("role") == "tool":
            cut -= 1  # a tool call stays with its results, on the recent side
        older = conversation[:cut]
        report: dict[str, Any] = {"sessionId": session_id, "summarized": 0, "summaryId": None}
        if self.provider is None:
            report["warning"] = NO_PROVIDER
        if not older:
            report["summaryId"] = split.summary.get("id") if split.summary else None
            return report
        previous = split.summary
        chunk_tokens = (
            self.provider.config.max_input_tokens if self.provider else DEFAULT_CHUNK_TOKENS
        )
        for chunk in _chunks(older, chunk_tokens):
            earlier = _strip_prefix(previous["content"]) if previous else None
            if self.provider is None:
                text, method = extractive_summary(chunk, earlier), "extractive"
            else:
                text, method = await self.provider.complete(_prompt(chunk, earlier)), "llm"
            covers = (previous["summary"]["covers"] if previous else []) + [m["id"] for m in chunk]
            summary = validate_or_raise(
                ChatHistoryItem,
                {
                    "role": "system",
                    "content": (SUMMARY_PREFIX if method == "llm" else EXTRACTIVE_PREFIX) + text,
                    "createdAt": self.clock(),
                    "summary": {
                        "covers": covers,
                        "method": method,
                        "provider": self.provider.name if self.provider else "extractive",
                        "model": self.provider.config.model if self.provider else None,
                        "supersedes": previous.get("id") if previous else None,
                        "trusted": True,
                    },
                },
                context=WRITTEN_HERE,
            )
            replaces = previous.get("id") if previous else None
            previous = await self.sessions.put_summary(session_id, summary, replaces)
            report["summarized"] += len(chunk)
        assert previous is not None
        report.update(
            summaryId=previous["id"],
            covers=len(previous["summary"]["covers"]),
            method=previous["summary"]["method"],
        )
        return report


def _chunks(messages: list[dict[str, Any]], max_tokens: int) -> list[list[dict[str, Any]]]:
    """Consecutive runs of messages of at most ``max_tokens`` (estimated) each."""
    chunks: list[list[dict[str, Any]]] = [[]]
    size = 0
    for message in messages:
        tokens = estimate_tokens(message_token_text(message)) + 4
        if chunks[-1] and size + tokens > max_tokens:
            chunks.append([])
            size = 0
        chunks[-1].append(message)
        size += tokens
    return [c for c in chunks if c]


def _strip_prefix(content: Any) -> str:
    text = content if isinstance(content, str) else ""
    for prefix in (SUMMARY_PREFIX, EXTRACTIVE_PREFIX):
        if text.startswith(prefix):
            return text[len(prefix) :]
    return text


def _transcript(messages: list[dict[str, Any]]) -> str:
    return "\n".join(f"{m.get('role')}: {message_token_text(m)}" for m in messages)


def _prompt(messages: list[dict[str, Any]], earlier: str | None) -> list[dict[str, Any]]:
    """The seed's prompt, with the summary so far folded in."""
    text = "Summarize this conversation concisely:\n"
    if earlier:
        text += f"(Summary of what came before: {earlier})\n"
    return [{"role": "user", "content": text + _transcript(messages)}]


def extractive_summary(
    messages: list[dict[str, Any]], earlier: str | None = None, max_sentences: int = 12
) -> str:
    """The sentences that carry the conversation's most frequent words, in their order;
    no model involved, so it works offline and is labelled as extractive."""
    sentences: list[tuple[int, str, str]] = []
    seen: set[str] = set()
    for message in messages:
        for sentence in _SENTENCE_END.split(message_token_text(message)):
            if sentence.strip() and sentence.strip().lower() not in seen:
                seen.add(sentence.strip().lower())
                sentences.append((len(sentences), str(message.get("role")), sentence.strip()))
    words = Counter(w for _, _, s in sentences for w in _words(s))

    def score(sentence: str) -> float:
        found = _words(sentence)
        return sum(words[w] for w in found) / math.sqrt(len(found) + 1)

    best = sorted(sentences, key=lambda item: -score(item[2]))[:max_sentences]
    lines = [f"{role}: {text[:300]}" for _, role, text in sorted(best)]
    if earlier:
        lines.insert(0, earlier)
    return "\n".join(lines)


def _words(text: str) -> list[str]:
    return [w for w in _WORD.findall(text.lower()) if len(w) > 2]

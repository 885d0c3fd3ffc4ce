"""``composeMessages``: the exact messages for the next LLM call, inside a token budget.

Order, as the seed injects it: the system prompt, the context message (one ``user``
message, a ``Module <key>: <JSON>`` line per source), the latest summary of older turns,
then the conversation. What does not fit is dropped oldest first. Messages are taken in
units (a message and the tool results that answer it), so a tool call is never split
from its results and the kept history never starts with an orphan tool message.
"""

import json
from dataclasses import dataclass, field
from typing import Any, Literal

from cachetools import LRUCache
from pydantic import BaseModel, ConfigDict, Field

from ..errors import ContextTooLongError, InvalidValueError
from ..models import Speakers
from .summaries import SessionSplit, is_summary, split_session
from .tokens import ESTIMATE, ModelPreset, Tokens, find_preset, message_token_text

WINDOWS_KEPT = 16  # sessions whose units and counts are kept between compositions
# Fields of a stored message that belong in an OpenAI-style chat request.
SENT_FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id")


class RecallOptions(BaseModel):
    """What composition recalls: up to ``limit`` messages found for ``query`` (by default
    the last user message), from every session or only this one, within ``maxTokens``
    (by default a tenth of the budget), never one already in the window."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    limit: int = Field(default=5, ge=1, le=50)
    strategy: Literal["keyword", "semantic", "relevant", "hybrid"] = "relevant"
    threshold: float = Field(default=0, ge=0, le=1)
    max_tokens: int | None = Field(default=None, alias="maxTokens", ge=1)
    cross_session: bool = Field(default=True, alias="crossSession")
    query: str | None = Field(default=None, max_length=10_000)
    # Who the user and the character are, by name: a question naming one of them
    # prefers their turns (search's ``speakers``).
    speakers: Speakers | None = None


class ComposeOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True)
    model: str | None = Field(default=None, max_length=128)
    max_tokens: int | None = Field(default=None, alias="maxTokens", ge=1)
    reserve_tokens: int | None = Field(default=None, alias="reserveTokens", ge=0)
    encoding: str | None = None
    system_prompt: str | None = Field(default=None, alias="systemPrompt")
    # 'after-system': the seed's placement. 'last-user': AIRI's, a [Context] block appended
    # to the last user message. 'none': no context at all.
    context_placement: Literal["after-system", "last-user", "none"] = Field(
        default="after-system", alias="contextPlacement"
    )
    include_summary: bool = Field(default=True, alias="includeSummary")
    # Also return ``parts``: each composed message's origin and tokens (for previews).
    details: bool = False
    # Recall: old memories found by search, added after the summary (see RecallOptions).
    retrieval: RecallOptions | None = None


def sendable(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in SENT_FIELDS if message.get(k) is not None}


def context_lines(contexts: dict[str, Any], style: str) -> str:
    dumps = lambda value: json.dumps(value, ensure_ascii=False)  # noqa: E731
    if style == "last-user":
        return "[Context]\n" + "\n".join(f"- {k}: {dumps(v)}" for k, v in contexts.items())
    return "\n".join(f"Module {k}: {dumps(v)}" for k, v in contexts.items())


@dataclass
class Unit:
    """A message and the tool results that answer it: kept or dropped together."""

    messages: list[dict[str, Any]] = field(default_factory=list)
    sent: list[dict[str, Any]] = field(default_factory=list)  # as they go to the model
    costs: list[int] = field(default_factory=list)  # tokens, chat-format overhead included
    total: int = 0

    def add(self, message: dict[str, Any], cost: int) -> None:
        self.messages.append(message)
        self.sent.append(sendable(message))
        self.costs.append(cost)
        self.total += cost


@dataclass
class Window:
    """A stored session as composition sees it: its split (system prompt, newest summary,
    covered turns) and the history the summary does not cover, in units."""

    source: list[dict[str, Any]]
    split: SessionSplit
    units: list[Unit] = field(default_factory=list)
    history: int = 0  # messages in the history, orphans included
    # Whether a tool result arriving next belongs to the last unit (its head called it).
    open_for_tools: bool = False


class Composer:
    """Composes prompts; keeps each session's units and counts while the session only
    grows, so composing again after a new message counts only that message."""

    def __init__(self, tokens: Tokens, presets: dict[str, ModelPreset]) -> None:
        self.tokens = tokens
        self.presets = presets
        self._windows: LRUCache[tuple[Any, ...], Window] = LRUCache(WINDOWS_KEPT)

    def budget(self, options: ComposeOptions) -> ModelPreset:
        preset = find_preset(options.model, self.presets) if options.model else None
        if preset is None and options.max_tokens is None:
            raise InvalidValueError("composeMessages needs a model or maxTokens")
        updates = {
            "max_tokens": options.max_tokens,
            "reserve_tokens": options.reserve_tokens,
            "encoding": options.encoding,
        }
        base = preset or ModelPreset(max_tokens=options.max_tokens or 1)
        chosen = base.model_copy(update={k: v for k, v in updates.items() if v is not None})
        if chosen.reserve_tokens >= chosen.max_tokens:
            raise InvalidValueError(
                f"reserveTokens ({chosen.reserve_tokens}) must be below maxTokens "
                f"({chosen.max_tokens})"
            )
        if chosen.encoding not in self.tokens.encodings() and options.encoding is None:
            # The preset's tokenizer is not on this host: the seed's estimate instead.
            chosen = chosen.model_copy(update={"encoding": ESTIMATE})
        self.tokens.check(chosen.encoding)
        return chosen

    async def window(
        self, session_id: str, messages: list[dict[str, Any]], preset: ModelPreset, summary: bool
    ) -> Window:
        key = (session_id, preset.encoding, preset.message_overhead, summary)
        window = self._windows.get(key)
        if window is not None and _grew(window.source, messages):
            tail = messages[len(window.source) :]
            if not any(is_summary(m) for m in tail):
                await self._extend(window, window.split.history(tail), preset)
                window.source = messages
                return window
        window = Window(messages, split_session(messages, summary))
        await self._extend(window, window.split.history(messages), preset)
        self._windows[key] = window
        return window

    async def _extend(
        self, window: Window, history: list[dict[str, Any]], preset: ModelPreset
    ) -> None:
        counts = await self.tokens.count_keyed(
            preset.encoding, [(f"message:{m.get('id')}", message_token_text(m)) for m in history]
        )
        for message, count in zip(history, counts, strict=True):
            cost = count + preset.message_overhead
            window.history += 1
            if message.get("role") == "tool":
                if window.open_for_tools:
                    window.units[-1].add(message, cost)
                continue  # an orphan: the call it answers is gone; never sent
            window.units.append(Unit())
            window.units[-1].add(message, cost)
            window.open_for_tools = message.get("role") == "assistant"

    async def compose(
        self,
        session_id: str,
        messages: list[dict[str, Any]],
        contexts: dict[str, Any],
        options: ComposeOptions,
        recall: str | None = None,
    ) -> dict[str, Any]:
        """``recall``: the recalled-memories text, sent as a system message after the summary."""
        preset = self.budget(options)
        window = await self.window(session_id, messages, preset, options.include_summary)
        placement = options.context_placement if contexts else "none"
        split = window.split
        system = split.system
        if options.system_prompt is not None:
            system = {"id": "system-prompt", "role": "system", "content": options.system_prompt}

        # Fixed parts, always sent: (kind, cache key, message).
        fixed: list[tuple[str, str, dict[str, Any]]] = []
        if system is not None:
            fixed.append(("system", f"system:{system.get('id')}", system))
        if placement != "none":
            text = context_lines(contexts, placement)
            block = {"role": "user", "content": [{"type": "text", "text": text}]}
            fixed.append(("context", "context", block))
        if split.summary is not None:
            fixed.append(("summary", f"summary:{split.summary.get('id')}", split.summary))
        if recall:
            fixed.append(("recall", "recall", {"role": "system", "content": recall}))
        counts = await self.tokens.count_keyed(
            preset.encoding, [(key, message_token_text(m)) for _, key, m in fixed]
        )
        fixed_costs = [n + preset.message_overhead for n in counts]
        if placement == "last-user":  # the block joins a message already counted
            fixed_costs[[kind for kind, _, _ in fixed].index("context")] -= preset.message_overhead

        budget = preset.max_tokens - preset.reserve_tokens
        used = sum(fixed_costs) + preset.reply_priming
        if used > budget:
            raise ContextTooLongError(
                f"the system prompt, context and summary need {used} tokens but the budget "
                f"is {budget} ({preset.max_tokens} minus {preset.reserve_tokens} reserved "
                "for the reply): shorten them or choose a larger model"
            )
        first = len(window.units)
        while first > 0 and used + window.units[first - 1].total <= budget:
            first -= 1
            used += window.units[first].total
        kept = window.units[first:]
        if window.units and not kept:
            raise ContextTooLongError(
                f"the newest message needs {window.units[-1].total} tokens but only "
                f"{budget - used} of the budget of {budget} are left after the system "
                "prompt, context and summary"
            )

        out = [sendable(m) for _, _, m in fixed]
        out += [message for unit in kept for message in unit.sent]
        tokens = {kind: 0 for kind in _KINDS}
        for (kind, _, _), cost in zip(fixed, fixed_costs, strict=True):
            tokens[kind] = cost
        tokens["history"] = sum(unit.total for unit in kept)
        with_context = None
        if placement == "last-user":
            out, with_context = _context_into_last_user(out, len(fixed), fixed)
        result: dict[str, Any] = {
            "messages": out,
            "tokens": {
                **tokens,
                "total": used,
                "budget": budget,
                "maxTokens": preset.max_tokens,
                "reserveTokens": preset.reserve_tokens,
            },
            "model": options.model,
            "encoding": preset.encoding,
            "exact": preset.encoding != ESTIMATE,
            "contextPlacement": placement,
            "droppedMessages": window.history - sum(len(unit.messages) for unit in kept),
            "summaryId": split.summary.get("id") if split.summary else None,
            "coveredBySummary": len(split.covered),
            "messageIds": [m.get("id") for unit in kept for m in unit.messages],
        }
        if options.details:
            result["parts"] = _parts(fixed, fixed_costs, kept, with_context, tokens["context"])
        return result


def _grew(before: list[dict[str, Any]], now: list[dict[str, Any]]) -> bool:
    """Whether ``now`` is ``before`` with messages added at the end (the cache appends)."""
    if now is before:
        return True
    return len(now) >= len(before) and (not before or now[len(before) - 1] is before[-1])


def _context_into_last_user(
    out: list[dict[str, Any]], head: int, fixed: list[tuple[str, str, dict[str, Any]]]
) -> tuple[list[dict[str, Any]], int | None]:
    """AIRI's placement: the context block ends the last user message (a copy of it). With
    no user message in the window, it stays a message of its own after the system prompt.
    Returns the messages and the index of the user message that took the block."""
    at = [kind for kind, _, _ in fixed].index("context")
    block = out[at]["content"][0]["text"]
    for index in range(len(out) - 1, head - 1, -1):
        message = out[index]
        if message.get("role") == "user":
            content = message.get("content", "")
            if isinstance(content, list):
                joined: Any = [*content, {"type": "text", "text": block}]
            else:
                joined = f"{content}\n\n{block}" if content else block
            out = [*out[:index], {**message, "content": joined}, *out[index + 1 :]]
            return out[:at] + out[at + 1 :], index - 1
    return out, None


def _parts(
    fixed: list[tuple[str, str, dict[str, Any]]],
    fixed_costs: list[int],
    kept: list[Unit],
    with_context: int | None,
    context_cost: int,
) -> list[dict[str, Any]]:
    """One entry per composed message: where it came from and its tokens (for previews)."""
    parts = [
        {"kind": kind, "messageId": message.get("id"), "tokens": cost}
        for (kind, _, message), cost in zip(fixed, fixed_costs, strict=True)
        if not (kind == "context" and with_context is not None)
    ]
    for unit in kept:
        for message, cost in zip(unit.messages, unit.costs, strict=True):
            parts.append({"kind": "history", "messageId": message.get("id"), "tokens": cost})
    if with_context is not None:
        parts[with_context]["tokens"] += context_cost
        parts[with_context]["withContext"] = True
    return parts


_KINDS = ("system", "context", "summary", "recall", "history")

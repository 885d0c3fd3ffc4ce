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

from pydantic import BaseModel, ConfigDict, Field

from ..errors import ContextTooLongError, InvalidValueError
from ..models import validate_or_raise
from .tokens import ModelPreset, Tokens, find_preset, message_token_text

# Fields of a stored message that belong in an OpenAI-style chat request.
SENT_FIELDS = ("role", "content", "name", "tool_calls", "tool_call_id")


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


def is_summary(message: dict[str, Any]) -> bool:
    return isinstance(message.get("summary"), dict)


def sendable(message: dict[str, Any]) -> dict[str, Any]:
    return {k: message[k] for k in SENT_FIELDS if message.get(k) is not None}


def context_lines(snapshot: dict[str, Any], style: str) -> str:
    dumps = lambda value: json.dumps(value, ensure_ascii=False)  # noqa: E731
    if style == "last-user":
        return "[Context]\n" + "\n".join(f"- {k}: {dumps(v)}" for k, v in snapshot.items())
    return "\n".join(f"Module {k}: {dumps(v)}" for k, v in snapshot.items())


def units(history: list[dict[str, Any]]) -> list[list[dict[str, Any]]]:
    """Messages grouped so that tool results stay with the assistant message that called
    them. Tool results with no such message before them (it was deleted) are orphans: a
    unit of their own, which composition never sends."""
    grouped: list[list[dict[str, Any]]] = []
    for message in history:
        if (
            message.get("role") == "tool"
            and grouped
            and grouped[-1][0].get("role")
            in (
                "assistant",
                "tool",
            )
        ):
            grouped[-1].append(message)
        else:
            grouped.append([message])
    return grouped


def is_orphan(unit: list[dict[str, Any]]) -> bool:
    return unit[0].get("role") == "tool"


@dataclass
class Window:
    """The split of a stored session into what composition works with."""

    system: dict[str, Any] | None = None
    summary: dict[str, Any] | None = None
    history: list[dict[str, Any]] = field(default_factory=list)


def split_session(messages: list[dict[str, Any]], use_summary: bool = True) -> Window:
    """System prompt (a leading system message), the newest summary, and the history
    it does not cover; ``error`` messages are for the user's eyes, never the model's."""
    window = Window()
    start = 0
    if messages and messages[0].get("role") == "system" and not is_summary(messages[0]):
        window.system, start = messages[0], 1
    summaries = [m for m in messages if is_summary(m)]
    covered: set[str] = set()
    if use_summary and summaries:
        window.summary = summaries[-1]
        covered = set(window.summary["summary"]["covers"])
    window.history = [
        m
        for m in messages[start:]
        if not is_summary(m) and m.get("role") != "error" and m.get("id") not in covered
    ]
    return window


class Composer:
    def __init__(self, tokens: Tokens, presets: dict[str, ModelPreset]) -> None:
        self.tokens = tokens
        self.presets = presets

    def budget(self, options: ComposeOptions) -> tuple[ModelPreset, str | None]:
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
        return chosen, options.model

    async def compose(
        self, messages: list[dict[str, Any]], snapshot: dict[str, Any], raw_options: Any
    ) -> dict[str, Any]:
        options = validate_or_raise(ComposeOptions, raw_options or {}, "composeMessages")
        preset, model = self.budget(options)
        encoding = preset.encoding
        if encoding not in self.tokens.encodings() and options.encoding is None:
            encoding = "estimate"  # the preset's tokenizer is not available on this host
        self.tokens.check(encoding)
        window = split_session(messages, options.include_summary)
        placement = options.context_placement if snapshot else "none"
        system = window.system
        if options.system_prompt is not None:
            system = {"id": "system-prompt", "role": "system", "content": options.system_prompt}

        # Fixed parts: always sent, counted first. (kind, cache key, message)
        fixed: list[tuple[str, str, dict[str, Any]]] = []
        if system is not None:
            fixed.append(("system", f"system:{system.get('id')}", system))
        if placement != "none":
            text = context_lines(snapshot, placement)
            block = {"role": "user", "content": [{"type": "text", "text": text}]}
            fixed.append(("context", "context", block))
        if window.summary is not None:
            fixed.append(("summary", f"summary:{window.summary.get('id')}", window.summary))
        history = [(f"message:{m.get('id')}", m) for m in window.history]
        keyed = [(key, m) for _, key, m in fixed] + history
        counts = await self.tokens.count_keyed(
            encoding, [(key, message_token_text(m)) for key, m in keyed]
        )
        cost = {key: n + preset.message_overhead for (key, _), n in zip(keyed, counts, strict=True)}
        if placement == "last-user":
            cost["context"] -= preset.message_overhead  # it joins a message already counted

        budget = preset.max_tokens - preset.reserve_tokens
        used = sum(cost[key] for _, key, _ in fixed) + preset.reply_priming
        if used > budget:
            raise ContextTooLongError(
                f"the system prompt, context and summary need {used} tokens but the budget "
                f"is {budget} ({preset.max_tokens} minus {preset.reserve_tokens} reserved "
                "for the reply): shorten them or choose a larger model"
            )
        unit_cost = lambda unit: sum(cost[f"message:{m.get('id')}"] for m in unit)  # noqa: E731
        all_units = units(window.history)
        kept: list[list[dict[str, Any]]] = []
        all_units = [unit for unit in all_units if not is_orphan(unit)]
        for unit in reversed(all_units):
            if used + unit_cost(unit) > budget:
                break
            used += unit_cost(unit)
            kept.insert(0, unit)
        if all_units and not kept:
            raise ContextTooLongError(
                f"the newest message needs {unit_cost(all_units[-1])} tokens but only "
                f"{budget - used} of the budget of {budget} are left after the system "
                "prompt, context and summary"
            )

        rows = [(kind, key, m) for kind, key, m in fixed]
        rows += [("history", f"message:{m.get('id')}", m) for unit in kept for m in unit]
        if placement == "last-user":
            rows = self._context_into_last_user(rows)
        parts = [
            {"kind": kind, "messageId": m.get("id"), "tokens": cost.get(key, 0)}
            for kind, key, m in rows
        ]
        if placement == "last-user" and not any(kind == "context" for kind, _, _ in rows):
            target = next(p for p in reversed(parts) if p["kind"] == "history")
            target["tokens"] += cost["context"]
            target["withContext"] = True
        by_kind = {k: sum(p["tokens"] for p in parts if p["kind"] == k) for k in _KINDS}
        by_kind["context"] = cost.get("context", 0)
        return {
            "messages": [sendable(m) for _, _, m in rows],
            "parts": parts,
            "tokens": {
                **by_kind,
                "total": used,
                "budget": budget,
                "maxTokens": preset.max_tokens,
                "reserveTokens": preset.reserve_tokens,
            },
            "model": model,
            "encoding": encoding,
            "exact": encoding != "estimate",
            "contextPlacement": placement,
            "droppedMessages": len(window.history) - sum(len(u) for u in kept),
            "summaryId": window.summary.get("id") if window.summary else None,
            "coveredBySummary": len(window.summary["summary"]["covers"]) if window.summary else 0,
        }

    @staticmethod
    def _context_into_last_user(
        rows: list[tuple[str, str, dict[str, Any]]],
    ) -> list[tuple[str, str, dict[str, Any]]]:
        """AIRI's placement: the context block ends the last user message. With no user
        message in the window, it stays a message of its own after the system prompt."""
        block_row = next(row for row in rows if row[0] == "context")
        block = block_row[2]["content"][0]["text"]
        rest = [row for row in rows if row is not block_row]
        for index in range(len(rest) - 1, -1, -1):
            kind, key, message = rest[index]
            if kind == "history" and message.get("role") == "user":
                content = message.get("content", "")
                if isinstance(content, list):
                    joined: Any = [*content, {"type": "text", "text": block}]
                else:
                    joined = f"{content}\n\n{block}" if content else block
                rest[index] = (kind, key, {**message, "content": joined})
                return rest
        return rows


_KINDS = ("system", "context", "summary", "history")

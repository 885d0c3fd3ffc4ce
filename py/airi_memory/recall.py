"""Recall in composition: old memories (other sessions, or turns that fell out of the
window) found by search for the latest user message, added as one system message,
de-duplicated against the window and kept within their own token budget.

Orchestrated here, above both: composition (``context``) never imports search, and
search never imports composition."""

from datetime import UTC, datetime
from typing import Any

from .context.compose import ComposeOptions
from .context.tokens import Tokens
from .models import message_text
from .search.service import Searcher

SNIPPET_CHARS = 600
RECALL_HEADING = "Relevant memories from earlier conversations (recalled; they may be out of date):"


async def recall_memories(
    searcher: Searcher,
    tokens: Tokens,
    session_id: str,
    messages: list[dict[str, Any]],
    composed: dict[str, Any],
    options: ComposeOptions,
) -> tuple[str | None, list[dict[str, Any]]]:
    """The recall text (or None) and what it holds: ``[{messageId, sessionId, score}]``."""
    recall = options.retrieval
    assert recall is not None
    query = recall.query or _last_user_text(messages)
    if not query:
        return None, []
    in_window = list(composed["messageIds"])
    filters = {} if recall.cross_session else {"sessionIds": [session_id]}
    speakers = recall.speakers.model_dump() if recall.speakers else None
    found = await searcher.search(
        {"query": query, "limit": recall.limit, "strategy": recall.strategy,
         "threshold": recall.threshold, "filters": filters, "excludeIds": in_window,
         "speakers": speakers}
    )  # fmt: skip
    budget = recall.max_tokens or max(composed["tokens"]["budget"] // 10, 1)
    lines = [_line(hit) for hit in found["results"]]
    # One count for the heading and every line (one call, not one per line); each newline
    # joining them costs about a token.
    costs = await tokens.count(composed["encoding"], [RECALL_HEADING, *lines])
    used, kept_lines, kept = costs[0], [RECALL_HEADING], []
    for hit, line, cost in zip(found["results"], lines, costs[1:], strict=True):
        if used + cost + 1 > budget:
            break
        used += cost + 1
        kept_lines.append(line)
        kept.append(
            {
                "messageId": hit["message"]["id"],
                "sessionId": hit["sessionId"],
                "score": hit["score"],
            }
        )
    return ("\n".join(kept_lines) if kept else None), kept


def _last_user_text(messages: list[dict[str, Any]]) -> str:
    for message in reversed(messages):
        if message.get("role") == "user":
            return message_text(message)
    return ""


def _line(hit: dict[str, Any]) -> str:
    message = hit["message"]
    day = datetime.fromtimestamp(message.get("createdAt", 0) / 1000, UTC).strftime("%Y-%m-%d")
    title = (hit.get("session") or {}).get("title", "")
    text = " ".join(message_text(message).split())[:SNIPPET_CHARS]
    return f"- [{day}, {title!r}] {message.get('role')}: {text}"

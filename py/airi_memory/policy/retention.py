"""Retention, as the seed describes it, with one rule added: pinned sessions are never
archived or deleted by a policy.

Session retention (``applyRetentionPolicy``): archive sessions inactive for longer than
``archiveAfter``; when ``deleteArchived``, delete archived sessions created more than
``maxAge`` ago; then, while more than ``maxSessions`` are active, archive the least
recently updated. Each step is one transaction, however many sessions it touches.

Message retention (``applyMessageRetention``), per session: summarise all but the last
``summaryThreshold`` turns, then delete the oldest messages beyond
``maxMessagesPerSession``. When summaries are on, only turns a summary covers are ever
deleted, so a failed summary never costs history.
"""

import time
from typing import Any

from ..context.summaries import is_summary, latest_summary
from ..errors import AiriMemoryError, ProviderError
from ..models import MessageRetentionPolicy, RetentionPolicy
from ..sessions import SessionStore
from .summarize import Summarizer


async def apply_retention_policy(sessions: SessionStore, policy: RetentionPolicy) -> dict[str, Any]:
    """The seed's three steps, decided on one view of the sessions and written at once.
    The view is taken inside the write queue, after catching up with the store: a
    session another tab just used is not deleted on an old picture of it."""
    started = time.perf_counter()
    now = sessions.clock()
    decided: dict[str, Any] = {}

    def decide() -> tuple[list[str], list[str]]:
        own = sessions.own_sessions()  # newest first
        inactive = [
            m.session_id
            for m in own
            if not m.archived and not m.pinned and now - m.updated_at > policy.archive_after
        ]
        archived_now = set(inactive)
        expired = []
        if policy.delete_archived:
            expired = [
                m.session_id
                for m in own
                if (m.archived or m.session_id in archived_now)
                and not m.pinned
                and now - m.created_at > policy.max_age
            ]
        active = [m for m in own if not m.archived and m.session_id not in archived_now]
        excess = max(len(active) - policy.max_sessions, 0)
        over_limit = [m.session_id for m in reversed(active) if not m.pinned][:excess]
        decided.update(inactive=inactive, expired=expired, over_limit=over_limit, active=active)
        return inactive + over_limit, expired

    await sessions.archive_and_delete(decide, "retention")
    deleted = set(decided["expired"])
    return {
        "ranAt": now,
        "policy": policy.to_wire(),
        "archivedInactive": [sid for sid in decided["inactive"] if sid not in deleted],
        "deletedExpired": decided["expired"],
        "archivedOverLimit": decided["over_limit"],
        "activeSessions": len(decided["active"]) - len(decided["over_limit"]),
        "durationMs": round((time.perf_counter() - started) * 1000, 1),
    }


async def apply_message_retention(
    sessions: SessionStore,
    summarizer: Summarizer,
    session_id: str,
    policy: MessageRetentionPolicy,
) -> dict[str, Any]:
    report: dict[str, Any] = {"sessionId": session_id, "summarized": 0, "deleted": 0}
    if policy.summarize_old:
        try:
            summary = await summarizer.summarize_old_context(session_id, policy.summary_threshold)
            report["summarized"] = summary["summarized"]
            if "warning" in summary:
                report["warning"] = summary["warning"]
        except ProviderError as error:
            report["summaryError"] = str(error)
    messages = await sessions.load_session_messages(session_id)
    excess = len(messages) - policy.max_messages_per_session
    if excess <= 0:
        return report
    _, covered = latest_summary(messages)
    doomed: list[str] = []
    for index, message in enumerate(messages):
        if len(doomed) >= excess and message.get("role") != "tool":
            break
        if is_summary(message) or (policy.keep_system_messages and message["role"] == "system"):
            continue
        if policy.summarize_old and message["id"] not in covered:
            break  # never delete a turn no summary stands for
        if len(doomed) >= excess and not _follows(messages, index, doomed):
            break
        doomed.append(message["id"])  # a tool result goes with the call deleted before it
    report["deleted"] = await sessions.delete_messages(session_id, doomed, "messageRetention")
    return report


def _follows(messages: list[dict[str, Any]], index: int, doomed: list[str]) -> bool:
    """Whether the tool message at ``index`` answers a call that is being deleted."""
    for earlier in reversed(messages[:index]):
        if earlier.get("role") != "tool":
            return earlier["id"] in doomed
    return False


async def scheduled_retention(
    sessions: SessionStore,
    summarizer: Summarizer,
    policy: RetentionPolicy,
    message_policy: MessageRetentionPolicy | None,
) -> dict[str, Any]:
    """What the scheduler runs: the session policy, the message policy if the app set
    one, and summaries that failed before and are due again."""
    report: dict[str, Any] = {"sessions": await apply_retention_policy(sessions, policy)}
    done: set[str] = set()
    report["messages"] = []
    if message_policy is not None:
        counts = await sessions.message_counts()
        limit = min(message_policy.summary_threshold, message_policy.max_messages_per_session)
        for meta in sessions.own_sessions():
            if counts.get(meta.session_id, 0) > limit:
                done.add(meta.session_id)
                report["messages"].append(
                    await apply_message_retention(
                        sessions, summarizer, meta.session_id, message_policy
                    )
                )
    report["retried"] = []
    for session_id in summarizer.due_retries():
        if await sessions.get_session(session_id) is None:
            await summarizer.forget(session_id)
            continue
        if session_id in done:
            continue
        threshold = summarizer.failures[session_id]["threshold"]
        try:
            await summarizer.summarize_old_context(session_id, threshold)
            report["retried"].append({"sessionId": session_id, "ok": True})
        except AiriMemoryError as error:
            failed = {"sessionId": session_id, "ok": False, "error": str(error)}
            report["retried"].append(failed)
    return report

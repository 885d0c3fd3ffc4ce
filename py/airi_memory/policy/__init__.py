"""What is kept and for how long: retention policies, their scheduler, summarisation."""

from .retention import apply_message_retention, apply_retention_policy, scheduled_retention
from .scheduler import RetentionScheduler
from .summarize import Summarizer

__all__ = [
    "RetentionScheduler",
    "Summarizer",
    "apply_message_retention",
    "apply_retention_policy",
    "scheduled_retention",
]

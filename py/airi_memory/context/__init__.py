"""Working memory for the next LLM call: context, token counting, prompt composition."""

from .compose import ComposeOptions, Composer, RecallOptions
from .store import ContextStore
from .tokens import ESTIMATE, EXACT_ENCODINGS, ModelPreset, TokenCounter, Tokens

__all__ = [
    "ESTIMATE",
    "EXACT_ENCODINGS",
    "ComposeOptions",
    "Composer",
    "ContextStore",
    "ModelPreset",
    "RecallOptions",
    "TokenCounter",
    "Tokens",
]

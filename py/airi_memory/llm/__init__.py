"""Talking to language models: providers behind one interface, over the HTTP port."""

from .providers import LlmConfig, LlmProvider, make_provider

__all__ = [
    "LlmConfig",
    "LlmProvider",
    "make_provider",
]

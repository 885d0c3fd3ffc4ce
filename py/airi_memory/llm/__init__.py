"""Talking to language models: providers behind one interface and the HTTP port."""

from .providers import LlmConfig, LlmProvider, make_provider
from .transport import HttpReply, HttpTransport

__all__ = [
    "HttpReply",
    "HttpTransport",
    "LlmConfig",
    "LlmProvider",
    "make_provider",
]

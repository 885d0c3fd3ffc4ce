"""HTTP port: one JSON POST, for providers that speak OpenAI's protocol."""

from .transport import HttpReply, HttpTransport

__all__ = ["HttpReply", "HttpTransport"]

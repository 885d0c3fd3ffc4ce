"""Sessions and messages: durable per-message records, a DuckDB mirror, a message cache."""

from .store import SessionStore

__all__ = ["SessionStore"]

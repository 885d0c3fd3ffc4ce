"""Errors the facade reports by name, so JS callers can branch on ``error.name``."""


class AiriMemoryError(Exception):
    """Base of every error airi-memory raises on purpose."""


class InvalidKeyError(AiriMemoryError, ValueError):
    """A storage key or base that unstorage's rules reject, or that we refuse to store."""


class _PlainKeyError(AiriMemoryError, KeyError):
    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class UnknownMountError(_PlainKeyError):
    """A mount point that is not mounted."""


class InvalidValueError(AiriMemoryError, ValueError):
    """A value that cannot be stored (not JSON-serialisable, wrong raw type ...)."""


class ReadOnlyQueryError(AiriMemoryError, ValueError):
    """A diagnostic query that would change the database."""


class UnknownMethodError(AiriMemoryError, AttributeError):
    """The facade asked for a method the Python core does not expose."""


class SqlError(AiriMemoryError):
    """DuckDB refused a statement; the message is DuckDB's own."""


class StorageWriteError(AiriMemoryError):
    """IndexedDB did not commit a write (its transaction aborted: AbortError, UnknownError
    ...); nothing of the write was stored, and later writes may well succeed."""


class StorageQuotaError(StorageWriteError):
    """The browser refused a write for lack of space (IndexedDB QuotaExceededError)."""


class WriteConflictError(AiriMemoryError):
    """A record a write depends on changed (or vanished) before the write committed;
    nothing of the write was stored. The writer catches up and decides again."""

    def __init__(self, key: str) -> None:
        super().__init__(f"record {key!r} changed under this write; nothing was stored")
        self.key = key


class NotFoundError(_PlainKeyError):
    """A session or message that does not exist."""


class ContextTooLongError(AiriMemoryError):
    """The parts that must be sent (system prompt, context, newest turn) exceed the budget."""


class ProviderError(AiriMemoryError):
    """An LLM or embedding provider failed: unreachable, timed out, an HTTP error, or a
    reply that does not follow its protocol. Nothing stored was changed."""


class SqlEngineStoppedError(AiriMemoryError):
    """DuckDB's worker died or stopped answering (a call outlived ``timeouts.sqlMs``):
    this and every later query fails until the page opens the memory system again.
    Writes still reach IndexedDB, and a new memory system loads them."""

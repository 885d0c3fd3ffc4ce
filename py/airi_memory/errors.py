"""Errors the facade reports by name, so JS callers can branch on ``error.name``."""


class AiriMemoryError(Exception):
    """Base of every error airi-memory raises on purpose."""


class InvalidKeyError(AiriMemoryError, ValueError):
    """A storage key or base that unstorage's rules reject, or that we refuse to store."""


class UnknownMountError(AiriMemoryError, KeyError):
    """A mount point that is not mounted."""

    def __str__(self) -> str:  # KeyError would quote the whole message
        return str(self.args[0])


class InvalidValueError(AiriMemoryError, ValueError):
    """A value that cannot be stored (not JSON-serialisable, wrong raw type ...)."""


class ReadOnlyQueryError(AiriMemoryError, ValueError):
    """A diagnostic query that would change the database."""


class UnknownMethodError(AiriMemoryError, AttributeError):
    """The facade asked for a method the Python core does not expose."""


class SqlError(AiriMemoryError):
    """DuckDB refused a statement; the message is DuckDB's own."""

"""Checks of the plain arguments the session methods take from JavaScript."""

from typing import Any

from ..errors import InvalidValueError


def options_of(raw: Any, allowed: set[str], what: str) -> dict[str, Any]:
    """An options object (None for none), refusing names it does not know."""
    if raw is None:
        return {}
    if not isinstance(raw, dict):
        raise InvalidValueError(f"{what} options must be an object")
    unknown = sorted(set(raw) - allowed)
    if unknown:
        raise InvalidValueError(f"unknown {what} option {unknown[0]!r}; allowed: {sorted(allowed)}")
    return raw


def count_of(value: Any, what: str) -> int:
    if not isinstance(value, int) or isinstance(value, bool) or value < 0:
        raise InvalidValueError(f"{what} must be a non-negative integer")
    return value

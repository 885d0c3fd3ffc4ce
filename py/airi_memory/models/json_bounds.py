"""How big and how deep a JSON value is, and whether all of its text is text.

Plain JSON data (dicts, lists, strings, numbers), no pydantic: the wire models bound
their input with it, and so do the import, the context store and search, which measure
data before any model reads it. Iterative walks, so hostile nesting cannot exhaust the
interpreter's stack; errors name the place (``a.b[2]``).
"""

import math
from typing import Any


class JsonLimitError(ValueError):
    """A JSON value over a nesting bound, or not JSON; ``path`` names where (``a.b[2]``)."""

    def __init__(self, path: str, reason: str) -> None:
        super().__init__(f"{path}: {reason}")
        self.path = path
        self.reason = reason


class JsonSizeError(JsonLimitError):
    """A JSON value over its bound in bytes: the value as a whole, no one place in it."""


def _text_bytes(text: str) -> int:
    return len(text) if text.isascii() else len(text.encode("utf-8", "surrogatepass"))


def join_path(head: str, tail: str) -> str:
    """``head`` and a path below it: ``a`` + ``b[1]`` is ``a.b[1]``, ``a`` + ``[1]`` is ``a[1]``."""
    if not tail:
        return head
    return head + tail if tail.startswith("[") or not head else f"{head}.{tail}"


def _where(trail: tuple[Any, ...] | None) -> str:
    parts: list[str] = []
    while trail is not None:
        trail, key = trail
        parts.append(f"[{key}]" if isinstance(key, int) else f".{key}")
    return "".join(reversed(parts)).lstrip(".")


def json_size(value: Any, max_bytes: int, max_depth: int) -> int:
    """Bytes of ``value`` as compact UTF-8 JSON (escapes not counted), measured without
    building the text and given up as soon as ``max_bytes`` is passed; objects and lists
    nested deeper than ``max_depth`` are refused. Iterative: hostile nesting cannot
    exhaust the interpreter's stack."""
    total = 0
    stack: list[tuple[Any, int, tuple[Any, ...] | None]] = [(value, 1, None)]
    while stack:
        item, depth, trail = stack.pop()
        if isinstance(item, str):
            total += _text_bytes(item) + 2
        elif isinstance(item, dict | list | tuple):
            if depth > max_depth:
                raise JsonLimitError(_where(trail), f"nested more than {max_depth} levels deep")
            if isinstance(item, dict):
                total += max(2 * len(item) + 1, 2)  # braces, colons, commas
                for key, child in item.items():
                    total += _text_bytes(str(key)) + 2
                    stack.append((child, depth + 1, (trail, key)))
            else:
                total += max(len(item) + 1, 2)  # brackets, commas
                stack.extend((child, depth + 1, (trail, i)) for i, child in enumerate(item))
        elif item is None or item is True:
            total += 4
        elif item is False:
            total += 5
        elif isinstance(item, int) or (isinstance(item, float) and math.isfinite(item)):
            total += len(repr(item))
        elif isinstance(item, float):  # stored, it would read back as null
            raise JsonLimitError(_where(trail), f"{item} is not a JSON number")
        else:
            raise JsonLimitError(_where(trail), f"{type(item).__name__} is not JSON data")
        if total > max_bytes:
            raise JsonSizeError("", f"more than {max_bytes:,} bytes of JSON")
    return total


def lone_surrogate_path(value: Any) -> str | None:
    """Where JSON data holds a lone surrogate (``a.b[2]``, ``""`` for the value itself), or
    None. JSON escapes allow one and a JS string may hold one, but it has no UTF-8 form:
    DuckDB refuses it and the browser's encoders replace it, so it would not read back."""
    stack: list[tuple[Any, tuple[Any, ...] | None]] = [(value, None)]
    while stack:
        item, trail = stack.pop()
        if isinstance(item, str):
            if _not_text(item):
                return _where(trail)
        elif isinstance(item, dict):
            for key, child in item.items():
                if isinstance(key, str) and _not_text(key):
                    return _where((trail, key))
                stack.append((child, (trail, key)))
        elif isinstance(item, list | tuple):
            stack.extend((child, (trail, index)) for index, child in enumerate(item))
    return None


def _not_text(text: str) -> bool:
    """True when ``text`` holds a lone surrogate."""
    if text.isascii():
        return False
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        return True
    return False

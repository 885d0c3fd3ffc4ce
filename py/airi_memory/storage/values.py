"""How unstorage turns values into stored text and back (``stringify`` and ``destr``).

``set_item`` stores what unstorage's ``stringify`` would: primitives as ``String(v)``,
objects and arrays as JSON. ``get_item`` parses like ``destr`` 2.0.5, the parser
unstorage uses, so that ``"5"`` reads back as ``5`` on both sides: the same surprise
unstorage users already live with, but the two libraries never disagree.

One bound of our own: lists and objects nest at most ``MAX_VALUE_DEPTH`` levels. Deeper
input is refused (Python's JSON encoder would give out with a RecursionError); deeper
stored text, which only something else can have written, reads back as the text itself,
as destr returns any text it cannot parse. Every JSON text the core parses goes through
``loads``, which measures the nesting first: in Pyodide, ``json.loads`` of text nested
some thousands deep overflows the WebAssembly stack and kills the interpreter for good.
"""

import json
import math
import re
from typing import Any

from ..errors import InvalidValueError

# Far above any JSON a person designs, far below the depth where Python's recursive JSON
# encoder and parser (and the walks over their results) exhaust the stack, in Pyodide too.
MAX_VALUE_DEPTH = 128
_JSON_SIGNATURE = re.compile(r'^\s*["\[{]|^\s*-?\d{1,16}(\.\d{1,17})?([Ee][+-]?\d+)?\s*$')
_SPECIAL_WORDS: dict[str, Any] = {
    "true": True,
    "false": False,
    "undefined": None,
    "null": None,
    "nan": math.nan,
    "infinity": math.inf,
    "-infinity": -math.inf,
}


def _js_number(value: int | float) -> str:
    """``String(n)`` for a JS number: ``1.0`` is ``"1"``, ``inf`` is ``"Infinity"``."""
    if isinstance(value, float):
        if math.isnan(value):
            return "NaN"
        if math.isinf(value):
            return "Infinity" if value > 0 else "-Infinity"
        if value.is_integer() and abs(value) < 1e21:
            return str(int(value))
        return repr(value)
    return str(value)


def stringify(value: Any, key: str) -> str:
    """unstorage's ``stringify``; raises naming ``key`` when the value has no JSON form."""
    if value is None:
        return "null"
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, int | float):
        return _js_number(value)
    if isinstance(value, str):
        return value
    if isinstance(value, dict | list | tuple):
        if nested_too_deep(value):
            raise InvalidValueError(
                f"value for key {key!r} is nested more than {MAX_VALUE_DEPTH} levels deep"
            )
        try:
            return json.dumps(value, ensure_ascii=False, separators=(",", ":"), allow_nan=False)
        except (TypeError, ValueError) as error:
            raise InvalidValueError(
                f"value for key {key!r} is not JSON-serialisable: {error}"
            ) from None
    raise InvalidValueError(
        f"value for key {key!r} is not JSON-serialisable: {type(value).__name__}"
    )


class NestedTooDeepError(ValueError):
    """JSON text nested deeper than its reader allows; refused before it is parsed."""


_JSON_STRING = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')
_JSON_BRACKET = re.compile(r"[\[\]{}]")


def json_depth(text: str) -> int:
    """How deep lists and objects nest in JSON ``text``, brackets in strings aside,
    counted without recursion."""
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub("", text)):
        if bracket in "[{":
            depth += 1
            deepest = max(deepest, depth)
        else:
            depth -= 1
    return deepest


def loads(text: str | bytes, max_depth: int = MAX_VALUE_DEPTH, **options: Any) -> Any:
    """``json.loads``, refusing text nested more than ``max_depth`` levels
    (NestedTooDeepError, a ValueError) before the recursive parser sees it."""
    if isinstance(text, bytes | bytearray):
        text = text.decode("utf-8")
    if text.count("[") + text.count("{") > max_depth and json_depth(text) > max_depth:
        raise NestedTooDeepError(f"JSON text nested more than {max_depth} levels deep")
    return json.loads(text, **options)


def destr(value: Any) -> Any:
    """destr 2.0.5 (non-strict): parse stored text the way unstorage's ``getItem`` does."""
    if not isinstance(value, str):
        return value
    if value and value[0] == '"' and value[-1] == '"' and "\\" not in value:
        return value[1:-1]
    trimmed = value.strip()
    if len(trimmed) <= 9 and trimmed.lower() in _SPECIAL_WORDS:
        return _SPECIAL_WORDS[trimmed.lower()]
    if not _JSON_SIGNATURE.search(value):
        return value
    try:
        parsed = loads(value, parse_constant=_reject_constant)
    except ValueError:  # not JSON, or nested deeper than MAX_VALUE_DEPTH
        return value
    return _drop_prototype_keys(parsed)


def nested_too_deep(value: Any) -> bool:
    """Whether lists and objects in ``value`` nest more than ``MAX_VALUE_DEPTH`` levels,
    walked without recursion, so hostile nesting cannot exhaust the stack."""
    containers = dict | list | tuple
    stack: list[tuple[Any, int]] = [(value, 1)] if isinstance(value, containers) else []
    while stack:
        item, depth = stack.pop()
        children = item.values() if isinstance(item, dict) else item
        if depth > MAX_VALUE_DEPTH:
            return True
        stack.extend((child, depth + 1) for child in children if isinstance(child, containers))
    return False


def _reject_constant(name: str) -> None:
    """JSON.parse has no NaN / Infinity literals; Python's json does. Stay with JSON.parse."""
    raise ValueError(name)


def _drop_prototype_keys(value: Any) -> Any:
    """destr drops ``__proto__`` keys (prototype pollution); so do we, to read the same."""
    if isinstance(value, dict):
        return {k: _drop_prototype_keys(v) for k, v in value.items() if k != "__proto__"}
    if isinstance(value, list):
        return [_drop_prototype_keys(v) for v in value]
    return value

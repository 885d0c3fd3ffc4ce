"""Crossing the bridge between Python and JavaScript, written once for every port."""

from typing import Any

from js import Object
from pyodide.ffi import JsProxy, to_js


def to_python(value: Any) -> Any:
    """Typed arrays become bytes (one copy); other JS values their Python equivalents."""
    if not isinstance(value, JsProxy):
        return value
    if hasattr(value, "to_bytes"):
        return value.to_bytes()
    return value.to_py()


def to_javascript(value: Any) -> Any:
    """Dicts become plain JS objects (not Maps), as JS callees expect their options."""
    return to_js(value, dict_converter=Object.fromEntries)

"""The fault suite's own checks: a refusal must name the offending value, whichever Python
wrote the message."""

import pytest

from harness import assert_refused

REFUSED = {"ok": False, "error": {"name": "InvalidValueError", "message": ""}}


def refusal(message: str) -> dict:
    return {**REFUSED, "error": {**REFUSED["error"], "message": message}}


def test_a_refusal_names_a_value_whichever_unicode_version_escaped_it():
    # CPython 3.11 escapes U+13440 in a repr (unassigned there); Pyodide's 3.14 prints it.
    hint = repr("\U00013440")
    assert hint == "'\\U00013440'"
    assert_refused(refusal("context from '\U00013440' is 100012 characters"), (hint,))
    assert_refused(refusal("context from '\\U00013440' is 100012 characters"), (hint,))
    assert_refused(refusal("key 'a\\\\UFFFFFFFF' refused"), (repr("a\\UFFFFFFFF"),))
    # A hint cut short inside an escape (key_hints keeps 12 characters) still matches.
    assert_refused(refusal("invalid storage key 'outbox:0\\x1f'"), ("'outbox:0\\x1",))
    with pytest.raises(AssertionError, match="does not name"):
        assert_refused(refusal("context from '\U00013441' is too big"), (hint,))

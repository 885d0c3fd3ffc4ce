"""unstorage's key rules, in one place (unstorage ``src/utils.ts`` and ``src/storage.ts``).

Keys are normalised the way unstorage does it, so that a key written by Python and the
same key written by the real ``unstorage`` package land on the same IndexedDB record.
On top of unstorage's own checks we refuse keys it would accept but that cannot round-trip
(control characters, the ``$`` suffix unstorage reserves for meta data).
"""

import re

from ..errors import InvalidKeyError

_SEPARATORS = re.compile(r"[/\\]")
_REPEATED_COLONS = re.compile(r":+")
_EDGE_COLON = re.compile(r"^:|:$")
_CONTROL_CHARACTERS = re.compile(r"[\x00-\x1f\x7f]")
MAX_KEY_LENGTH = 1024
# What in an id would change or break the key it becomes part of: the separators
# (``/ \ :``), ``?`` (unstorage drops the rest), ``$`` (a trailing one is reserved),
# control characters, and ``%`` itself, so that the encoding can always be undone.
_UNSAFE_IN_SEGMENT = re.compile(r"[%:/\\?$\x00-\x1f\x7f]")


def key_segment(value: str) -> str:
    """An id (user, character, session) as one key segment: different ids never share a
    key, and the key passes ``item_key`` unchanged. Only characters unstorage would
    change or refuse are percent-encoded (and ``.`` / ``..``, whole), so ordinary ids,
    nanoid-like or not, keep the keys they always had."""
    if not value:
        raise InvalidKeyError("an id used in a storage key must not be empty")
    if value in (".", ".."):
        return value.replace(".", "%2E")
    return _UNSAFE_IN_SEGMENT.sub(lambda found: f"%{ord(found.group()):02X}", value)


def from_key_segment(segment: str) -> str:
    """The id ``key_segment`` encoded."""
    if "%" not in segment:  # most ids: and urllib.parse costs 25 ms of a start to import
        return segment
    from urllib.parse import unquote

    return unquote(segment)


def normalize_key(key: str | None) -> str:
    """Exactly unstorage's ``normalizeKey``: drop ``?query``, ``/`` and ``\\`` -> ``:``."""
    if not key:
        return ""
    key = key.split("?")[0]
    key = _SEPARATORS.sub(":", key)
    key = _REPEATED_COLONS.sub(":", key)
    return _EDGE_COLON.sub("", key)


def normalize_base(base: str | None) -> str:
    """unstorage's ``normalizeBaseKey``: a normalised prefix ending in ``:``, or ``""``."""
    base = normalize_key(base)
    return f"{base}:" if base else ""


def has_dot_segment(key: str) -> bool:
    return any(segment in (".", "..") for segment in key.split(":"))


def item_key(key: object) -> str:
    """Normalise and validate a key that names one item; the error names the key."""
    if not isinstance(key, str):
        raise InvalidKeyError(f"storage key must be a string, got {type(key).__name__}: {key!r}")
    normalized = normalize_key(key)
    if not normalized:
        raise InvalidKeyError(f"invalid storage key {key!r}: it is empty after normalisation")
    if has_dot_segment(normalized):
        raise InvalidKeyError(f"invalid storage key {key!r}: '.' and '..' segments are not allowed")
    if _CONTROL_CHARACTERS.search(normalized):
        raise InvalidKeyError(f"invalid storage key {key!r}: control characters are not allowed")
    if normalized.endswith("$"):
        raise InvalidKeyError(
            f"invalid storage key {key!r}: a trailing '$' is reserved for unstorage meta data"
        )
    if len(normalized) > MAX_KEY_LENGTH:
        raise InvalidKeyError(
            f"invalid storage key {key[:40]!r}...: longer than {MAX_KEY_LENGTH} characters"
        )
    return normalized


def base_key(base: object) -> str:
    """Normalise and validate a base (prefix) for ``get_keys`` / ``clear`` / ``mount``."""
    if base is None:
        return ""
    if not isinstance(base, str):
        raise InvalidKeyError(f"storage base must be a string, got {type(base).__name__}: {base!r}")
    normalized = normalize_base(base)
    if has_dot_segment(normalized):
        raise InvalidKeyError(
            f"invalid storage base {base!r}: '.' and '..' segments are not allowed"
        )
    if _CONTROL_CHARACTERS.search(normalized):
        raise InvalidKeyError(f"invalid storage base {base!r}: control characters are not allowed")
    return normalized


def key_in_base(key: str, base: str) -> bool:
    """unstorage's ``filterKeyByBase``: inside ``base`` and not a ``$`` meta key."""
    return key.startswith(base) and not key.endswith("$")

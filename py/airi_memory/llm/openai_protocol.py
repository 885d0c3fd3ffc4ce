"""What every OpenAI-compatible call shares (chat completions, embeddings): the key as a
Bearer header, one ``ProviderError`` for an HTTP error or a reply that breaks the
protocol, and the configuration fields they all have, shown without the key.

Provider errors are stored (summary retries) and shown (status, rejected promises), so
their text is redacted where it is made: URLs without query or credentials, a provider's
reply cut to a short excerpt, and the key (or any Bearer token) never in it.
"""

import json
import re
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError, field_validator
from pydantic_core import PydanticCustomError

from ..errors import ProviderError
from ..http import HttpTransport

Reply = TypeVar("Reply", bound=BaseModel)
EXCERPT_CHARS = 200  # of a provider's reply, in an error
ERROR_CHARS = 300  # of a whole error message, as stored
LOOPBACK_HOSTS = frozenset({"localhost", "127.0.0.1", "::1"})
_URL = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://[^\s\"'<>]+")
_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',;]+")


def public_url(url: str) -> str:
    """``scheme://host/path``: no query, fragment or credentials, which may hold a key."""
    from urllib.parse import urlsplit  # here: 25 ms of a start, for a provider's URL only

    try:
        parts = urlsplit(url)
    except ValueError:
        return "(a malformed URL)"
    return f"{parts.scheme}://{parts.netloc.rpartition('@')[2]}{parts.path}"


def redacted(text: str, api_key: SecretStr | None, limit: int = EXCERPT_CHARS) -> str:
    """Text from a provider or the network, fit to store or show: the key and Bearer
    tokens removed (a provider may echo them), URLs made public, at most ``limit`` chars."""
    if api_key:
        text = text.replace(api_key.get_secret_value(), "[redacted]")
    text = _BEARER.sub(r"\1[redacted]", text)
    text = _URL.sub(lambda found: public_url(found.group()), text)
    return text if len(text) <= limit else text[:limit] + "…"


async def post(
    transport: HttpTransport,
    url: str,
    api_key: SecretStr | None,
    body: dict[str, Any],
    timeout_ms: int,
    reply: type[Reply],
    what: str,
) -> Reply:
    """POST ``body`` as JSON and parse the answer as ``reply`` (``what`` names it in errors)."""
    headers = {"Content-Type": "application/json"}
    if api_key:
        headers["Authorization"] = f"Bearer {api_key.get_secret_value()}"
    try:
        answer = await transport.post_json(
            url, headers, json.dumps(body, ensure_ascii=False), timeout_ms / 1000
        )
    except ProviderError as error:  # the network's own words (fetch's are the browser's)
        raise ProviderError(redacted(str(error), api_key, ERROR_CHARS)) from None
    shown = public_url(url)
    if answer.status != 200:
        raise ProviderError(
            f"{shown} answered HTTP {answer.status}: {redacted(answer.text, api_key)}"
        )
    try:
        return reply.model_validate_json(answer.text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ProviderError(
            f"{shown} sent a reply that is not {what} (at {where!r}: {first['msg']}): "
            f"{redacted(answer.text, api_key, 120)!r}"
        ) from None


def safe_endpoint(url: str) -> str:
    """A URL a key and the user's conversations may be sent to: encrypted unless it stays
    on this machine, and nothing secret in the URL itself (it is shown in status and
    errors). A pydantic validator: raises ``PydanticCustomError``."""
    from urllib.parse import urlsplit  # as in public_url

    try:
        parts = urlsplit(url)
        host = parts.hostname
    except ValueError:
        host = None
    if host is None or parts.scheme not in ("https", "http"):
        raise PydanticCustomError(
            "url_scheme", "must be an https:// URL, such as https://api.openai.com/v1"
        )
    if parts.scheme == "http" and host not in LOOPBACK_HOSTS:
        raise PydanticCustomError(
            "url_insecure",
            "must use https://: http:// is allowed only to this machine (localhost, "
            "127.0.0.1, ::1), since the key and the conversation would travel in clear",
        )
    if parts.query or parts.fragment or "@" in parts.netloc:
        raise PydanticCustomError(
            "url_secret",
            "must not carry a query, fragment or credentials: the key belongs in apiKey",
        )
    return url


class ProviderConfig(BaseModel):
    """Where a remote provider is and how to reach it; the key never leaves this object."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    base_url: str = Field(default="https://api.openai.com/v1", alias="baseUrl", min_length=1)
    api_key: SecretStr | None = Field(default=None, alias="apiKey")
    timeout_ms: int = Field(default=30_000, alias="timeoutMs", ge=100, le=600_000)

    _safe_base_url = field_validator("base_url")(lambda url: safe_endpoint(url))

    def public(self) -> dict[str, Any]:
        """The configuration as it may be shown: everything but the key."""
        fields = self.model_dump(by_alias=True, exclude={"api_key"})
        return {**fields, "apiKey": "set" if self.api_key else None}

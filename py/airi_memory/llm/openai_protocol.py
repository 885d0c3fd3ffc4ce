"""What every OpenAI-compatible call shares (chat completions, embeddings): the key as a
Bearer header, one ``ProviderError`` for an HTTP error or a reply that breaks the
protocol, and the configuration fields they all have, shown without the key."""

import json
from typing import Any, TypeVar

from pydantic import BaseModel, ConfigDict, Field, SecretStr, ValidationError

from ..errors import ProviderError
from .transport import HttpTransport

Reply = TypeVar("Reply", bound=BaseModel)


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
    answer = await transport.post_json(
        url, headers, json.dumps(body, ensure_ascii=False), timeout_ms / 1000
    )
    if answer.status != 200:
        raise ProviderError(f"{url} answered HTTP {answer.status}: {answer.text[:200]}")
    try:
        return reply.model_validate_json(answer.text)
    except ValidationError as error:
        first = error.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "body"
        raise ProviderError(
            f"{url} sent a reply that is not {what} (at {where!r}: {first['msg']}): "
            f"{answer.text[:120]!r}"
        ) from None


class ProviderConfig(BaseModel):
    """Where a remote provider is and how to reach it; the key never leaves this object."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    base_url: str = Field(default="https://api.openai.com/v1", alias="baseUrl", min_length=1)
    api_key: SecretStr | None = Field(default=None, alias="apiKey")
    timeout_ms: int = Field(default=30_000, alias="timeoutMs", ge=100, le=600_000)

    def public(self) -> dict[str, Any]:
        """The configuration as it may be shown: everything but the key."""
        fields = self.model_dump(by_alias=True, exclude={"api_key"})
        return {**fields, "apiKey": "set" if self.api_key else None}

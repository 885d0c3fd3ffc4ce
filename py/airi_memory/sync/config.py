"""``SyncConfig``, as the seed has it, validated; the API key held in memory only."""

from typing import Any

from pydantic import BaseModel, ConfigDict, Field, SecretStr, field_validator, model_validator

from ..llm.openai_protocol import safe_endpoint


class SyncConfig(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    enabled: bool = False
    endpoint: str | None = Field(default=None, min_length=1, max_length=2048)
    api_key: SecretStr | None = Field(default=None, alias="apiKey", max_length=4096)
    auto_sync: bool = Field(default=True, alias="autoSync")
    sync_interval: int = Field(default=30_000, alias="syncInterval", ge=1000, le=86_400_000)
    timeout_ms: int = Field(default=30_000, alias="timeoutMs", ge=100, le=600_000)

    _safe_endpoint = field_validator("endpoint")(
        lambda url: None if url is None else safe_endpoint(url)
    )

    @model_validator(mode="after")
    def _complete_when_enabled(self) -> "SyncConfig":
        if self.enabled and (self.endpoint is None or self.api_key is None):
            raise ValueError("enabled sync needs both endpoint and apiKey")
        return self

    @property
    def base_url(self) -> str:
        return (self.endpoint or "").rstrip("/")

    def public(self) -> dict[str, Any]:
        """The configuration as it may be shown: everything but the key."""
        fields = self.model_dump(by_alias=True, exclude={"api_key"})
        return {**fields, "apiKey": "set" if self.api_key else None}

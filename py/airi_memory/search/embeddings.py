"""Embedding providers behind one port: ``local`` (all-MiniLM-L6-v2 in the page, the
default), ``openai`` (any OpenAI-compatible ``/embeddings`` endpoint) and ``custom`` (a
function the app supplies). Vectors travel as float32 bytes, row after row, and are
L2-normalised here, so cosine similarity is their dot product whatever the source."""

import asyncio
import math
from abc import ABC, abstractmethod
from array import array
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import InvalidValueError, ProviderError
from ..http import HttpTransport
from ..llm.openai_protocol import ProviderConfig, post

LOCAL_MODEL = "all-MiniLM-L6-v2"
LOCAL_DIMENSIONS = 384


class EmbeddingConfig(ProviderConfig):
    """The seed's ``EmbeddingConfig`` (provider, model, dimensions) and what a provider needs."""

    provider: Literal["local", "openai", "custom", "none"] = "local"
    model: str = Field(default=LOCAL_MODEL, min_length=1, max_length=128)
    dimensions: int = Field(default=LOCAL_DIMENSIONS, ge=8, le=4096)
    batch_size: int = Field(default=16, alias="batchSize", ge=1, le=256)
    # Embed new messages as they arrive (default), or only when the app asks (indexNow).
    background_indexing: bool = Field(default=True, alias="backgroundIndexing")

    @property
    def key(self) -> str:
        """Names this model's vectors in storage: two models' vectors never mix."""
        safe = "".join(c if c.isalnum() or c in "-_" else "_" for c in self.model)
        return f"{self.provider}-{safe}-{self.dimensions}"


class Embedder(ABC):
    def __init__(self, config: EmbeddingConfig) -> None:
        self.config = config

    @abstractmethod
    async def embed(self, texts: list[str]) -> bytes:
        """float32 vectors of ``texts``, row after row, each of ``config.dimensions``."""

    def checked(self, rows: list[list[float]], count: int) -> bytes:
        """Rows from a remote provider, checked and normalised, as float32 bytes."""
        if len(rows) != count:
            raise ProviderError(
                f"the embedding provider returned {len(rows)} vectors for {count} texts"
            )
        flat = array("f")
        for row in rows:
            if len(row) != self.config.dimensions:
                raise ProviderError(
                    f"the embedding provider returned {len(row)} dimensions, but "
                    f"{self.config.model!r} is configured with {self.config.dimensions}"
                )
            norm = math.sqrt(sum(x * x for x in row)) or 1.0
            flat.extend(x / norm for x in row)
        return flat.tobytes()


class _Item(BaseModel):
    embedding: list[float]
    index: int = 0


class _Embeddings(BaseModel):
    data: list[_Item]


class OpenAiEmbedder(Embedder):
    def __init__(self, config: EmbeddingConfig, transport: HttpTransport) -> None:
        super().__init__(config)
        self.transport = transport
        self.url = config.base_url.rstrip("/") + "/embeddings"

    async def embed(self, texts: list[str]) -> bytes:
        config = self.config
        body = {"model": config.model, "input": texts}
        reply = await post(
            self.transport, self.url, config.api_key, body, config.timeout_ms, _Embeddings,
            "an embeddings list",
        )  # fmt: skip
        items = sorted(reply.data, key=lambda item: item.index)
        return self.checked([item.embedding for item in items], len(texts))


class CallbackEmbedder(Embedder):
    def __init__(
        self, config: EmbeddingConfig, callback: Callable[[dict[str, Any]], Awaitable[Any]]
    ) -> None:
        super().__init__(config)
        self.callback = callback

    async def embed(self, texts: list[str]) -> bytes:
        request = {"texts": texts, "model": self.config.model}
        try:
            rows = await asyncio.wait_for(self.callback(request), self.config.timeout_ms / 1000)
        except TimeoutError:
            raise ProviderError(
                f"the app's embedding function did not answer within {self.config.timeout_ms} ms"
            ) from None
        except Exception as error:
            raise ProviderError(f"the app's embedding function failed: {error}") from None
        if not isinstance(rows, list) or not all(isinstance(r, list) for r in rows):
            raise ProviderError("the app's embedding function must return a list of number lists")
        return self.checked(rows, len(texts))


def make_embedder(
    config: EmbeddingConfig,
    local: Callable[[EmbeddingConfig], Embedder] | None,
    transport: HttpTransport | None,
    call_app: Callable[[str, Any], Awaitable[Any]] | None,
) -> tuple[Embedder | None, str | None]:
    """The embedder a configuration asks for, or None and why there is none."""
    if config.provider == "none":
        return None, "embeddings are turned off (provider 'none')"
    if config.provider == "local":
        if local is None:
            return None, "this host has no local embedding model"
        return local(config), None
    if config.provider == "openai":
        if transport is None:
            raise InvalidValueError("this host has no HTTP transport for embeddings")
        return OpenAiEmbedder(config, transport), None
    if call_app is None:
        raise InvalidValueError("provider 'custom' needs an embed function from the app")
    return CallbackEmbedder(config, lambda request: call_app("embed", request)), None

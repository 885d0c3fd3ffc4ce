"""The embedding port in the browser: the local model in its own worker (see
web/worker/embedder.mjs), reached through the host; vectors arrive as one Float32Array.
The host bounds each call (``timeoutMs`` once the model is loaded, the options'
``timeouts.embeddingLoadMs`` before) and rejects it when the model's worker dies."""

from typing import Any

from pyodide.ffi import JsException, to_js

from ..errors import ProviderError
from ..search.embeddings import Embedder, EmbeddingConfig


class LocalEmbedder(Embedder):
    def __init__(self, config: EmbeddingConfig, host_embedder: Any) -> None:
        super().__init__(config)
        self._js = host_embedder

    async def embed(self, texts: list[str]) -> bytes:
        try:
            return (await self._js.embed(to_js(texts), self.config.timeout_ms)).to_bytes()
        except JsException as error:
            raise ProviderError(f"the local embedding model failed: {error}") from None

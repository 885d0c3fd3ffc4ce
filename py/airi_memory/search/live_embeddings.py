"""The embedding model in use and its vector index, replaced when the app configures another.

The system holds one: writes wake its index, search reads the index through the
``Searcher``, and the facade's ``configureEmbeddings`` / ``embeddingsStatus`` /
``indexEmbeddings`` act on it. How an embedder and an index are made (the host's ports,
storage, the clock) is the system's wiring, passed in as two factories.
"""

from collections.abc import Callable
from typing import Any

from ..errors import InvalidValueError
from ..models import validate_or_raise
from .embeddings import Embedder, EmbeddingConfig
from .semantic import VectorIndex
from .service import Searcher

# An embedder for a config, or None and a note saying why there is none.
MakeEmbedder = Callable[[EmbeddingConfig], tuple[Embedder | None, str | None]]


class LiveEmbeddings:
    def __init__(
        self,
        searcher: Searcher,
        make_embedder: MakeEmbedder,
        make_index: Callable[[Embedder], VectorIndex],
    ) -> None:
        self.searcher = searcher
        self._make_embedder = make_embedder
        self._make_index = make_index
        self.vectors: VectorIndex | None = None
        self.note: str | None = None

    def use(self, config: EmbeddingConfig) -> None:
        """Start indexing with the model ``config`` names (none for ``provider: none``)."""
        embedder, self.note = self._make_embedder(config)
        self.vectors = self._make_index(embedder) if embedder else None
        self.searcher.semantic = self.vectors
        if self.vectors is not None:
            self.vectors.start()

    async def configure(self, config: Any) -> dict[str, Any]:
        """Another provider or model: its own vectors (stored ones reused, the rest
        embedded in the background); the previous model's vectors stay stored, unused."""
        parsed = validate_or_raise(EmbeddingConfig, config or {}, "embeddings")
        await self.stop()
        self.use(parsed)
        return await self.status()

    def wake(self, deleted: bool) -> None:
        """A message was written (or a session deleted): there may be work to do."""
        if self.vectors is not None:
            self.vectors.notify(deleted)

    def require_vectors(self) -> VectorIndex:
        if self.vectors is None:
            raise InvalidValueError("no embedding model is configured")
        return self.vectors

    async def index_now(self) -> dict[str, Any]:
        """Embed what is pending now (with ``backgroundIndexing: false``, the only way)."""
        vectors = self.require_vectors()
        await vectors.index_now()
        return vectors.status()

    async def status(self) -> dict[str, Any]:
        if self.vectors is None:
            return {"state": "off", "note": self.note}
        return self.vectors.status()

    async def stop(self) -> None:
        if self.vectors is not None:
            await self.vectors.stop()

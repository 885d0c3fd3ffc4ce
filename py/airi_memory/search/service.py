"""``memorySystem.search``: the seed's future ``SearchQuery`` API over keyword (BM25),
semantic (vectors) and recency, fused; and the seed's substring ``searchMessages``.

Strategies: ``keyword`` and ``semantic`` use one retriever; ``relevant`` fuses both
(reciprocal-rank fusion, or scores min-max scaled within each retriever's candidates and
weighted); ``hybrid`` (the seed's default)
weighs that relevance against recency with ``hybridWeights``; ``recent`` is the newest
messages. Every score is in [0, 1] and ``threshold`` applies to it. Filters are applied
in SQL before anything is ranked. With ``speakers``, a query that names one of them
prefers that speaker's turns.
"""

import asyncio
import math
import re
import time
from array import array
from collections.abc import Awaitable, Callable, Sequence
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, FiniteFloat

from ..errors import InvalidValueError
from ..models import DAY_MS, Speakers, lone_surrogate_path, validate_or_raise
from ..sessions import SessionStore
from ..sql import SqlEngine
from ..storage.values import loads
from . import keyword
from .doc_scope import DocScope, allowed_docs, sessions_in_scope
from .early_vectors import EarlyVectors, Retired
from .filters import Scope, SearchFilters, scope
from .term_index import TermIndex
from .text import fold

Strategy = Literal["keyword", "semantic", "relevant", "hybrid", "recent"]
RRF_K = 60
CANDIDATES = 5  # each retriever brings limit x this many candidates to fuse and re-rank
MAX_WANT = 4096  # the most candidates asked for when exclusions crowd out the results
# A query naming one speaker ("What did Maya name the dog?") prefers that speaker's turns:
# every other turn's score counts half in each retriever's list, and its fused relevance
# half again (min-max scaling would otherwise undo most of it). Long set (make eval),
# recall@10 at 2: keyword 0.562 -> 0.680, semantic 0.495 -> 0.774, relevant 0.579 ->
# 0.816 (halved after fusion only: 0.702, below semantic). 3 and 4 gained under 0.015.
SPEAKER_BOOST = 2.0


class HybridWeights(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    recency: float = Field(default=0.6, ge=0, le=1)
    relevance: float = Field(default=0.4, ge=0, le=1)


class RetrievalConfig(BaseModel):
    """The seed's ``RetrievalConfig`` and its defaults, plus how relevance is fused."""

    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    strategy: Strategy = "hybrid"
    recent_count: int = Field(default=10, alias="recentCount", ge=1, le=1000)
    relevance_threshold: float = Field(default=0.7, alias="relevanceThreshold", ge=0, le=1)
    hybrid_weights: HybridWeights = Field(default_factory=HybridWeights, alias="hybridWeights")
    # Min-max scaled scores, both sides weighted alike: on both evaluation sets (make eval)
    # the fusion measured that beats the better single retriever at recall@10 with the
    # best sum (standard 0.940 against semantic's 0.935; long conversations 0.579 against
    # keyword's 0.562). Keyword weighted 0.3 lost to keyword on the long set (0.559);
    # reciprocal rank lost to semantic on the standard one (0.931 at equal weights).
    fusion: Literal["rrf", "scores"] = "scores"
    # How much a keyword match counts against a semantic one when they are fused (the
    # semantic side weighs 1).
    keyword_weight: float = Field(default=1.0, alias="keywordWeight", ge=0, le=1)
    recency_half_life_days: float = Field(default=30, alias="recencyHalfLifeDays", gt=0)


class SearchQuery(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    query: str = Field(default="", max_length=10_000)
    limit: int = Field(default=10, ge=1, le=1000)
    threshold: float = Field(default=0, ge=0, le=1)
    filters: SearchFilters = Field(default_factory=SearchFilters)
    strategy: Strategy | None = None
    exclude_ids: list[str] = Field(default_factory=list, alias="excludeIds", max_length=100_000)
    # The query's embedding, when the app has it already (semantic search then skips the
    # model); it must have the configured model's dimensions, and numbers (NaN would
    # make every score NaN, and the ranking arbitrary).
    vector: list[FiniteFloat] | None = Field(default=None, max_length=4096)
    speakers: Speakers | None = None


class SemanticRetriever(Protocol):
    """The vector side (``search.semantic``), when embeddings are configured."""

    async def early_vectors(self) -> EarlyVectors | None: ...

    async def nearest(
        self, query: str, allow: Sequence[int] | None, limit: int, early: EarlyVectors | None
    ) -> list[dict[str, Any]]: ...

    async def nearest_to(
        self,
        vector: list[float],
        allow: Sequence[int] | None,
        limit: int,
        early: EarlyVectors | None,
    ) -> list[dict[str, Any]]: ...

    def status(self) -> dict[str, Any]: ...


class Searcher:
    def __init__(
        self,
        sessions: SessionStore,
        sql: SqlEngine,
        config: RetrievalConfig,
        terms: TermIndex,
        doc_scope: DocScope,
        until_loaded: Callable[[], Awaitable[None]],
    ) -> None:
        """``terms`` and ``doc_scope``: what the mirror keeps beside DuckDB for search
        (``SearchTables``). ``until_loaded``: start-up's second stage (the mirror), which
        every search but an early semantic one waits for."""
        self.sessions = sessions
        self.sql = sql
        self.config = config
        self.terms = terms
        self.doc_scope = doc_scope
        self.until_loaded = until_loaded
        self.semantic: SemanticRetriever | None = None

    async def search(self, raw: Any) -> dict[str, Any]:
        started = time.perf_counter()
        query = validate_or_raise(SearchQuery, raw, "search")
        strategy = query.strategy or self.config.strategy
        if strategy != "recent" and not query.query.strip() and query.vector is None:
            raise InvalidValueError(f"search with strategy {strategy!r} needs a query text")
        if strategy == "semantic" and self.semantic is None:
            raise InvalidValueError("semantic search needs embeddings, and none are configured")
        early = await self._early(query, strategy)
        if early is not None:
            try:
                own = self.sessions.own_sessions
                allow = early.allowed(sessions_in_scope(query.filters, own, other_users=True))
                return await self._search(query, strategy, allow, early, started)
            except Retired:  # the mirror came meanwhile: the usual way
                pass
        await self.until_loaded()
        await self.sessions.flush()
        allow = None if strategy == "recent" else self.allowed_docs(query.filters)
        return await self._search(query, strategy, allow, None, started)

    async def _early(self, query: "SearchQuery", strategy: str) -> EarlyVectors | None:
        """The stored vectors, searchable before the mirror, when this search can be
        answered from them alone."""
        filters = query.filters
        if strategy != "semantic" or filters.roles is not None or filters.date_range is not None:
            return None
        return await self.semantic.early_vectors() if self.semantic else None

    async def _search(
        self,
        query: "SearchQuery",
        strategy: str,
        allow: Sequence[int] | None,
        early: EarlyVectors | None,
        started: float,
    ) -> dict[str, Any]:
        """The search, among the docs in ``allow`` (or ``early``'s provisional ids)."""
        excluded = set(query.exclude_ids)
        speaker = named_speaker(query.query, query.speakers)
        # Excluded messages (the window, for recall) may crowd the top: ask for more only
        # while they leave too few, instead of reading a candidate for every exclusion.
        want = query.limit
        while True:
            found: dict[tuple[str, str], dict[str, Any]] = {}
            if strategy == "recent":
                for rank, hit in enumerate(await self._recent(query, want)):
                    self._merge(found, hit, "recent", rank, 1.0)
            else:
                await self._relevance(query, strategy, want, found, speaker, allow, early)
            hits = [h for h in found.values() if h["message"]["id"] not in excluded]
            exhausted = len(found) < want  # the retrievers had no more to give
            crowded = len(found) > len(hits)
            if len(hits) >= query.limit or exhausted or not crowded or want >= MAX_WANT:
                break
            want *= 4
        self._score(hits, strategy, speaker)
        # Judged as reported (6 decimals): no result may show a score below the threshold.
        hits = [h for h in hits if round(h["score"], 6) >= query.threshold]
        hits.sort(key=lambda h: (-h["score"], -h["message"].get("createdAt", 0)))
        return {
            "strategy": strategy,
            "results": [self._public(h) for h in hits[: query.limit]],
            "retrievers": self.retrievers(),
            "tookMs": round((time.perf_counter() - started) * 1000, 2),
        }

    def retrievers(self) -> list[str]:
        return ["keyword", "recent"] + (["semantic"] if self.semantic else [])

    async def _relevance(
        self,
        query: SearchQuery,
        strategy: str,
        want: int,
        found: dict[tuple[str, str], Any],
        speaker: str | None,
        allow: Sequence[int] | None,
        early: EarlyVectors | None = None,
    ) -> None:
        """Each retriever's candidates among the docs in ``allow`` (every doc when None):
        ``want`` of them for a single retriever, more when they are fused or a named
        speaker re-ranks them. With ``early``, semantic only, from the stored vectors."""
        single = strategy in ("keyword", "semantic") and not speaker
        pool = want * (1 if single else CANDIDATES)

        async def by_keyword() -> list[dict[str, Any]]:
            if strategy == "semantic":
                return []
            return await keyword.bm25(self.sql, self.terms, query.query, allow, pool)

        async def by_meaning() -> list[dict[str, Any]]:
            if strategy == "keyword" or self.semantic is None:
                return []
            if query.vector is not None:
                return await self.semantic.nearest_to(query.vector, allow, pool, early)
            return await self.semantic.nearest(query.query, allow, pool, early)

        # At once: the query's embedding (the model's worker) overlaps the rankings.
        keyword_hits, semantic_hits = await asyncio.gather(by_keyword(), by_meaning())
        keyword_hits = _prefer(keyword_hits, speaker)
        semantic_hits = _prefer(semantic_hits, speaker)
        top = keyword_hits[0]["score"] if keyword_hits else 1.0
        scaled = _min_max([hit["score"] for hit in keyword_hits])
        for rank, hit in enumerate(keyword_hits):
            self._merge(found, hit, "keyword", rank, hit["score"] / top, scaled[rank])
        scaled = _min_max([hit["score"] for hit in semantic_hits])
        for rank, hit in enumerate(semantic_hits):
            self._merge(found, hit, "semantic", rank, max(hit["score"], 0.0), scaled[rank])

    def allowed_docs(self, filters: SearchFilters) -> "array[int] | None":
        """The docs a search with ``filters`` may rank (None: every doc), from the doc
        scope; the mirror must be flushed first."""
        return allowed_docs(
            self.doc_scope, filters, self.sessions.own_sessions, self.sessions.has_other_users()
        )

    def _scope(self, filters: SearchFilters) -> Scope:
        return scope(filters, self.sessions.user_id, self.sessions.has_other_users())

    async def _recent(self, query: SearchQuery, limit: int) -> list[dict[str, Any]]:
        where = self._scope(query.filters)
        result = await self.sql.query(
            f"""SELECT m.session_id, m.record, m.body FROM chat_messages m {where.join}
                WHERE {where.condition} ORDER BY m.created_at DESC, m.seq DESC LIMIT ?""",
            [*where.params, limit],
        )
        return [{"sessionId": s, "record": r, "body": b} for s, r, b in result.tuples()]

    @staticmethod
    def _merge(
        found: dict[tuple[str, str], dict[str, Any]],
        hit: dict[str, Any],
        retriever: str,
        rank: int,
        normalised: float,
        scaled: float = 1.0,
    ) -> None:
        """One retriever's hit: its rank, its score as shown, and its score scaled to its
        list's range (min-max, what score fusion adds up)."""
        key = (hit["sessionId"], hit["record"])
        message = hit.get("message") or loads(hit["body"])
        entry = found.setdefault(
            key,
            {"sessionId": hit["sessionId"], "message": message, "ranks": {},
             "scores": {}, "scaled": {}, "matchedTerms": []},
        )  # fmt: skip
        entry["ranks"][retriever] = rank
        entry["scores"][retriever] = round(normalised, 6)
        entry["scaled"][retriever] = scaled
        if hit.get("matchedTerms"):
            entry["matchedTerms"] = hit["matchedTerms"]

    def _score(self, hits: list[dict[str, Any]], strategy: str, speaker: str | None) -> None:
        now = self.sessions.clock()
        half_life = self.config.recency_half_life_days * DAY_MS
        relevance_retrievers = [r for r in ("keyword", "semantic") if r in self.retrievers()]
        for hit in hits:
            age = max(now - hit["message"].get("createdAt", now), 0)
            recency = math.pow(0.5, age / half_life)
            hit["scores"]["recency"] = round(recency, 6)
            if strategy == "recent":
                hit["score"] = recency
                continue
            if strategy in ("keyword", "semantic"):
                relevance = hit["scores"].get(strategy, 0.0)
            else:
                weights = {"keyword": self.config.keyword_weight, "semantic": 1.0}
                used = {r: weights[r] for r in relevance_retrievers}
                if self.config.fusion == "rrf":
                    parts = {r: 1 / (RRF_K + rank + 1) for r, rank in hit["ranks"].items()}
                    best = sum(used.values()) / (RRF_K + 1)  # first in every list
                else:
                    parts, best = hit["scaled"], sum(used.values())
                relevance = sum(w * parts.get(r, 0.0) for r, w in used.items()) / (best or 1)
                if speaker and hit["message"].get("role") != speaker:
                    relevance /= SPEAKER_BOOST  # the retrievers' lists did so once already
            hit["scores"]["relevance"] = round(relevance, 6)
            if strategy == "hybrid":
                w = self.config.hybrid_weights
                hit["score"] = (w.relevance * relevance + w.recency * recency) / (
                    (w.relevance + w.recency) or 1
                )
            else:
                hit["score"] = relevance

    def _public(self, hit: dict[str, Any]) -> dict[str, Any]:
        meta = self.sessions.meta(hit["sessionId"])
        return {
            "sessionId": hit["sessionId"],
            "session": {"title": meta.title, "characterId": meta.character_id} if meta else None,
            "message": hit["message"],
            "score": round(hit["score"], 6),
            "scores": hit["scores"],
            "retrievers": sorted(r for r in hit["ranks"] if r != "recent") or ["recent"],
            "matchedTerms": hit["matchedTerms"],
        }

    async def search_messages(self, query: str, options: Any = None) -> list[dict[str, Any]]:
        """The seed's ``searchMessages``: ``[{sessionId, message}]``, case-insensitive."""
        if not isinstance(query, str) or not query:
            raise InvalidValueError("searchMessages needs a non-empty query string")
        if lone_surrogate_path(query) is not None:
            raise InvalidValueError("searchMessages query holds a lone surrogate: not text")
        opts = options or {}
        if not isinstance(opts, dict) or set(opts) - {"limit", "filters"}:
            raise InvalidValueError("searchMessages options are {limit, filters}")
        limit = opts.get("limit", 100)
        if not isinstance(limit, int) or isinstance(limit, bool) or not 1 <= limit <= 10_000:
            raise InvalidValueError("searchMessages limit must be an integer from 1 to 10000")
        filters = validate_or_raise(SearchFilters, opts.get("filters") or {}, "filters")
        await self.sessions.flush()
        hits = await keyword.substring(self.sql, query, self._scope(filters), limit)
        return [{"sessionId": h["sessionId"], "message": loads(h["body"])} for h in hits]


def named_speaker(query: str, speakers: Speakers | None) -> str | None:
    """The role whose speaker the query names as a whole word (case and accents
    ignored), when it names exactly one of them."""
    if speakers is None:
        return None
    folded = fold(query)
    named = [
        role
        for role, name in (("user", speakers.user), ("assistant", speakers.assistant))
        if name and re.search(rf"(?<![^\W_]){re.escape(fold(name))}(?![^\W_])", folded)
    ]
    return named[0] if len(named) == 1 else None


def _prefer(hits: list[dict[str, Any]], speaker: str | None) -> list[dict[str, Any]]:
    """One retriever's hits with every turn not by ``speaker`` lowered by half its
    score's size, best first again (ranks feed reciprocal-rank fusion). By its size, not
    halved: a cosine below zero would rise when halved."""
    if not speaker:
        return hits
    for hit in hits:
        hit["message"] = hit.get("message") or loads(hit["body"])
        if hit["message"].get("role") != speaker:
            hit["score"] -= abs(hit["score"]) * (1 - 1 / SPEAKER_BOOST)
    return sorted(hits, key=lambda hit: -hit["score"])


def _min_max(scores: list[float]) -> list[float]:
    """Scores scaled to [0, 1] within their list (all 1 when they are all equal): BM25
    and cosine live on different scales, and this puts each list's best at 1, its worst
    candidate at 0."""
    if not scores:
        return []
    low, high = min(scores), max(scores)
    return [1.0 if high == low else (s - low) / (high - low) for s in scores]

"""``SearchQuery.filters``, and as SQL with bound parameters where a statement reads
messages (the recent strategy, substring search); the rankers (term index, vector scan)
take the docs they allow from the doc scope (``doc_scope``), which answers as this SQL."""

from dataclasses import dataclass
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator


class SearchFilters(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)
    session_ids: list[str] | None = Field(default=None, alias="sessionIds", max_length=10_000)
    character_ids: list[str] | None = Field(default=None, alias="characterIds", max_length=1000)
    date_range: tuple[int, int] | None = Field(default=None, alias="dateRange")
    roles: list[Literal["system", "user", "assistant", "tool", "error"]] | None = None

    @model_validator(mode="after")
    def _ordered_range(self) -> "SearchFilters":
        if self.date_range and self.date_range[0] > self.date_range[1]:
            raise ValueError("dateRange must be [from, to] with from <= to")
        return self


@dataclass(frozen=True)
class Scope:
    """Which messages (``m``) a search may see: a join to their sessions (``s``) when
    a condition needs one, the condition, and its parameters."""

    join: str
    condition: str
    params: list[Any]


SESSIONS_JOIN = "JOIN chat_sessions s ON s.session_id = m.session_id"


def scope(filters: SearchFilters, user_id: str, other_users: bool) -> Scope:
    """This user's messages (no session join needed when the store holds no one else's),
    narrowed by each filter given; an empty list matches nothing, as it says."""
    clauses: list[str] = ["s.user_id = ?"] if other_users else []
    params: list[Any] = [user_id] if other_users else []
    for column, values in (
        ("m.session_id", filters.session_ids),
        ("s.character_id", filters.character_ids),
        ("m.role", filters.roles),
    ):
        if values is not None:
            if not values:
                return Scope("", "FALSE", [])
            clauses.append(f"{column} IN ({', '.join('?' for _ in values)})")
            params += list(values)
    if filters.date_range is not None:
        clauses.append("m.created_at BETWEEN ? AND ?")
        params += list(filters.date_range)
    join = SESSIONS_JOIN if any(c.startswith("s.") for c in clauses) else ""
    return Scope(join, " AND ".join(clauses) or "TRUE", params)

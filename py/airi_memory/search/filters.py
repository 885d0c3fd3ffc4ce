"""``SearchQuery.filters`` as a SQL condition with bound parameters, applied before ranking."""

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


def where(
    filters: SearchFilters, user_id: str, m: str = "m", s: str = "s"
) -> tuple[str, list[Any]]:
    """Conditions on messages ``m`` joined to sessions ``s``: this user's sessions only, then
    each filter given (an empty list matches nothing, as it says)."""
    clauses, params = [f"{s}.user_id = ?"], [user_id]
    for column, values in (
        (f"{m}.session_id", filters.session_ids),
        (f"{s}.character_id", filters.character_ids),
        (f"{m}.role", filters.roles),
    ):
        if values is not None:
            if not values:
                return "FALSE", []
            clauses.append(f"{column} IN ({', '.join('?' for _ in values)})")
            params += list(values)
    if filters.date_range is not None:
        clauses.append("m.created_at BETWEEN ? AND ?")
        params += list(filters.date_range)
    return " AND ".join(clauses), params

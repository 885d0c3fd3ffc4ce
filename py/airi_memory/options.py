"""Options a JS app passes to ``createMemorySystem``, validated on the way in."""

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from .errors import InvalidValueError
from .models import CacheConfig


class SystemOptions(BaseModel):
    model_config = ConfigDict(extra="forbid", populate_by_name=True, frozen=True)

    user_id: str = Field(default="local", alias="userId", min_length=1, max_length=256)
    cache: CacheConfig = Field(default_factory=CacheConfig)


def parse_options(raw: object) -> SystemOptions:
    try:
        return SystemOptions.model_validate(raw or {})
    except ValidationError as error:
        first = error.errors()[0]
        field = ".".join(str(part) for part in first["loc"]) or "options"
        raise InvalidValueError(f"invalid option {field!r}: {first['msg']}") from None

"""Input from outside, validated into a model or refused with one clear error; and the
contract as JSON Schema (``json_schemas``: the schemas an app or the build reads)."""

from typing import Any, TypeVar

from pydantic import BaseModel, ValidationError

from ..errors import InvalidValueError
from .context_message import ContextMessage
from .json_bounds import join_path, lone_surrogate_path
from .messages import ChatHistoryItem
from .sessions import ChatSessionMeta
from .settings import CacheConfig, MessageRetentionPolicy, RetentionPolicy
from .wire import now_ms

Model = TypeVar("Model", bound=BaseModel)


def validate_or_raise(
    model: type[Model],
    data: Any,
    where: str = "",
    context: dict[str, Any] | None = None,
    now: int | None = None,
) -> Model:
    """Validate ``data`` from outside, its times judged against ``now`` (the wall clock
    unless given), or, with ``context=WRITTEN_HERE``, what this library itself wrote; on
    failure raise one ``InvalidValueError`` naming the first bad field. Either way no
    string in it may hold a lone surrogate: it could be stored but never read back."""
    if context is None:
        context = {"now": now_ms() if now is None else now}
    surrogate_at = lone_surrogate_path(data)
    if surrogate_at is not None:
        path = join_path(where, surrogate_at).lstrip(".") or "(root)"
        raise InvalidValueError(
            f"invalid {model.__name__} field {path!r}: holds a lone surrogate "
            "(U+D800 to U+DFFF without its pair), which is not text"
        )
    try:
        return model.model_validate(data, context=context)
    except ValidationError as error:
        first = error.errors()[0]
        below = (first.get("ctx") or {}).get("path", "") if first["type"] == "json_limit" else ""
        path = where + "".join(
            f"[{part}]" if isinstance(part, int) else f".{part}" for part in first["loc"]
        )
        path = join_path(path, below)
        raise InvalidValueError(
            f"invalid {model.__name__} field {path.lstrip('.') or '(root)'!r}: {first['msg']}"
        ) from None


def json_schemas() -> dict[str, Any]:
    """The contract as JSON Schema (camelCase, as JS sees it), for apps and other tools."""
    return {
        model.__name__: model.model_json_schema(by_alias=True)
        for model in (
            ChatSessionMeta,
            ChatHistoryItem,
            CacheConfig,
            ContextMessage,
            RetentionPolicy,
            MessageRetentionPolicy,
        )
    }

"""``ContextStore``: what modules say about the world right now, for the next LLM call.

Context is kept per source (``sourceType`` + ``sourceId``): ``replace-self`` replaces that
source's earlier context, ``append-self`` appends up to a cap. Entries past ``expiresAt``
are dropped. Providers (built-in, or functions registered by the app) are asked right
before each composition. Context is working memory: it lives in memory, not in storage;
only the user profile (which a provider reads) is stored.
"""

import asyncio
import json
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime
from typing import Any

from ..errors import InvalidValueError
from ..models import (
    MAX_FIELD_DEPTH,
    ContextMessage,
    JsonLimitError,
    join_path,
    json_size,
    validate_or_raise,
)
from ..storage import Storage
from ..storage.keys import key_segment

Provider = Callable[[], Awaitable[Any]]
DATETIME = "module:datetime"
USER_PROFILE = "module:user-profile"
PROVIDER_TIMEOUT_S = 5.0  # a provider slower than this is skipped for this composition
MAX_CONTEXT_CHARS = 100_000  # of one entry's JSON: context is a summary of state, not data


class ContextStore:
    def __init__(
        self,
        storage: Storage,
        user_id: str,
        clock: Callable[[], int],
        max_per_source: int = 20,
        timezone: str = "UTC",
    ) -> None:
        self.storage = storage
        self.clock = clock
        self.max_per_source = max_per_source
        self.timezone = timezone
        self.profile_key = f"local:memory:profile:{key_segment(user_id)}"
        # sourceType -> sourceId -> entries, oldest first (dicts keep insertion order)
        self._entries: dict[str, dict[str, list[ContextMessage]]] = {}
        self._providers: dict[str, Provider] = {}
        self.provider_errors: dict[str, str] = {}

    # --- the seed's operations ---------------------------------------------------
    async def ingest(self, message: Any) -> dict[str, Any]:
        if isinstance(message, dict) and "createdAt" not in message:
            message = {**message, "createdAt": self.clock()}
        entry = validate_or_raise(ContextMessage, message, "context")
        size = len(_content_json(entry.content))
        if size > MAX_CONTEXT_CHARS:
            raise InvalidValueError(
                f"context from {entry.source_type!r} is {size} characters of JSON; "
                f"the limit is {MAX_CONTEXT_CHARS}"
            )
        by_id = self._entries.setdefault(entry.source_type, {})
        if entry.strategy == "replace-self":
            by_id[entry.source_id] = [entry]
        else:
            kept = [*by_id.get(entry.source_id, []), entry]
            by_id[entry.source_id] = kept[-self.max_per_source :]
        return entry.to_wire()

    def _live(self) -> list[ContextMessage]:
        """Every unexpired entry; expired ones are forgotten on the way."""
        now = self.clock()
        live: list[ContextMessage] = []
        for source_type in list(self._entries):
            by_id = self._entries[source_type]
            for source_id in list(by_id):
                kept = [e for e in by_id[source_id] if e.expires_at is None or e.expires_at > now]
                if kept:
                    by_id[source_id] = kept
                    live.extend(kept)
                else:
                    del by_id[source_id]
            if not by_id:
                del self._entries[source_type]
        return live

    async def current(self) -> dict[str, Any]:
        """The contexts now (the seed's ``getContextsSnapshot()``, kept on the facade;
        internally not called a snapshot, a name the session store's saved tables
        hold): ``{sourceType: content}``, highest priority
        first. A source type with several entries (append-self, or several source ids)
        maps to the list of their contents, oldest first."""
        grouped: dict[str, list[ContextMessage]] = {}
        for entry in self._live():
            grouped.setdefault(entry.source_type, []).append(entry)
        order = sorted(grouped, key=lambda key: -max(e.priority for e in grouped[key]))
        current: dict[str, Any] = {}
        for key in order:
            entries = sorted(grouped[key], key=lambda e: e.created_at)
            contents = [e.content for e in entries]
            current[key] = contents[0] if len(contents) == 1 else contents
        return current

    async def entries(self) -> list[dict[str, Any]]:
        """Every live entry in full (source, strategy, priority, expiry)."""
        live = sorted(self._live(), key=lambda e: (-e.priority, e.created_at))
        return [e.to_wire() for e in live]

    async def remove(self, source_type: str, source_id: str | None = None) -> int:
        """Forget one source's context, or every source of a type; returns entries removed."""
        by_id = self._entries.get(source_type, {})
        ids = [source_id] if source_id is not None else list(by_id)
        removed = sum(len(by_id.pop(i, [])) for i in ids)
        if not by_id:
            self._entries.pop(source_type, None)
        return removed

    async def clear(self) -> int:
        removed = sum(len(v) for by_id in self._entries.values() for v in by_id.values())
        self._entries.clear()
        return removed

    # --- providers ----------------------------------------------------------------
    def register_provider(self, source_type: str, provider: Provider) -> None:
        """``provider()`` returns the content (an object) or None for nothing right now."""
        if not isinstance(source_type, str) or not source_type:
            raise InvalidValueError("a context provider needs a sourceType string")
        self._providers[source_type] = provider

    async def unregister_provider(self, source_type: str) -> bool:
        """Stop asking the provider, and forget what it last said."""
        self.provider_errors.pop(source_type, None)
        await self.remove(source_type, source_type)
        return self._providers.pop(source_type, None) is not None

    def providers(self) -> list[str]:
        return list(self._providers)

    async def refresh(self) -> dict[str, str]:
        """Ask every provider at once; one that fails is reported, never fatal."""
        names = list(self._providers)
        results = await asyncio.gather(
            *(asyncio.wait_for(self._providers[n](), PROVIDER_TIMEOUT_S) for n in names),
            return_exceptions=True,
        )
        self.provider_errors = {}
        for name, result in zip(names, results, strict=True):
            try:
                if isinstance(result, BaseException):
                    raise result
                if result is None:
                    await self.remove(name, name)
                else:
                    await self.ingest({"sourceType": name, "sourceId": name, "content": result})
            except TimeoutError:
                self.provider_errors[name] = f"no answer within {PROVIDER_TIMEOUT_S:g} s"
            except Exception as error:
                self.provider_errors[name] = f"{type(error).__name__}: {error}"[:300]
        return dict(self.provider_errors)

    # --- built-in providers -------------------------------------------------------
    def use_builtin_providers(self, datetime_provider: bool = True, profile: bool = True) -> None:
        if datetime_provider:
            self.register_provider(DATETIME, self._datetime)
        if profile:
            self.register_provider(USER_PROFILE, self._profile)

    async def _datetime(self) -> dict[str, Any]:
        now = self.clock()
        formatted = datetime.fromtimestamp(now / 1000, UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
        return {"timestamp": now, "formatted": formatted, "timezone": self.timezone}

    async def _profile(self) -> dict[str, Any] | None:
        profile = await self.storage.get_item(self.profile_key)
        return profile if isinstance(profile, dict) and profile else None

    async def set_user_profile(self, profile: Any) -> dict[str, Any] | None:
        """The user's preferences and facts, stored, and offered as context."""
        if profile is None:
            await self.storage.remove_item(self.profile_key)
            return None
        if not isinstance(profile, dict):
            raise InvalidValueError("the user profile must be an object (or null to clear it)")
        await self.storage.set_item(self.profile_key, profile)
        return profile

    async def get_user_profile(self) -> dict[str, Any] | None:
        return await self._profile()

    async def set_module_state(self, module: str, state: Any) -> dict[str, Any] | None:
        """A module's current state (Discord, Minecraft ...) as ``module:<name>`` context;
        None forgets it."""
        if not isinstance(module, str) or not module:
            raise InvalidValueError("setModuleState needs a module name")
        source = module if module.startswith("module:") else f"module:{module}"
        if state is None:
            await self.remove(source)
            return None
        return await self.ingest({"sourceType": source, "sourceId": source, "content": state})


def _content_json(content: dict[str, Any]) -> str:
    """Context content as the JSON text it becomes in a prompt. Refused, before anything
    is kept, when it is not JSON (NaN, sets, objects) or nested too deep to write out:
    an entry kept but unwritable would break every snapshot and composition after it."""
    try:
        json_size(content, 4 * MAX_CONTEXT_CHARS + 2, MAX_FIELD_DEPTH)  # UTF-8: 4 bytes a char
    except JsonLimitError as error:
        path = join_path("context.content", error.path)
        raise InvalidValueError(f"invalid ContextMessage field {path!r}: {error.reason}") from None
    return json.dumps(content, ensure_ascii=False)

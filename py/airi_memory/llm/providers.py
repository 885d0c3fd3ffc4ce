"""LLM providers behind one interface: OpenAI-compatible chat completions over HTTP, or a
function the app supplies (a JS callback in the browser).

The API key lives only in this object: it is never stored, exported, or put in an error.
Every way a provider can fail (unreachable, timeout, HTTP error, a reply that breaks the
protocol) becomes one ``ProviderError`` that says which.
"""

import asyncio
from abc import ABC, abstractmethod
from collections.abc import Awaitable, Callable
from typing import Any, Literal

from pydantic import BaseModel, Field

from ..errors import ProviderError
from ..http import HttpTransport
from .openai_protocol import ProviderConfig, post

Callback = Callable[[dict[str, Any]], Awaitable[Any]]


class LlmConfig(ProviderConfig):
    provider: Literal["openai", "callback"]
    model: str = Field(default="gpt-4o-mini", min_length=1, max_length=128)
    # The summariser sends at most this many (estimated) tokens of conversation per call.
    max_input_tokens: int = Field(default=12_000, alias="maxInputTokens", ge=500)


class LlmProvider(ABC):
    def __init__(self, config: LlmConfig) -> None:
        self.config = config

    @property
    def name(self) -> str:
        return self.config.provider

    @abstractmethod
    async def complete(self, messages: list[dict[str, Any]]) -> str:
        """The assistant's reply text to ``messages`` (OpenAI chat format)."""


class _Message(BaseModel):
    content: str = Field(min_length=1)


class _Choice(BaseModel):
    message: _Message


class _Completion(BaseModel):
    """The part of a chat-completions reply we rely on."""

    choices: list[_Choice] = Field(min_length=1)


class OpenAiChat(LlmProvider):
    def __init__(self, config: LlmConfig, transport: HttpTransport) -> None:
        super().__init__(config)
        self.transport = transport
        self.url = config.base_url.rstrip("/") + "/chat/completions"

    async def complete(self, messages: list[dict[str, Any]]) -> str:
        body = {"model": self.config.model, "messages": messages, "temperature": 0.2}
        config = self.config
        completion = await post(
            self.transport, self.url, config.api_key, body, config.timeout_ms, _Completion,
            "a chat completion",
        )  # fmt: skip
        return completion.choices[0].message.content.strip()


class CallbackLlm(LlmProvider):
    def __init__(self, config: LlmConfig, callback: Callback) -> None:
        super().__init__(config)
        self.callback = callback

    async def complete(self, messages: list[dict[str, Any]]) -> str:
        request = {"messages": messages, "model": self.config.model}
        try:
            reply = await asyncio.wait_for(self.callback(request), self.config.timeout_ms / 1000)
        except TimeoutError:
            raise ProviderError(
                f"the app's LLM callback did not answer within {self.config.timeout_ms} ms"
            ) from None
        except Exception as error:
            raise ProviderError(f"the app's LLM callback failed: {error}") from None
        if not isinstance(reply, str) or not reply.strip():
            raise ProviderError(
                f"the app's LLM callback must resolve to non-empty text, not {type(reply).__name__}"
            )
        return reply.strip()


def make_provider(
    config: LlmConfig | None, transport: HttpTransport | None, callback: Callback | None
) -> LlmProvider | None:
    if config is None:
        return None
    if config.provider == "openai":
        if transport is None:
            raise ProviderError("this host has no HTTP transport for an OpenAI-compatible provider")
        return OpenAiChat(config, transport)
    if callback is None:
        raise ProviderError("provider 'callback' needs a function: pass summarize in the options")
    return CallbackLlm(config, callback)

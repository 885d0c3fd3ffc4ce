"""The token port in the browser: gpt-tokenizer in the worker, many texts per call.

Counts come back as one Int32Array, copied into Python in one go.
"""

from array import array
from collections.abc import Sequence
from typing import Any

from pyodide.ffi import to_js

from ..context.tokens import TokenCounter


class GptTokenizer(TokenCounter):
    def __init__(self, tokens: Any) -> None:
        self._tokens = tokens
        self.encodings = frozenset(str(name) for name in tokens.encodings)

    async def count(self, encoding: str, texts: Sequence[str]) -> list[int]:
        counts = await self._tokens.count(encoding, to_js(list(texts)))
        return array("i", counts.to_bytes()).tolist()

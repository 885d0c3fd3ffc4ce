"""The HTTP port in the browser: ``fetch`` in the worker, with an abort on timeout.

The host's ``http.request(method, url, headersJson, body, timeoutMs)`` resolves to
``{status, text}`` or ``{error, timedOut}``; it never throws across the bridge.
"""

import json
from typing import Any

from ..errors import ProviderError
from ..http import HttpReply, HttpTransport
from .ffi import to_python


class FetchTransport(HttpTransport):
    def __init__(self, http: Any) -> None:
        self._http = http

    async def request(
        self, method: str, url: str, headers: dict[str, str], body: str | None, timeout_s: float
    ) -> HttpReply:
        timeout_ms = int(timeout_s * 1000)
        reply = to_python(
            await self._http.request(method, url, json.dumps(headers), body, timeout_ms)
        )
        if reply.get("timedOut"):
            raise ProviderError(f"no reply from {url} within {timeout_s:g} s")
        if reply.get("error") is not None:
            raise ProviderError(f"cannot reach {url}: {reply['error']}")
        return HttpReply(int(reply["status"]), str(reply["text"]))

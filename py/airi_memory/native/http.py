"""The HTTP port on CPython: urllib in a thread, so the event loop keeps running."""

import asyncio
import http.client
import urllib.error
import urllib.request

from ..errors import ProviderError
from ..http import HttpReply, HttpTransport


class UrllibTransport(HttpTransport):
    async def request(
        self, method: str, url: str, headers: dict[str, str], body: str | None, timeout_s: float
    ) -> HttpReply:
        return await asyncio.to_thread(self._send, method, url, headers, body, timeout_s)

    @staticmethod
    def _send(
        method: str, url: str, headers: dict[str, str], body: str | None, timeout_s: float
    ) -> HttpReply:
        data = None if body is None else body.encode()
        request = urllib.request.Request(url, data, headers, method=method)
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return HttpReply(response.status, response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as error:
            return HttpReply(error.code, error.read().decode("utf-8", "replace"))
        except TimeoutError:
            raise ProviderError(f"no reply from {url} within {timeout_s:g} s") from None
        except (urllib.error.URLError, OSError, http.client.HTTPException) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, TimeoutError):
                raise ProviderError(f"no reply from {url} within {timeout_s:g} s") from None
            raise ProviderError(f"cannot reach {url}: {reason}") from None

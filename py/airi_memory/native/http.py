"""The HTTP port on CPython: urllib in a thread, so the event loop keeps running."""

import asyncio
import urllib.error
import urllib.request

from ..errors import ProviderError
from ..http import HttpReply, HttpTransport


class UrllibTransport(HttpTransport):
    async def post_json(
        self, url: str, headers: dict[str, str], body: str, timeout_s: float
    ) -> HttpReply:
        return await asyncio.to_thread(self._post, url, headers, body, timeout_s)

    @staticmethod
    def _post(url: str, headers: dict[str, str], body: str, timeout_s: float) -> HttpReply:
        request = urllib.request.Request(url, body.encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=timeout_s) as response:
                return HttpReply(response.status, response.read().decode("utf-8", "replace"))
        except urllib.error.HTTPError as error:
            return HttpReply(error.code, error.read().decode("utf-8", "replace"))
        except TimeoutError:
            raise ProviderError(f"no reply from {url} within {timeout_s:g} s") from None
        except (urllib.error.URLError, OSError) as error:
            reason = getattr(error, "reason", error)
            if isinstance(reason, TimeoutError):
                raise ProviderError(f"no reply from {url} within {timeout_s:g} s") from None
            raise ProviderError(f"cannot reach {url}: {reason}") from None

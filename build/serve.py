"""A static server for dist/ on 127.0.0.1 with the MIME types module scripts and wasm need.

`make demo` runs it; the end-to-end tests and the benchmarks start it in a thread. The
standard library's guesses depend on the machine's /etc/mime.types, so we name our own.
"""

import argparse
import functools
import http.server
import threading
from pathlib import Path
from typing import ClassVar

MIME_TYPES = {
    ".mjs": "text/javascript",
    ".js": "text/javascript",
    ".wasm": "application/wasm",
    ".json": "application/json",
    ".whl": "application/zip",
    ".zip": "application/zip",
    ".html": "text/html",
    ".css": "text/css",
}


class StaticHandler(http.server.SimpleHTTPRequestHandler):
    extensions_map: ClassVar[dict[str, str]] = {
        **http.server.SimpleHTTPRequestHandler.extensions_map,
        **MIME_TYPES,
    }

    def end_headers(self) -> None:
        # Revalidate every time, so a rebuilt dist is never shadowed by a cached file.
        self.send_header("Cache-Control", "no-cache")
        super().end_headers()

    def log_message(self, format: str, *args: object) -> None:
        """Quiet: the tests record requests in the browser instead."""


def start_in_thread(directory: Path, port: int = 0) -> http.server.ThreadingHTTPServer:
    """Serve ``directory`` on 127.0.0.1 (port 0: any free one) until ``shutdown()``."""
    handler = functools.partial(StaticHandler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--directory", type=Path, default=Path(__file__).parent.parent / "dist")
    args = parser.parse_args()
    handler = functools.partial(StaticHandler, directory=str(args.directory))
    with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as server:
        print(f"serving {args.directory} on http://127.0.0.1:{args.port}/", flush=True)
        server.serve_forever()


if __name__ == "__main__":
    main()

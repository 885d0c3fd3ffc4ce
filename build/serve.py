"""A static server for dist/ on 127.0.0.1 with the MIME types module scripts and wasm need.

`make demo` runs it; the end-to-end tests and the benchmarks start it in a thread. The
standard library's guesses depend on the machine's /etc/mime.types, so we name our own.
With ``--sync-port``, it also starts the sync server (SQLite, loopback), makes a key for a
``demo`` user and offers both to the demo page at ``/demo-sync.json`` (kept in memory),
so the demo can sync out of the box once a person turns it on.
"""

import argparse
import contextlib
import functools
import http.server
import json
import os
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from pathlib import Path
from typing import ClassVar

ROOT = Path(__file__).resolve().parent.parent

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

    def send_body(self, body: bytes, content_type: str) -> None:
        """A 200 answer made here rather than read from the served folder."""
        self.send_response(200)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)


class DemoHandler(StaticHandler):
    offered_sync: ClassVar[bytes | None] = None  # /demo-sync.json: {endpoint, apiKey}

    def do_GET(self) -> None:
        if self.path.split("?")[0] != "/demo-sync.json" or self.offered_sync is None:
            return super().do_GET()
        self.send_body(self.offered_sync, "application/json")
        return None


def start_sync_server(port: int, database: str) -> subprocess.Popen[bytes] | None:
    """The sync server as `make sync-server` runs it, with a new key for user ``demo``
    offered to the page; None (and a note) when it does not come up."""
    environment = {**os.environ, "PYTHONPATH": f"{ROOT / 'server'}{os.pathsep}{ROOT / 'py'}"}
    cli = [sys.executable, "-m", "airi_memory_server", "--db", database]
    serve = [*cli, "serve", "--host", "127.0.0.1", "--port", str(port)]
    process = subprocess.Popen(serve, env=environment, cwd=ROOT)
    endpoint = f"http://127.0.0.1:{port}"
    for _ in range(150):
        health = endpoint + "/v1/health"
        with contextlib.suppress(OSError), urllib.request.urlopen(health, timeout=1) as reply:
            if reply.status == 200:
                break
        if process.poll() is not None:
            print(f"the sync server did not start (port {port} busy?): demo without it")
            return None
        time.sleep(0.2)
    made = subprocess.run(
        [*cli, "create-user", "demo"], env=environment, cwd=ROOT,
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    api_key = made.stdout.strip().splitlines()[-1]
    DemoHandler.offered_sync = json.dumps({"endpoint": endpoint, "apiKey": api_key}).encode()
    print(f"sync server on {endpoint} ({database}); the demo page offers it", flush=True)
    return process


def start_in_thread(
    directory: Path, port: int = 0, handler: type[StaticHandler] = StaticHandler
) -> http.server.ThreadingHTTPServer:
    """Serve ``directory`` on 127.0.0.1 (port 0: any free one) until ``shutdown()``."""
    serving = functools.partial(handler, directory=str(directory))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", port), serving)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--directory", type=Path, default=ROOT / "dist")
    parser.add_argument("--sync-port", type=int, default=0, help="also run the sync server")
    parser.add_argument("--sync-db", default=str(ROOT / "build" / "sync.sqlite3"))
    args = parser.parse_args()
    # SIGTERM ends us through `finally` too, so the sync server never outlives the page's.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(0))
    sync = start_sync_server(args.sync_port, args.sync_db) if args.sync_port else None
    handler = functools.partial(DemoHandler, directory=str(args.directory))
    try:
        with http.server.ThreadingHTTPServer(("127.0.0.1", args.port), handler) as server:
            print(f"serving {args.directory} on http://127.0.0.1:{args.port}/", flush=True)
            server.serve_forever()
    finally:
        if sync is not None:
            sync.terminate()
            sync.wait(timeout=10)


if __name__ == "__main__":
    main()

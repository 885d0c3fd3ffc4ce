"""A real local HTTP server that speaks OpenAI's chat-completions and embeddings
protocols, for tests.

Each request is recorded. ``mode`` chooses the reply: ``ok`` (a completion whose text
is ``reply``), ``500`` (with ``error_body``), ``malformed`` (not JSON), ``no-choices`` (JSON without choices)
or ``slow`` (answers after ``delay`` seconds). It sends CORS headers, so pages on
another local port can call it, as they would call a real provider.
"""

import hashlib
import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class LlmServer:
    def __init__(self) -> None:
        self.mode = "ok"
        self.reply = "a short summary"
        self.delay = 2.0
        self.error_body = '{"error": {"message": "upstream exploded"}}'
        self.dimensions = 48
        self.requests: list[dict[str, Any]] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:
                pass

            def _headers(self, status: int, kind: str = "application/json") -> None:
                self.send_response(status)
                self.send_header("Content-Type", kind)
                self.send_header("Access-Control-Allow-Origin", "*")
                self.send_header("Access-Control-Allow-Headers", "authorization, content-type")
                self.end_headers()

            def do_OPTIONS(self) -> None:  # http.server's naming
                self._headers(204)

            def do_POST(self) -> None:
                body = self.rfile.read(int(self.headers.get("Content-Length", 0)))
                server.requests.append(
                    {
                        "path": self.path,
                        "authorization": self.headers.get("Authorization"),
                        "body": json.loads(body),
                    }
                )
                if server.mode == "slow":
                    time.sleep(server.delay)
                if server.mode == "500":
                    self._headers(500)
                    self.wfile.write(server.error_body.encode())
                elif server.mode == "malformed":
                    self._headers(200, "text/plain")
                    self.wfile.write(b"<html>definitely not json")
                elif server.mode == "no-choices":
                    self._headers(200)
                    self.wfile.write(b'{"id": "x", "choices": []}')
                elif self.path.endswith("/embeddings"):
                    self._headers(200)
                    texts = server.requests[-1]["body"]["input"]
                    data = [
                        {"index": i, "embedding": server.vector(t)} for i, t in enumerate(texts)
                    ]
                    self.wfile.write(json.dumps({"object": "list", "data": data}).encode())
                else:
                    self._headers(200)
                    completion = {
                        "id": "chatcmpl-test",
                        "object": "chat.completion",
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": server.reply},
                                "finish_reason": "stop",
                            }
                        ],
                    }
                    self.wfile.write(json.dumps(completion).encode())

        class Server(ThreadingHTTPServer):
            def handle_error(self, request: Any, client_address: Any) -> None:
                pass  # a client that gave up (the timeout test) closes the pipe; fine

        self.httpd = Server(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.port = self.httpd.server_address[1]
        self.base_url = f"http://127.0.0.1:{self.port}/v1"
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()

    def vector(self, text: str) -> list[float]:
        """An embedding for /embeddings: its words hashed into ``dimensions`` (a stand-in:
        texts sharing words are close; the real model is tested in the browser)."""
        row = [0.0] * self.dimensions
        for word in text.lower().split():
            row[int(hashlib.md5(word.encode()).hexdigest(), 16) % self.dimensions] += 1.0
        return row

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()

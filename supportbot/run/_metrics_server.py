"""A worker's /metrics endpoint: the standard library's HTTP server in a daemon thread.

Only ``GET /metrics`` with ``Authorization: Bearer <Settings.metrics_token>`` answers; anything
else is 404 or 401, and nothing is logged (request lines would say nothing useful to anyone
but a scanner). The worker refuses to serve it without a token.
"""

from __future__ import annotations

import hmac
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from ..errors import ConfigError, SupportbotError
from ._metrics import CONTENT_TYPE


class MetricsServer:
    """Serves ``render()`` at /metrics on ``host:port`` (port 0: one the system picks)."""

    def __init__(self, host: str, port: int, token: str | None, render: Callable[[], str]) -> None:
        if not token:
            raise ConfigError(
                "the metrics endpoint needs a token: set SUPPORTBOT_METRICS_TOKEN and give it to the "
                "scraper (Authorization: Bearer ...)",
                reason="value",
                setting="SUPPORTBOT_METRICS_TOKEN",
            )
        expected = f"Bearer {token}".encode()

        class Handler(BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                if self.path.split("?", 1)[0] != "/metrics":
                    self._reply(404, b"")
                elif not hmac.compare_digest(self.headers.get("Authorization", "").encode(), expected):
                    self._reply(401, b"", {"WWW-Authenticate": "Bearer"})
                else:
                    try:
                        body = render().encode()
                    except SupportbotError:  # the database is away: the scrape fails, the worker goes on
                        self._reply(503, b"")
                        return
                    self._reply(200, body, {"Content-Type": CONTENT_TYPE})

            def _reply(self, status: int, body: bytes, headers: dict[str, str] | None = None) -> None:
                self.send_response(status)
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: object) -> None:
                pass

        self._server = ThreadingHTTPServer((host, port), Handler)
        self._server.daemon_threads = True
        self._thread = threading.Thread(
            target=self._server.serve_forever, name="supportbot-metrics", daemon=True
        )

    @property
    def port(self) -> int:
        return int(self._server.server_address[1])

    def start(self) -> MetricsServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._server.shutdown()
        self._server.server_close()

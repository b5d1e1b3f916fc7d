"""A scripted OpenAI-compatible chat-completions server on loopback, for tests.

Each test scripts the replies in order and afterwards reads back every request the server saw
(path, headers, JSON body). Nothing is mocked: the client speaks real HTTP over a real socket.
"""

from __future__ import annotations

import contextlib
import json
import threading
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


@dataclass(frozen=True)
class Reply:
    status: int = 200
    json: Any = None  # the body as JSON ...
    text: str | None = None  # ... or raw, for bodies that are not JSON
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0  # seconds to wait before answering; longer than the client timeout = a timeout
    events: list[str] | None = None  # SSE data payloads, each sent as "data: ...\n\n"


@dataclass(frozen=True)
class Request:
    path: str
    headers: dict[str, str]  # lower-cased names
    body: dict[str, Any]


def completion(
    content: str | None, *, prompt_tokens: int = 11, completion_tokens: int = 7, model: str = "test-model"
) -> Reply:
    return Reply(
        json={
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "model": model,
            "choices": [
                {"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop"}
            ],
            "usage": {
                "prompt_tokens": prompt_tokens,
                "completion_tokens": completion_tokens,
                "total_tokens": prompt_tokens + completion_tokens,
            },
        }
    )


def stream(pieces: list[str], *, usage: tuple[int, int] | None = None, model: str = "test-model") -> Reply:
    chunks: list[dict[str, object]] = [
        {"model": model, "choices": [{"index": 0, "delta": {"role": "assistant", "content": ""}}]}
    ]
    chunks += [{"model": model, "choices": [{"index": 0, "delta": {"content": p}}]} for p in pieces]
    chunks.append({"model": model, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    if usage is not None:  # what servers send for stream_options.include_usage: no choices, just usage
        chunks.append(
            {
                "model": model,
                "choices": [],
                "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
            }
        )
    return Reply(events=[json.dumps(c) for c in chunks] + ["[DONE]"])


def error(status: int, message: str, *, headers: dict[str, str] | None = None) -> Reply:
    return Reply(status=status, json={"error": {"message": message, "type": "test"}}, headers=headers or {})


class ScriptedServer:
    """A ThreadingHTTPServer on 127.0.0.1 and an ephemeral port that answers from a script."""

    def __init__(self) -> None:
        self.requests: list[Request] = []
        self._script: list[Reply] = []
        self._lock = threading.Lock()
        self._stopping = threading.Event()  # wakes handlers that are sleeping out a delay
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), self._handler_class())
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.01}, daemon=True
        )

    @property
    def url(self) -> str:
        host, port = self._httpd.server_address[:2]
        assert isinstance(host, str)
        return f"http://{host}:{port}/v1"

    def script(self, *replies: Reply) -> None:
        with self._lock:
            self._script.extend(replies)

    def __enter__(self) -> ScriptedServer:
        self._thread.start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stopping.set()
        self._httpd.shutdown()
        self._httpd.server_close()
        self._thread.join(timeout=2)

    def _next(self, request: Request) -> Reply:
        with self._lock:
            self.requests.append(request)
            # 418 is not retried by the client, so a test that sends too much fails at once and visibly.
            return self._script.pop(0) if self._script else error(418, "script exhausted")

    def _handler_class(self) -> type[BaseHTTPRequestHandler]:
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
                headers = {k.lower(): v for k, v in self.headers.items()}
                reply = server._next(Request(self.path, headers, json.loads(raw or b"{}")))
                if reply.delay and server._stopping.wait(reply.delay):
                    return
                with contextlib.suppress(OSError):  # the client gave up (a timeout test)
                    self._answer(reply)

            def _answer(self, reply: Reply) -> None:
                if reply.events is not None:
                    # HTTP/1.0 without Content-Length: the body ends when the connection closes.
                    self.send_response(reply.status)
                    self.send_header("Content-Type", "text/event-stream")
                    self.end_headers()
                    for data in reply.events:
                        self.wfile.write(f"data: {data}\n\n".encode())
                        self.wfile.flush()
                    return
                body = (reply.text if reply.text is not None else json.dumps(reply.json)).encode()
                self.send_response(reply.status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(body)))
                for name, value in reply.headers.items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(body)

            def log_message(self, format: str, *args: Any) -> None:
                pass  # keep pytest output clean

        return Handler

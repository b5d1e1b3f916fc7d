"""A tiny OpenAI-compatible chat-completions server, run as a process of its own:
``python tests/chat_server.py PORT``. It prints ``ready`` once it listens on 127.0.0.1:PORT.

It answers as the scripted models of ``support/fakes.py`` do: a triage from the customer's latest message
(a refund if it asks for one, else the bank-sync question), a passing review, a summary, and a
draft that cites the articles its prompt offers. Like llama.cpp's server, it refuses OpenAI's
``json_schema`` response format with HTTP 500 and takes ``json_object`` (with or without
``schema``), so a client that starts at ``json_schema`` must step down. Usage is reported.

A test stops it by its PID (SIGKILL: a provider outage, mid-request) and starts it again on the
same port. With a second argument, a file path: while that file exists, every request is answered
with the HTTP status it holds (``401``: an expired key), until the test removes it.
"""

from __future__ import annotations

import json
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support.fakes import cite_hits, is_summary_request, refund_if_asked

from supportbot._state import Review


def answer(body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    messages = body.get("messages") or []
    system = str(messages[0].get("content", "")) if messages else ""
    prompt = str(messages[-1].get("content", "")) if messages else ""
    form = body.get("response_format") or {}
    if form.get("type") == "json_schema":
        message = "response_format type must be one of 'text' or 'json_object', but got: json_schema"
        return 500, {"error": {"code": 500, "message": message, "type": "server_error"}}
    if messages and is_summary_request(messages):
        text = "客户反映的问题见下方事实清单。"
    elif '"title":"Triage"' in system:
        text = refund_if_asked(prompt).model_dump_json()
    elif '"title":"Review"' in system:
        text = Review(passed=True).model_dump_json()
    else:
        text = cite_hits(prompt)
    usage = {"prompt_tokens": len(system + prompt) // 2, "completion_tokens": len(text) // 2}
    return 200, {
        "id": "chatcmpl-loopback",
        "object": "chat.completion",
        "model": body.get("model", "loopback"),
        "choices": [{"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}],
        "usage": {**usage, "total_tokens": usage["prompt_tokens"] + usage["completion_tokens"]},
    }


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as real servers: a killed server breaks open connections

    def do_POST(self) -> None:
        raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        status, reply = answer(json.loads(raw or b"{}"))
        failing = FAIL_FILE.read_text().strip() if FAIL_FILE is not None and FAIL_FILE.exists() else ""
        if failing:
            status, reply = int(failing), {"error": {"message": "Incorrect API key provided", "type": "test"}}
        data = json.dumps(reply).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        pass


FAIL_FILE = Path(sys.argv[2]) if len(sys.argv) > 2 else None


def main() -> None:
    server = ThreadingHTTPServer(("127.0.0.1", int(sys.argv[1])), Handler)
    print("ready", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()

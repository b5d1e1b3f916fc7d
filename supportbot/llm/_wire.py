"""What goes over the wire to an OpenAI-compatible server, and what its answers mean: one
exchange's reply, how an attempt failed, the usage, the error text, Retry-After."""

from __future__ import annotations

import re
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

import httpx

from .base import Usage

# How a client waits between attempts (time.sleep, asyncio.sleep; tests pass their own).
Sleep = Callable[[float], None]
AsyncSleep = Callable[[float], Awaitable[None]]

SNIPPET_CHARS = 300  # enough of an error body to see the provider's reason, not a whole HTML page
HINTS = {
    401: "Check the API key (SUPPORTBOT_LLM_API_KEY).",
    403: "Check that the API key may use model {model!r}.",
    404: "Check base_url (most servers want it to end in /v1) and the model name {model!r}.",
    400: "Check that model {model!r} accepts these parameters (max_tokens, stream_options).",
    429: "The endpoint is rate limiting; lower concurrency or raise max_retries.",
    500: "The server failed; check its logs or status page and try again later.",
}
# What servers say when a prompt is over their window (OpenAI, vLLM, llama.cpp, Ollama, DeepSeek).
CONTEXT_WORDS = re.compile(
    r"context.length|maximum context|context window|n_ctx|too many tokens|prompt is too long", re.IGNORECASE
)


@dataclass(frozen=True, slots=True)
class Reply:
    """One successful HTTP exchange, before schema handling."""

    text: str
    usage: Usage
    model: str


class Transient(Exception):
    """One attempt failed in a way another attempt may not (connection, 429, 5xx); ``resend``
    False for a timeout, which is not sent again (see the module docstring)."""

    def __init__(
        self, reason: str, *, hint: str, retry_after: float | None = None, resend: bool = True
    ) -> None:
        super().__init__(reason)
        self.reason, self.hint, self.retry_after, self.resend = reason, hint, retry_after, resend


class TokensFieldRefused(Exception):
    """The server wants ``max_completion_tokens`` instead of ``max_tokens`` (OpenAI's reasoning models)."""


class FormatRefused(Exception):
    """The server does not take the request's response_format (see ``_json``)."""

    def __init__(self, detail: str) -> None:
        super().__init__(detail)
        self.detail = detail


def usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
    )


def snippet(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:SNIPPET_CHARS]
    except (ValueError, AttributeError):
        pass  # not a JSON error object: fall back to the raw text
    return response.text[:SNIPPET_CHARS] or "(empty body)"


def retry_after(response: httpx.Response) -> float | None:
    """Seconds the server asked us to wait: retry-after-ms (OpenAI), or Retry-After in seconds or a date."""
    for name, scale in (("retry-after-ms", 0.001), ("retry-after", 1.0)):
        try:
            return max(0.0, float(response.headers[name]) * scale)
        except (KeyError, ValueError):
            continue
    try:
        when = parsedate_to_datetime(response.headers.get("retry-after", ""))
    except (TypeError, ValueError):
        return None
    when = when if when.tzinfo else when.replace(tzinfo=UTC)
    return max(0.0, (when - datetime.now(UTC)).total_seconds())

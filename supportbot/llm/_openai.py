"""A client for any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek, Qwen, vLLM, Ollama).

Layers, outermost first, each doing one job (like httpx's ``send`` → ``_send_handling_*``):

    chat                  plain, streamed or structured; turns replies into a ``Completion``
    _complete_structured  JSON mode, the schema hint, validation and one repair round
    _send_with_retries    bounded retries with full-jitter backoff; ``ModelError`` at the end
    _send_once            one POST; a ``_Reply``, a ``_Transient`` failure, or ``ModelError``

The ``httpx.Client`` is injected so tests can pass ``httpx.MockTransport`` or talk to a loopback
server. The API key lives only in the Authorization header of each request: never in the client's
default headers, ``repr`` or any message. A key no header can carry is refused when the client is
built, every error text is scrubbed of the key (and of any "Bearer" credential), and an error that
escapes ``chat`` carries no exception in its chain whose text still holds the key.
"""

from __future__ import annotations

import json
import logging
import random
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel, ValidationError

from .._redact import Redactor, check_api_key, hide_password, url_password
from ..errors import ConfigError, ModelError
from .base import Completion, Message, Usage

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["OpenAICompatible"]

log = logging.getLogger(__name__)

_SNIPPET_CHARS = 300  # enough of an error body to see the provider's reason, not a whole HTML page
_HINTS = {
    401: "Check the API key (SUPPORTBOT_LLM_API_KEY).",
    403: "Check that the API key may use model {model!r}.",
    404: "Check base_url (most servers want it to end in /v1) and the model name {model!r}.",
    400: "Check that model {model!r} accepts these parameters (response_format, stream_options).",
    429: "The endpoint is rate limiting; lower concurrency or raise max_retries.",
    500: "The server failed; check its logs or status page and try again later.",
}
_REPAIR_PROMPT = (
    "Your previous reply does not match the required JSON schema:\n{error}\n"
    "Reply again with only the corrected JSON object."
)


@dataclass(frozen=True, slots=True)
class _Reply:
    """One successful HTTP exchange, before schema handling."""

    text: str
    usage: Usage
    model: str


class _Transient(Exception):
    """One attempt failed in a way another attempt may not (connection, timeout, 429, 5xx)."""

    def __init__(self, reason: str, *, hint: str, retry_after: float | None = None) -> None:
        super().__init__(reason)
        self.reason, self.hint, self.retry_after = reason, hint, retry_after


class OpenAICompatible:
    """The ``LLM`` protocol over ``POST {base_url}/chat/completions``.

    ``max_retries`` counts retries after the first attempt, so a call makes at most
    ``max_retries + 1`` requests. ``timeout`` applies to each network operation (connect, each
    read), so a long stream is fine as long as chunks keep arriving. ``prices`` maps a model name
    to (prompt, completion) dollars per million tokens.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        client: httpx.Client | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        prices: Mapping[str, tuple[float, float]] | None = None,
        on_token: Callable[[str], None] | None = None,
        sleep: Callable[[float], None] = time.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"llm base_url {hide_password(base_url)!r} must start with http:// or https://")
        if not model:
            raise ConfigError("llm model is empty; set SUPPORTBOT_LLM_MODEL")
        if timeout <= 0 or max_retries < 0 or backoff < 0 or max_backoff < 0:
            raise ConfigError("timeout must be > 0; max_retries, backoff and max_backoff must be >= 0")
        check_api_key(api_key, name="api_key (SUPPORTBOT_LLM_API_KEY)")
        self.base_url = base_url.rstrip("/")
        self.model = model
        self._api_key = api_key or None
        self._url = f"{self.base_url}/chat/completions"
        # A proxy's credentials in base_url ("https://user:password@host/v1") are masked in the URL
        # every message shows, and, when long enough not to match ordinary words, scrubbed too.
        self._shown_url = hide_password(self._url)
        password = url_password(self.base_url)
        self._redact = Redactor(self._api_key, password if password and len(password) >= 8 else None)
        self._owns_client = client is None  # never close a client the caller still uses
        self._client = client if client is not None else httpx.Client(timeout=timeout)
        self._timeout, self._max_retries = timeout, max_retries
        self._backoff, self._max_backoff = backoff, max_backoff
        self._prices = dict(prices or {})
        self._on_token, self._sleep = on_token, sleep
        self._rng = rng if rng is not None else random.Random()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        small: bool = False,
        client: httpx.Client | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> OpenAICompatible:
        """Build the client from ``Settings``; ``small`` picks ``llm_small_model`` when it is set."""
        if not settings.llm_base_url:
            raise ConfigError(
                "SUPPORTBOT_LLM_BASE_URL is not set; point it at an OpenAI-compatible endpoint, "
                "e.g. https://api.openai.com/v1 or http://localhost:11434/v1 (Ollama)",
                reason="missing",
                setting="SUPPORTBOT_LLM_BASE_URL",
            )
        model = (settings.llm_small_model or settings.llm_model) if small else settings.llm_model
        return cls(
            base_url=settings.llm_base_url,
            api_key=settings.llm_api_key,
            model=model,
            client=client,
            timeout=settings.llm_timeout,
            max_retries=settings.llm_max_retries,
            prices=settings.llm_prices,
            on_token=on_token,
        )

    def __repr__(self) -> str:
        key = "'***'" if self._api_key else "None"
        base_url = hide_password(self.base_url)
        return f"OpenAICompatible(base_url={base_url!r}, model={self.model!r}, api_key={key})"

    def close(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_client:
            self._client.close()

    def __enter__(self) -> OpenAICompatible:
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        """Answer the conversation; with ``schema``, also return ``parsed`` validated against it.

        Streams through ``on_token`` when it is set, except with a schema: half a JSON object is
        of no use to a reader, and the repair round would show it twice.
        """
        try:
            return self._chat(messages, schema=schema, temperature=temperature)
        except ModelError as exc:
            failure = exc
        except Exception as exc:
            # Anything else that quotes the key (an encoding error on the header) becomes a
            # ModelError too; other faults are bugs and pass through untouched.
            if not self._redact.chain_leaks(exc):
                raise
            failure = ModelError(
                self._redact(f"chat completion at {self._shown_url} failed: {type(exc).__name__}: {exc}")
            )
        self._redact.cut_leaking_causes(failure)
        # Raised here, outside the except blocks, so Python chains no context the cut removed.
        raise failure

    def _chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None, temperature: float
    ) -> Completion:
        if schema is not None:
            return self._complete_structured(messages, schema, temperature=temperature)
        body = self._body(messages, temperature=temperature, stream=self._on_token is not None)
        reply = self._send_with_retries(body)
        return self._completion([reply])

    def _complete_structured(
        self, messages: Sequence[Message], schema: type[BaseModel], *, temperature: float
    ) -> Completion:
        prompt = _with_schema_hint(messages, schema)
        first = self._send_with_retries(self._body(prompt, temperature=temperature, json_mode=True))
        try:
            return self._completion([first], parsed=_parse(first.text, schema))
        except ValidationError as exc:
            error = _describe(exc)
        log.info("model %s output did not match %s; asking once for a repair", self.model, schema.__name__)
        # Showing the model its own output and the exact errors fixes most near misses in one go.
        repair = [
            *prompt,
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": _REPAIR_PROMPT.format(error=error)},
        ]
        second = self._send_with_retries(self._body(repair, temperature=temperature, json_mode=True))
        try:
            parsed = _parse(second.text, schema)
        except ValidationError as exc:
            # Both answers were billed; the engine adds them to the round's spend anyway.
            raise self._error(
                f"the model returned output that does not match {schema.__name__} twice "
                f"(model {self.model}); last error:\n{_describe(exc)}\nCheck that the model "
                "supports JSON output (response_format json_object), or simplify the schema.",
                spent=self._completion([first, second]),
            ) from exc
        return self._completion([first, second], parsed=parsed)

    def _send_with_retries(self, body: dict[str, Any]) -> _Reply:
        attempts = self._max_retries + 1
        attempt = 1
        while True:
            try:
                return self._send_once(body)
            except _Transient as exc:
                if attempt >= attempts:
                    raise self._error(
                        f"chat completion at {self._shown_url} (model {self.model}) failed after "
                        f"{attempts} attempt(s); last error: {exc.reason}. {exc.hint}"
                    ) from exc
                delay = self._delay(attempt, exc.retry_after)
                log.warning(
                    "chat completion attempt %d/%d failed (%s); retrying in %.2fs",
                    attempt,
                    attempts,
                    self._redact(exc.reason),
                    delay,
                )
            self._sleep(delay)
            attempt += 1

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # The server knows when it will take us back; the cap stops a hostile header parking us.
            return min(retry_after, self._max_backoff)
        # Full jitter (uniform in [0, cap]) spreads out workers that failed together.
        cap = min(self._max_backoff, self._backoff * 2 ** (attempt - 1))
        return self._rng.uniform(0.0, cap)

    def _send_once(self, body: dict[str, Any]) -> _Reply:
        try:
            if body.get("stream"):
                return self._send_streaming(body)
            response = self._client.post(self._url, json=body, headers=self._headers(), timeout=self._timeout)
            self._check_status(response)
            return self._reply_from(response)
        except httpx.TimeoutException as exc:
            reason = f"no answer within {self._timeout}s ({type(exc).__name__})"
            raise _Transient(
                reason, hint="Check that the server is not overloaded, or raise the timeout."
            ) from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            hint = "Check that base_url is right and the server is running and reachable."
            raise _Transient(self._redact(f"{type(exc).__name__}: {exc}"), hint=hint) from exc
        except httpx.HTTPError as exc:  # a proxy refusal or a malformed URL: retrying will not help
            raise self._error(
                f"chat completion at {self._shown_url} failed: {type(exc).__name__}: {exc}"
            ) from exc

    def _send_streaming(self, body: dict[str, Any]) -> _Reply:
        pieces: list[str] = []
        emit = self._on_token or _ignore
        headers, timeout = self._headers(), self._timeout
        with self._client.stream("POST", self._url, json=body, headers=headers, timeout=timeout) as response:
            if not response.is_success:
                response.read()
                self._check_status(response)
            if "json" in response.headers.get("content-type", ""):
                # Some proxies ignore "stream": true and answer in one piece; pass it on as one token.
                response.read()
                reply = self._reply_from(response)
                if reply.text:
                    emit(reply.text)
                return reply
            try:
                usage, model = self._read_events(response, pieces, emit=emit)
            except httpx.TransportError as exc:
                if not pieces:
                    raise
                # A retry would replay the text already passed to on_token, so the reader would see
                # it twice; failing loudly is the lesser evil.
                raise self._error(
                    f"the stream from {self._shown_url} broke after {len(pieces)} piece(s) had been passed "
                    f"to on_token ({type(exc).__name__}: {exc}); not retried to avoid repeating them"
                ) from exc
        return _Reply(text="".join(pieces), usage=usage, model=model)

    def _read_events(
        self, response: httpx.Response, pieces: list[str], *, emit: Callable[[str], None]
    ) -> tuple[Usage, str]:
        """Read SSE ``data:`` lines into ``pieces``; return the usage and model the stream reported."""
        usage, model = Usage(), self.model
        for line in response.iter_lines():
            if not line.startswith("data:"):
                continue  # blank separators, ": keep-alive" comments, "event:" lines
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError as exc:
                raise self._error(
                    f"the stream from {self._shown_url} sent a non-JSON chunk: {data[:200]!r}"
                ) from exc
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                raise self._error(f"the stream from {self._shown_url} reported an error: {chunk['error']}")
            for choice in chunk.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    pieces.append(content)
                    emit(content)
            usage, model = _usage(chunk.get("usage")) or usage, chunk.get("model") or model
        return usage, model

    def _check_status(self, response: httpx.Response) -> None:
        status = response.status_code
        if response.is_success:
            return
        # Redacted here, not only in the final message: this text also travels in the chained cause.
        detail = self._redact(f"HTTP {status}: {_snippet(response)}")
        if status == 429 or status >= 500:
            hint = _HINTS[429] if status == 429 else _HINTS[500]
            raise _Transient(detail, hint=hint, retry_after=_retry_after(response))
        hint = _HINTS.get(status, "Check base_url and the model name.").format(model=self.model)
        raise self._error(f"chat completion at {self._shown_url} was rejected with {detail}. {hint}")

    def _reply_from(self, response: httpx.Response) -> _Reply:
        try:
            data = response.json()
            # content is null when a model refuses or only calls tools; an empty answer says as much.
            text = data["choices"][0]["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._error(
                f"{self._shown_url} answered HTTP {response.status_code} but not with a chat completion: "
                f"{_snippet(response)}. Check that base_url points at an OpenAI-compatible API."
            ) from exc
        return _Reply(
            text=text, usage=_usage(data.get("usage")) or Usage(), model=data.get("model") or self.model
        )

    def _body(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        stream: bool = False,
        json_mode: bool = False,
    ) -> dict[str, Any]:
        body: dict[str, Any] = {
            "model": self.model,
            # Role and content only: a prompt's records (prompts.SECTIONS) are not for the wire.
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": temperature,
        }
        if json_mode:
            body["response_format"] = {"type": "json_object"}
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _error(self, message: str, *, spent: Completion | None = None) -> ModelError:
        return ModelError(self._redact(message), spent=spent)

    def _completion(self, replies: Sequence[_Reply], *, parsed: BaseModel | None = None) -> Completion:
        """The last reply's text, with the tokens and cost of every request it took to get it."""
        usage = Usage(
            prompt_tokens=sum(r.usage.prompt_tokens for r in replies),
            completion_tokens=sum(r.usage.completion_tokens for r in replies),
        )
        last = replies[-1]
        cost = self._cost(usage, last.model)
        return Completion(text=last.text, parsed=parsed, usage=usage, cost=cost, model=last.model)

    def _cost(self, usage: Usage, served_model: str) -> float:
        # Providers often answer with a dated name (gpt-4o-mini-2024-07-18): try the asked name first.
        price = self._prices.get(self.model) or self._prices.get(served_model)
        if price is None:
            return 0.0
        prompt_price, completion_price = price
        return (usage.prompt_tokens * prompt_price + usage.completion_tokens * completion_price) / 1_000_000


def _with_schema_hint(messages: Sequence[Message], schema: type[BaseModel]) -> list[dict[str, Any]]:
    """The messages with the JSON schema appended to the system prompt.

    Merged into the leading system message rather than added as a second one, because several
    open-model chat templates (served by vLLM or Ollama) accept a system message only first.
    """
    hint = (
        "Reply with one JSON object and nothing else. It must validate against this JSON schema:\n"
        + json.dumps(schema.model_json_schema(), separators=(",", ":"))
    )
    out = [dict(m) for m in messages]
    if out and out[0].get("role") == "system":
        out[0] = {**out[0], "content": f"{out[0].get('content', '')}\n\n{hint}"}
    else:
        out.insert(0, {"role": "system", "content": hint})
    return out


def _ignore(piece: str) -> None:
    pass


def _parse(text: str, schema: type[BaseModel]) -> BaseModel:
    stripped = text.strip()
    # Some servers wrap JSON in a Markdown fence even in JSON mode; the object inside is fine.
    if stripped.startswith("```"):
        stripped = stripped.split("\n", 1)[-1].removesuffix("```").strip()
    return schema.model_validate_json(stripped)


def _describe(exc: ValidationError) -> str:
    """One line per error, without pydantic's documentation links (noise in a prompt)."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(part) for part in error["loc"]) or "(root)"
        lines.append(f"- {where}: {error['msg']}")
    return "\n".join(lines[:20])


def _usage(raw: object) -> Usage | None:
    if not isinstance(raw, dict):
        return None
    return Usage(
        prompt_tokens=int(raw.get("prompt_tokens") or 0),
        completion_tokens=int(raw.get("completion_tokens") or 0),
    )


def _snippet(response: httpx.Response) -> str:
    try:
        error = response.json().get("error")
        message = error.get("message") if isinstance(error, dict) else error
        if message:
            return str(message)[:_SNIPPET_CHARS]
    except (ValueError, AttributeError):
        pass  # not a JSON error object: fall back to the raw text
    return response.text[:_SNIPPET_CHARS] or "(empty body)"


def _retry_after(response: httpx.Response) -> float | None:
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

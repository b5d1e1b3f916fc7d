"""A client for any OpenAI-compatible chat-completions endpoint (OpenAI, DeepSeek, Qwen, vLLM,
Ollama, llama.cpp).

Layers, outermost first, each doing one job (like httpx's ``send`` → ``_send_handling_*``):

    chat                  plain, streamed or structured; turns replies into a ``Completion``
    _complete_structured  JSON mode (``_json``: detected once per server), validation, one repair round
    _send_with_retries    bounded retries with full-jitter backoff; ``ModelError`` at the end
    _send_once            one POST; a ``wire.Reply``, a ``wire.Transient`` failure, or ``ModelError``

Every request carries ``max_tokens``: the round's limit for the call's kind when the round set one
(``_limits``), else the client's own. The round's deadline shortens timeouts, backoffs and retries:
no call outlives it.

Retries, by what a failure says about the request:

- connection refused, reset or dropped before an answer, a pooled connection that was stale:
  the server did no work (or its work is lost), so the request is sent again, up to
  ``max_retries`` times with full-jitter backoff;
- 429 and 5xx: sent again after the server's Retry-After (capped by ``max_backoff``), else the backoff;
- a read (or write) timeout: **not sent again**. The server may still be generating the answer
  nobody waits for any more; a server that serves one request at a time would put the copy
  behind it, and the copy would time out too. The call fails at once with ``reason="unavailable"``,
  and its caller decides: a worker gives the ticket back and tries it later, ``send()`` hands it
  to a person.

``ModelError.reason`` says which failure it was (``errors.ModelError`` lists them).

The ``httpx.Client`` is injected so tests can pass ``httpx.MockTransport`` or talk to a loopback
server. The API key lives only in the Authorization header of each request: never in the client's
default headers, ``repr`` or any message. A key no header can carry is refused when the client is
built, every error text is scrubbed of the key (and of any "Bearer" credential), and an error that
escapes ``chat`` carries no exception in its chain whose text still holds the key.
"""

from __future__ import annotations

import asyncio
import json
import logging
import random
from collections.abc import Callable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

import httpx
from pydantic import BaseModel, ValidationError

from .._redact import Redactor, check_api_key, hide_password, url_password
from ..errors import ConfigError, ModelError
from . import _json, _limits
from . import _wire as wire
from .base import Completion, Message, Usage

if TYPE_CHECKING:
    from ..config import Settings

__all__ = ["AsyncOpenAICompatible"]

log = logging.getLogger(__name__)

_REPAIR_PROMPT = (
    "Your previous reply does not match the required JSON schema:\n{error}\n"
    "Reply again with only the corrected JSON object."
)


class AsyncOpenAICompatible:
    """A model (``LLM``; ``AsyncLLM`` for the asynchronous client) over ``POST {base_url}/chat/completions``.

    ``max_retries`` counts retries after the first attempt, so a call makes at most
    ``max_retries + 1`` requests. ``timeout`` applies to each network operation (connect, each
    read), so a long stream is fine as long as chunks keep arriving. ``max_tokens`` bounds an
    answer when the caller set no limit of its own (``_limits``). ``json_mode``: one of
    ``config.JSON_MODES`` (see ``_json``). ``prices`` maps a model name to (prompt, completion)
    dollars per million tokens.
    """

    def __init__(
        self,
        *,
        base_url: str,
        api_key: str | None,
        model: str,
        client: httpx.AsyncClient | None = None,
        timeout: float = 30.0,
        max_retries: int = 3,
        backoff: float = 0.5,
        max_backoff: float = 8.0,
        max_tokens: int = 1024,
        json_mode: str = "auto",
        prices: Mapping[str, tuple[float, float]] | None = None,
        on_token: Callable[[str], None] | None = None,
        sleep: wire.AsyncSleep = asyncio.sleep,
        rng: random.Random | None = None,
    ) -> None:
        if not base_url.startswith(("http://", "https://")):
            raise ConfigError(f"llm base_url {hide_password(base_url)!r} must start with http:// or https://")
        if not model:
            raise ConfigError("llm model is empty; set SUPPORTBOT_LLM_MODEL")
        if timeout <= 0 or max_retries < 0 or backoff < 0 or max_backoff < 0 or max_tokens < 1:
            raise ConfigError(
                "timeout must be > 0, max_tokens >= 1; max_retries, backoff and max_backoff must be >= 0"
            )
        if json_mode != "auto" and json_mode not in _json.LADDER:
            raise ConfigError(
                f"json_mode {json_mode!r} is not one of auto, {', '.join(_json.LADDER)}",
                setting="SUPPORTBOT_LLM_JSON_MODE",
            )
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
        self._client = client if client is not None else httpx.AsyncClient(timeout=timeout)
        self._timeout, self._max_retries = timeout, max_retries
        self._backoff, self._max_backoff = backoff, max_backoff
        self._max_tokens, self._json_mode = max_tokens, json_mode
        self._tokens_field = "max_tokens"  # or max_completion_tokens, once the server asked for it
        self._prices = dict(prices or {})
        self._on_token, self._sleep = on_token, sleep
        self._rng = rng if rng is not None else random.Random()

    @classmethod
    def from_settings(
        cls,
        settings: Settings,
        *,
        small: bool = False,
        client: httpx.AsyncClient | None = None,
        on_token: Callable[[str], None] | None = None,
    ) -> AsyncOpenAICompatible:
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
            max_tokens=settings.llm_max_tokens_small if small else settings.llm_max_tokens,
            json_mode=settings.llm_json_mode,
            prices=settings.llm_prices,
            on_token=on_token,
        )

    def __repr__(self) -> str:
        key = "'***'" if self._api_key else "None"
        base_url = hide_password(self.base_url)
        return f"{type(self).__name__}(base_url={base_url!r}, model={self.model!r}, api_key={key})"

    async def close(self) -> None:
        """Close the HTTP client if this object created it."""
        if self._owns_client:
            await self._client.aclose()

    async def __aenter__(self) -> AsyncOpenAICompatible:
        return self

    async def __aexit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        await self.close()

    async def chat(
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
            return await self._chat(messages, schema=schema, temperature=temperature)
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

    async def _chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None, temperature: float
    ) -> Completion:
        if schema is not None:
            return await self._complete_structured(messages, schema, temperature=temperature)
        body = self._body(messages, temperature=temperature, stream=self._on_token is not None)
        reply = await self._send_with_retries(body)
        return self._completion([reply])

    async def _complete_structured(
        self, messages: Sequence[Message], schema: type[BaseModel], *, temperature: float
    ) -> Completion:
        prompt = _json.with_schema_hint(messages, schema)
        first = await self._send_structured(prompt, schema, temperature=temperature, spent=[])
        try:
            return self._completion([first], parsed=_json.parse(first.text, schema))
        except ValidationError as exc:
            error = _json.describe(exc)
        log.info("model %s output did not match %s; asking once for a repair", self.model, schema.__name__)
        # Showing the model its own output and the exact errors fixes most near misses in one go.
        repair = [
            *prompt,
            {"role": "assistant", "content": first.text},
            {"role": "user", "content": _REPAIR_PROMPT.format(error=error)},
        ]
        second = await self._send_structured(repair, schema, temperature=temperature, spent=[first])
        try:
            parsed = _json.parse(second.text, schema)
        except ValidationError as exc:
            # Both answers were billed; the engine adds them to the round's spend anyway.
            raise self._error(
                f"the model returned output that does not match {schema.__name__} twice "
                f"(model {self.model}); last error:\n{_json.describe(exc)}\nCheck that the model "
                "supports JSON output (SUPPORTBOT_LLM_JSON_MODE), or simplify the schema.",
                spent=self._completion([first, second]),
                reason="invalid_output",
            ) from exc
        return self._completion([first, second], parsed=parsed)

    async def _send_structured(
        self,
        prompt: list[dict[str, Any]],
        schema: type[BaseModel],
        *,
        temperature: float,
        spent: list[wire.Reply],
    ) -> wire.Reply:
        """One structured request, in the server's JSON mode; a refused mode steps down and the
        request goes again. ``spent``: replies already billed, carried by a failure."""
        key = (self.base_url, self.model)
        mode = _json.MODES.mode(key, self._json_mode)
        while True:
            body = self._body(
                prompt, temperature=temperature, response_format=_json.response_format(mode, schema)
            )
            try:
                reply = await self._send_with_retries(body)
            except wire.FormatRefused as exc:
                lower = _json.MODES.step_down(key, mode) if self._json_mode == "auto" else None
                if lower is None:
                    raise self._error(
                        f"chat completion at {self._shown_url} was rejected with {exc.detail}. Set "
                        f"SUPPORTBOT_LLM_JSON_MODE to a form model {self.model!r} accepts "
                        "(json_object or none)",
                        spent=self._completion(spent) if spent else None,
                        reason="rejected",
                    ) from exc
                log.warning("model %s refused JSON mode %s; using %s from now on", self.model, mode, lower)
                mode = lower
                continue
            except ModelError as exc:
                if spent and exc.spent is None:
                    exc.spent = self._completion(spent)  # the first answer was billed all the same
                raise
            _json.MODES.confirm(key, mode)
            return reply

    async def _send_with_retries(self, body: dict[str, Any]) -> wire.Reply:
        attempts = self._max_retries + 1
        attempt = 1
        while True:
            limits = _limits.current()
            timeout = self._timeout_within(limits, attempt)
            try:
                return await self._send_once(body, timeout=timeout)
            except wire.TokensFieldRefused:
                # OpenAI's reasoning models take the same bound under another name; learned once.
                self._tokens_field = "max_completion_tokens"
                body = {("max_completion_tokens" if k == "max_tokens" else k): v for k, v in body.items()}
                continue
            except wire.Transient as exc:
                if limits is not None and limits.remaining() == 0.0:
                    raise self._out_of_time(limits, exc.reason) from exc  # the round's deadline cut it
                if not exc.resend or attempt >= attempts:
                    tried = f"after {attempt} attempt(s)" if exc.resend else "(not sent again)"
                    raise self._error(
                        f"chat completion at {self._shown_url} (model {self.model}) failed {tried}; "
                        f"last error: {exc.reason}. {exc.hint}",
                        reason="unavailable",
                    ) from exc
                delay = self._delay(attempt, exc.retry_after)
                left = limits.remaining() if limits is not None else None
                if left is not None and delay >= left:
                    raise self._out_of_time(limits, exc.reason) from exc
                log.warning(
                    "chat completion attempt %d/%d failed (%s); retrying in %.2fs",
                    attempt,
                    attempts,
                    self._redact(exc.reason),
                    delay,
                )
            await self._sleep(delay)
            attempt += 1

    def _timeout_within(self, limits: _limits.CallLimits | None, attempt: int) -> float:
        """This attempt's timeout: the client's, cut to what the round has left."""
        left = limits.remaining() if limits is not None else None
        if left is None:
            return self._timeout
        if left <= 0:
            raise self._out_of_time(limits, "no time left before the request" if attempt == 1 else "")
        return min(self._timeout, left)

    def _out_of_time(self, limits: _limits.CallLimits | None, last: str) -> ModelError:
        kind = limits.kind if limits is not None else "call"
        why = f"; last error: {self._redact(last)}" if last else ""
        return self._error(
            f"the round's model time ran out during the {kind} call to {self._shown_url} (model "
            f"{self.model}){why}. Raise SUPPORTBOT_LLM_ROUND_SECONDS, or use a faster model",
            reason="round_time",
        )

    def _delay(self, attempt: int, retry_after: float | None) -> float:
        if retry_after is not None:
            # The server knows when it will take us back; the cap stops a hostile header parking us.
            return min(retry_after, self._max_backoff)
        # Full jitter (uniform in [0, cap]) spreads out workers that failed together.
        cap = min(self._max_backoff, self._backoff * 2 ** (attempt - 1))
        return self._rng.uniform(0.0, cap)

    async def _send_once(self, body: dict[str, Any], *, timeout: float) -> wire.Reply:
        try:
            if body.get("stream"):
                return await self._send_streaming(body, timeout=timeout)
            response = await self._client.post(self._url, json=body, headers=self._headers(), timeout=timeout)
            self._check_status(response, body)
            return self._reply_from(response)
        except (httpx.ConnectTimeout, httpx.PoolTimeout) as exc:
            # Nothing reached the server: sending again costs it nothing.
            hint = "Check that base_url is right and the server is running and reachable."
            raise wire.Transient(
                f"no connection within {timeout:.3g}s ({type(exc).__name__})", hint=hint
            ) from exc
        except httpx.TimeoutException as exc:
            reason = (
                f"no answer within {timeout:.3g}s ({type(exc).__name__}); "
                "the server may still be working on it"
            )
            raise wire.Transient(
                reason,
                hint="Check that the server is not overloaded, raise the timeout, or lower max_tokens.",
                resend=False,
            ) from exc
        except (httpx.NetworkError, httpx.RemoteProtocolError) as exc:
            hint = "Check that base_url is right and the server is running and reachable."
            raise wire.Transient(self._redact(f"{type(exc).__name__}: {exc}"), hint=hint) from exc
        except httpx.HTTPError as exc:  # a proxy refusal or a malformed URL: retrying will not help
            raise self._error(
                f"chat completion at {self._shown_url} failed: {type(exc).__name__}: {exc}",
                reason="rejected",
            ) from exc

    async def _send_streaming(self, body: dict[str, Any], *, timeout: float) -> wire.Reply:
        pieces: list[str] = []
        emit = self._on_token or _ignore
        headers = self._headers()
        async with self._client.stream(
            "POST", self._url, json=body, headers=headers, timeout=timeout
        ) as response:
            if not response.is_success:
                await response.aread()
                self._check_status(response, body)
            if "json" in response.headers.get("content-type", ""):
                # Some proxies ignore "stream": true and answer in one piece; pass it on as one token.
                await response.aread()
                reply = self._reply_from(response)
                if reply.text:
                    emit(reply.text)
                return reply
            try:
                usage, model = await self._read_events(response, pieces, emit=emit)
            except httpx.TransportError as exc:
                if not pieces:
                    raise
                # A retry would replay the text already passed to on_token, so the reader would see
                # it twice; failing loudly is the lesser evil.
                raise self._error(
                    f"the stream from {self._shown_url} broke after {len(pieces)} piece(s) had been passed "
                    f"to on_token ({type(exc).__name__}: {exc}); not retried to avoid repeating them",
                    reason="unavailable",
                ) from exc
        return wire.Reply(text="".join(pieces), usage=usage, model=model)

    async def _read_events(
        self, response: httpx.Response, pieces: list[str], *, emit: Callable[[str], None]
    ) -> tuple[Usage, str]:
        """Read SSE ``data:`` lines into ``pieces``; return the usage and model the stream reported.
        A stream whose chunks keep coming is cut at the round's deadline."""
        usage, model = Usage(), self.model
        limits = _limits.current()
        async for line in response.aiter_lines():
            if limits is not None and limits.remaining() == 0.0:
                raise self._out_of_time(limits, f"the stream was cut after {len(pieces)} piece(s)")
            if not line.startswith("data:"):
                continue  # blank separators, ": keep-alive" comments, "event:" lines
            data = line[len("data:") :].strip()
            if data == "[DONE]":
                break
            try:
                chunk = json.loads(data)
            except json.JSONDecodeError as exc:
                raise self._error(
                    f"the stream from {self._shown_url} sent a non-JSON chunk: {data[:200]!r}",
                    reason="rejected",
                ) from exc
            if not isinstance(chunk, dict):
                continue
            if chunk.get("error"):
                raise self._error(
                    f"the stream from {self._shown_url} reported an error: {chunk['error']}",
                    reason="rejected",
                )
            for choice in chunk.get("choices") or []:
                content = (choice.get("delta") or {}).get("content")
                if content:
                    pieces.append(content)
                    emit(content)
            usage, model = wire.usage(chunk.get("usage")) or usage, chunk.get("model") or model
        return usage, model

    def _check_status(self, response: httpx.Response, body: Mapping[str, Any]) -> None:
        status = response.status_code
        if response.is_success:
            return
        # Redacted here, not only in the final message: this text also travels in the chained cause.
        message = wire.snippet(response)
        detail = self._redact(f"HTTP {status}: {message}")
        if "response_format" in body and _json.refuses_format(status, message):
            raise wire.FormatRefused(detail)
        if status == 400 and "max_tokens" in body and "max_completion_tokens" in message:
            raise wire.TokensFieldRefused(detail)
        if status == 429 or status >= 500:
            hint = wire.HINTS[429] if status == 429 else wire.HINTS[500]
            raise wire.Transient(detail, hint=hint, retry_after=wire.retry_after(response))
        hint = wire.HINTS.get(status, "Check base_url and the model name.").format(model=self.model)
        reason = "unauthorized" if status in (401, 403) else "rejected"
        if status in (400, 413, 422) and wire.CONTEXT_WORDS.search(message):
            reason, hint = "context_length", "Lower SUPPORTBOT_CONTEXT_WINDOW to the server's window."
        raise self._error(
            f"chat completion at {self._shown_url} was rejected with {detail}. {hint}",
            reason=reason,
            status=status,
        )

    def _reply_from(self, response: httpx.Response) -> wire.Reply:
        try:
            data = response.json()
            # content is null when a model refuses or only calls tools; an empty answer says as much.
            text = data["choices"][0]["message"].get("content") or ""
        except (ValueError, KeyError, IndexError, TypeError, AttributeError) as exc:
            raise self._error(
                f"{self._shown_url} answered HTTP {response.status_code} but not with a chat completion: "
                f"{wire.snippet(response)}. Check that base_url points at an OpenAI-compatible API.",
                reason="rejected",
            ) from exc
        return wire.Reply(
            text=text, usage=wire.usage(data.get("usage")) or Usage(), model=data.get("model") or self.model
        )

    def _body(
        self,
        messages: Sequence[Message],
        *,
        temperature: float,
        stream: bool = False,
        response_format: dict[str, Any] | None = None,
    ) -> dict[str, Any]:
        limits = _limits.current()
        body: dict[str, Any] = {
            "model": self.model,
            # Role and content only: a prompt's records (prompts.SECTIONS) are not for the wire.
            "messages": [{"role": m["role"], "content": m["content"]} for m in messages],
            "temperature": temperature,
            # Without it a small model in JSON mode can write thousands of tokens of nothing.
            self._tokens_field: limits.max_tokens
            if limits is not None and limits.max_tokens
            else self._max_tokens,
        }
        if response_format is not None:
            body["response_format"] = response_format
        if stream:
            body["stream"] = True
            body["stream_options"] = {"include_usage": True}
        return body

    def _headers(self) -> dict[str, str]:
        return {"Authorization": f"Bearer {self._api_key}"} if self._api_key else {}

    def _error(
        self, message: str, *, spent: Completion | None = None, reason: str | None = None, status: int = 0
    ) -> ModelError:
        error = ModelError(self._redact(message), spent=spent, reason=reason)
        if status:
            error.details["status"] = status
        return error

    def _completion(self, replies: Sequence[wire.Reply], *, parsed: BaseModel | None = None) -> Completion:
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


def _ignore(piece: str) -> None:
    pass

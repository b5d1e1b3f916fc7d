"""The OpenAI-compatible client against a real HTTP server on loopback.

Most tests talk to ``ScriptedServer`` (http.server on 127.0.0.1, an ephemeral port) so the
client's real HTTP path runs; a few use ``httpx.MockTransport`` where a socket adds nothing.
Every client gets a recording no-op ``sleep`` and tiny timeouts, so the file runs in seconds.
"""

from __future__ import annotations

import json
import logging
import random
import socket
import traceback
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from typing import Any

import httpx
import pytest
from pydantic import BaseModel
from support.openai_server import Reply, ScriptedServer, completion, error, stream

from supportbot import Hit, SupportState
from supportbot._state import Ticket
from supportbot.config import Settings
from supportbot.errors import ConfigError, ModelError
from supportbot.i18n._prompts import SECTIONS, PromptSections
from supportbot.llm._openai import OpenAICompatible
from supportbot.llm.base import Message, Usage
from supportbot.reply import _context as context

KEY = "sk-test-SECRET-0123456789abcdef"
Make = Callable[..., OpenAICompatible]  # the `make` fixture: a client aimed at the scripted server
MESSAGES: list[Message] = [
    {"role": "system", "content": "You are support."},
    {"role": "user", "content": "Hi"},
]


class Answer(BaseModel):
    category: str
    urgent: bool


class Sleeps(list[float]):
    """An injected sleep that records each delay instead of waiting."""

    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class MaxRandom(random.Random):
    """Always picks the top of the jitter range, so the backoff caps become visible."""

    def uniform(self, a: float, b: float) -> float:
        return b


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


@pytest.fixture
def sleeps() -> Sleeps:
    return Sleeps()


@pytest.fixture
def make(server: ScriptedServer, sleeps: Sleeps) -> Iterator[Make]:
    clients: list[OpenAICompatible] = []

    def build(**options: Any) -> OpenAICompatible:
        settings: dict[str, Any] = {
            "base_url": server.url,
            "api_key": KEY,
            "model": "test-model",
            "timeout": 2.0,
            "sleep": sleeps,
            "rng": random.Random(7),
        }
        client = OpenAICompatible(**{**settings, **options})
        clients.append(client)
        return client

    yield build
    for client in clients:
        client.close()


def mock_client(handler: Callable[[httpx.Request], httpx.Response], **options: Any) -> OpenAICompatible:
    settings: dict[str, Any] = {
        "base_url": "http://llm.test/v1",
        "api_key": KEY,
        "model": "test-model",
        "client": httpx.Client(transport=httpx.MockTransport(handler)),
        "sleep": Sleeps(),
        "rng": random.Random(7),
    }
    return OpenAICompatible(**{**settings, **options})


def ok(content: str, **usage: int) -> httpx.Response:
    body: dict[str, object] = {
        "model": "test-model",
        "choices": [{"message": {"role": "assistant", "content": content}}],
    }
    if usage:
        body["usage"] = usage
    return httpx.Response(200, json=body)


# -- over loopback -------------------------------------------------------------------------------


def test_success_sends_model_messages_temperature_and_key(server: ScriptedServer, make: Make) -> None:
    server.script(completion("Hello!", prompt_tokens=1000, completion_tokens=500))
    llm = make(prices={"test-model": (2.0, 8.0)})

    result = llm.chat(MESSAGES, temperature=0.3)

    assert result.text == "Hello!" and result.parsed is None and result.model == "test-model"
    assert result.usage == Usage(prompt_tokens=1000, completion_tokens=500)
    assert result.cost == pytest.approx(1000 * 2.0 / 1e6 + 500 * 8.0 / 1e6)
    [request] = server.requests
    assert request.path == "/v1/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == {
        "model": "test-model",
        "messages": MESSAGES,
        "temperature": 0.3,
        "max_tokens": 1024,
    }


def test_a_prompt_s_records_never_reach_the_wire(server: ScriptedServer, make: Make) -> None:
    """A prompt built by the context builder carries its sections as records for the offline model;
    a real model's API gets role and content only, in both the plain and the schema request."""
    state = SupportState(
        ticket=Ticket("T000001", "a@example.com", "银行同步", "同步失败", datetime(2026, 10, 15, tzinfo=UTC)),
        hits=(Hit("KB-bank-001", "银行流水同步失败", "请重新授权。"),),
        draft="请重新授权 [KB-bank-001]。",
    )
    messages = context.review_prompt(state).messages
    assert isinstance(messages[-1][SECTIONS], PromptSections)  # there to be left out
    server.script(completion("ok"), completion('{"category": "billing", "urgent": true}'))
    make().chat(messages)
    make().chat(messages, schema=Answer)
    for request in server.requests:
        assert all(set(m) == {"role", "content"} for m in request.body["messages"])
        assert request.body["messages"][-1]["content"] == messages[-1]["content"]


def test_no_key_sends_no_authorization_and_no_prices_cost_nothing(server: ScriptedServer, make: Make) -> None:
    server.script(completion("local"))
    result = make(api_key=None).chat(MESSAGES)
    assert "authorization" not in server.requests[0].headers
    assert result.cost == 0.0 and result.usage.total_tokens == 18


def test_schema_sends_json_mode_and_the_schema_and_parses(server: ScriptedServer, make: Make) -> None:
    server.script(completion('{"category": "billing", "urgent": true}'))

    result = make().chat(MESSAGES, schema=Answer)

    assert result.parsed == Answer(category="billing", urgent=True)
    body = server.requests[0].body
    # auto starts at the best form: the server constrains the answer to the schema itself.
    assert body["response_format"] == {
        "type": "json_schema",
        "json_schema": {"name": "Answer", "schema": Answer.model_json_schema(), "strict": False},
    }
    assert body["temperature"] == 0.0 and body["model"] == "test-model"
    system = body["messages"][0]
    # The hint joins the caller's system prompt: some chat templates accept only one, and only first.
    assert system["role"] == "system" and system["content"].startswith("You are support.")
    assert json.dumps(Answer.model_json_schema(), separators=(",", ":")) in system["content"]
    assert [m["role"] for m in body["messages"]] == ["system", "user"]


def test_schema_without_a_system_message_gets_one(server: ScriptedServer, make: Make) -> None:
    server.script(completion('```json\n{"category": "refund", "urgent": false}\n```'))
    result = make().chat([{"role": "user", "content": "refund please"}], schema=Answer)
    assert result.parsed == Answer(category="refund", urgent=False)  # a Markdown fence is tolerated
    assert [m["role"] for m in server.requests[0].body["messages"]] == ["system", "user"]


def test_streaming_reassembles_chunks_and_calls_on_token_in_order(server: ScriptedServer, make: Make) -> None:
    pieces = ["Your ", "refund ", "is ", "on ", "its ", "way."]
    server.script(stream(pieces, usage=(40, 6)))
    seen: list[str] = []

    result = make(on_token=seen.append, prices={"test-model": (1.0, 1.0)}).chat(MESSAGES)

    assert seen == pieces
    assert result.text == "Your refund is on its way."
    assert result.usage == Usage(prompt_tokens=40, completion_tokens=6)
    assert result.cost == pytest.approx(46 / 1e6)
    body = server.requests[0].body
    assert body["stream"] is True and body["stream_options"] == {"include_usage": True}


def test_streaming_without_usage_reports_zero_tokens(server: ScriptedServer, make: Make) -> None:
    server.script(stream(["a", "b"]))
    result = make(on_token=lambda piece: None).chat(MESSAGES)
    assert result.text == "ab" and result.usage == Usage()


def test_schema_is_not_streamed_even_with_on_token(server: ScriptedServer, make: Make) -> None:
    server.script(completion('{"category": "api", "urgent": false}'))
    seen: list[str] = []
    result = make(on_token=seen.append).chat(MESSAGES, schema=Answer)
    assert result.parsed == Answer(category="api", urgent=False)
    assert "stream" not in server.requests[0].body and seen == []


def test_429_honours_retry_after_then_succeeds(server: ScriptedServer, make: Make, sleeps: Sleeps) -> None:
    server.script(error(429, "slow down", headers={"Retry-After": "2"}), completion("done"))
    assert make().chat(MESSAGES).text == "done"
    assert sleeps == [2.0]
    assert len(server.requests) == 2 and server.requests[0].body == server.requests[1].body


def test_500_then_succeeds_after_a_jittered_backoff(
    server: ScriptedServer, make: Make, sleeps: Sleeps
) -> None:
    server.script(error(500, "boom"), error(503, "busy"), completion("done"))
    assert make(backoff=0.5).chat(MESSAGES).text == "done"
    assert len(server.requests) == 3 and len(sleeps) == 2
    assert 0.0 <= sleeps[0] <= 0.5 and 0.0 <= sleeps[1] <= 1.0


def test_a_read_timeout_is_not_sent_again(server: ScriptedServer, make: Make, sleeps: Sleeps) -> None:
    """The server may still be generating the answer: a copy would only queue behind it."""
    server.script(*[Reply(delay=5.0, json={}) for _ in range(3)])
    with pytest.raises(ModelError) as caught:
        make(timeout=0.05, max_retries=2).chat(MESSAGES)
    message = str(caught.value)
    assert "not sent again" in message and "no answer within 0.05s" in message and "ReadTimeout" in message
    assert caught.value.reason == "unavailable"
    assert len(server.requests) == 1 and sleeps == []


def test_connection_refused_raises_after_bounded_attempts(sleeps: Sleeps) -> None:
    # A bound socket that never listens: the port is ours, so nothing else can answer on it.
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", 0))
        port = holder.getsockname()[1]
        llm = OpenAICompatible(
            base_url=f"http://127.0.0.1:{port}/v1",
            api_key=KEY,
            model="m",
            timeout=1.0,
            max_retries=2,
            sleep=sleeps,
        )
        with pytest.raises(ModelError) as caught:
            llm.chat(MESSAGES)
        llm.close()
    assert "ConnectError" in str(caught.value) and "3 attempt(s)" in str(caught.value)
    assert "server is running" in str(caught.value)
    assert len(sleeps) == 2


def test_malformed_json_then_repair_succeeds(server: ScriptedServer, make: Make) -> None:
    server.script(
        completion('{"category": "billing", "urgent": ', prompt_tokens=10, completion_tokens=5),
        completion('{"category": "billing", "urgent": false}', prompt_tokens=30, completion_tokens=8),
    )

    result = make().chat(MESSAGES, schema=Answer)

    assert result.parsed == Answer(category="billing", urgent=False)
    assert result.usage == Usage(prompt_tokens=40, completion_tokens=13)  # both requests are paid for
    first, repair = (r.body["messages"] for r in server.requests)
    assert repair[: len(first)] == first
    assert repair[-2] == {"role": "assistant", "content": '{"category": "billing", "urgent": '}
    assert repair[-1]["role"] == "user" and "Invalid JSON" in repair[-1]["content"]
    assert server.requests[1].body["response_format"] == server.requests[0].body["response_format"]


def test_repair_shows_the_validation_error(server: ScriptedServer, make: Make) -> None:
    server.script(
        completion('{"category": "billing"}'), completion('{"category": "billing", "urgent": true}')
    )
    assert make().chat(MESSAGES, schema=Answer).parsed == Answer(category="billing", urgent=True)
    assert "urgent: Field required" in server.requests[1].body["messages"][-1]["content"]


def test_invalid_output_twice_raises(server: ScriptedServer, make: Make) -> None:
    server.script(completion('{"category": 3}'), completion("not json at all"))
    with pytest.raises(ModelError, match="does not match Answer twice"):
        make().chat(MESSAGES, schema=Answer)
    assert len(server.requests) == 2


def test_400_fails_at_once_without_retry(server: ScriptedServer, make: Make, sleeps: Sleeps) -> None:
    server.script(error(400, "response_format is not supported"), completion("never sent"))
    with pytest.raises(ModelError) as caught:
        make().chat(MESSAGES)
    assert "HTTP 400" in str(caught.value) and "response_format is not supported" in str(caught.value)
    assert len(server.requests) == 1 and sleeps == []


def test_api_key_never_leaks(server: ScriptedServer, make: Make, caplog: pytest.LogCaptureFixture) -> None:
    # Some proxies echo the request back; the key must still not reach messages or logs.
    server.script(
        error(503, f"upstream rejected Bearer {KEY}"), error(401, f"Incorrect API key provided: {KEY}")
    )
    llm = make()
    caplog.set_level(logging.DEBUG)
    with pytest.raises(ModelError) as caught:
        llm.chat(MESSAGES)
    assert "HTTP 401" in str(caught.value) and "API key" in str(caught.value)
    shown = [
        str(caught.value),
        repr(caught.value),
        repr(llm),
        caplog.text,
        *(r.getMessage() for r in caplog.records),
        "".join(traceback.format_exception(caught.value)),
    ]
    assert caplog.records, "the retry should have been logged"
    assert all(KEY not in text for text in shown)


def test_api_key_never_leaks_through_the_chained_cause(server: ScriptedServer, make: Make) -> None:
    server.script(*[error(503, f"upstream rejected Bearer {KEY}")] * 2)
    with pytest.raises(ModelError) as caught:
        make(max_retries=1).chat(MESSAGES)
    assert caught.value.__cause__ is not None
    assert "upstream rejected Bearer ***" in str(caught.value)
    assert KEY not in "".join(traceback.format_exception(caught.value))


def test_on_token_stream_failing_after_tokens_is_not_retried(sleeps: Sleeps) -> None:
    class Broken(httpx.SyncByteStream):
        def __iter__(self) -> Iterator[bytes]:
            yield b'data: {"choices": [{"delta": {"content": "Hel"}}]}\n\n'
            raise httpx.ReadError("connection reset")

    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, stream=Broken(), headers={"content-type": "text/event-stream"})

    seen: list[str] = []
    with pytest.raises(ModelError, match="not retried"):
        mock_client(handler, on_token=seen.append, sleep=sleeps).chat(MESSAGES)
    assert seen == ["Hel"] and len(calls) == 1 and sleeps == []


# -- with httpx.MockTransport --------------------------------------------------------------------


def test_a_server_that_ignores_stream_still_answers() -> None:
    seen: list[str] = []
    result = mock_client(
        lambda request: ok("all at once", prompt_tokens=3, completion_tokens=4), on_token=seen.append
    ).chat(MESSAGES)
    assert result.text == "all at once" and seen == ["all at once"] and result.usage.total_tokens == 7


def test_backoff_is_exponential_capped_and_retry_after_is_capped() -> None:
    statuses = iter([503, 503, 503, 503, 503, 429])

    def handler(request: httpx.Request) -> httpx.Response:
        status = next(statuses, 200)
        if status == 429:
            return httpx.Response(429, headers={"Retry-After": "120"})
        return httpx.Response(status) if status != 200 else ok("fine")

    sleeps = Sleeps()
    llm = mock_client(handler, max_retries=6, backoff=0.5, max_backoff=4.0, rng=MaxRandom(), sleep=sleeps)
    assert llm.chat(MESSAGES).text == "fine"
    assert sleeps == [0.5, 1.0, 2.0, 4.0, 4.0, 4.0]


def test_retry_after_ms_and_http_date_forms() -> None:
    headers = iter([{"retry-after-ms": "250"}, {"Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT"}])

    def handler(request: httpx.Request) -> httpx.Response:
        header = next(headers, None)
        return httpx.Response(429, headers=header) if header is not None else ok("fine")

    sleeps = Sleeps()
    assert mock_client(handler, sleep=sleeps).chat(MESSAGES).text == "fine"
    assert sleeps == [0.25, 0.0]  # a date in the past means: now


def test_too_many_failures_name_status_and_attempts() -> None:
    llm = mock_client(lambda request: httpx.Response(502, text="bad gateway"), max_retries=1)
    with pytest.raises(ModelError) as caught:
        llm.chat(MESSAGES)
    assert "2 attempt(s)" in str(caught.value) and "HTTP 502: bad gateway" in str(caught.value)


def test_a_200_that_is_not_a_completion_fails_at_once() -> None:
    calls: list[httpx.Request] = []

    def handler(request: httpx.Request) -> httpx.Response:
        calls.append(request)
        return httpx.Response(200, text="<html>login</html>")

    with pytest.raises(ModelError, match="not with a chat completion"):
        mock_client(handler).chat(MESSAGES)
    assert len(calls) == 1


def test_null_content_is_an_empty_answer_and_dated_model_prices() -> None:
    def handler(request: httpx.Request) -> httpx.Response:
        return httpx.Response(
            200,
            json={
                "model": "gpt-x-2025-01-01",
                "choices": [{"message": {"content": None}}],
                "usage": {"prompt_tokens": 1_000_000, "completion_tokens": 0},
            },
        )

    result = mock_client(handler, model="gpt-x", prices={"gpt-x": (0.15, 0.6)}).chat(MESSAGES)
    assert result.text == "" and result.model == "gpt-x-2025-01-01" and result.cost == pytest.approx(0.15)


def test_injected_client_is_not_closed_and_repr_hides_the_key() -> None:
    http = httpx.Client(transport=httpx.MockTransport(lambda request: ok("hi")))
    with OpenAICompatible(base_url="http://llm.test/v1/", api_key=KEY, model="m", client=http) as llm:
        assert llm.chat(MESSAGES).text == "hi"
        assert KEY not in repr(llm) and "***" in repr(llm)
        assert llm.base_url == "http://llm.test/v1"
    assert not http.is_closed
    assert "authorization" not in {k.lower() for k in http.headers}  # the key stays per request


@pytest.mark.parametrize(
    "options", [{"base_url": "llm.test/v1"}, {"model": ""}, {"max_retries": -1}, {"timeout": 0}]
)
def test_bad_options_are_config_errors(options: dict[str, Any]) -> None:
    with pytest.raises(ConfigError):
        OpenAICompatible(**{"base_url": "http://llm.test/v1", "api_key": None, "model": "m", **options})


def test_from_settings() -> None:
    with pytest.raises(ConfigError, match="SUPPORTBOT_LLM_BASE_URL"):
        OpenAICompatible.from_settings(Settings(llm_api_key=KEY))
    settings = Settings(
        llm_base_url="http://llm.test/v1", llm_api_key=KEY, llm_model="big", llm_small_model="small"
    )
    assert OpenAICompatible.from_settings(settings).model == "big"
    assert OpenAICompatible.from_settings(settings, small=True).model == "small"
    no_small = Settings(llm_base_url="http://llm.test/v1", llm_model="big")
    http = httpx.Client(transport=httpx.MockTransport(lambda request: ok("hi")))
    llm = OpenAICompatible.from_settings(no_small, small=True, client=http)
    assert llm.model == "big" and llm.chat(MESSAGES).text == "hi"

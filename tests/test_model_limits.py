"""The client against what real servers do, over ``httpx.MockTransport``: answers bounded by
``max_tokens`` per call kind, retries by what a failure says (connection, 429/5xx, read timeout,
401), the round's deadline, JSON modes stepped down once per server and remembered, JSON repaired
from text, context-length errors, and the spend of calls that failed after a billed answer.
"""

from __future__ import annotations

import json
import random
import time
from collections.abc import Callable
from typing import Any

import httpx
import pytest
from pydantic import BaseModel

from supportbot import Settings
from supportbot.errors import ConfigError, ModelError
from supportbot.llm import _json
from supportbot.llm._limits import CallLimits, current, limited
from supportbot.llm._openai import OpenAICompatible
from supportbot.llm.base import Completion, Usage
from supportbot.reply import _context as context
from supportbot.reply._context import ANSWER_RESERVE
from supportbot.run import _models as models
from supportbot.run._deps import Deps, ModelTime

MESSAGES = [{"role": "system", "content": "You are support."}, {"role": "user", "content": "hi"}]
Handler = Callable[[httpx.Request], httpx.Response]


class Answer(BaseModel):
    category: str
    urgent: bool


ANSWER = '{"category": "billing", "urgent": true}'


class Sleeps(list[float]):
    def __call__(self, seconds: float) -> None:
        self.append(seconds)


class Server:
    """A scripted handler: each request is recorded, then answered by the next item (a response,
    or an exception the transport raises)."""

    def __init__(self, *script: httpx.Response | Exception) -> None:
        self.script = list(script)
        self.bodies: list[dict[str, Any]] = []
        self.timeouts: list[float] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.bodies.append(json.loads(request.content))
        self.timeouts.append(request.extensions["timeout"]["read"])
        item = self.script.pop(0)
        if isinstance(item, Exception):
            raise item
        return item


def ok(content: str, *, usage: tuple[int, int] | None = (10, 5)) -> httpx.Response:
    body: dict[str, Any] = {"model": "m", "choices": [{"message": {"role": "assistant", "content": content}}]}
    if usage is not None:
        body["usage"] = {"prompt_tokens": usage[0], "completion_tokens": usage[1]}
    return httpx.Response(200, json=body)


def fail(status: int, message: str, **headers: str) -> httpx.Response:
    return httpx.Response(status, json={"error": {"message": message}}, headers=headers)


_hosts = iter(range(1_000_000))


def client(server: Server, **options: Any) -> OpenAICompatible:
    """A client on a host of its own: the JSON mode a server answered in is remembered per host."""
    settings: dict[str, Any] = {
        "base_url": f"http://llm-{next(_hosts)}.test/v1",
        "api_key": "sk-test-0123456789",
        "model": "m",
        "client": httpx.Client(transport=httpx.MockTransport(server)),
        "sleep": Sleeps(),
        "rng": random.Random(7),
        "timeout": 5.0,
    }
    return OpenAICompatible(**{**settings, **options})


# -- max_tokens -------------------------------------------------------------------------------


def test_every_request_carries_max_tokens_the_call_s_limit_first() -> None:
    server = Server(ok("a"), ok("b"))
    llm = client(server, max_tokens=700)
    llm.chat(MESSAGES)
    with limited(CallLimits(kind="classify", max_tokens=64)):
        llm.chat(MESSAGES)
    assert [b["max_tokens"] for b in server.bodies] == [700, 64]
    assert current() is None  # the limits end with the call


def test_max_tokens_per_kind_small_for_json_and_bounded_by_budgets_for_text() -> None:
    settings = Settings(llm_max_tokens_small=300, llm_max_tokens=5000, history_budget=800)
    assert [models.max_tokens(settings, k) for k in ("classify", "check", "facts")] == [300] * 3
    assert models.max_tokens(settings, "summary") == 800  # never longer than the history budget
    assert models.max_tokens(settings, "draft") == ANSWER_RESERVE  # the room the window leaves
    capped = Settings(llm_max_tokens=200, summary_cap=120)
    assert models.max_tokens(capped, "summary") == 120 and models.max_tokens(capped, "answer") == 200


def test_the_window_keeps_room_for_the_longest_answer_asked_not_a_fixed_1024() -> None:
    small_server = Settings(context_window=2048, llm_max_tokens=96, llm_max_tokens_small=64)
    assert context.prompt_budget(small_server) == 2048 - 96
    assert (
        context.prompt_budget(Settings(context_window=2048, llm_max_tokens=96, llm_max_tokens_small=300))
        == 1748
    )
    assert context.prompt_budget(Settings()) == 16_000 - ANSWER_RESERVE  # the defaults: 1,024 kept
    assert context.prompt_budget(Settings(context_window=8000, llm_max_tokens=5000)) == 8000 - ANSWER_RESERVE


def test_settings_refuse_an_unknown_json_mode_and_zero_tokens() -> None:
    with pytest.raises(ConfigError, match="SUPPORTBOT_LLM_JSON_MODE"):
        Settings(llm_json_mode="xml")
    with pytest.raises(ConfigError, match="SUPPORTBOT_LLM_MAX_TOKENS"):
        Settings(llm_max_tokens_small=0)
    env = {"SUPPORTBOT_LLM_JSON_MODE": "json_object", "SUPPORTBOT_MODEL_OUTAGE_GRACE": "45"}
    settings = Settings.from_env(env)
    assert settings.llm_json_mode == "json_object" and settings.model_outage_grace == 45.0


# -- retries ------------------------------------------------------------------------------------


def test_a_connect_error_is_sent_again() -> None:
    server = Server(httpx.ConnectError("refused"), ok("done"))
    llm = client(server, max_retries=2)
    assert llm.chat(MESSAGES).text == "done"
    assert len(server.bodies) == 2


def test_a_read_timeout_is_never_sent_again() -> None:
    server = Server(httpx.ReadTimeout("slow"), ok("never"))
    llm = client(server, max_retries=3)
    with pytest.raises(ModelError, match="not sent again") as caught:
        llm.chat(MESSAGES)
    assert caught.value.reason == "unavailable" and len(server.bodies) == 1


def test_429_waits_as_the_server_asks_and_5xx_beyond_retries_is_unavailable() -> None:
    server = Server(fail(429, "slow down", **{"Retry-After": "3"}), ok("done"))
    sleeps = Sleeps()
    assert client(server, sleep=sleeps).chat(MESSAGES).text == "done"
    assert sleeps == [3.0]
    busy = Server(*[fail(503, "busy") for _ in range(3)])
    with pytest.raises(ModelError, match="after 3 attempt") as caught:
        client(busy, max_retries=2).chat(MESSAGES)
    assert caught.value.reason == "unavailable" and len(busy.bodies) == 3


@pytest.mark.parametrize("status", [401, 403])
def test_a_refused_key_fails_at_once_as_unauthorized(status: int) -> None:
    server = Server(fail(status, "invalid api key"))
    with pytest.raises(ModelError) as caught:
        client(server).chat(MESSAGES)
    assert caught.value.reason == "unauthorized" and len(server.bodies) == 1


# -- the round's deadline -----------------------------------------------------------------------


def test_the_deadline_shortens_the_timeout_and_refuses_a_call_past_it() -> None:
    server = Server(ok("done"))
    llm = client(server, timeout=30.0)
    with limited(CallLimits(kind="draft", deadline=time.monotonic() + 2.0)):
        llm.chat(MESSAGES)
    assert 0 < server.timeouts[0] <= 2.0
    with (
        limited(CallLimits(kind="draft", deadline=time.monotonic() - 1)),
        pytest.raises(ModelError) as caught,
    ):
        llm.chat(MESSAGES)
    assert caught.value.reason == "round_time" and len(server.bodies) == 1


def test_a_retry_after_beyond_the_deadline_ends_the_call_without_waiting() -> None:
    server = Server(fail(429, "slow down", **{"Retry-After": "5"}), ok("never"))
    sleeps = Sleeps()
    llm = client(server, sleep=sleeps, max_backoff=10.0)
    with (
        limited(CallLimits(kind="classify", deadline=time.monotonic() + 1.0)),
        pytest.raises(ModelError) as caught,
    ):
        llm.chat(MESSAGES)
    assert caught.value.reason == "round_time" and sleeps == [] and len(server.bodies) == 1


class _Slow:
    """A host's model that takes its time and ignores any deadline."""

    def __init__(self, seconds: float) -> None:
        self.seconds, self.calls = seconds, 0

    def chat(self, messages: Any, *, schema: Any = None, temperature: float = 0.0) -> Completion:
        self.calls += 1
        time.sleep(self.seconds)
        return Completion(text="ok", usage=Usage(1, 1))


def test_a_round_s_model_time_is_bounded_whatever_the_model() -> None:
    slow = _Slow(0.15)
    watch = _Watch()
    deps = Deps(
        llm=slow,
        small_llm=slow,
        backend=None,  # type: ignore[arg-type]
        settings=Settings(),
        clock=lambda: None,  # type: ignore[arg-type,return-value]
        model_time=ModelTime(0.2, watch=watch),
    )
    assert models.ask(deps, "draft", MESSAGES).text == "ok"
    models.ask(deps, "check", MESSAGES)  # 0.15 s used: 0.05 s left, so the call may start
    with pytest.raises(ModelError, match="SUPPORTBOT_LLM_ROUND_SECONDS") as caught:
        models.ask(deps, "draft", MESSAGES)
    assert caught.value.reason == "round_time" and slow.calls == 2 and watch.answers == 2


class _Watch:
    def __init__(self) -> None:
        self.answers = 0

    def answered(self) -> None:
        self.answers += 1

    def defer(self, exc: ModelError) -> bool:
        return False


# -- JSON modes ---------------------------------------------------------------------------------


def test_a_server_that_takes_json_schema_keeps_it() -> None:
    server = Server(ok(ANSWER), ok(ANSWER))
    llm = client(server)
    assert llm.chat(MESSAGES, schema=Answer).parsed == Answer(category="billing", urgent=True)
    llm.chat(MESSAGES, schema=Answer)
    assert [b["response_format"]["type"] for b in server.bodies] == ["json_schema", "json_schema"]
    assert server.bodies[0]["response_format"]["json_schema"]["schema"] == Answer.model_json_schema()


def test_llama_cpp_s_500_for_json_schema_steps_down_once_per_process() -> None:
    refusal = "response_format type must be one of 'text' or 'json_object', but got: json_schema"
    server = Server(fail(500, refusal), ok(ANSWER), ok(ANSWER))
    llm = client(server, max_retries=3)
    assert llm.chat(MESSAGES, schema=Answer).parsed is not None
    # Not retried as a 5xx: one refusal, then the llama.cpp form with the schema in it.
    assert [b.get("response_format", {}).get("type") for b in server.bodies] == ["json_schema", "json_object"]
    assert server.bodies[1]["response_format"]["schema"] == Answer.model_json_schema()
    # Another client of the same server and model (the small model's, a second bot) starts there.
    again = client(server, base_url=llm.base_url)
    again.chat(MESSAGES, schema=Answer)
    assert server.bodies[2]["response_format"] == {
        "type": "json_object",
        "schema": Answer.model_json_schema(),
    }


def test_a_server_with_no_json_mode_gets_none_and_its_prose_is_repaired() -> None:
    server = Server(
        fail(400, "Unknown parameter: response_format.json_schema"),
        fail(400, "response_format.schema is not supported"),
        fail(400, "Invalid response_format: json_object"),
        ok(f"Sure! Here it is:\n```json\n{ANSWER[:-1]},}}\n```\nAnything else?"),
    )
    result = client(server).chat(MESSAGES, schema=Answer)
    assert result.parsed == Answer(category="billing", urgent=True)
    forms = [b.get("response_format") for b in server.bodies]
    assert forms[2] == {"type": "json_object"} and forms[3] is None
    assert "JSON schema" in server.bodies[3]["messages"][0]["content"]  # the schema is in the prompt


def test_a_mode_that_answered_is_not_given_up_for_a_later_400() -> None:
    server = Server(ok(ANSWER), fail(400, "schema too complex"))
    llm = client(server)
    llm.chat(MESSAGES, schema=Answer)
    with pytest.raises(ModelError, match="SUPPORTBOT_LLM_JSON_MODE") as caught:
        llm.chat(MESSAGES, schema=Answer)
    assert caught.value.reason == "rejected" and len(server.bodies) == 2


def test_a_fixed_json_mode_is_sent_as_set() -> None:
    server = Server(ok(ANSWER), fail(400, "response_format json_object not supported"))
    llm = client(server, json_mode="json_object")
    llm.chat(MESSAGES, schema=Answer)
    assert server.bodies[0]["response_format"] == {"type": "json_object"}
    with pytest.raises(ModelError):  # fixed: a refusal is reported, not worked around
        llm.chat(MESSAGES, schema=Answer)
    assert len(server.bodies) == 2


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ('```json\n{"a": 1}\n```', {"a": 1}),
        ('The answer is {"a": {"b": [1, 2,]}, } as asked.', {"a": {"b": [1, 2]}}),
        ('{"a": "x}y", "b": 2}\n\n{"c": 3}', {"a": "x}y", "b": 2}),
        ('{"a": 1, "b": "cut off', {"a": 1, "b": "cut off"}),
        ('{"a": [1, 2', {"a": [1, 2]}),
    ],
)
def test_repair_finds_the_object_in_the_text(text: str, expected: dict[str, Any]) -> None:
    repaired = _json.repair(text)
    assert repaired is not None and json.loads(repaired) == expected


@pytest.mark.parametrize("text", ["no json here", '{"a": ', '{"a"'])
def test_repair_gives_up_where_nothing_can_be_read(text: str) -> None:
    assert _json.repair(text) is None


# -- context length and spend -------------------------------------------------------------------


@pytest.mark.parametrize(
    "message",
    [
        "This model's maximum context length is 8192 tokens. However, your messages resulted in 9000 tokens.",
        "the request exceeds the available context size (n_ctx 2048)",
        "context_length_exceeded",
        "Input has too many tokens",
    ],
)
def test_a_context_length_400_says_so(message: str) -> None:
    server = Server(fail(400, message))
    with pytest.raises(ModelError) as caught:
        client(server).chat(MESSAGES)
    assert caught.value.reason == "context_length" and len(server.bodies) == 1


def test_a_billed_answer_counts_when_the_repair_request_fails() -> None:
    server = Server(ok("not json", usage=(100, 40)), httpx.ReadTimeout("slow"))
    with pytest.raises(ModelError) as caught:
        client(server, prices={"m": (1.0, 2.0)}).chat(MESSAGES, schema=Answer)
    spent = caught.value.spent
    assert spent is not None and spent.usage.prompt_tokens == 100 and spent.usage.completion_tokens == 40
    assert spent.cost == pytest.approx((100 * 1.0 + 40 * 2.0) / 1e6)


def test_a_500_that_does_not_name_the_format_is_retried_not_taken_for_a_refusal() -> None:
    server = Server(fail(500, "grammar sampler crashed"), ok(ANSWER))
    llm = client(server)
    assert llm.chat(MESSAGES, schema=Answer).parsed is not None
    assert [b["response_format"]["type"] for b in server.bodies] == ["json_schema", "json_schema"]


def test_a_server_that_wants_max_completion_tokens_gets_it_from_then_on() -> None:
    refusal = (
        "Unsupported parameter: 'max_tokens' is not supported with this model. "
        "Use 'max_completion_tokens' instead."
    )
    server = Server(fail(400, refusal), ok("a"), ok("b"))
    llm = client(server, max_tokens=300)
    llm.chat(MESSAGES)
    llm.chat(MESSAGES)
    assert "max_tokens" in server.bodies[0]
    assert [b.get("max_completion_tokens") for b in server.bodies[1:]] == [300, 300]
    assert not any("max_tokens" in b for b in server.bodies[1:])

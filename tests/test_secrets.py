"""The model API key never shows: not in an error, a log line, a stored row, a reply or a repr.

A key no HTTP header can carry (a CRLF .env file leaves a carriage return at its end) is refused
when settings are read or a client is built, by the variable's name. A valid key that comes back
in an error anyway (a provider echoing the request, a proxy or transport error quoting the
Authorization header) is scrubbed before anything stores or logs it: rounds are driven through
the loopback server and through failing transports, then every row of both schemas, the
replies, the logs and the errors' whole tracebacks are searched for the key.
"""

from __future__ import annotations

import dataclasses
import json
import logging
import traceback
from collections.abc import Callable, Iterator
from typing import Any

import httpx
import psycopg
import pytest
from psycopg import sql
from support.openai_server import ScriptedServer, completion, error

from supportbot import Settings, SupportBot
from supportbot._redact import Redactor
from supportbot._state import Review, Triage
from supportbot.backend.demo import load_demo_data
from supportbot.cli._main import main
from supportbot.errors import ConfigError, ModelError
from supportbot.llm._openai import OpenAICompatible

CORE = "sk-proj-SECRET-7fQ2xL9"  # the part of every key below a leak would show
BAD_KEYS = {
    "trailing CR": CORE + "\r",
    "trailing LF": CORE + "\n",
    "CRLF": CORE + "\r\n",
    "leading LF": "\n" + CORE,
    "NUL": CORE[:8] + "\x00" + CORE[8:],
    "tab": CORE + "\t",
    "escape": CORE + "\x1b",
    "DEL": CORE + "\x7f",
    "C1 NEL": CORE + "\x85",
    "C1 CSI": CORE[:5] + "\x9b" + CORE[5:],
    "no-break space": CORE + "\xa0",
    "space": CORE[:8] + " " + CORE[8:],
    "euro sign": CORE + "€",
    "full-width letter": CORE[:-1] + "Ｌ",
    "zero-width space": CORE + "\u200b",
    "emoji": CORE + "🔑",
}
KEY = CORE  # a valid key, for the rounds whose errors quote it
TRIAGE = Triage(
    category="technical", needs_account_data=False, needs_human=False, search_query="E3001 银行流水同步失败"
).model_dump_json()
DRAFT = "您好,E3001 表示银行授权已过期,请重新授权 [KB-bank-001]。"
PASSED = Review(passed=True).model_dump_json()


def _assert_silent(text: str) -> None:
    assert CORE not in text and CORE[8:] not in text


# -- refusing keys no header can carry ------------------------------------------------------------


@pytest.mark.parametrize("key", BAD_KEYS.values(), ids=BAD_KEYS.keys())
def test_a_key_no_header_can_carry_is_refused_by_name(key: str) -> None:
    env = {"SUPPORTBOT_LLM_BASE_URL": "http://127.0.0.1:9/v1", "SUPPORTBOT_LLM_API_KEY": key}
    attempts: list[Callable[[], object]] = [
        lambda: Settings.from_env(env),
        lambda: Settings(llm_api_key=key),  # passed directly, not read from the environment
        lambda: OpenAICompatible(base_url="http://127.0.0.1:9/v1", api_key=key, model="m"),
    ]
    for attempt in attempts:
        with pytest.raises(ConfigError) as caught:
            attempt()
        assert "SUPPORTBOT_LLM_API_KEY" in str(caught.value)
        _assert_silent("".join(traceback.format_exception(caught.value)) + repr(caught.value.args))


def test_the_message_says_what_to_fix() -> None:
    with pytest.raises(ConfigError, match=r"line break \(CR or LF\) at character 23 of 23.*\.env"):
        Settings(llm_api_key=BAD_KEYS["trailing CR"])
    with pytest.raises(ConfigError, match="non-ASCII character at character 23 of 23"):
        Settings(llm_api_key=BAD_KEYS["euro sign"])
    with pytest.raises(ConfigError, match=r"control character \(U\+0000\)"):
        Settings(llm_api_key=BAD_KEYS["NUL"])


@pytest.mark.parametrize("key", ["sk-proj-AbC_123.xyz~+/=", "ollama", "a" * 200, "!#$%&'()*,:;<>?@[]^`{|}"])
def test_printable_keys_are_accepted_and_never_shown(key: str) -> None:
    settings = Settings.from_env({"SUPPORTBOT_LLM_API_KEY": key, "SUPPORTBOT_LLM_BASE_URL": "http://h/v1"})
    client = OpenAICompatible.from_settings(settings)
    assert settings.llm_api_key == key
    assert key not in repr(settings) and key not in str(settings) and key not in repr(client)
    assert key not in repr(dataclasses.replace(settings, pool_max_size=5))


def test_passwords_in_the_urls_are_masked_in_reprs() -> None:
    settings = Settings(
        database_url="postgresql://app:db-pass-9431@db.internal:5432/support",
        llm_base_url="https://proxy:proxy-pass-2718@llm.internal/v1",
        llm_api_key=KEY,
    )
    shown = repr(settings) + repr(OpenAICompatible.from_settings(settings))
    assert "postgresql://app:***@db.internal:5432/support" in shown and "proxy:***@llm.internal" in shown
    assert "db-pass-9431" not in shown and "proxy-pass-2718" not in shown
    _assert_silent(shown)
    conninfo = repr(Settings(database_url="host=db dbname=support user=app password=db-pass-9431"))
    assert "password=***" in conninfo and "db-pass-9431" not in conninfo


def test_a_proxy_password_in_base_url_stays_out_of_model_errors(server: ScriptedServer) -> None:
    server.script(error(401, "proxy auth failed for proxy-pass-2718"))
    base_url = server.url.replace("http://", "http://proxy:proxy-pass-2718@")
    with (
        OpenAICompatible(base_url=base_url, api_key=KEY, model="m", max_retries=0) as client,
        pytest.raises(ModelError) as caught,
    ):
        client.chat([{"role": "user", "content": "hi"}])
    text = "".join(traceback.format_exception(caught.value))
    assert "proxy:***@127.0.0.1" in text and "proxy-pass-2718" not in text
    assert len(server.requests) == 1  # the request did reach the server, which quoted the password


def test_the_cli_names_the_variable_and_never_the_key(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SUPPORTBOT_LLM_BASE_URL", "http://127.0.0.1:9/v1")
    monkeypatch.setenv("SUPPORTBOT_LLM_API_KEY", BAD_KEYS["CRLF"])
    assert main(["chat", "wugang@example.com", "银行流水同步失败"]) == 1
    out, err = capsys.readouterr()
    assert "SUPPORTBOT_LLM_API_KEY" in err
    _assert_silent(out + err)


# -- scrubbing a valid key that comes back in an error ----------------------------------------------


@pytest.mark.parametrize(
    "text",
    [
        f"bad key {KEY}",
        f"Illegal header value {('Bearer ' + KEY).encode()!r}",
        json.dumps({"headers": {"Authorization": f"Bearer {KEY}"}}),
        f"{{'authorization': 'Bearer {KEY}'}}",
        f"Authorization: bearer {KEY}",
    ],
)
def test_the_redactor_scrubs_every_form_of_the_key(text: str) -> None:
    redact = Redactor(KEY)
    assert redact.leaks(text) and not redact.leaks(redact(text)) and "***" in redact(text)
    _assert_silent(redact(text))


def test_the_redactor_scrubs_escaped_forms_and_other_bearer_tokens() -> None:
    odd = CORE + "\r\n"  # as a client built before validation existed might still hold it
    redact = Redactor(odd)
    for shown in (repr(odd), json.dumps(odd), repr(("Bearer " + odd).encode())):
        assert redact.leaks(shown)
        _assert_silent(redact(shown))
    assert Redactor(None)("Authorization: Bearer sk-someone-elses-token") == "Authorization: Bearer ***"
    assert Redactor(None)("Bearer token missing") == "Bearer token missing"
    assert "SECRET" not in repr(Redactor(KEY))


def test_the_redactor_unlinks_only_the_chained_exceptions_that_quote_the_key() -> None:
    redact = Redactor(KEY)
    quoting = ValueError(f"header Bearer {KEY} cannot be sent")
    innocent = OSError("connection reset")
    innocent.__cause__ = quoting  # the key hangs below an innocent link
    error = ModelError("chat completion failed")
    error.__cause__ = innocent
    error.__context__ = TimeoutError("read timed out")
    assert redact.chain_leaks(error) and not redact.chain_leaks(error.__context__)

    redact.cut_leaking_causes(error)

    assert not redact.chain_leaks(error)
    assert error.__cause__ is innocent and innocent.__cause__ is None  # only the quoting link goes
    assert isinstance(error.__context__, TimeoutError)
    _assert_silent("".join(traceback.format_exception(error)))


def _failing(exc: Callable[[httpx.Request], Exception]) -> httpx.Client:
    def handler(request: httpx.Request) -> httpx.Response:
        raise exc(request)

    return httpx.Client(transport=httpx.MockTransport(handler))


def _client(client: httpx.Client, *, retries: int = 1) -> OpenAICompatible:
    return OpenAICompatible(
        base_url="http://model.invalid/v1",
        api_key=KEY,
        model="m",
        client=client,
        max_retries=retries,
        sleep=_no_wait,
    )


def _no_wait(seconds: float) -> None:
    pass


TRANSPORT_FAULTS: dict[str, Callable[[httpx.Request], Exception]] = {
    "connect error quoting the header": lambda r: httpx.ConnectError(
        f"proxy refused {r.headers['authorization']}", request=r
    ),
    "protocol error quoting the header": lambda r: httpx.LocalProtocolError(
        f"Illegal header value {r.headers['authorization'].encode()!r}"
    ),
    "a non-httpx error quoting the header": lambda r: ValueError(f"cannot encode {dict(r.headers)!r}"),
}


@pytest.mark.parametrize("fault", TRANSPORT_FAULTS.values(), ids=TRANSPORT_FAULTS.keys())
def test_an_error_out_of_chat_holds_the_key_nowhere_in_its_chain(
    fault: Callable[[httpx.Request], Exception],
) -> None:
    with _client(_failing(fault)) as client, pytest.raises(ModelError) as caught:
        client.chat([{"role": "user", "content": "hi"}])
    assert "***" in str(caught.value)
    _assert_silent("".join(traceback.format_exception(caught.value)))
    link: BaseException | None = caught.value
    while link is not None:  # the chain a traceback may hide is clean too
        _assert_silent(f"{link!s}{link!r}")
        link = link.__cause__ or link.__context__


def test_an_error_that_does_not_quote_the_key_passes_through_as_itself() -> None:
    with (
        _client(_failing(lambda r: ValueError("a bug of ours"))) as client,
        pytest.raises(ValueError, match="a bug of ours"),
    ):
        client.chat([{"role": "user", "content": "hi"}])


# -- whole rounds: nothing stored, logged or replied holds the key ---------------------------------


@pytest.fixture
def server() -> Iterator[ScriptedServer]:
    with ScriptedServer() as s:
        yield s


def _stored_text(url: str) -> str:
    """Every row of every table of both schemas, as text."""
    with psycopg.connect(url) as conn:
        tables = conn.execute(
            "SELECT table_schema, table_name FROM information_schema.tables"
            " WHERE table_schema IN ('supportbot', 'demo') AND table_type = 'BASE TABLE'"
        ).fetchall()
        assert len(tables) >= 10
        return "\n".join(
            str(row[0])
            for schema, table in tables
            for row in conn.execute(
                sql.SQL("SELECT t::text FROM {} t").format(sql.Identifier(schema, table))
            ).fetchall()
        )


def test_no_row_reply_or_log_line_holds_the_key(
    database_url: str, server: ScriptedServer, caplog: pytest.LogCaptureFixture
) -> None:
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    # Each round fails in another step, with the key quoted in another form.
    server.script(
        error(503, f"upstream said Bearer {KEY}"),
        error(401, f"bad key {KEY}"),
        completion(TRIAGE),
        error(400, json.dumps({"echo": {"headers": {"Authorization": f"Bearer {KEY}"}}})),
        completion(TRIAGE),
        completion(DRAFT),
        error(500, f"review backend rejected {('Bearer ' + KEY).encode()!r}"),
        error(500, f"review backend rejected {KEY}"),
    )
    loopback = OpenAICompatible(base_url=server.url, api_key=KEY, model="m", max_retries=1, sleep=_no_wait)
    models = [loopback] + [_client(_failing(fault)) for fault in TRANSPORT_FAULTS.values()]
    results: list[Any] = []
    caplog.set_level(logging.DEBUG)
    settings = Settings(database_url=database_url, llm_api_key=KEY)
    for model in models:
        with SupportBot.open(
            database_url, llm=model, small_llm=model, settings=settings, backend="demo"
        ) as bot:
            rounds = 3 if model is loopback else 1
            ticket = bot.open_ticket(
                "wugang@example.com", subject="银行流水", body="招商银行流水同步失败,提示 E3001"
            ).ticket_id
            results.append(bot.state(ticket))
            for _ in range(rounds - 1):
                results.append(bot.send(ticket, "还是不行"))
            results += [bot.state(ticket), bot.history(ticket)]
    for model in models:
        model.close()

    states = [r for r in results if hasattr(r, "handoff_reason")]
    assert sum("***" in s.handoff_reason for s in states) >= 4  # the faults did quote the key
    assert all(s.outcome == "escalated" for s in states)
    _assert_silent(_stored_text(database_url))
    _assert_silent(repr(results))
    _assert_silent(caplog.text + repr([r.args for r in caplog.records]))

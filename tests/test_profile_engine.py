"""The customer profile through the engine: the 4th bank-sync ticket knows the first three."""

from __future__ import annotations

import re
from collections.abc import Iterator, Sequence
from typing import Any

import psycopg
import pytest
from psycopg_pool import ConnectionPool
from support.fakes import TECH, ScriptedLLM, cite_hits, latest_part, scalar
from support.parts import Parts, bot_over_store

from supportbot import Customer, PastTicket, Settings, Subscription, SupportBot
from supportbot._state import Triage
from supportbot.backend.demo._backend import DemoBackend
from supportbot.errors import UnknownCustomer
from supportbot.memory._profile import fingerprint as real_fingerprint
from supportbot.run import _profiles as profiles_module


@pytest.fixture
def parts(demo_url: str) -> Iterator[Parts]:
    llm = ScriptedLLM(draft=cite_hits)
    with bot_over_store(demo_url, llm=llm, settings=Settings(database_url=demo_url)) as made:
        yield made


@pytest.fixture
def bot_and_llm(parts: Parts) -> tuple[SupportBot, ScriptedLLM]:
    assert isinstance(parts.deps.llm, ScriptedLLM)
    return parts.bot, parts.deps.llm


def _profile_line(prompt: str) -> str:
    return next(line for line in prompt.splitlines() if line.startswith("客户画像:"))


def test_fourth_bank_sync_ticket_sees_the_first_three(bot_and_llm: tuple[SupportBot, ScriptedLLM]) -> None:
    bot, llm = bot_and_llm
    bot.open_ticket(
        "wugang@example.com", subject="银行流水又同步失败", body="招商银行流水又同步失败了,提示 E3001"
    )
    line = _profile_line(llm.user_prompts()[0])
    assert "E3001" in line and "3 次" in line and "提醒" in line
    assert "专业版" in line and "VIP" in line
    assert len(line) - len("客户画像:") <= 100


class _ThreeReads:
    """The demo business system without its one-read ``customer_records``: a backend that has only
    the protocol's get_customer, list_subscriptions and list_resolved_tickets."""

    def __init__(self, backend: DemoBackend) -> None:
        self._backend = backend
        self.reads: list[str] = []

    def __getattr__(self, name: str) -> Any:
        if name in ("customer_records", "reads_engine_pool"):
            raise AttributeError(name)
        if name in ("get_customer", "list_subscriptions", "list_resolved_tickets"):
            self.reads.append(name)
        return getattr(self._backend, name)


def test_a_backend_without_the_one_read_gives_the_round_the_same_customer_and_profile(demo_url: str) -> None:
    body = "招商银行流水又同步失败了,提示 E3001"
    seen = []
    with ConnectionPool(demo_url, min_size=1, kwargs={"autocommit": True}) as pool:
        three = _ThreeReads(DemoBackend(pool))
        for backend in ("demo", three):
            llm = ScriptedLLM(draft=cite_hits)
            settings = Settings(database_url=demo_url)
            with SupportBot.open(demo_url, llm=llm, settings=settings, backend=backend) as bot:
                ticket = bot.open_ticket("wugang@example.com", subject="同步", body=body).ticket_id
                state = bot.state(ticket)
                call = next(c for c in state.tool_log if c.step == "load_customer")
                with psycopg.connect(demo_url, autocommit=True) as conn:  # the next run sees the same history
                    conn.execute("DELETE FROM demo.past_tickets WHERE id = %s", (ticket,))
                seen.append(
                    (_profile_line(llm.user_prompts()[0]), state.profile, call.name, call.args, call.result)
                )
    assert three.reads == ["get_customer", "list_subscriptions", "list_resolved_tickets"]
    assert seen[0] == seen[1]
    assert seen[0][2:] == ("get_customer", {"email": "wugang@example.com"}, seen[0][4])
    assert seen[0][4]["email"] == "wugang@example.com" and "E3001" in seen[0][0]


def test_a_ticket_does_not_count_itself_in_its_own_profile(
    bot_and_llm: tuple[SupportBot, ScriptedLLM],
) -> None:
    bot, llm = bot_and_llm
    ticket = bot.open_ticket(
        "wugang@example.com", subject="银行流水又同步失败", body="招商银行流水又同步失败了,提示 E3001"
    ).ticket_id
    assert (
        "4 次" in bot.profile("wugang@example.com").text
    )  # round 1 resolved it: the customer's history has it
    bot.send(ticket, "重新授权了还是不行,还是 E3001")
    line = _profile_line(llm.user_prompts()[-1])
    assert (
        "3 次" in line and "4 次" not in line
    )  # its own first round is in its conversation, not its profile


def test_customer_without_history_gets_only_subscription_facts(
    bot_and_llm: tuple[SupportBot, ScriptedLLM],
) -> None:
    bot, llm = bot_and_llm
    before = bot.profile("chenjing@example.com")
    bot.open_ticket("chenjing@example.com", subject="发票", body="发票抬头怎么改?")
    line = _profile_line(llm.user_prompts()[0])
    assert line == "客户画像:" + before.text
    assert before.ticket_count == 0 and before.recurring == ()
    assert "次" not in line and "E3" not in line
    assert "基础版" in line


def test_profile_is_rebuilt_only_when_its_inputs_change(
    demo_url: str, parts: Parts, bot_and_llm: tuple[SupportBot, ScriptedLLM]
) -> None:
    bot, llm = bot_and_llm
    profiles = parts.deps.profiles
    assert profiles is not None
    ticket = bot.open_ticket("lina@example.com", subject="问题", body="API 调用报错怎么办").ticket_id
    first = bot.profile("lina@example.com")  # round 1's facts joined her history: rebuilt once here
    builds = profiles.builds
    assert bot.profile("lina@example.com") == first
    assert profiles.builds == builds, "an unchanged customer must not be rebuilt"

    with psycopg.connect(demo_url) as conn:  # an upgrade to 企业版 without any ticket
        conn.execute(
            "UPDATE demo.subscriptions SET plan = '企业版' WHERE customer_id = 'C0002' AND status = 'active'"
        )
    bot.send(ticket, "还有一个问题")
    assert profiles.builds == builds + 1
    assert "企业版" in _profile_line(llm.user_prompts()[-1])
    assert "企业版" in bot.state(ticket).profile


def test_records_equal_to_the_last_ones_are_not_fingerprinted_again(
    parts: Parts, bot_and_llm: tuple[SupportBot, ScriptedLLM], monkeypatch: pytest.MonkeyPatch
) -> None:
    bot, _ = bot_and_llm
    first = bot.profile("lina@example.com")
    hashed: list[object] = []

    def fingerprint(
        customer: Customer, subscriptions: Sequence[Subscription], resolved_tickets: Sequence[PastTicket]
    ) -> str:
        hashed.append((customer, subscriptions, resolved_tickets))
        return real_fingerprint(customer, subscriptions, resolved_tickets)

    monkeypatch.setattr(profiles_module, "fingerprint", fingerprint)
    assert bot.profile("lina@example.com") == first
    assert hashed == []  # the same records as last time: the profile in memory, no hash of them
    profiles = parts.deps.profiles
    assert profiles is not None
    profiles.clear()
    assert bot.profile("lina@example.com") == first
    assert len(hashed) == 1  # nothing remembered: hashed, and found by its fingerprint


def test_a_resolved_round_adds_its_facts_to_the_history(bot_and_llm: tuple[SupportBot, ScriptedLLM]) -> None:
    bot, _ = bot_and_llm
    before = {i.key: i.count for i in bot.profile("wugang@example.com").recurring}
    bot.open_ticket("wugang@example.com", subject="又失败了", body="银行同步第四次失败,错误码 E3001")
    after = {i.key: i.count for i in bot.profile("wugang@example.com").recurring}
    assert after["E3001"] == before["E3001"] + 1


def test_unknown_customer_profile_is_a_clear_error(bot_and_llm: tuple[SupportBot, ScriptedLLM]) -> None:
    bot, _ = bot_and_llm
    with pytest.raises(UnknownCustomer, match=r"nobody@example\.com"):
        bot.profile("nobody@example.com")


def test_a_closed_ticket_keeps_lasting_wishes_and_the_article_that_answered_it(demo_url: str) -> None:
    invoice = Triage(category="invoice", needs_account_data=False, needs_human=False, search_query="发票抬头")
    llm = ScriptedLLM(
        draft=cite_hits,
        triage=lambda prompt: invoice if "发票" in latest_part(prompt) else TECH,
    )
    with SupportBot.open(demo_url, llm=llm, settings=Settings(database_url=demo_url), backend="demo") as bot:
        ticket = bot.open_ticket(
            "zhoujie@example.com", subject="银行同步", body="银行流水同步失败,提示 E3001,我想先看看怎么处理"
        )
        bot.send(ticket.ticket_id, "好的。另外发票抬头怎么改?希望以后授权到期前提醒我")
        first_reply = bot.state(ticket.ticket_id).turns[1].content
    with psycopg.connect(demo_url) as conn:
        facts = scalar(conn, "SELECT facts FROM demo.past_tickets WHERE id = %s", (ticket.ticket_id,))
    assert facts["requests"] == ["希望以后授权到期前提醒我"]  # "我想先看看" was handled in the ticket
    assert facts["category"] == "technical"  # the ticket's topic, not its last round's
    first_article = re.findall(r"\[(KB-[\w-]+)\]", first_reply)[0]
    assert facts["resolution"] == f"按 {first_article} 处理"

"""Contact details in a ticket: its own prompt shows them as given; with ``pii_placeholders`` the
model sees only stable placeholders, and the customer gets the values back (README "Privacy")."""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

from support.fakes import ScriptedLLM

from supportbot import OfflineModel, Settings, SupportBot, SupportState, Turn
from supportbot._state import Ticket
from supportbot.i18n._prompts import SECTIONS
from supportbot.llm._placeholders import PlaceholderModel
from supportbot.memory._mask import Placeholders
from supportbot.run._deps import Deps, with_placeholders

OpenBot = Callable[..., SupportBot]
PHONE, EMAIL, US_PHONE = "13912345678", "zhang.san@qq.com", "(212) 555-0187"
NOW = datetime(2026, 1, 1, tzinfo=UTC)
BODY = f"银行流水同步失败,提示 E3001。请打 {PHONE} 或 {US_PHONE} 联系我,邮箱 {EMAIL}"


def test_placeholders_are_stable_and_go_back() -> None:
    table = Placeholders(
        [f"打 {PHONE},邮箱 {EMAIL}", f"或者 {US_PHONE},还是 {PHONE}", "订单号 6222021234561234"]
    )
    hidden = table.hide(f"{EMAIL} / {US_PHONE} / {PHONE} / 订单号 6222021234561234")
    assert hidden == "[EMAIL_1] / [PHONE_2] / [PHONE_1] / 订单号 6222021234561234"  # an order number stays
    assert table.show(hidden) == f"{EMAIL} / {US_PHONE} / {PHONE} / 订单号 6222021234561234"
    assert table.show("[PHONE_7]") == "[PHONE_7]"  # made up by the model: left as written
    again = Placeholders([f"打 {PHONE},邮箱 {EMAIL}", f"或者 {US_PHONE},还是 {PHONE}"])
    assert again.hide(PHONE) == table.hide(PHONE)  # the same texts, the same placeholders


def _everything_sent(llm: ScriptedLLM) -> str:
    """Every prompt the model got, prose and the records attached to it, as one text."""
    sent = []
    for messages in llm.prompts:
        for message in messages:
            sent.append(str(message.get("content", "")))
            if SECTIONS in message:
                sent.append(repr(message[SECTIONS]))
    return "\n".join(sent)


def test_the_ticket_s_own_prompt_shows_contact_details_as_given(open_bot: OpenBot) -> None:
    llm = ScriptedLLM()
    bot = open_bot(llm, history_budget=200, keep_last=1)
    first = bot.open_ticket("wugang@example.com", subject="银行流水", body=BODY)
    for text in ("重新授权了还是不行", "还是不行", "好的"):
        bot.send(first.ticket_id, text)
    state = bot.state(first.ticket_id)
    assert state.summarized_upto > 0  # the turn with the numbers is folded: the facts carry them
    last_prompt = "\n".join(str(m["content"]) for m in llm.prompts[-1])
    assert PHONE in last_prompt and EMAIL in last_prompt


def test_with_placeholders_the_model_never_sees_them_and_the_customer_gets_them_back(
    open_bot: OpenBot,
) -> None:
    llm = ScriptedLLM(draft="好的,我们会打 [PHONE_1] 联系您,并发邮件到 [EMAIL_1] [KB-bank-001]。")
    bot = open_bot(llm, pii_placeholders=True, history_budget=60, keep_last=1)
    first = bot.open_ticket("wugang@example.com", subject="银行流水", body=BODY)
    second = bot.send(first.ticket_id, "重新授权了还是不行")
    sent = _everything_sent(llm)
    assert llm.prompts and PHONE not in sent and EMAIL not in sent and US_PHONE not in sent
    assert "[PHONE_1]" in sent and "[EMAIL_1]" in sent
    for result in (first, second):
        assert f"我们会打 {PHONE} 联系您,并发邮件到 {EMAIL}" in result.reply  # restored for the customer
    stored = bot.state(first.ticket_id)
    assert PHONE in stored.reply and "[PHONE_1]" not in stored.reply


def test_with_placeholders_the_offline_model_reads_records_without_them(open_bot: OpenBot) -> None:
    seen: list[Any] = []

    class Recording(OfflineModel):
        def chat(self, messages: Any, **kwargs: Any) -> Any:
            seen.append(json.dumps([str(m.get("content")) + repr(m.get(SECTIONS)) for m in messages]))
            return super().chat(messages, **kwargs)

    bot = open_bot(Recording(), pii_placeholders=True)
    result = bot.open_ticket("wugang@example.com", subject="银行流水", body=BODY)
    assert result.reply and seen
    assert not any(PHONE in text or EMAIL in text for text in seen)


def test_a_step_s_placeholders_follow_every_text_they_are_read_from() -> None:
    """The table is kept for the steps that share the ticket's texts; a turn or a summary that
    adds a value must make a new one, or that value would reach the model."""
    model = OfflineModel()
    # No step runs here: the business system is never called.
    deps = Deps(llm=model, small_llm=model, backend=None, settings=Settings(), clock=lambda: NOW)  # type: ignore[arg-type]
    ticket = Ticket("T1", "a@example.com", "银行流水", f"请打 {PHONE}", NOW)
    state = SupportState(ticket=ticket, turns=(Turn("customer", f"请打 {PHONE}", idx=0),))

    def table(state: SupportState) -> Placeholders:
        llm = with_placeholders(deps, state).llm
        assert isinstance(llm, PlaceholderModel)
        return llm.placeholders

    assert table(state) is table(state)  # built once for the steps that share the texts
    later = replace(state, turns=(*state.turns, Turn("customer", f"邮箱 {EMAIL}", idx=1)))
    assert table(later).hide(EMAIL) == "[EMAIL_2]"  # the customer's address is the first
    assert table(replace(state, summary=f"客户的美国号码 {US_PHONE}")).hide(US_PHONE) == "[PHONE_2]"
    assert table(state).hide(EMAIL) == EMAIL  # and the first state's table is still its own

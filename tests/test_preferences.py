"""What the next ticket inherits: stated contact preferences and contact details, each with the
day it became true; a later ticket's value retires the earlier one, and the profile shows only
current values."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import date

import pytest
from support.fakes import ScriptedLLM, cite_hits

from supportbot import Customer, PastTicket, Settings, SupportBot
from supportbot.memory._preferences import stated_preferences
from supportbot.memory._profile import build_profile

WUGANG = "wugang@example.com"


@pytest.mark.parametrize(
    ("sentence", "expected"),
    [
        ("以后有事发短信,别打电话", [("avoid:phone", "phone"), ("contact", "sms")]),
        ("周末别给我打电话", [("avoid:phone", "phone")]),
        ("改成邮件联系吧", [("contact", "email")]),
        ("text me instead of calling", [("contact", "sms")]),
        ("don't call me", [("avoid:phone", "phone")]),
        ("contact me by email please", [("contact", "email")]),
        ("please email me the invoice", []),  # a request about an invoice, not a channel
        ("我的电话是 13912345678", []),  # a number given is not a preference
    ],
)
def test_stated_preferences(sentence: str, expected: list[tuple[str, str]]) -> None:
    assert [(s.slot, s.value) for s in stated_preferences(sentence)] == expected


def _past(
    ticket_id: str, day: date, preferences: list[dict[str, str]], contacts: list[dict[str, str]]
) -> PastTicket:
    facts = {"category": "technical", "preferences": preferences, "contacts": contacts}
    return PastTicket(ticket_id, "C0001", "x", day, facts)


def test_a_later_ticket_retires_the_earlier_value_and_the_profile_shows_only_current_ones() -> None:
    first = _past(
        "T1",
        date(2026, 9, 1),
        [
            {"slot": "contact", "value": "sms", "text": "以后发短信", "since": "2026-08-30"},
            {"slot": "avoid:phone", "value": "phone", "text": "别打电话", "since": "2026-08-30"},
        ],
        [{"slot": "phone", "value": "139****5678", "text": "139****5678", "since": "2026-08-30"}],
    )
    second = _past(
        "T2",
        date(2026, 10, 1),
        [{"slot": "contact", "value": "email", "text": "改成邮件联系吧", "since": "2026-09-28"}],
        [{"slot": "phone", "value": "138****0000", "text": "138****0000", "since": "2026-09-28"}],
    )
    customer = Customer(id="C0001", name="吴刚", email=WUGANG, is_vip=False)
    profile = build_profile(customer, [], [second, first], today=date(2026, 10, 15), max_chars=200)
    assert [(p.slot, p.value, p.valid_from) for p in profile.preferences] == [
        ("avoid:phone", "phone", date(2026, 8, 30)),
        ("contact", "email", date(2026, 9, 28)),
    ]
    assert [(p.slot, p.value) for p in profile.contacts] == [("phone", "138****0000")]
    retired = {(p.slot, p.value): p.valid_to for p in profile.stated_history if p.valid_to is not None}
    assert retired == {("contact", "sms"): date(2026, 9, 28), ("phone", "139****5678"): date(2026, 9, 28)}
    assert "联系偏好:勿打电话、邮件(自 2026-09-28)" in profile.text and "短信" not in profile.text
    # A later wish to be called again retires "don't call" as well.
    third = _past(
        "T3",
        date(2026, 10, 10),
        [{"slot": "contact", "value": "phone", "text": "还是打电话吧", "since": "2026-10-09"}],
        [],
    )
    again = build_profile(customer, [], [first, second, third], today=date(2026, 10, 15), max_chars=200)
    assert [(p.slot, p.value) for p in again.preferences] == [("contact", "phone")]


def test_a_malformed_preference_skips_the_record() -> None:
    bad = _past(
        "T1", date(2026, 9, 1), [{"slot": "contact", "value": "sms", "text": "x", "since": "soon"}], []
    )
    customer = Customer(id="C0001", name="吴刚", email=WUGANG, is_vip=False)
    assert build_profile(customer, [], [bad], today=date(2026, 10, 15)).skipped_records == 1


@pytest.fixture
def bot(demo_url: str) -> Iterator[SupportBot]:
    from supportbot.backend.demo._data import demo_clock

    with SupportBot.open(
        demo_url,
        llm=ScriptedLLM(draft=cite_hits),
        settings=Settings(database_url=demo_url),
        backend="demo",
        clock=demo_clock(),
    ) as opened:
        yield opened


def test_the_demo_customer_s_next_ticket_inherits_how_to_reach_him(bot: SupportBot) -> None:
    first = bot.open_ticket(
        WUGANG, subject="银行流水", body="招商银行流水同步失败,提示 E3001。以后有事发短信,别打电话"
    )
    assert first.outcome == "resolved"
    profile = bot.profile(WUGANG)
    assert [(p.slot, p.value) for p in profile.preferences] == [("avoid:phone", "phone"), ("contact", "sms")]
    assert "联系偏好:勿打电话、短信" in bot.state(bot.open_ticket(WUGANG, body="你好").ticket_id).profile
    bot.open_ticket(WUGANG, subject="联系方式", body="E3001 又出现了。以后改成邮件联系吧")
    later = bot.profile(WUGANG)
    assert [(p.slot, p.value) for p in later.preferences] == [("avoid:phone", "phone"), ("contact", "email")]
    assert any(p.value == "sms" and p.valid_to is not None for p in later.stated_history)
    assert "短信" not in later.text
    assert "联系偏好:勿打电话、邮件(自 2026-10-15)" in later.text, later.text  # as the README shows it

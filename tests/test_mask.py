"""Masking personal data in everything derived from turns: formats, no false alarms, and properties.

The PII strategies live here rather than in support/strategies.py because only these tests use them.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, date, datetime
from typing import NamedTuple

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.strategies import EN_FILLER, ZH_FILLER, conversations, fact_snippets

from supportbot import OfflineModel, PastTicket, Settings, SupportBot, SupportState, Turn
from supportbot._state import Role, Ticket
from supportbot.backend.demo import load_demo_data
from supportbot.backend.demo._data import demo_profile_inputs
from supportbot.memory import _mask as mask
from supportbot.memory._compress import compress, extractive_summarize
from supportbot.memory._contacts import phones
from supportbot.memory._facts import update_ledger
from supportbot.memory._ledger import render_facts
from supportbot.memory._mask import mask_summarizer, mask_text
from supportbot.memory._profile import build_profile
from supportbot.run._ticket_record import ticket_facts


@pytest.mark.parametrize(
    ("raw", "masked"),
    [
        ("电话13812345678谢谢", "电话138****5678谢谢"),
        ("+86 138 1234 5678", "+86 138 **** 5678"),
        ("8613812345678", "86138****5678"),
        ("138-1234-5678", "138-****-5678"),
        ("邮箱 wugang@example.com。", "邮箱 w***@example.com。"),
        ("身份证 11010519900307123X", "身份证 110***********123X"),
        ("身份证号110105199003071234", "身份证号110***********1234"),
        ("卡号 6222 0212 3456 1234", "卡号 6222 **** **** 1234"),
        ("卡号6222-0212-3456-1234", "卡号6222-****-****-1234"),
        ("6222021234561234567", "6222***********4567"),
        ("call +1 415 555 2671", "call +1 *** *** 2671"),
        ("+442079460958", "+44******0958"),
        ("座机 0571-88886666", "座机 0571-****6666"),
        # every form the ledger reads as a landline is masked where the ledger's value would be
        ("座机 0532-1082-8636", "座机 0532-****-8636"),
        ("我手机号是0571-4879-481,记一下", "我手机号是0571-***9-481,记一下"),
        ("(0532)9923640", "(0532)***3640"),
        ("(010) 8765 4321", "(010) **** 4321"),
        ("打 0512 4337288", "打 0512 ***7288"),
    ],
)
def test_formats(raw: str, masked: str) -> None:
    assert mask_text(raw) == masked
    assert mask_text(masked) == masked


@pytest.mark.parametrize(
    "text",
    [
        "发票号 INV-2026-0042,金额 ¥128.00,3,588 元",
        "账单号 B20260915001 扣款两次,订单 OD20240415008",
        "报错 E3001,工单 T000153,退款单号是 20260915",
        "订单号 123456789,2026-09-15 下午 14:30",
        "订单号 2026091512345678901 一直没发货",  # an 19-digit order number is not a card
        "账单号:#1586733323557993 这个我得跟同事商量一下",
        "order number 6222021234561234 was charged twice",
        "时间戳 1726394400123,USD2000,共 13 笔",
    ],
)
def test_references_amounts_and_dates_are_left_alone(text: str) -> None:
    assert mask_text(text) == text


# -- strategies --------------------------------------------------------------------------------


class Pii(NamedTuple):
    text: str  # as written in the turn
    secret: str  # the part that must never appear in derived memory


def _digits(n: int) -> st.SearchStrategy[str]:
    return st.text(alphabet="0123456789", min_size=n, max_size=n)


@st.composite
def cn_mobiles(draw: st.DrawFn) -> Pii:
    number = f"1{draw(st.sampled_from('3456789'))}{draw(_digits(9))}"
    prefix = draw(st.sampled_from(["", "", "+86 ", "+86", "0086 ", "86"]))
    sep = draw(st.sampled_from(["", "", " ", "-"]))
    return Pii(prefix + sep.join([number[:3], number[3:7], number[7:]]), number)


@st.composite
def intl_phones(draw: st.DrawFn) -> Pii:
    code = draw(st.sampled_from(["1", "44", "49", "65", "81"]))
    local = draw(_digits(draw(st.integers(8, 10))))
    sep = draw(st.sampled_from([" ", "-", ""]))
    # The secret keeps its "+": a bare 8-digit local number would also be found inside an amount.
    return Pii(f"+{code}{sep}{local[:3]}{sep}{local[3:6]}{sep}{local[6:]}", f"+{code}{local}")


@st.composite
def emails(draw: st.DrawFn) -> Pii:
    local = draw(st.from_regex(r"[a-z][a-z0-9._]{1,10}[a-z0-9]", fullmatch=True))
    domain = draw(st.sampled_from(["example.com", "qq.com", "163.com", "corp.example.cn"]))
    return Pii(f"{local}@{domain}", f"{local}@{domain}")


_ID_WEIGHTS = (7, 9, 10, 5, 8, 4, 2, 1, 6, 3, 7, 9, 10, 5, 8, 4, 2)


@st.composite
def id_cards(draw: st.DrawFn) -> Pii:
    born = draw(st.dates(date(1940, 1, 1), date(2010, 12, 31)))
    body = f"{draw(st.integers(110000, 659999))}{born:%Y%m%d}{draw(_digits(3))}"
    check = "10X98765432"[sum(int(d) * w for d, w in zip(body, _ID_WEIGHTS, strict=True)) % 11]
    text = body + check
    return Pii(text, text)


@st.composite
def bank_cards(draw: st.DrawFn) -> Pii:
    number = draw(st.sampled_from(["62", "4", "5"])) + draw(_digits(15))
    number = (number + draw(_digits(draw(st.integers(0, 2)))))[:19]
    if len(number) == 16 and draw(st.booleans()):
        sep = draw(st.sampled_from([" ", "-"]))
        return Pii(sep.join(number[i : i + 4] for i in range(0, 16, 4)), number)
    return Pii(number, number)


_LEADS = (
    "我的手机号是",
    "请打电话",
    "麻烦发到邮箱 ",
    "身份证号:",
    "卡号 ",
    "my number is ",
    "please email ",
    "",
)
pii = st.one_of(cn_mobiles(), intl_phones(), emails(), id_cards(), bank_cards())


@st.composite
def turns_with_pii(draw: st.DrawFn) -> tuple[list[Turn], list[Pii]]:
    """Customer and agent turns with PII among filler and ordinary facts (ids, amounts, dates)."""
    turns: list[Turn] = []
    planted: list[Pii] = []
    for index in range(draw(st.integers(1, 6))):
        role: Role = "customer" if index % 2 == 0 else "agent"
        pieces = []
        for _ in range(draw(st.integers(1, 4))):
            choice = draw(st.integers(0, 2))
            if choice == 0:
                item = draw(pii)
                planted.append(item)
                pieces.append(draw(st.sampled_from(_LEADS)) + item.text)
            elif choice == 1:
                pieces.append(draw(fact_snippets(role)).text)
            else:
                pieces.append(draw(st.sampled_from(ZH_FILLER + EN_FILLER)))
        turns.append(Turn(role=role, content="；".join(pieces), round=1 + index // 2))
    return turns, planted


def _leaks(text: str, planted: list[Pii]) -> list[str]:
    """Planted secrets found in ``text``, spaces and dashes ignored (so "138 1234 5678" counts)."""
    flat = re.sub(r"[ -]", "", text)
    return [p.secret for p in planted if p.secret in text or re.sub(r"[ -]", "", p.secret) in flat]


def _state(turns: list[Turn]) -> SupportState:
    ticket = Ticket("T000001", "x@example.com", "s", turns[0].content, datetime(2026, 10, 1, tzinfo=UTC))
    return SupportState(ticket=ticket, turns=tuple(turns))


def _derived(turns: list[Turn], *, mask: bool) -> list[str]:
    """Every text derived from ``turns`` that outlives the round: ledger, summary, ticket facts, profile."""
    ledger = update_ledger((), turns, 0, mask=mask)
    summarize = mask_summarizer(extractive_summarize) if mask else extractive_summarize
    facts = ticket_facts(_state(turns), mask=mask)
    inputs = demo_profile_inputs("wugang@example.com")
    assert inputs is not None
    customer, subs, _ = inputs
    past = PastTicket("T000001", customer.id, "s", date(2026, 10, 1), facts)
    profile = build_profile(customer, subs, [past], today=date(2026, 10, 15), max_chars=10_000, mask=mask)
    return (
        [f.value for f in ledger]
        + [f.key for f in ledger]
        + [render_facts(ledger), summarize("", turns)]
        + [str(facts), profile.text, *profile.open_requests, *profile.promises]
    )


# -- properties --------------------------------------------------------------------------------


@given(pii)
def test_masking_changes_every_pii_form(item: Pii) -> None:
    """Paired with the properties below: masking must do real work, not pass text through."""
    masked = mask_text(item.text)
    assert masked != item.text and "*" in masked
    assert _leaks(masked, [item]) == []
    assert mask_text(masked) == masked  # idempotent: a masked form matches no pattern


@given(conversations(max_turns=6))
def test_ordinary_conversations_are_not_masked(turns: tuple[Turn, ...]) -> None:
    """Bill numbers, order ids, amounts and dates are no PII; masking them would lose pinned facts."""
    for turn in turns:
        assert mask_text(turn.content) == turn.content


@given(turns_with_pii())
def test_pii_never_reaches_derived_memory(case: tuple[list[Turn], list[Pii]]) -> None:
    """Summaries, the ledger, ticket facts and profiles outlive the turns; none may carry PII."""
    turns, planted = case
    for text in _derived(turns, mask=True):
        assert _leaks(text, planted) == [], text


@given(turns_with_pii())
def test_without_masking_pii_does_reach_derived_memory(case: tuple[list[Turn], list[Pii]]) -> None:
    """The previous property's control: the same derivations keep a request's number when not masked."""
    turns, _ = case
    request = Turn(role="customer", content="请回电 13912345678", round=1)
    raw = _derived([*turns, request], mask=False)
    assert any("13912345678" in text for text in raw)
    assert not any("13912345678" in text for text in _derived([*turns, request], mask=True))


def test_compression_ledger_is_masked() -> None:
    turns = [
        Turn(role="customer", content="请打 13812345678 联系我,卡号 6222021234561234。" * 3, round=1),
        Turn(role="agent", content="好的,我们会在 3 个工作日内回复您。", round=1),
    ] * 3
    result = compress(
        turns,
        "",
        0,
        budget=20,
        keep_last=1,
        summarize=mask_summarizer(extractive_summarize),
        count=lambda t: len(t.content),
    )
    assert result.summarized_upto > 0 and result.facts
    for text in [result.summary, *(f.value for f in result.facts)]:
        assert "13812345678" not in text and "6222021234561234" not in text


_EDGE_TEXT = st.lists(
    st.sampled_from(
        [
            *"0123456789+-_. @%abcXYZ账单号码订单:：#\n",
            "13812345678",
            "+86 138 1234 5678",
            "0571-88886666",
            "(0532)9923640",
            "0512 4337288",
            "+44 20 7946 0958",
            "110101199003071234",
            "6222 0212 3456 7890",
            "6222021234567890123",
            "user@example.com",
            "INV-2026-0042",
            "订单号",
        ]
    ),
    max_size=25,
).map("".join)


@given(_EDGE_TEXT)
def test_the_scan_look_behind_changes_no_match(text: str) -> None:
    """_PII refuses a letter, digit, "_" or "+" before any match up front, for speed: every form
    refuses those itself, so the scan must find exactly what the forms alone find."""
    forms = [
        mask._EMAIL,
        mask._ID_CARD,
        mask._BANK_CARD,
        mask._CN_MOBILE,
        mask._INTL_PHONE,
        mask._LANDLINE,
        mask._US_PHONE,
    ]
    plain = re.compile("(?=[A-Za-z0-9+(])(?:" + "|".join(forms) + ")")
    assert [(m.span(), m.groups()) for m in mask._PII.finditer(text)] == [
        (m.span(), m.groups()) for m in plain.finditer(text)
    ]


# -- through the engine ------------------------------------------------------------------------


@pytest.fixture
def offline_bot(database_url: str) -> Iterator[SupportBot]:
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    settings = Settings(database_url=database_url, history_budget=60, keep_last=2)
    with SupportBot.open(database_url, llm=OfflineModel(), settings=settings, backend="demo") as bot:
        yield bot


def test_contact_details_stay_in_the_ticket_and_are_masked_where_they_leave_it(
    offline_bot: SupportBot, database_url: str
) -> None:
    secrets = ["13912345678", "6222021234561234", "zhang.san@qq.com", "11010519900307123X"]
    first = offline_bot.open_ticket(
        "wugang@example.com",
        subject="银行流水",
        body=f"银行流水同步失败,提示 E3001。请打 {secrets[0]} 联系我,邮箱 {secrets[2]}",
    )
    offline_bot.send(first.ticket_id, f"希望退回到卡号 {secrets[1]},身份证 {secrets[3]}。重新授权了还是不行")
    offline_bot.send(first.ticket_id, "好的,谢谢")
    state = offline_bot.state(first.ticket_id)
    assert state.summarized_upto > 0 and state.facts  # compression ran and the ledger was filled
    assert all(any(s in t.content for t in state.turns) for s in secrets)  # raw turns keep what was written
    # The ticket's own memory shows the number to call back as the customer gave it.
    own = [state.summary, *(f.value for f in state.facts)]
    assert any(secrets[0] in text for text in own) and any(secrets[2] in text for text in own)
    with psycopg.connect(database_url) as conn:
        past = conn.execute(
            "SELECT facts::text FROM demo.past_tickets WHERE id = %s", (first.ticket_id,)
        ).fetchone()
    assert past is not None
    profile = offline_bot.profile("wugang@example.com")
    derived = [past[0], profile.text, *profile.open_requests]  # what outlives the ticket
    for text in derived:
        assert not any(s in text for s in secrets), text
    assert "6222********1234" in past[0]  # masked, not dropped


@pytest.mark.parametrize(
    "text",
    ["0571-88886666", "0532-1082-8636", "0571-4879-481", "(0532)9923640", "(010) 8765 4321", "0512 4337288"],
)
def test_every_landline_the_ledger_reads_is_masked(text: str) -> None:
    """The ledger reads phones (memory/_contacts.py) and mask_text masks them with patterns of its
    own: a form the ledger reads but the mask misses reaches profiles and logs whole."""
    assert [hit.text for hit in phones(f"座机 {text} 找我")] == [text]
    masked = mask_text(f"座机 {text} 找我")
    assert text not in masked and masked.count("*") >= 3

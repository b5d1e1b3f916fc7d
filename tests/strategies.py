"""Hypothesis strategies for support conversations: mixed Chinese and English, facts sprinkled in.

Every fact snippet carries the (kind, key) the extractor should find, written out by hand here
rather than computed with supportbot's own normalizers, so a test comparing the two checks
something.
"""

from __future__ import annotations

from decimal import Decimal
from typing import NamedTuple

from hypothesis import strategies as st

from supportbot.state import Role, Turn


class Snippet(NamedTuple):
    text: str
    kind: str
    key: str


class AnnotatedTurn(NamedTuple):
    turn: Turn
    expected: tuple[tuple[str, str], ...]  # (kind, key) the extractor must find in this turn


# Plain sentences with no ids, codes, amounts or dates. Some carry request or promise wording,
# which is fine: tests only require the planted facts to be found, never that nothing else is.
ZH_FILLER = (
    "我的账单有问题",
    "银行流水从昨天开始一直同步失败",
    "登录以后页面一直在转圈",
    "我们公司上个月刚升级了套餐",
    "发票抬头写错了",
    "这已经是第三次出现同样的情况了",
    "财务那边在催这个事情",
    "感谢您的耐心等待",
    "我这边查看了一下您的账户",
    "重新授权之后应该就能恢复",
)
EN_FILLER = (
    "The bank feed stopped syncing yesterday.",
    "I tried logging out and back in.",
    "Our finance team needs this for the audit.",
    "Thanks for your patience.",
    "I have checked your account settings.",
    "The dashboard shows a red banner at the top.",
    "This is the third time it has happened.",
)
_MONTH_ABBREVIATIONS = ("Jan", "Feb", "Mar", "Apr", "May", "Jun", "Jul", "Aug", "Sept", "Oct", "Nov", "Dec")

_years = st.integers(2024, 2027)
_months = st.integers(1, 12)
_days = st.integers(1, 28)  # valid in every month, so every planted date is a real one


def _bill(parts: tuple[int, int, int, int, str]) -> Snippet:
    year, month, day, serial, label = parts
    number = f"B{year}{month:02d}{day:02d}{serial:03d}"
    return Snippet(f"{label}{number}", "id", number)


def _bill_number() -> st.SearchStrategy[Snippet]:
    labels = st.sampled_from(["账单号 ", "bill ", ""])
    return st.tuples(_years, _months, _days, st.integers(1, 999), labels).map(_bill)


def _other_id() -> st.SearchStrategy[Snippet]:
    invoice = st.tuples(_years, st.integers(1, 9999)).map(
        lambda t: Snippet(f"发票 INV-{t[0]}-{t[1]:04d}", "id", f"INV-{t[0]}-{t[1]:04d}")
    )
    ticket = st.integers(1, 999_999).map(lambda n: Snippet(f"ticket T{n:06d}", "id", f"T{n:06d}"))
    order = st.tuples(
        st.integers(100_000_000, 999_999_999), st.sampled_from(["订单号 ", "订单号:", "order number "])
    ).map(lambda t: Snippet(f"{t[1]}{t[0]}", "id", str(t[0])))
    return st.one_of(invoice, ticket, order)


def _error_code() -> st.SearchStrategy[Snippet]:
    return st.tuples(st.integers(1000, 9999), st.sampled_from(["报错 ", "error ", "错误码 "])).map(
        lambda t: Snippet(f"{t[1]}E{t[0]}", "error_code", f"E{t[0]}")
    )


@st.composite
def _amount(draw: st.DrawFn) -> Snippet:
    cents = draw(st.integers(1, 10_000_000))
    whole = draw(st.booleans())
    number = str(cents // 100) if whole else f"{Decimal(cents) / 100:.2f}"
    value = Decimal(number)
    forms = [
        ("¥{}", "CNY"),
        ("￥{}", "CNY"),
        ("{} 元", "CNY"),
        ("{}元", "CNY"),
        ("RMB {}", "CNY"),
        ("${}", "USD"),
        ("{} USD", "USD"),
        ("{}美元", "USD"),
    ]
    form, currency = draw(st.sampled_from(forms))
    return Snippet(form.format(number), "amount", f"{currency} {value:.2f}")


@st.composite
def _date(draw: st.DrawFn) -> Snippet:
    year, month, day = draw(_years), draw(_months), draw(_days)
    iso = f"{year}-{month:02d}-{day:02d}"
    forms = [
        (iso, iso),
        (f"{year}年{month}月{day}日", iso),
        (f"{month}月{day}日", f"--{month:02d}-{day:02d}"),
        (f"{_MONTH_ABBREVIATIONS[month - 1]} {day} {year}", iso),
        (f"{day} {_MONTH_ABBREVIATIONS[month - 1]} {year}", iso),
    ]
    text, key = draw(st.sampled_from(forms))
    return Snippet(text, "date", key)


def _promise() -> st.SearchStrategy[Snippet]:
    days = st.integers(1, 10)
    zh = days.map(
        lambda n: Snippet(f"我们会在 {n} 个工作日内回复您。", "promise", f"我们会在{n}个工作日内回复您")
    )
    en = days.map(
        lambda n: Snippet(f"We will reply within {n} days.", "promise", f"we will reply within {n} days")
    )
    return st.one_of(zh, en)


def _request() -> st.SearchStrategy[Snippet]:
    return st.sampled_from(
        [
            Snippet("希望授权到期前提醒我。", "request", "希望授权到期前提醒我"),
            Snippet("请帮我把发票抬头改一下", "request", "请帮我把发票抬头改一下"),
            Snippet("Please remind me before it expires.", "request", "please remind me before it expires"),
            Snippet(
                "I'd like a refund for the duplicate charge.",
                "request",
                "i'd like a refund for the duplicate charge",
            ),
        ]
    )


_COMMON_SNIPPETS = st.one_of(_bill_number(), _other_id(), _error_code(), _amount(), _date())
# Built once: hypothesis validates every new strategy object, which dominated run time when
# these were rebuilt for each turn.
_SNIPPETS_BY_ROLE: dict[str, st.SearchStrategy[Snippet]] = {
    "agent": st.one_of(_COMMON_SNIPPETS, _promise()),
    "customer": st.one_of(_COMMON_SNIPPETS, _request()),
}


def fact_snippets(role: Role) -> st.SearchStrategy[Snippet]:
    """One planted fact; promises only for agents and requests only for customers, as in real tickets."""
    return _SNIPPETS_BY_ROLE[role]


def _repeat(sentence: str, times: int) -> str:
    return sentence * times if sentence in ZH_FILLER else " ".join([sentence] * times)


# Occasionally one sentence repeated many times: a pasted log, the kind of turn that blows a budget.
_FILLER = st.builds(_repeat, st.sampled_from(ZH_FILLER + EN_FILLER), st.sampled_from([1, 1, 1, 2, 5, 30]))
_ROLES: tuple[Role, Role] = ("customer", "agent")


_PIECE_COUNT = st.integers(1, 6)


@st.composite
def annotated_turns(draw: st.DrawFn, role: Role) -> AnnotatedTurn:
    """A turn built from filler and fact snippets, with the facts it is known to contain."""
    return _draw_turn(draw, role, 0)


@st.composite
def annotated_conversations(
    draw: st.DrawFn, *, min_turns: int = 0, max_turns: int = 16
) -> tuple[AnnotatedTurn, ...]:
    """Turns alternating customer, agent, customer, ... as a ticket does."""
    size = draw(st.integers(min_turns, max_turns))
    return tuple(_draw_turn(draw, _ROLES[i % 2], i) for i in range(size))


def _draw_turn(draw: st.DrawFn, role: Role, index: int) -> AnnotatedTurn:
    pieces: list[str] = []
    expected: list[tuple[str, str]] = []
    for _ in range(draw(_PIECE_COUNT)):
        if draw(st.booleans()):
            snippet = draw(fact_snippets(role))
            pieces.append(snippet.text)
            expected.append((snippet.kind, snippet.key))
        else:
            pieces.append(draw(_FILLER))
    # "；" ends a sentence and separates numbers, so neighbouring snippets cannot run together.
    turn = Turn(role=role, content="；".join(pieces), round=index // 2)
    return AnnotatedTurn(turn, tuple(expected))


def conversations(*, min_turns: int = 0, max_turns: int = 16) -> st.SearchStrategy[tuple[Turn, ...]]:
    """Plain conversations, for properties that do not care which facts were planted."""
    return annotated_conversations(min_turns=min_turns, max_turns=max_turns).map(
        lambda annotated: tuple(a.turn for a in annotated)
    )


class Budget(NamedTuple):
    budget: int
    keep_last: int
    summary_cap: int


budgets = st.builds(
    Budget,
    budget=st.integers(40, 1500),
    keep_last=st.integers(0, 6),
    summary_cap=st.integers(8, 400),
)

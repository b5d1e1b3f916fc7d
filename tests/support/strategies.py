"""Hypothesis strategies for support conversations: mixed Chinese and English, facts sprinkled in.

Every fact snippet carries the (kind, key) the extractor should find, written out by hand here
rather than computed with supportbot's own normalizers, so a test comparing the two checks
something.
"""

from __future__ import annotations

from datetime import UTC, date, datetime, timedelta
from decimal import Decimal
from typing import NamedTuple

from hypothesis import strategies as st

from supportbot import Turn
from supportbot._state import Role


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


# -- the forms customers write facts in (memory/_money.py, _dates.py, _contacts.py) ---------------
# Keys are computed here by hand-written arithmetic, not with supportbot's normalizers.

TURN_TIME = datetime(2026, 3, 18, 10, 0, tzinfo=UTC)  # a Wednesday
_CN = "零一二三四五六七八九"

# Fact-free sentences, several with request words that ask for nothing: extraction must find no
# fact in any mix of them.
FACT_FREE = (
    "那就麻烦你们了",
    "谢谢,辛苦了",
    "请稍等",
    "我想想",
    "我想说你们的界面挺好看",
    "今天又试了一次",
    "页面一直在转圈",
    "说实话这个流程有点复杂",
    "感谢你们的耐心",
    "系统提示让我联系管理员",
    "thanks a lot",
    "the page keeps loading",
)


def chinese_numeral(n: int) -> str:
    """1 <= n < 10000 in Chinese numerals, the way a customer writes it (一千零五, 三千五百)."""
    parts: list[str] = []
    zero = False
    for value, unit in ((1000, "千"), (100, "百"), (10, "十"), (1, "")):
        digit = n // value % 10
        if digit:
            if zero and parts:
                parts.append("零")
            parts.append(("两" if digit == 2 and unit in ("千", "百") else _CN[digit]) + unit)
            zero = False
        elif parts:
            zero = True
    text = "".join(parts)
    return text[1:] if text.startswith("一十") else text


@st.composite
def _customer_amount(draw: st.DrawFn) -> Snippet:
    n = draw(st.integers(1, 9999))
    tenths = draw(st.integers(1, 9))
    forms = [
        (f"{chinese_numeral(n)}元", f"CNY {n}.00"),
        (f"{chinese_numeral(n)}块钱", f"CNY {n}.00"),
        (f"{n} 块", f"CNY {n}.00"),
        # No currency written: a Chinese sentence around it means yuan (memory/_typed.py).
        (f"大概{n % 100 + 1}.{tenths}k", f"CNY {(n % 100 + 1) * 1000 + tenths * 100}.00"),
        (f"{n % 100 + 1}.{tenths}万", f"CNY {(n % 100 + 1) * 10000 + tenths * 1000}.00"),
        (f"¥{n:,}", f"CNY {n}.00"),
    ]
    text, key = draw(st.sampled_from(forms))
    return Snippet(text, "amount", key)


@st.composite
def _relative_date(draw: st.DrawFn) -> Snippet:
    day = TURN_TIME.date()
    monday = day - timedelta(days=day.weekday())
    weekday = draw(st.integers(0, 4))
    names = "一二三四五"
    month, dom = draw(st.integers(1, 12)), draw(st.integers(1, 28))
    forms = [
        (f"下周{names[weekday]}", monday + timedelta(days=7 + weekday)),
        (f"上周{names[weekday]}", monday + timedelta(days=weekday - 7)),
        (f"这周{names[weekday]}", monday + timedelta(days=weekday)),
        (f"上个月{dom}号", date(day.year, day.month - 1, dom)),
        (f"下个月{dom}号", date(day.year, day.month + 1, dom)),
        (f"{month}/{dom}", date(day.year, month, dom)),
        ("明天", day + timedelta(days=1)),
        ("后天", day + timedelta(days=2)),
    ]
    text, when = draw(st.sampled_from(forms))
    return Snippet(text, "date", when.isoformat())


@st.composite
def _customer_id(draw: st.DrawFn) -> Snippet:
    n = draw(st.integers(0, 9999))
    year = draw(st.integers(2020, 2029))
    forms = [
        (f"inv-{year}-{n:04d}", "id", f"INV-{year}-{n:04d}"),
        (f"合同号 {year}ht{n:04d}", "id", f"{year}HT{n:04d}"),
        (f"e{3000 + n % 1000}", "error_code", f"E{3000 + n % 1000}"),
        (f"报错代码是 auth-{400 + n % 100}", "error_code", f"AUTH-{400 + n % 100}"),
    ]
    text, kind, key = draw(st.sampled_from(forms))
    return Snippet(text, kind, key)


@st.composite
def _contact(draw: st.DrawFn) -> Snippet:
    middle, last = draw(st.integers(1000, 9999)), draw(st.integers(1000, 9999))
    user = draw(st.text("abcdefghijklmnopqrstuvwxyz", min_size=1, max_size=8))
    forms = [
        (f"138 {middle} {last}", "phone", f"138{middle}{last}"),
        (f"+86 139-{middle}-{last}", "phone", f"139{middle}{last}"),
        (f"{user.upper()}@Example.COM", "email", f"{user}@example.com"),
        ("专业版年付", "plan", "专业版年付"),
        ("财务小刘", "person", "财务:小刘"),
        ("还没有收到退款", "status", "收到退款=否"),
        ("两步验证从来没开过", "status", "开通两步验证=否"),
    ]
    text, kind, key = draw(st.sampled_from(forms))
    return Snippet(text, kind, key)


customer_forms = st.one_of(_customer_amount(), _relative_date(), _customer_id(), _contact())
fact_free_text = st.lists(st.sampled_from(FACT_FREE), max_size=8).map("。".join)

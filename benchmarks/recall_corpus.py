"""Long support tickets in Chinese or English with planted facts, and the ground truth for each.

    python benchmarks/recall_corpus.py --show zh 7     # print the ticket of seed 7 and its facts
    python benchmarks/recall_corpus.py --check 300     # check the ground truth of 300 tickets per language

Written from how customers write to support, independently of the engine's extractor (nothing
here was shaped by its patterns, and nothing here imports the engine): values and surface forms
are drawn from wide pools, facts mostly arrive in passing inside longer messages, and filler is
full of request and promise words that ask and promise nothing.

:func:`generate` builds one ticket of 40-80 rounds (or ``rounds``). Every round has a customer
message; the agent's reply of a round is written by the model under test, and ``Round.agent`` is
a sentence the benchmark's scripted model appends to it (the agent's promises, or polite filler).

Thirteen categories (:data:`CATEGORIES`), 1-8 facts each per ticket; 0-3 corrections (an amount,
a date, an id or an address) and 0-2 statuses that flip. A corrected or flipped value stays in the
ground truth, marked superseded, with the strings of the value that replaced it (:attr:`Fact.current`).

A fact's ``strings`` are the texts any one of which counts as recalled (:func:`found`): its words
as written plus the canonical form where one is obvious (the digits of a phone, however grouped;
``CNY 200.00`` / ``USD 37.18`` for an amount; the ISO date of a date; the upper-case form of a
lower-case id; goods or a plan with its options in any order, never the product or an option
alone). Dates written relative to the day (``下周五``, ``the 3rd of last month``) or without a year
get their ISO forms from :meth:`Ticket.resolve_dates`, given the day each round was written.
:func:`appears` is how a string is looked for: case-insensitive, blind to spacing and to commas,
parentheses and colons between words, and not inside a longer run of ASCII letters and digits.
"""

from __future__ import annotations

import argparse
import calendar
import itertools
import random
import re
import sys
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass, field
from datetime import date, timedelta
from functools import lru_cache
from typing import Any, TypeVar

T = TypeVar("T")

__all__ = [
    "CATEGORIES",
    "LANGUAGES",
    "DateRule",
    "Fact",
    "Round",
    "Ticket",
    "appears",
    "check",
    "digits_appear",
    "found",
    "generate",
]

CATEGORIES = (
    "id",
    "amount",
    "date",
    "error_code",
    "phone",
    "email",
    "address",
    "person",
    "plan",
    "status",
    "agent_promise",
    "customer_promise",
    "request",
)
LANGUAGES = ("zh", "en")
CORRECTABLE = ("amount", "date", "id", "address")
MIN_ROUNDS, MAX_ROUNDS = 40, 80
QUIET_TAIL = 3  # the last rounds carry no fact: every fact has to survive compression
# How many facts of one category a ticket plants: 1-8, fewer more often.
_COUNT_WEIGHTS = (5, 5, 4, 3, 2, 2, 1, 1)
CORE_OPEN, CORE_CLOSE = "⟦", "⟧"  # marks the words of a sentence fact inside its template


# -- ground truth ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class DateRule:
    """How a date written without its full ISO value resolves against the day it was written.

    ``absolute``: ``year-month-day``. ``yearless``: ``month-day`` in the year of writing, or the
    one before or after. ``weekday``: ``weekday`` (Monday 0) of the week ``weeks`` away from the
    week of writing, and with ``nearest`` +1/-1 also the next/most recent such day (English
    "next Friday", "last Tuesday" mean either). ``month_day``: ``day`` of the month ``months`` away.
    """

    kind: str
    year: int = 0
    month: int = 0
    day: int = 0
    weekday: int = 0
    weeks: tuple[int, ...] = ()
    nearest: int = 0
    months: int = 0

    def resolve(self, today: date) -> set[date]:
        if self.kind == "absolute":
            return {date(self.year, self.month, self.day)}
        if self.kind == "yearless":
            return {date(today.year + k, self.month, self.day) for k in (-1, 0, 1)}
        if self.kind == "weekday":
            monday = today - timedelta(days=today.weekday())
            days = {monday + timedelta(days=7 * w + self.weekday) for w in self.weeks}
            if self.nearest > 0:
                days.add(today + timedelta(days=(self.weekday - today.weekday()) % 7 or 7))
            elif self.nearest < 0:
                days.add(today - timedelta(days=(today.weekday() - self.weekday) % 7 or 7))
            return days
        if self.kind == "month_day":
            index = today.year * 12 + today.month - 1 + self.months
            year, month = divmod(index, 12)
            return {date(year, month + 1, min(self.day, calendar.monthrange(year, month + 1)[1]))}
        raise ValueError(f"unknown date rule {self.kind}")


@dataclass(eq=False, slots=True)
class Fact:
    """One planted fact: what was written, and what in a prompt counts as recalling it."""

    category: str
    written: str  # the value (or the sentence's words) as it appears in the turn
    strings: tuple[str, ...]  # any one of these in the prompt counts as recalled
    speaker: str = "customer"  # "agent" for the agent's own promises
    round: int = -1
    fragment: str = ""  # the clause the fact was planted in
    rule: DateRule | None = None  # dates written without a full ISO value
    replaced_by: Fact | None = None  # a later correction or flip made this value stale

    @property
    def superseded(self) -> bool:
        return self.replaced_by is not None

    @property
    def current(self) -> tuple[str, ...]:
        """For a superseded fact, the strings of the value that is current now (else ())."""
        fact = self.replaced_by
        if fact is None:
            return ()
        while fact.replaced_by is not None:
            fact = fact.replaced_by
        return fact.strings

    def truth(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "category": self.category,
            "speaker": self.speaker,
            "round": self.round,
            "written": self.written,
            "strings": list(self.strings),
            "superseded": self.superseded,
        }
        if self.superseded:
            out["current"] = list(self.current)
        return out


@dataclass(slots=True)
class Round:
    customer: str  # the customer's message
    agent: str = ""  # a sentence the scripted agent appends to its reply of this round


@dataclass(slots=True)
class Ticket:
    language: str
    subject: str
    rounds: list[Round]
    facts: list[Fact]

    def resolve_dates(self, days: Sequence[Iterable[date]]) -> None:
        """Add the ISO forms of dates written relative to the day or without a year; ``days[r]``:
        the day(s) round ``r``'s customer message was written (local and UTC may differ). An ISO
        form two date facts would share is given to neither (it would credit one for the other),
        unless the fact resolves to that one day alone: then both facts are that day, and a prompt
        showing it shows both values (as one id written twice is recalled by one occurrence)."""
        found: dict[Fact, set[str]] = {}
        for fact in self.facts:
            if fact.rule is not None:
                found[fact] = {d.isoformat() for day in days[fact.round] for d in fact.rule.resolve(day)}
        owners: dict[str, int] = {}
        for fact in self.facts:
            if fact.category == "date":
                for s in found.get(fact, set()) | set(fact.strings):
                    owners[s] = owners.get(s, 0) + 1
        for fact, isos in found.items():
            extra = sorted(s for s in isos if (owners[s] == 1 or len(isos) == 1) and s not in fact.strings)
            fact.strings = (*fact.strings, *extra)
            fact.rule = None

    def truth(self) -> list[dict[str, Any]]:
        return [f.truth() for f in self.facts]


# -- matching -------------------------------------------------------------------------------------

_SEPARATORS = " \t\n,，()（）:：、;；"  # ASCII and full-width: a prompt may show either
_SEP = "[" + re.escape(_SEPARATORS) + "]"


def _cjk(ch: str) -> bool:
    return "\u3400" <= ch <= "\u9fff"


def _ascii_alnum(ch: str) -> bool:
    return ch.isascii() and ch.isalnum()


@lru_cache(maxsize=50_000)
def _pattern(needle: str) -> re.Pattern[str]:
    stripped = needle.strip(_SEPARATORS)
    if not stripped:
        raise ValueError(f"empty needle {needle!r}")
    parts = []
    for token in re.split(_SEP + "+", stripped):
        out, prev = [], ""
        for ch in token:
            if prev and _cjk(prev) != _cjk(ch) and (_ascii_alnum(prev) or _ascii_alnum(ch)):
                out.append(r"\s*")
            out.append(re.escape(ch))
            prev = ch
        parts.append("".join(out))
    body = (_SEP + "*").join(parts)
    start = r"(?<![A-Za-z0-9])" if _ascii_alnum(stripped[0]) else ""
    end = r"(?![A-Za-z0-9])" if _ascii_alnum(stripped[-1]) else ""
    return re.compile(start + body + end, re.IGNORECASE)


def pattern_of(needle: str) -> re.Pattern[str]:
    """What :func:`appears` searches ``text`` for."""
    return _pattern(needle)


def appears(needle: str, text: str) -> bool:
    """``needle`` in ``text``, ignoring case, spacing and separators between words (see module doc)."""
    return _pattern(needle).search(text) is not None


_PHONE_RUN = re.compile(r"\+?\(?[0-9][0-9 ().-]*[0-9]")
_COUNTRY_CODES = ("", "1", "86", "0086", "001")


def digits_appear(digits: str, text: str) -> bool:
    """A phone's ``digits`` in ``text`` however grouped (``(212) 555-0187``, ``212.555.0187``) and
    with or without a country code (``+1``, ``+86``)."""
    for match in _PHONE_RUN.finditer(text):
        run = re.sub(r"[^0-9]", "", match.group())
        if run.endswith(digits) and run[: len(run) - len(digits)] in _COUNTRY_CODES:
            return True
    return False


def found(category: str, needle: str, text: str) -> bool:
    """Whether ``needle``, one of a ``category`` fact's strings, is in ``text``: a phone's digits
    by :func:`digits_appear`, everything else by :func:`appears`."""
    if category == "phone" and needle.isdigit():
        return digits_appear(needle, text)
    return appears(needle, text)


def occurrences(needle: str, text: str) -> int:
    return sum(1 for _ in _pattern(needle).finditer(text))


def _norm(text: str) -> str:
    return re.sub(_SEP + "+", "", text.lower())


# -- small writers --------------------------------------------------------------------------------

_ZH_DIGITS = "零一二三四五六七八九"
_ZH_CAPITALS = "零壹贰叁肆伍陆柒捌玖"


def zh_number(n: int, *, capital: bool = False, liang: bool = False) -> str:
    """``n`` (1..99,999,999) in Chinese numerals: 三千五百, 两百 (``liang``), 叁仟伍佰 (``capital``)."""
    if not 0 < n < 10**8:
        raise ValueError(n)
    if n >= 10_000:
        high, low = divmod(n, 10_000)
        text = zh_number(high, capital=capital, liang=liang) + "万"
        if low:
            text += ("零" if low < 1000 else "") + zh_number(low, capital=capital, liang=liang)
        return text
    digits = _ZH_CAPITALS if capital else _ZH_DIGITS
    units = ("", "拾", "佰", "仟") if capital else ("", "十", "百", "千")
    text, zero = "", False
    places = [(n // 10**p) % 10 for p in (3, 2, 1, 0)]
    started = False
    for place, d in zip((3, 2, 1, 0), places, strict=True):
        if d == 0:
            zero = started
            continue
        if zero:
            text += digits[0]
            zero = False
        word = digits[d]
        if liang and d == 2 and place >= 2 and not capital:
            word = "两"
        if not capital and d == 1 and place == 1 and not started:
            word = ""  # 十五, not 一十五
        text += word + units[place]
        started = True
    return text


_EN_SMALL = [
    "zero",
    "one",
    "two",
    "three",
    "four",
    "five",
    "six",
    "seven",
    "eight",
    "nine",
    "ten",
    "eleven",
    "twelve",
    "thirteen",
    "fourteen",
    "fifteen",
    "sixteen",
    "seventeen",
    "eighteen",
    "nineteen",
]
_EN_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def en_words(n: int, *, a_hundred: bool = False) -> str:
    """``n`` (1..9,999) in English words: forty-five, a hundred and twenty, two thousand three hundred."""
    if n < 20:
        return _EN_SMALL[n]
    if n < 100:
        tens, ones = divmod(n, 10)
        return _EN_TENS[tens] + (f"-{_EN_SMALL[ones]}" if ones else "")
    if n < 1000:
        hundreds, rest = divmod(n, 100)
        head = "a hundred" if a_hundred and hundreds == 1 else f"{_EN_SMALL[hundreds]} hundred"
        return head + (f" and {en_words(rest)}" if rest else "")
    thousands, rest = divmod(n, 1000)
    head = f"{_EN_SMALL[thousands]} thousand"
    if not rest:
        return head
    return head + (" and " if rest < 100 else " ") + en_words(rest)


def _digits(rng: random.Random, n: int, *, first_nonzero: bool = True) -> str:
    head = str(rng.randint(1, 9)) if first_nonzero else str(rng.randint(0, 9))
    return head + "".join(str(rng.randint(0, 9)) for _ in range(n - 1))


def _money(cents: int, currency: str) -> str:
    return f"{currency} {cents // 100}.{cents % 100:02d}"


def _core(template: str) -> tuple[str, str]:
    """A template's text without the core marks, and the marked core."""
    start, end = template.index(CORE_OPEN), template.index(CORE_CLOSE)
    return template.replace(CORE_OPEN, "").replace(CORE_CLOSE, ""), template[start + 1 : end]


def _glue(a: str, b: str) -> str:
    """``a`` then ``b``, with a space between two ASCII letters or digits (``iPhone 15 256G``)."""
    return f"{a} {b}" if _ascii_alnum(a[-1]) and _ascii_alnum(b[0]) else a + b


def _orders(product: str, spellings: Sequence[Sequence[str]]) -> list[str]:
    """A product and its option parts in every order, each part in each of its spellings: what
    counts for goods or a plan (the product alone, or an option alone, never does)."""
    return [
        " ".join(order)
        for parts in itertools.product(*spellings)
        for order in itertools.permutations((product, *parts))
    ]


# -- pools shared by both languages ---------------------------------------------------------------

_DOCS: tuple[tuple[str, str, tuple[str, ...]], ...] = (
    # (Chinese label, English label, prefixes seen on such documents)
    ("订单号", "order", ("SO", "ORD", "DD", "JD", "TB")),
    ("发票号", "invoice", ("INV", "FP", "IN")),
    ("工单号", "ticket", ("TK", "CS", "SR", "TKT")),
    ("合同号", "contract", ("HT", "CT", "CON")),
    ("退货单号", "return", ("RMA", "TH", "RT")),
    ("快递单号", "tracking number", ("SF", "YT", "ZTO", "1Z")),
    ("交易流水号", "transaction ID", ("TXN", "PAY", "TR")),
    ("账单号", "statement", ("BL", "ST", "B")),
    ("售后单号", "case number", ("AS", "CASE", "SV")),
)
_ALNUM = "ABCDEFGHJKLMNPQRSTUVWXYZ23456789"


def _id_value(rng: random.Random, prefixes: Sequence[str], *, long_digits: bool) -> tuple[str, str]:
    """An id as a customer would copy it, and its kind."""
    prefix = rng.choice(prefixes)
    year = str(rng.choice((2024, 2025, 2026)))
    kind = rng.choice(
        ("prefix_digits", "prefix_dash", "digit_first", "lower", "dashed_digits", "plain_digits", "alnum")
    )
    if kind == "prefix_digits":
        value = prefix + _digits(rng, rng.randint(6, 12))
    elif kind == "prefix_dash":
        value = f"{prefix}-{year}-{_digits(rng, 4, first_nonzero=False)}"
    elif kind == "digit_first":
        letters = prefix if prefix.isalpha() else "HT"
        head = rng.choice((year, year[2:] + str(rng.randint(1, 12)).zfill(2)))
        value = f"{head}{letters}{_digits(rng, 4, first_nonzero=False)}"
    elif kind == "lower":
        value = rng.choice(
            (
                f"{prefix.lower()}-{year}-{_digits(rng, 4, first_nonzero=False)}",
                f"{prefix.lower()}{_digits(rng, rng.randint(5, 9))}",
                f"{prefix.lower()}_{''.join(rng.choice(_ALNUM) for _ in range(7)).lower()}",
            )
        )
    elif kind == "dashed_digits":
        value = rng.choice(
            (
                "-".join(
                    (
                        _digits(rng, 4),
                        _digits(rng, 4, first_nonzero=False),
                        _digits(rng, 4, first_nonzero=False),
                    )
                ),
                "-".join(
                    (
                        _digits(rng, 3),
                        _digits(rng, 7, first_nonzero=False),
                        _digits(rng, 7, first_nonzero=False),
                    )
                ),
            )
        )
    elif kind == "plain_digits":
        value = _digits(rng, rng.choice((7, 8, 9, 10, 12, 18, 19) if long_digits else (6, 7, 8, 9, 10)))
    else:
        while True:
            value = "".join(rng.choice(_ALNUM) for _ in range(rng.randint(7, 10)))
            if sum(c.isdigit() for c in value) >= 2 and sum(c.isalpha() for c in value) >= 2:
                break
    return value, kind


def _tense(rule: DateRule | None, rng: random.Random) -> str:
    """ "past" or "future": a date relative to today has one; an absolute date goes with either."""
    if rule is not None and rule.kind == "weekday":
        return "past" if rule.weeks[0] < 0 else "future"
    if rule is not None and rule.kind == "month_day":
        return "past" if rule.months < 0 else "future"
    return rng.choice(("past", "future"))


def _ordinal(day: int) -> str:
    return f"{day}{'th' if 10 <= day % 100 <= 20 else {1: 'st', 2: 'nd', 3: 'rd'}.get(day % 10, 'th')}"


def _ask(rng: random.Random, ask: str) -> str:
    """The customer's question before an agent's promise: always when it names a number (the
    promise needs it), else now and then."""
    return ask if any(c.isdigit() for c in ask) or rng.random() < 0.5 else ""


def _month_day(strings: Sequence[str], rule: DateRule | None) -> tuple[int, int]:
    """The month and day of a date fact (from its rule, or from its ISO string)."""
    if rule is not None:
        return rule.month, rule.day
    iso = next(s for s in strings if re.fullmatch(r"\d{4}-\d{2}-\d{2}", s))
    return int(iso[5:7]), int(iso[8:10])


def _id_strings(value: str) -> tuple[str, ...]:
    out = [value]
    if value.upper() != value:
        out.append(value.upper())
    return tuple(out)


def _typo(rng: random.Random, value: str) -> str:
    """``value`` with one digit changed or two neighbouring digits swapped (a copying mistake)."""
    positions = [i for i, c in enumerate(value) if c.isdigit()]
    if not positions:  # letters only: one letter mistyped
        i = rng.choice([i for i, c in enumerate(value) if c.isalpha()])
        pool = "abcdefghkmnpqrstuvwxyz" if value[i].islower() else "ABCDEFGHKMNPQRSTUVWXYZ"
        return value[:i] + rng.choice([c for c in pool if c != value[i]]) + value[i + 1 :]
    for _ in range(50):
        chars = list(value)
        i = rng.choice(positions)
        if rng.random() < 0.5 and i + 1 < len(chars) and chars[i + 1].isdigit() and chars[i] != chars[i + 1]:
            chars[i], chars[i + 1] = chars[i + 1], chars[i]
        else:
            chars[i] = rng.choice([d for d in "0123456789" if d != chars[i]])
        if chars[0] != "0" or value[0] == "0":
            return "".join(chars)
    return value[:-1] + ("1" if value[-1] != "1" else "2")


_HTTP = (
    ("503", "Service Unavailable"),
    ("502", "Bad Gateway"),
    ("504", "Gateway Timeout"),
    ("500", "Internal Server Error"),
    ("429", "Too Many Requests"),
    ("401", "Unauthorized"),
    ("403", "Forbidden"),
    ("422", "Unprocessable Entity"),
    ("408", "Request Timeout"),
)
_ERR_WORDS = ("SYNC", "AUTH", "TIMEOUT", "QUOTA", "PAYMENT", "NETWORK", "TOKEN", "UPLOAD", "EXPORT", "CERT")
_ERR_PREFIXES = ("PAY", "AUTH", "SYNC", "API", "NET", "ACC", "GW")


def _error_code(rng: random.Random, zh: bool) -> tuple[str, tuple[str, ...]]:
    kind = rng.choice(("e_code", "number", "lower", "err_word", "http", "hex", "prefixed"))
    if kind == "e_code":
        value = rng.choice("EE" + "WB") + _digits(rng, 4)
        return value, (value,)
    if kind == "number":
        code = _digits(rng, rng.choice((4, 4, 5)))
        label = (
            rng.choice(("错误码", "错误代码", "报错码", "代码"))
            if zh
            else rng.choice(("error", "error code", "code"))
        )
        written = f"{label} {code}" if rng.random() < 0.7 or not zh else f"{label}{code}"
        return written, (written, code, f"error {code}")
    if kind == "lower":
        value = "".join(rng.choice("abcdefghkmnprstuvwxyz") for _ in range(2)) + "-" + _digits(rng, 3)
        return value, (value, value.upper())
    if kind == "err_word":
        value = f"ERR_{rng.choice(_ERR_WORDS)}_{_digits(rng, rng.choice((2, 3)))}"
        if rng.random() < 0.2:
            value = value.lower()
        return value, _id_strings(value)
    if kind == "http":
        code, text = rng.choice(_HTTP)
        written = rng.choice((f"{code} {text}", f"HTTP {code}", f"{code} error", f"{code} {text.lower()}"))
        return written, (written, f"{code} {text}", f"HTTP {code}", code)
    if kind == "hex":
        value = "0x" + "".join(rng.choice("0123456789ABCDEF") for _ in range(8))
        return value, (value,)
    value = f"{rng.choice(_ERR_PREFIXES)}-{_digits(rng, 4)}"
    return value, (value,)


_CN_MOBILE = [
    "130",
    "131",
    "132",
    "133",
    "135",
    "136",
    "137",
    "138",
    "139",
    "150",
    "151",
    "152",
    "155",
    "156",
    "157",
    "158",
    "159",
    "166",
    "171",
    "173",
    "175",
    "176",
    "177",
    "178",
    "180",
    "181",
    "182",
    "183",
    "185",
    "186",
    "187",
    "188",
    "189",
    "191",
    "198",
    "199",
]
_CN_AREAS = ("010", "021", "020", "0755", "0571", "028", "025", "027", "023", "0532", "0512", "029")


def _zh_phone(rng: random.Random) -> tuple[str, str]:
    """(as written, its digits)."""
    if rng.random() < 0.78:
        number = rng.choice(_CN_MOBILE) + _digits(rng, 8, first_nonzero=False)
        a, b, c = number[:3], number[3:7], number[7:]
        written = rng.choice(
            (
                number,
                number,
                f"{a}-{b}-{c}",
                f"{a} {b} {c}",
                f"+86 {a} {b} {c}",
                f"+86{number}",
                f"{a} {b}{c}",
            )
        )
        return written, number
    area = rng.choice(_CN_AREAS)
    local = _digits(rng, 8 if len(area) == 3 else rng.choice((7, 8)))
    written = rng.choice(
        (f"{area}-{local}", f"({area}){local}", f"{area}-{local[:4]}-{local[4:]}", f"{area} {local}")
    )
    return written, area + local


def _en_phone(rng: random.Random) -> tuple[str, str]:
    area = str(rng.randint(2, 9)) + _digits(rng, 2, first_nonzero=False)
    while area[1:] == "11":
        area = str(rng.randint(2, 9)) + _digits(rng, 2, first_nonzero=False)
    exchange = rng.choice(("555", str(rng.randint(2, 9)) + _digits(rng, 2, first_nonzero=False)))
    line = _digits(rng, 4, first_nonzero=False)
    written = rng.choice(
        (
            f"({area}) {exchange}-{line}",
            f"{area}.{exchange}.{line}",
            f"+1 {area} {exchange} {line}",
            f"{area}-{exchange}-{line}",
            f"{area}{exchange}{line}",
            f"+1 ({area}) {exchange}-{line}",
            f"{area} {exchange} {line}",
        )
    )
    return written, area + exchange + line


_PINYIN = [
    "zhangwei",
    "wangfang",
    "lina",
    "liuyang",
    "chenjing",
    "yanglei",
    "huangmin",
    "zhaoqiang",
    "wuxia",
    "zhoujie",
    "xuli",
    "sunhao",
    "mahui",
    "zhuyan",
    "hujun",
    "guolin",
    "heping",
    "gaofei",
    "linxue",
    "luoyi",
    "zhengkai",
    "liangchen",
    "xiehong",
    "songtao",
    "tangmei",
    "hanbing",
    "fengyu",
    "dengli",
    "caoxin",
    "pengbo",
    "zengrui",
    "xiaoyu",
    "tianye",
    "dongfang",
    "yuanhao",
    "panlei",
    "jiangnan",
    "caiwen",
]
_ZH_DOMAINS = [
    "qq.com",
    "163.com",
    "126.com",
    "foxmail.com",
    "sina.com",
    "aliyun.com",
    "139.com",
    "yeah.net",
    "outlook.com",
    "hengda-tech.cn",
    "xinyuan-trade.com",
    "jinqiao.com.cn",
    "huayu-edu.cn",
    "dongsheng-logistics.com",
]
_EN_FIRST = [
    "James",
    "Mary",
    "Robert",
    "Patricia",
    "Michael",
    "Jennifer",
    "David",
    "Linda",
    "William",
    "Elizabeth",
    "Richard",
    "Barbara",
    "Joseph",
    "Susan",
    "Thomas",
    "Jessica",
    "Carlos",
    "Sarah",
    "Daniel",
    "Karen",
    "Matthew",
    "Nancy",
    "Anthony",
    "Lisa",
    "Mark",
    "Betty",
    "Priya",
    "Raj",
    "Aisha",
    "Omar",
    "Kenji",
    "Yuki",
    "Mei",
    "Wei",
    "Sofia",
    "Lucas",
    "Olivia",
    "Ethan",
    "Chloe",
    "Noah",
    "Grace",
    "Liam",
    "Zoe",
    "Diego",
    "Nina",
    "Ivan",
    "Fatima",
    "Hannah",
    "Tyler",
    "Brianna",
    "Marcus",
    "Denise",
    "Trevor",
    "Alicia",
    "Gavin",
    "Rosa",
]
_EN_LAST = [
    "Smith",
    "Johnson",
    "Williams",
    "Brown",
    "Jones",
    "Garcia",
    "Miller",
    "Davis",
    "Rodriguez",
    "Martinez",
    "Hernandez",
    "Lopez",
    "Wilson",
    "Anderson",
    "Thomas",
    "Taylor",
    "Moore",
    "Jackson",
    "Martin",
    "Lee",
    "Thompson",
    "White",
    "Harris",
    "Clark",
    "Lewis",
    "Robinson",
    "Walker",
    "Young",
    "Allen",
    "King",
    "Wright",
    "Scott",
    "Nguyen",
    "Hill",
    "Flores",
    "Green",
    "Adams",
    "Nelson",
    "Baker",
    "Hall",
    "Rivera",
    "Campbell",
    "Mitchell",
    "Carter",
    "Roberts",
    "Patel",
    "Kim",
    "Chen",
    "Singh",
    "Okafor",
    "Brennan",
    "Alvarez",
    "Novak",
    "Kowalski",
    "Li",
    "Park",
]
_EN_DOMAINS = [
    "gmail.com",
    "outlook.com",
    "yahoo.com",
    "icloud.com",
    "proton.me",
    "hotmail.com",
    "aol.com",
    "comcast.net",
    "northwindtraders.com",
    "acme-corp.com",
    "bluefinlogistics.io",
    "sunrisedental.org",
    "hartleyandco.com",
    "greenleaf-farms.net",
    "pinecrestlaw.com",
]


def _email(rng: random.Random, zh: bool) -> str:
    if zh:
        name = rng.choice(_PINYIN)
        local = rng.choice(
            (
                name + _digits(rng, rng.randint(2, 4)),
                f"{name[: len(name) // 2]}.{name[len(name) // 2 :]}",
                f"{name}_{rng.randint(1980, 2005)}",
                _digits(rng, rng.randint(6, 10)),
                f"{name}{rng.choice(('', '.'))}{rng.choice(('work', 'finance', 'cw', 'office'))}",
            )
        )
        domain = rng.choice(_ZH_DOMAINS)
    else:
        first, last = rng.choice(_EN_FIRST), rng.choice(_EN_LAST)
        local = rng.choice(
            (
                f"{first}.{last}",
                f"{first[0]}{last}",
                f"{first}{last[0]}{rng.randint(1, 99)}",
                f"{first[0]}{last}+{rng.choice(('billing', 'orders', 'support'))}",
                f"{rng.choice(('accounts', 'billing', 'office', 'admin', 'hello'))}",
                f"{first}_{last}{rng.randint(70, 99)}",
            )
        )
        domain = rng.choice(_EN_DOMAINS)
        if rng.random() < 0.4:
            local = local.lower()
    if rng.random() < 0.15:
        domain = domain.capitalize()
    return f"{local}@{domain}"


def _email_strings(written: str) -> tuple[str, ...]:
    return tuple(dict.fromkeys((written, written.lower())))


# -- a language's sentences -----------------------------------------------------------------------


@dataclass(slots=True)
class Piece:
    """A clause to place in a turn, with the facts it plants."""

    text: str
    facts: list[Fact]
    speaker: str = "customer"
    after: Piece | None = None  # must come at least two rounds after this piece
    meta: dict[str, Any] = field(default_factory=dict)


class Registry:
    """The strings of the facts so far: a new fact must neither contain nor be contained in any."""

    def __init__(self) -> None:
        self.norms: list[str] = []

    def free(self, strings: Iterable[str]) -> bool:
        new = [_norm(s) for s in strings]
        return all(a not in b and b not in a for a in new for b in self.norms)

    def claim(self, strings: Iterable[str]) -> None:
        self.norms.extend(_norm(s) for s in strings)

    def clean(self, text: str) -> bool:
        """No fact string in ``text`` (for filler and the words around a fact)."""
        normed = _norm(text)
        return not any(n in normed for n in self.norms)


class Writer:
    """Builds the pieces of one ticket in one language; the subclasses hold the pools."""

    lang = ""

    def make_date(self, absolute: bool = False) -> Piece:
        raise NotImplementedError

    def _other_date(self, original: Piece) -> Fact:
        """A date value (with its year or without) on another day than ``original``'s."""
        for _ in range(100):
            piece = self.make_date(absolute=True)
            if piece.meta["day"] != original.meta["day"]:
                return piece.facts[0]
        raise RuntimeError("no other date")

    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.registry = Registry()

    # Each category's value: returns (clause, fact) and claims the fact's strings.
    def build(self, category: str, **kwargs: Any) -> Piece:
        maker: Callable[..., Piece] = getattr(self, f"make_{category}")
        for _ in range(200):
            piece = maker(**kwargs)
            strings = [s for f in piece.facts for s in f.strings]
            if self.registry.free(strings):
                self.registry.claim(strings)
                for fact in piece.facts:
                    fact.fragment = piece.text
                return piece
        raise RuntimeError(f"no free value for {category} after 200 tries")

    def fact(self, category: str, written: str, strings: Iterable[str], **kwargs: Any) -> Fact:
        return Fact(category, written, tuple(dict.fromkeys(s for s in strings if s.strip())), **kwargs)

    def sentence_fact(self, category: str, template: str, speaker: str = "customer") -> tuple[str, Fact]:
        text, core = _core(template)
        return text, self.fact(category, core, (core,), speaker=speaker)

    def pick(self, pool: Sequence[T]) -> T:
        return self.rng.choice(pool)

    # Per-language parts, defined by the subclasses.
    def filler(self) -> str:
        raise NotImplementedError

    def agent_filler(self) -> str:
        raise NotImplementedError

    def compose(self, clauses: list[str], *, opening: bool = False) -> str:
        raise NotImplementedError

    def in_passing(self, clause: str) -> str:
        raise NotImplementedError

    def subject(self) -> str:
        raise NotImplementedError

    def closing(self) -> str:
        raise NotImplementedError

    def agent_lead(self) -> str:
        raise NotImplementedError


# ---- Chinese ----

_ZH_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘蒋蔡余杜叶程苏魏吕丁任"
    "沈姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_ZH_NAME_FORMS = (
    "小{s}",
    "老{s}",
    "{s}姐",
    "{s}哥",
    "{s}总",
    "{s}经理",
    "{s}工",
    "{s}老师",
    "{s}主管",
    "{s}会计",
)
_ZH_ROLES = (
    "财务",
    "会计",
    "出纳",
    "行政",
    "采购",
    "IT",
    "运维",
    "人事",
    "前台",
    "助理",
    "仓库",
    "店长",
    "项目经理",
    "技术负责人",
    "销售",
    "老板",
    "合伙人",
    "同事",
    "主管",
)
_ZH_DEPARTMENTS = frozenset(("财务", "行政", "采购", "IT", "运维", "人事", "前台", "仓库", "销售"))
_ZH_PERSON_FORMS = (
    ("{role}{name}", "{role}{name}"),
    ("我们{role}{name}", "{role}{name}"),
    ("{role}的{name}", "{role}的{name}"),
    ("{role}那边的{name}", "{role}那边的{name}"),
    ("负责{role}的{name}", "负责{role}的{name}"),
    ("我们公司{role}{name}", "{role}{name}"),
    ("{name}({role})", "{name}({role})"),
)
_ZH_PERSON_TEMPLATES = (
    "这事一直是{p}在跟",
    "{p}说发票到现在还没收到",
    "有什么问题你们可以直接联系{p}",
    "回头让{p}跟你们对一下账",
    "{p}下周出差,这几天找我就行",
    "上次打电话过来的是{p}",
    "账号是{p}当初注册的",
    "{p}让我问一下进度",
    "付款是{p}操作的",
    "{p}对这个事情比较清楚",
    "刚才{p}也试了一下",
    "{p}那边需要一个书面说明",
)
# Goods and plans. An option is one part, or a tuple of parts written together (a colour and a
# size, a billing term and a seat count); a part lists its spellings with "|": any one of them may
# be written, and every one of them counts (XL码 / XL, 256G / 256GB, 10斤 / 5kg).
_ZhOption = str | tuple[str, ...]
# (product, its measure word, options)
_ZH_GOODS: tuple[tuple[str, str, tuple[_ZhOption, ...]], ...] = (
    # clothing
    ("连帽卫衣", "件", (("米白色|米白", "XL码|XL"), ("黑色", "L码|L"), ("雾霾蓝", "M码|M"), "XXL码|2XL|XXL")),
    ("灰色卫衣", "件", ("XL码|XL", "L码", "M码", "XXL")),
    ("双肩包", "个", ("大号", "藏青色", "15寸|15英寸")),
    ("羽绒服", "件", (("黑色", "170/88A"), ("藏青色", "XL码|XL"), "180/96A", ("长款", "L码|L"))),
    ("牛仔裤", "条", ("30码", "32码", ("浅蓝色", "29码"), "28码")),
    ("白衬衫", "件", ("38码", "40码", "L码|L", "修身款")),
    ("连衣裙", "条", (("碎花", "S码|S"), ("黑色", "M码|M"), "XS码|XS")),
    ("冲锋衣", "件", (("军绿色", "XL码|XL"), "三合一款", ("黑色", "2XL|XXL"))),
    ("羊毛围巾", "条", ("驼色", "酒红色", "180cm|180厘米")),
    ("运动袜", "包", ("五双装|5双装", "十双装|10双装", "中筒款")),
    ("睡衣套装", "套", (("粉色", "M码|M"), "纯棉款", "L码|L")),
    # shoes
    ("白色运动鞋", "双", ("42码", "39码", "40.5码", "43码")),
    ("跑步鞋", "双", (("黑白配色", "43码"), "44码", "宽楦版")),
    ("马丁靴", "双", ("37码", "38码", ("棕色", "36码"))),
    ("棉拖鞋", "双", ("40-41码", "36-37码", "粉色")),
    # electronics
    ("手机壳", "个", ("iPhone 15|iPhone15", "iPhone 15 Pro Max", "Mate 60|Mate60", ("透明", "iPhone 14"))),
    ("钢化膜", "张", ("iPhone 15 Pro", "小米14", "两片装")),
    ("iPhone 15", "部", ("256G|256GB", ("黑色", "128G|128GB"), ("蓝色", "256G|256GB"), "512G|512GB")),
    ("蓝牙耳机", "副", ("降噪款", "白色", "Pro款|Pro")),
    ("机械键盘", "把", ("青轴", "红轴", "87键", ("白色", "茶轴"))),
    ("无线鼠标", "个", ("静音款", "黑色", "蓝牙双模款")),
    ("充电宝", "个", ("20000mAh|20000毫安", "10000mAh|10000毫安", "自带线款")),
    ("数据线", "条", ("1米|1m", "2米|2m", "Type-C转Lightning")),
    ("iPad Air", "台", ("256G|256GB", ("深空灰色", "64G|64GB"), "WiFi版|WLAN版")),
    ("显示器", "台", ("27寸|27英寸", "24寸|24英寸", "4K款")),
    ("移动硬盘", "个", ("1T|1TB", "2T|2TB", "4T|4TB")),
    ("智能手表", "块", (("黑色", "45mm"), "41mm", "GPS款")),
    ("Kindle", "台", ("8G|8GB", "32G|32GB", "青春版")),
    ("Switch", "台", ("OLED版|OLED", "续航版", ("白色", "OLED版|OLED"))),
    # home
    ("四件套", "套", ("1.8米床|1.8m", "1.5米床|1.5m", ("灰色", "2米床|2m"))),
    ("乳胶枕", "个", ("两只装", "高枕款", "儿童款")),
    ("扫地机器人", "台", ("标准款", "自动集尘版")),
    ("加湿器", "台", ("4L|4升", "白色", "上加水款")),
    ("收纳箱", "个", ("三个装", "55L|55升", "特大号")),
    # kitchen
    ("空气炸锅", "台", ("5L|5升", "6L|6升", "可视款")),
    ("保温杯", "个", ("500ml|500毫升", "750ml|750毫升", "粉色")),
    ("不粘锅", "口", ("28cm|28厘米", "32cm|32厘米", "带盖款")),
    ("电饭煲", "台", ("3L|3升", "4L|4升", "IH款")),
    ("刀具套装", "套", ("七件套", "五件套")),
    # beauty
    ("防晒霜", "支", ("50ml|50毫升", "SPF50", "两支装")),
    ("洗面奶", "支", ("120g|120克", "敏感肌款", "两支装")),
    ("口红", "支", ("豆沙色", "正红色", "哑光款")),
    ("电动牙刷", "支", ("两支装", "旅行款", "蓝色")),
    ("吹风机", "个", ("负离子款", "白色", "1800W")),
    # sports
    ("瑜伽垫", "张", ("6mm|6毫米", "10mm|10毫米", "紫色")),
    ("哑铃", "对", ("5kg|5公斤", "10kg|10公斤", "可调节款")),
    ("羽毛球拍", "支", ("4U", "3U", ("蓝色", "5U"))),
    ("骑行头盔", "个", ("M码|M", "L码|L", "哑光黑")),
    # baby
    ("纸尿裤", "包", ("L码|L", "XL码|XL", "NB码|NB")),
    ("婴儿推车", "辆", ("可躺款", "灰色", "轻便款")),
    ("奶瓶", "个", ("240ml|240毫升", "160ml|160毫升", "宽口径款")),
    ("安全座椅", "个", ("ISOFIX款", "0-4岁", "9个月-12岁")),
    # pets
    ("猫粮", "袋", ("10斤|5kg", "2kg|4斤", "幼猫款")),
    ("狗绳", "条", ("中型犬款", "1.5米|1.5m", "红色")),
    ("豆腐猫砂", "袋", ("6L", "原味", "绿茶味")),
    # office
    ("人体工学椅", "把", ("带头枕款", "黑色", "网布款")),
    ("中性笔", "盒", ("0.5mm", "黑色", "12支装")),
    ("打印纸", "箱", ("A4 70g", "A4 80g", "5包装")),
    # food and drink
    ("咖啡豆", "袋", ("500g|500克|一斤", "中深烘", "1kg|1公斤")),
    ("挂耳咖啡", "盒", ("10片装", "30片装", "拼配款")),
    ("纯牛奶", "箱", ("250ml×24盒", "24盒装", "低脂款")),
    ("坚果礼盒", "盒", ("1.5kg", "混合款")),
    ("蛋白粉", "桶", ("巧克力味", "香草味", "5磅|5lb")),
    ("龙井", "罐", ("250g|半斤", "明前", "礼盒装")),
    # furniture
    ("书架", "个", ("五层", "胡桃木色", "80cm宽")),
    ("升降桌", "张", ("1.4米|1.4m", "1.2米|1.2m", ("白色", "1.6米|1.6m"))),
    ("布艺沙发", "张", ("三人位", "双人位", ("浅灰色", "三人位"))),
    ("床垫", "张", ("1.8米|1.8m", "1.5米|1.5m", "偏硬款")),
    # books and media
    ("《三体》", "套", ("全三册", "精装版", "典藏版")),
)
# (product, kind, options): kind "plan" (tiers, memberships, service packages) or "cover"
# (warranties and insurance bought with goods).
_ZH_PLANS: tuple[tuple[str, str, tuple[_ZhOption, ...]], ...] = (
    ("专业版", "plan", ("年付|按年付", "月付|按月付", "季付", "三年付", "50人", "20人", ("年付", "50人"))),
    ("企业版", "plan", ("年付|按年付", "两年付", "100人", ("两年付", "200人"))),
    ("基础版", "plan", ("月付", "年付", "单人")),
    ("旗舰版", "plan", ("年付", "三年", "月付")),
    ("团队版", "plan", ("10人", "年付", "按季付", ("年付", "15人"))),
    ("标准版", "plan", ("月付", "年付", "5个账号")),
    ("高级版", "plan", ("年付", "30个席位", "按月付")),
    ("家庭版", "plan", ("6人", "年付", "连续包年")),
    ("教育版", "plan", ("100个账号", "年付")),
    ("高级会员", "plan", ("连续包月", "年卡", "季卡")),
    ("超级会员", "plan", ("连续包年", "年卡", "月卡")),
    ("黄金会员", "plan", ("年卡", "季卡", "连续包季")),
    ("PLUS会员", "plan", ("年卡", "连续包月")),
    ("云存储套餐", "plan", ("2TB|2T", "200GB|200G", ("2TB|2T", "年付"))),
    ("企业邮箱", "plan", ("50个账号", "年付", ("两年付", "20个邮箱"))),
    ("千兆宽带", "plan", ("两年", "包年", "一年")),
    ("延保服务", "cover", ("两年", "三年", "一年")),
    ("碎屏险", "cover", ("一年", "两年")),
    ("只换不修服务", "cover", ("一年", "两年")),
    ("意外保障服务", "cover", ("一年", "两年")),
)
# By kind. A template with {v} takes a phrase built by ZhWriter.plan_phrase (the forms that end in
# a comma or 的 only when {v} ends the template); one with its own words marks them ⟦⟧ and takes
# the product {p} and the option {o}. {m}: the product's measure word; {n}: a count or nothing.
_ZH_PLAN_TEMPLATES: dict[str, tuple[str, ...]] = {
    "plan": (
        "我们现在用的是{v}",
        "之前一直续的{v}",
        "我想确认一下{v}包不包含这个功能",
        "{v}上个季度才续过",
        "我记得{v}是有优先客服的",
        "同事推荐的{v}",
        "去年开始用的{v}",
        "我们公司开通的是{v}",
        "{v}快到期了,想问下续费的事",
        "想从{v}升级到更高一档",
        "{v}的发票到现在还没开",
        "试用期一结束就自动转成了{v}",
        "{v}被重复扣费了",
        "当初销售推荐我们买的是{v}",
        "账号下面挂的是{v}",
        "能不能把{v}退了?",
        "请问{v}什么时候到期?",
        "⟦{p}我们选的是{o}⟧",
        "⟦{p}当时买的{o}⟧,现在想改",
    ),
    "cover": (
        "买的时候加购了{v}",
        "我当时另外买了{v}",
        "{v}能不能覆盖这种情况?",
        "我是买了{v}的,应该能免费修吧",
        "{v}的电子保单一直没收到",
        "下单的时候顺手加了{v}",
        "{v}到底保不保人为损坏?",
        "⟦{p}买的是{o}的⟧,应该还在保障期内",
    ),
    "goods": (
        "当时买的是{v}",
        "下单的时候选的{v}",
        "收到的货是{v},不是我要的",
        "{v}到现在还没发货",
        "同事推荐的{v}",
        "购物车里就一{m}{v}",
        "上周在你们店买了{n}{v}",
        "我要退的是{v}",
        "{v}还有货吗?",
        "请问{v}什么时候补货?",
        "退回去的那{m}{v}到现在还没退款",
        "收到{v}的时候外包装就是破的",
        "{v}有质量问题,想换一个",
        "我买的{v}跟详情页上写的不一样",
        "顺便问一下,{v}能单独开发票吗?",
        "昨天收到了{n}{v}",
        "给家里人买的{v}",
        "结果你们发来的是{v}",
        "{v}我已经寄回去了",
        "上次换的{v}也有同样的问题",
        "我拍的是{v}",
        "{v}刚买就降价了,能退差价吗?",
        "这一单的{v}少发了",
        "之前在你们这儿买过{n}{v}",
        "这单里还有{n}{v},麻烦一起退了",
        "想退掉{n}{v}",
        "说实话{v}的质量有点让人失望",
        "⟦{p}我要{o}的⟧,上次发错了",
        "换货的话⟦{p}还是要{o}的⟧",
        "我买的那{m}⟦{p}是{o}的⟧",
    ),
}
_ZH_STATUS_FLIPS = (
    ("退款还没收到", "退款收到了", "未收到退款", "已收到退款"),
    ("快递一直没到", "快递今天到了", "未收到快递", "已收到快递"),
    ("发票还没开出来", "发票已经收到了", "未收到发票", "已收到发票"),
    ("账号还是登不上", "现在能登录了", "无法登录", "已能登录"),
    ("换货的还没寄出", "换货的已经到了", "未收到换货", "已收到换货"),
    ("银行流水还是没同步", "流水已经同步过来了", "流水未同步", "流水已同步"),
    ("优惠券一直没到账", "优惠券已经到账了", "优惠券未到账", "优惠券已到账"),
    ("验证码短信收不到", "验证码现在能收到了", "收不到验证码", "已能收到验证码"),
)
_ZH_STATUSES = (
    ("两步验证我从来没开过", "未开通两步验证"),
    ("自动续费我已经关掉了", "已关闭自动续费"),
    ("密码已经重置过两次了", "已重置密码"),
    ("旧的那张卡已经注销了", "旧卡已注销"),
    ("App 已经更新到最新版了", "已更新到最新版"),
    ("浏览器缓存也清过了", "已清除缓存"),
    ("银行那边说钱已经扣了", "银行已扣款"),
    ("包裹被退回去了", "包裹已退回"),
    ("账号现在被锁住了", "账号已锁定"),
    ("东西还没拆封", "未拆封"),
    ("子账号已经全部停用了", "子账号已停用"),
    ("发票已经作废了", "发票已作废"),
)
_ZH_STATUS_LEADS = ("", "", "现在的情况是", "目前", "说明一下,", "我这边")
_ZH_FLIP_LEADS = ("对了,", "更新一下:", "刚看了一下,", "跟你说一声,", "好消息,", "")
# (what the customer asks in that round, the agent's promise): the engine's reviewer refuses a
# draft stating a time limit or a number the conversation does not hold, so a promise with one
# answers a customer who named it (as in a real exchange); "" asks nothing in particular.
_ZH_AGENT_PROMISES = (
    ("能不能{n}个工作日内给我个答复?", "我们会在⟦{n} 个工作日内给您回复⟧"),
    ("那什么时候能给我回个电话?", "⟦{when}前给您回电话⟧"),
    ("退款要多久?{n} 个工作日能到吗?", "这笔退款⟦会在 {n} 个工作日内原路退回⟧"),
    ("运费谁出?", "⟦运费由我们这边承担⟧,您不用另外付"),
    ("{h} 小时内能有人联系我吗?", "我已经提交了申请,⟦{h} 小时内会有专人联系您⟧"),
    ("发票什么时候能重新开好?", "⟦{when}前把重新开好的发票发到您邮箱⟧"),
    ("换货什么时候发?", "⟦换货今天就给您安排发出⟧"),
    ("能不能给点补偿,比如减免 {pct}%?", "⟦下个账单给您减免 {pct}% 的费用⟧"),
    ("能补偿 {n} 个月会员吗?", "⟦补偿您 {n} 个月的会员时长⟧,稍后到账"),
    ("账号什么时候能解锁?", "⟦{when}前帮您把账号解锁⟧"),
    ("", "⟦这个问题我会一直跟进到解决为止⟧"),
    ("什么时候能给个准话?", "⟦明天上午十点前给您一个明确答复⟧"),
    ("退货运费能报销吗?", "⟦退货的运费我们给您报销⟧"),
    ("重复扣的钱{n}个工作日内能退吗?", "⟦重复扣的那笔 {n} 个工作日内退给您⟧"),
    ("合同什么时候能寄出来?", "⟦{when}前帮您把合同盖章寄出⟧"),
    ("", "⟦稍后会有技术同事给您打电话⟧"),
)
_ZH_WHEN = ("周五", "周三", "明天中午", "今天下班", "明天下午三点", "下周一", "本周四", "月底")
_ZH_AGENT_LEADS = ("好的,", "没问题,", "明白,", "抱歉给您添麻烦了,", "", "收到,", "了解,", "已为您登记,")
_ZH_CUSTOMER_PROMISES = (
    "⟦上次电话里说给我免运费⟧",
    "⟦之前客服答应过补偿我一个月会员⟧",
    "⟦你们销售当时承诺可以开专票⟧",
    "⟦{ago}那个客服说 {n} 天内退款⟧",
    "⟦买的时候说好了 {n} 天无理由退货⟧",
    "⟦你们经理说这个月的服务费可以减半⟧",
    "⟦上次在线客服说会帮我加急处理⟧",
    "⟦快递员说第二天会重新派送⟧",
    "⟦群里的客服说升级以后价格不变⟧",
    "⟦之前说好的续费打八折⟧",
    "⟦你们答应过发票这周内寄出⟧",
    "⟦签合同的时候说过免费培训两次⟧",
    "⟦售后说坏了可以直接换新的⟧",
    "⟦上回那个客服说给我延长 {n} 天试用⟧",
)
_ZH_AGO = ("上周", "前几天", "上次", "之前", "月初")
_ZH_CUSTOMER_PROMISE_LEADS = ("我记得", "明明", "", "而且", "", "我这边记录是")
_ZH_REQUESTS = (
    "⟦发票抬头改成公司名⟧",
    "麻烦⟦把发票抬头改成{company}⟧",
    "⟦以后有事发短信,别打电话⟧",
    "⟦退款退到支付宝就行⟧",
    "⟦下次直接寄顺丰⟧",
    "能不能⟦把我的账号注销掉⟧",
    "请⟦把多扣的钱退回原卡⟧",
    "希望⟦到期前提醒我续费⟧",
    "⟦账单每个月发我邮箱一份⟧",
    "⟦把自动续费关了⟧",
    "帮我⟦把套餐降一档⟧",
    "⟦发票要纸质的⟧",
    "⟦合同盖章后寄一份原件给我们⟧",
    "⟦子账号再加 {n} 个⟧",
    "⟦周末别给我打电话⟧",
    "⟦报价单用英文再出一份⟧",
    "⟦把旧的那张卡解绑⟧",
    "⟦收货人改成我同事⟧",
    "⟦先别发货,等我确认⟧",
    "想⟦把两个账号合并成一个⟧",
    "⟦税号那一栏帮我补上⟧",
)
_ZH_COMPANIES = (
    "上海恒达科技有限公司",
    "杭州新源贸易有限公司",
    "北京金桥文化传媒有限公司",
    "深圳东升物流有限公司",
)
_ZH_ID_TEMPLATES = (
    "{label}是{v}",
    "我查了一下{label} {v},状态还是处理中",
    "就是那个{v}的单子",
    "{label}:{v}",
    "你们看下{v}这单",
    "上次给我的{label}是{v},不知道还能不能查到",
    "截图里能看到{label}{v}",
    "{v}这个{label}一直没动静",
    "系统里{label}显示的是{v}",
    "{label}{v}那一笔",
)
_ZH_AMOUNT_TEMPLATES = (
    "这个月扣了我{v}",
    "上次多收了{v},到现在也没退",
    "发票金额是{v}",
    "我们预算也就{v}左右",
    "退款应该是{v}吧",
    "报价单上写的是{v}",
    "运费收了{v},有点离谱",
    "一共付了{v}",
    "续费要{v}一年,有点贵",
    "我充了{v}进去",
    "账单上多出来一笔{v}",
    "差价{v}还没补给我",
    "信用卡那边显示扣款{v}",
)
# By tense: a date written relative to today goes only with a template of its tense.
_ZH_DATE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "past": (
        "{v}那天扣的款",
        "我是{v}下的单",
        "{v}收到的短信通知",
        "从{v}开始就登不上去了",
        "{v}续的费",
        "发票是{v}开的",
        "快递{v}才发出",
        "{v}那次也是这样",
        "{v}打过一次电话,没人接",
    ),
    "future": (
        "{v}之前一定要处理好",
        "合同{v}到期",
        "我{v}要出差,最好在这之前搞定",
        "系统显示{v}自动续费",
        "{v}我们要对账",
        "最晚{v}要用",
    ),
}
_ZH_CODE_TEMPLATES = (
    "页面提示{v}",
    "一点提交就弹出{v}",
    "报错{v},然后就卡住了",
    "日志里全是{v}",
    "同事电脑上也是{v}",
    "截图上显示{v}",
    "App 闪退之前弹了个{v}",
    "付款的时候报{v}",
    "同步的时候又出现{v}了",
    "导出报表提示{v}",
)
_ZH_PHONE_TEMPLATES = (
    "电话打{v}就行",
    "我手机号是{v}",
    "有事打我电话{v}",
    "我换号了,新号码{v}",
    "联系电话:{v}",
    "打{v}找我,白天都在",
    "{v}是我们办公室座机",
    "收件人电话写{v}",
    "之前留的号停了,现在用{v}",
)
_ZH_EMAIL_TEMPLATES = (
    "发到我邮箱{v}",
    "邮箱是 {v}",
    "抄送一下{v}",
    "我的邮箱{v}一直收不到验证邮件",
    "财务的邮箱是{v}",
    "账号是用{v}这个邮箱注册的",
    "发票发{v}就行",
)
_ZH_ADDRESS_TEMPLATES = (
    "收货地址是{v}",
    "寄到{v}",
    "我们公司搬到{v}了",
    "发票寄到{v},写我名字就行",
    "地址:{v}",
    "之前那个地址不用了,现在是{v}",
    "快递放{v}前台",
)
_ZH_CITIES = (
    ("上海市", "浦东新区"),
    ("上海市", "徐汇区"),
    ("北京市", "朝阳区"),
    ("北京市", "海淀区"),
    ("广东省广州市", "天河区"),
    ("广东省深圳市", "南山区"),
    ("浙江省杭州市", "西湖区"),
    ("四川省成都市", "武侯区"),
    ("江苏省南京市", "鼓楼区"),
    ("湖北省武汉市", "洪山区"),
    ("江苏省苏州市", "工业园区"),
    ("陕西省西安市", "雁塔区"),
    ("重庆市", "渝北区"),
    ("天津市", "河西区"),
    ("福建省厦门市", "思明区"),
)
_ZH_ROADS = [
    "张江路",
    "建国路",
    "文三路",
    "科苑南路",
    "天河北路",
    "中山东一路",
    "人民路",
    "解放大道",
    "长江路",
    "淮海中路",
    "学院路",
    "东湖路",
    "滨江大道",
    "建设路",
    "青年路",
    "南京西路",
    "延安路",
    "和平路",
    "新华路",
    "光华路",
    "桂平路",
    "漕溪北路",
    "软件大道",
    "金融街",
]
_ZH_COMPOUNDS = ("阳光花园", "万科城", "绿地中心", "华润大厦", "创新园", "世纪广场", "金茂府", "星河湾")
_ZH_FILLER = (
    "那就麻烦你们了",
    "请稍等,我找一下记录",
    "谢谢,辛苦了",
    "不好意思打扰了",
    "我保证这是最后一个问题",
    "希望这次能顺利解决吧",
    "拜托了",
    "麻烦了",
    "我再确认一下",
    "请问你还在吗?",
    "好的好的",
    "嗯嗯明白",
    "我本来以为能自己搞定",
    "你们的系统我们用了好几年了",
    "说实话有点着急",
    "我就是想搞清楚怎么回事",
    "写得有点长,见谅",
    "您看着处理吧",
    "好的我等消息",
    "没事,不着急",
    "我刚才又试了一次,还是一样",
    "我们团队有好几个人在用",
    "之前也遇到过类似的情况,后来自己好了",
    "我答应了领导今天给个说法",
    "感谢耐心",
    "这个流程有点复杂",
    "我截了图,但是发不上来",
    "页面一直在转圈",
    "我不太懂技术,说得不对请见谅",
    "我先去开个会,一会儿回来",
    "你们能理解我的心情吧?",
    "请多包涵",
    "希望你们重视一下",
    "能帮就帮一下吧",
    "我也不想一直来问",
    "别的都还好,就是这个问题",
    "我试了{k}次了",
    "等了快{k}分钟",
    "刷新了好几遍",
    "网络应该没问题,别的网站都能打开",
    "换了个浏览器也一样",
    "手机上和电脑上都试过",
    "我们这边是按流程走的",
    "你们看一下是不是系统的问题",
    "说好的事情总是拖",
    "有点无语",
    "唉",
    "行吧",
    "我先说一下背景",
    "情况是这样的",
    "可能我表达得不太清楚",
    "这个我得跟同事商量一下",
    "请尽量快一点",
    "你们之前的回复我都看了",
    "我把能想到的都试了",
    "也不是第一次了",
    "我们这边月底要结账",
    "老实说体验不太好",
    "谢谢你这么耐心",
    "稍等一下,我看看",
    "我记性不太好,可能有的说错了",
    "你们系统是不是在升级?",
)
_ZH_ACKS = ("好的", "嗯", "收到", "行", "好,谢谢", "知道了", "ok", "明白了")
_ZH_AGENT_FILLER = (
    "感谢您的耐心",
    "明白了",
    "好的,收到",
    "抱歉给您带来不便",
    "请稍等,我看一下",
    "理解您的心情",
    "谢谢您提供的信息",
    "这边看到了",
)
_ZH_PASSING_LEADS = (
    "对了,",
    "顺便说一下,",
    "还有,",
    "另外,",
    "哦对,",
    "",
    "",
    "",
    "",
    "我想起来了,",
    "补充一下,",
)
_ZH_PASSING_TAILS = ("", "", "", ",不知道有没有关系", ",你们记一下", ",先跟你说一声", ",这个应该有用")
_ZH_SUBJECTS = (
    "账单和发票问题",
    "退款一直没到",
    "订单问题",
    "账号登录不了",
    "关于续费的事",
    "换货进度",
    "系统报错",
)
_ZH_GREETINGS = ("你好", "您好", "在吗", "hi,你好", "客服你好", "你好,打扰一下")
_ZH_CLOSINGS = (
    "那现在进度怎么样了?",
    "所以接下来怎么处理?",
    "麻烦再帮我整体看一下",
    "好,那我等你们消息",
    "还有什么需要我提供的吗?",
)


class ZhWriter(Writer):
    lang = "zh"

    def _amount(self) -> tuple[str, int]:
        """(as written, value in cents)."""
        rng = self.rng
        kind = rng.choice(
            ("yuan", "kuai", "sign", "comma", "rmb", "wan", "k", "numeral", "short", "capital", "decimal")
        )
        n = rng.choice((rng.randint(8, 99), rng.randint(100, 999), rng.randint(1000, 9999)))
        if kind == "yuan":
            return f"{n}{rng.choice(('元', ' 元'))}", n * 100
        if kind == "kuai":
            return f"{n}{rng.choice(('块', '块钱', ' 块'))}", n * 100
        if kind == "sign":
            cents = rng.choice((0, 0, rng.randint(1, 99)))
            sign = rng.choice("¥¥￥")
            written = f"{sign}{n}" if not cents else f"{sign}{n}.{cents:02d}"
            return written, n * 100 + cents
        if kind == "comma":
            n = rng.randint(1000, 99999)
            return f"{n:,}{rng.choice(('元', '.00元', ' 元'))}", n * 100
        if kind == "rmb":
            return rng.choice((f"人民币{n}元", f"RMB {n}", f"RMB{n}", f"{n} RMB")), n * 100
        if kind == "wan":
            whole, tenth = rng.randint(1, 9), rng.randint(0, 9)
            written = f"{whole}.{tenth}万" if tenth else f"{whole}万"
            return written + rng.choice(("", "", "元", "块")), (whole * 10 + tenth) * 1000 * 100
        if kind == "k":
            whole, tenth = rng.randint(1, 9), rng.randint(0, 9)
            written = f"{whole}.{tenth}{rng.choice('kK')}" if tenth else f"{whole}{rng.choice('kK')}"
            return written, (whole * 10 + tenth) * 100 * 100
        if kind == "numeral":
            n = rng.choice((rng.randint(1, 9) * 100, rng.randint(11, 99) * 100, rng.randint(2, 99) * 10))
            return zh_number(n, liang=rng.random() < 0.7) + rng.choice(("元", "块", "块钱")), n * 100
        if kind == "short":  # 三千五 = 3500, 一万二 = 12000
            a, b = rng.randint(1, 9), rng.randint(1, 9)
            head = "两" if a == 2 else _ZH_DIGITS[a]
            if rng.random() < 0.6:
                return f"{head}千{_ZH_DIGITS[b]}{rng.choice(('', '块'))}", (a * 1000 + b * 100) * 100
            return f"{head}万{_ZH_DIGITS[b]}", (a * 10000 + b * 1000) * 100
        if kind == "capital":
            n = rng.choice((rng.randint(1, 99) * 100, rng.randint(101, 9999)))
            return zh_number(n, capital=True) + "元" + rng.choice(("", "整")), n * 100
        cents = rng.randint(1, 99)
        if rng.random() < 0.5:
            return f"{n}.{cents:02d}{rng.choice(('元', ''))}", n * 100 + cents
        jiao = rng.randint(1, 9)
        return f"{min(n, 300)}块{jiao}", min(n, 300) * 100 + jiao * 10

    def make_amount(self) -> Piece:
        written, cents = self._amount()
        text = self.pick(_ZH_AMOUNT_TEMPLATES).format(v=written)
        fact = self.fact("amount", written, (written, _money(cents, "CNY")))
        return Piece(text, [fact], meta={"cents": cents})

    def make_id(self) -> Piece:
        label, _, prefixes = self.pick(_DOCS)
        value, _ = _id_value(self.rng, prefixes, long_digits=True)
        written = f"#{value}" if self.rng.random() < 0.08 else value
        text = self.pick(_ZH_ID_TEMPLATES).format(label=label, v=written)
        return Piece(
            text,
            [self.fact("id", written, (written, *_id_strings(value)))],
            meta={"value": value, "label": label},
        )

    def _date(self, absolute: bool) -> tuple[str, tuple[str, ...], DateRule | None]:
        rng = self.rng
        kind = (
            rng.choice(("iso", "yearless", "yearless", "relative", "relative"))
            if not absolute
            else "yearless"
        )
        if absolute and rng.random() < 0.3:
            kind = "iso"
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        if kind == "iso":
            year = rng.choice((2025, 2026, 2027))
            iso = date(year, month, day).isoformat()
            written = rng.choice(
                (iso, f"{year}年{month}月{day}日", f"{year}/{month}/{day}", f"{year}.{month:02d}.{day:02d}")
            )
            return written, (written, iso), None
        if kind == "yearless":
            if rng.random() < 0.35:
                day = rng.randint(13, 28)  # month/day, unambiguous
                written = f"{month}/{day}"
            else:
                written = f"{month}月{day}{rng.choice(('日', '号', '号'))}"
            return written, (written,), DateRule("yearless", month=month, day=day)
        weekdays = "一二三四五六日"
        choice = rng.randrange(5)
        if choice <= 2:
            weeks = (1, 0, -1)[choice]
            wd = rng.randrange(7)
            head = ("下", "这", "上")[choice] + rng.choice(("周", "星期", "礼拜"))
            if choice == 1:
                head = rng.choice(("这周", "本周", "这星期"))
            return (
                head + weekdays[wd],
                (head + weekdays[wd],),
                DateRule("weekday", weekday=wd, weeks=(weeks,)),
            )
        months = (-1, 1)[choice - 3]
        day = rng.randint(1, 28)
        written = ("上个月" if months < 0 else "下个月") + f"{day}{rng.choice(('号', '日'))}"
        return written, (written,), DateRule("month_day", day=day, months=months)

    def make_date(self, absolute: bool = False) -> Piece:
        written, strings, rule = self._date(absolute)
        text = self.pick(_ZH_DATE_TEMPLATES[_tense(rule, self.rng)]).format(v=written)
        return Piece(
            text, [self.fact("date", written, strings, rule=rule)], meta={"day": _month_day(strings, rule)}
        )

    def make_error_code(self) -> Piece:
        written, strings = _error_code(self.rng, True)
        text = self.pick(_ZH_CODE_TEMPLATES).format(v=written)
        return Piece(text, [self.fact("error_code", written, strings)])

    def make_phone(self) -> Piece:
        written, digits = _zh_phone(self.rng)
        text = self.pick(_ZH_PHONE_TEMPLATES).format(v=written)
        return Piece(text, [self.fact("phone", written, (written, digits))])

    def make_email(self) -> Piece:
        written = _email(self.rng, True)
        text = self.pick(_ZH_EMAIL_TEMPLATES).format(v=written)
        return Piece(text, [self.fact("email", written, _email_strings(written))])

    def _address(self, unit_required: bool) -> tuple[str, str, dict[str, Any]]:
        rng = self.rng
        city, district = rng.choice(_ZH_CITIES)
        road = rng.choice(_ZH_ROADS)
        number = rng.randint(1, 999)
        sp = rng.choice(("", " ")) if rng.random() < 0.6 else ""
        kind = rng.choice(("room", "building_room", "tower_room", "floor", "compound", "none"))
        if unit_required and kind in ("floor", "none"):
            kind = "room"
        room = f"{rng.randint(1, 32)}{rng.randint(0, 1)}{rng.randint(1, 9)}"
        unit = {
            "room": f"{room}{sp}室",
            "building_room": f"{rng.randint(1, 20)}{sp}{rng.choice('栋幢')}{room}{rng.choice(('室', ''))}",
            "tower_room": f"{rng.choice('ABCD')}{sp}座{room}{sp}室",
            "floor": f"{rng.randint(2, 30)}{sp}楼",
            "compound": f"{rng.choice(_ZH_COMPOUNDS)}{rng.randint(1, 20)}号楼{rng.randint(1, 4)}单元{room}",
            "none": "",
        }[kind]
        street = f"{road}{sp}{number}{sp}号" + (sp + unit if unit else "")
        full = f"{city}{district}{street}"
        return (
            full,
            street,
            {
                "room": room,
                "unit": unit,
                "kind": kind,
                "road": road,
                "number": number,
                "sp": sp,
                "city": city,
                "district": district,
            },
        )

    def make_address(self, unit_required: bool = False) -> Piece:
        full, street, meta = self._address(unit_required)
        text = self.pick(_ZH_ADDRESS_TEMPLATES).format(v=full)
        return Piece(text, [self.fact("address", full, (full, street))], meta=meta)

    def make_person(self) -> Piece:
        role = self.pick(_ZH_ROLES)
        surname = self.pick(_ZH_SURNAMES)
        if role in _ZH_DEPARTMENTS:  # 财务小刘, 行政那边的张姐, 负责采购的陈经理
            name = self.pick(_ZH_NAME_FORMS).format(s=surname)
            form, core = self.pick(_ZH_PERSON_FORMS)
        else:  # a position: 我们老板王总, 会计小李, 小周(助理)
            name = (
                surname + self.pick(("总", "老板", "董"))
                if role == "老板"
                else self.pick(_ZH_NAME_FORMS[:4]).format(s=surname)
            )
            form, core = self.pick(_ZH_PERSON_FORMS[:2] + _ZH_PERSON_FORMS[5:])
        written = form.format(role=role, name=name)
        core = core.format(role=role, name=name)
        text = self.pick(_ZH_PERSON_TEMPLATES).format(p=written)
        return Piece(text, [self.fact("person", core, (core, f"{role} {name}", f"{name} {role}"))])

    def plan_phrase(self, product: str, parts: list[str], kind: str, last: bool) -> str:
        """``product`` with its option ``parts`` as a customer types them; ``last``: nothing follows
        in the clause, so a form ending in 的 or in a clause after a comma may be used."""
        p = product
        if len(parts) == 1:
            o = parts[0]
            de = self.pick(("的", " 的")) if _ascii_alnum(o[-1]) else "的"
            forms = [_glue(p, o), f"{p} {o}", f"{p}({o})", f"{o}{de}{p}", _glue(o, p)]
            if o.endswith("色"):  # 白色款的蓝牙耳机
                forms += [f"{o}款的{p}", f"{p}{o}款"]
            if last:
                forms += [f"{p},{o}的", f"{p},{o}"]
                if kind == "goods":
                    forms += [f"{p},要{o}的", f"{p},选的{o}"]
            return self.pick(forms)
        a, b = parts  # a colour and a size; a billing term and a seat count
        ab = self.pick((_glue(a, b), f"{a} {b}"))
        if kind == "goods":  # 米白色连帽卫衣 XL码, 连帽卫衣(米白色/XL)
            forms = [f"{p} {ab}", f"{p}({a},{b})", f"{p}({a}/{b})", f"{_glue(a, p)} {b}", f"{ab}的{p}"]
            if last:
                forms += [f"{p},{ab}的", f"{_glue(a, p)},{b}的", f"{p},要{ab}的"]
        else:  # 专业版 年付 50人, 50人的专业版,年付
            forms = [f"{p} {a} {b}", f"{p}({a},{b})", f"{ab}的{p}"]
            if last:
                forms += [f"{b}的{p},{a}", f"{_glue(b, p)},{a}", f"{_glue(p, a)},{b}"]
        return self.pick(forms)

    def make_plan(self) -> Piece:
        rng = self.rng
        if rng.random() < 0.4:
            product, kind, options = self.pick(_ZH_PLANS)
            measure = ""
        else:
            product, measure, options = self.pick(_ZH_GOODS)
            kind = "goods"
        option = self.pick(options)
        spellings = [part.split("|") for part in ((option,) if isinstance(option, str) else option)]
        parts = [self.pick(s) for s in spellings]
        if rng.random() < 0.25:  # a space where Latin meets Chinese, as typed: XL 码, 50 人
            parts = [re.sub(r"(?<=[A-Za-z0-9])(?=[\u3400-\u9fff])", " ", p, count=1) for p in parts]
        template = self.pick(_ZH_PLAN_TEMPLATES[kind])
        if CORE_OPEN in template:  # 连帽卫衣我要XL码的
            o = parts[0] if len(parts) == 1 else _glue(*parts)
            text, written = _core(template.format(p=product, o=o, m=measure))
        else:
            written = self.plan_phrase(product, parts, kind, template.endswith("{v}"))
            if "{n}" in template and rng.random() < 0.35 and not any("装" in p for p in parts):
                written = self.pick(("一", "两", "两", "三")) + measure + written  # 两件
            text = template.format(v=written, n="", m=measure)
        strings = _orders(product, spellings)
        for combo in itertools.product(*spellings):  # XL码的连帽卫衣
            strings += [" ".join(order) + "的" + product for order in itertools.permutations(combo)]
        return Piece(text, [self.fact("plan", written, (written, *strings))])

    def make_status(self, flip: bool = False) -> Piece:
        if flip:
            before, after, canon_before, canon_after = self.pick(_ZH_STATUS_FLIPS)
            old = self.fact("status", before, (before, canon_before))
            new = self.fact("status", after, (after, canon_after))
            old.replaced_by = new
            return Piece(
                self.pick(_ZH_STATUS_LEADS) + before,
                [old, new],
                meta={"second": self.pick(_ZH_FLIP_LEADS) + after},
            )
        written, canon = self.pick(_ZH_STATUSES)
        return Piece(self.pick(_ZH_STATUS_LEADS) + written, [self.fact("status", written, (written, canon))])

    def make_agent_promise(self) -> Piece:
        values = {
            "n": self.rng.choice((1, 2, 3, 5, 7, 10)),
            "h": self.rng.choice((2, 4, 24, 48, 72)),
            "when": self.pick(_ZH_WHEN),
            "pct": self.rng.choice((10, 15, 20, 30, 50)),
        }
        ask, template = (t.format(**values) for t in self.pick(_ZH_AGENT_PROMISES))
        text, fact = self.sentence_fact("agent_promise", template, speaker="agent")
        return Piece(self.agent_lead() + text, [fact], speaker="agent", meta={"ask": _ask(self.rng, ask)})

    def make_customer_promise(self) -> Piece:
        template = self.pick(_ZH_CUSTOMER_PROMISES).format(
            n=self.rng.choice((3, 5, 7, 15, 30)), ago=self.pick(_ZH_AGO)
        )
        text, fact = self.sentence_fact("customer_promise", template)
        return Piece(self.pick(_ZH_CUSTOMER_PROMISE_LEADS) + text, [fact])

    def make_request(self) -> Piece:
        template = self.pick(_ZH_REQUESTS).format(n=self.rng.randint(2, 9), company=self.pick(_ZH_COMPANIES))
        text, fact = self.sentence_fact("request", template)
        return Piece(text, [fact])

    # corrections
    def correct_amount(self, original: Piece) -> Piece:
        old_written, old_cents = original.facts[0].written, original.meta["cents"]
        yuan = int(_typo(self.rng, str(old_cents // 100)))
        cents = yuan * 100
        written = self.pick((f"{yuan}元", f"{yuan} 元", f"{yuan}块", f"¥{yuan}", f"{yuan}块钱"))
        template = self.pick(
            (
                "不对,金额应该是{new},不是{old}",
                "我刚才说错了,是{new}",
                "更正一下,刚才那个金额是{new}",
                "抱歉打错了,{new}才对",
                "不是{old},是{new},我看错了",
            )
        )
        text = template.format(new=written, old=old_written)
        fact = self.fact("amount", written, (written, _money(cents, "CNY")))
        return Piece(text, [fact], after=original)

    def correct_date(self, original: Piece) -> Piece:
        new = self._other_date(original)
        template = self.pick(
            ("日期我记错了,应该是{new}", "不是{old},是{new}", "说错了,{new}才对", "更正:日期是{new}")
        )
        text = template.format(new=new.written, old=original.facts[0].written)
        return Piece(text, [new], after=original)

    def correct_id(self, original: Piece) -> Piece:
        value = original.meta["value"]
        new = _typo(self.rng, value)
        label = original.meta["label"]
        template = self.pick(
            (
                "{label}我抄错了,正确的是{new}",
                "刚才{label}打错了一位,是{new}",
                "不好意思,{label}应该是{new}",
                "是{new},不是{old}",
            )
        )
        text = template.format(label=label, new=new, old=value)
        return Piece(text, [self.fact("id", new, _id_strings(new))], after=original)

    def correct_address(self, original: Piece) -> Piece:
        meta = dict(original.meta)
        old_room = meta["room"]
        room = old_room
        while room == old_room:
            room = _typo(self.rng, old_room)
        sp = meta["sp"]
        unit = meta["unit"].replace(old_room, room)
        street = f"{meta['road']}{sp}{meta['number']}{sp}号{sp}{unit}"
        full = f"{meta['city']}{meta['district']}{street}"
        template = self.pick(
            (
                "地址写错了,⟦是{new}室⟧不是{old}室",
                "门牌号说错了,⟦应该是{new}⟧",
                "更正一下地址,⟦房间号是{new}⟧",
                "不好意思,⟦是{new}⟧,不是{old}",
            )
        )
        text, core = _core(template.format(new=room, old=old_room))
        return Piece(text, [self.fact("address", core, (full, street, core))], after=original)

    # turns
    def filler(self) -> str:
        return self.pick(_ZH_FILLER).format(k=self.rng.randint(3, 40))

    def agent_filler(self) -> str:
        return self.pick(_ZH_AGENT_FILLER)

    def agent_lead(self) -> str:
        return self.pick(_ZH_AGENT_LEADS)

    def in_passing(self, clause: str) -> str:
        return self.pick(_ZH_PASSING_LEADS) + clause + self.pick(_ZH_PASSING_TAILS)

    def compose(self, clauses: list[str], *, opening: bool = False) -> str:
        rng = self.rng
        out = self.pick(_ZH_GREETINGS) + rng.choice((",", "。", "!", " ")) if opening else ""
        for i, clause in enumerate(clauses):
            out += clause
            if clause.endswith(("?", "?", "!", "!")):
                continue
            if i == len(clauses) - 1:
                out += rng.choice(("。", "。", "!", "", "~"))
            else:
                out += rng.choice(("。", ",", ",", "。", "!", " "))
        return out

    def subject(self) -> str:
        return self.pick(_ZH_SUBJECTS)

    def closing(self) -> str:
        return self.pick(_ZH_CLOSINGS)

    def ack(self) -> str:
        return self.pick(_ZH_ACKS)


# ---- English ----

_EN_ROLES = (
    "bookkeeper",
    "accountant",
    "office manager",
    "IT guy",
    "CFO",
    "boss",
    "business partner",
    "assistant",
    "finance lead",
    "operations manager",
    "warehouse lead",
    "admin",
    "controller",
    "practice manager",
    "husband",
    "wife",
)
_EN_DEPTS = (
    "accounting",
    "finance",
    "IT",
    "purchasing",
    "HR",
    "ops",
    "billing",
    "the front desk",
    "procurement",
)
_EN_PERSON_TEMPLATES = (
    "{p} has been handling this",
    "{p} says the invoice never came",
    "feel free to loop in {p}",
    "{p} is the one who set up the account",
    "{p} tried it on her laptop too",
    "{p} asked me to follow up on this",
    "{p} made the payment",
    "{p} knows more about the details than I do",
    "I talked to {p} this morning",
    "{p} needs a written explanation for the auditors",
    "{p} is out this week so I'm covering",
)
# Goods: (product, its plural or "", how one is counted, options). Counted "a": a/an by the
# phrase, or "two" and the plural; "": a plural or a title, no article; else "a pair of", "a bag
# of"... An option is one part or a tuple of two; a part is "kind:spelling|spelling" (any spelling
# may be written, all count). Kinds: size, colour, in (a capacity, material or flavour: "in 256GB"),
# spec (a measure: "6 ft"), ver (a version: "noise-cancelling"), model ("for iPhone 15"), with
# ("with brown switches"), pack ("3-pack"), ed (a book's edition).
_EnOption = str | tuple[str, ...]
_EN_GOODS: tuple[tuple[str, str, str, tuple[_EnOption, ...]], ...] = (
    # clothing
    (
        "hoodie",
        "hoodies",
        "a",
        (("colour:navy", "size:XL"), "size:L", ("colour:heather grey", "size:M"), "colour:forest green"),
    ),
    ("grey hoodie", "grey hoodies", "a", ("size:XL", "size:L", "size:XXL", "size:M")),
    ("navy rain jacket", "navy rain jackets", "a", ("size:medium", "size:large", "size:XS")),
    (
        "jeans",
        "",
        "a pair of",
        ("size:32x30|32 x 30", "size:30x32|30 x 32", ("colour:light wash", "size:31x32")),
    ),
    ("puffer jacket", "puffer jackets", "a", (("colour:black", "size:M"), "size:S", "colour:olive")),
    ("dress shirt", "dress shirts", "a", ("size:16.5", "colour:white", "ver:slim-fit|slim fit")),
    ("merino wool socks", "", "", ("pack:3-pack|3 pack", "pack:6-pack|6 pack", "size:L")),
    ("wool beanie", "wool beanies", "a", ("colour:charcoal", "pack:2-pack|2 pack", "colour:mustard")),
    ("yoga leggings", "", "a pair of", ("size:S", ("colour:black", "size:M"), "ver:high-waisted")),
    ("winter gloves", "", "a pair of", ("size:M", "colour:black", "ver:touchscreen")),
    # shoes
    (
        "running shoes",
        "",
        "a pair of",
        ("size:10.5", "size:9", "ver:wide-fit|wide fit", ("colour:black and white", "size:11")),
    ),
    ("hiking boots", "", "a pair of", ("size:8.5", ("colour:brown", "size:10"), "ver:waterproof")),
    ("slippers", "", "a pair of", ("size:large", "colour:grey")),
    # electronics
    (
        "phone case",
        "phone cases",
        "a",
        ("model:iPhone 15", "model:iPhone 15 Pro Max", "model:Galaxy S24", "model:Pixel 8"),
    ),
    ("screen protector", "screen protectors", "a", ("model:iPhone 15 Pro", "model:iPad Air", "pack:2-pack")),
    ("iPhone 15", "", "a", ("in:256GB|256 GB", "in:128GB|128 GB", ("colour:blue", "in:256GB|256 GB"))),
    ("wireless earbuds", "", "a pair of", ("colour:white", "ver:noise-cancelling", "colour:midnight blue")),
    (
        "mechanical keyboard",
        "mechanical keyboards",
        "a",
        ("with:brown switches", "with:red switches", "ver:tenkeyless"),
    ),
    ("wireless mouse", "wireless mice", "a", ("colour:graphite", "ver:silent-click")),
    ("power bank", "power banks", "a", ("spec:20000mAh|20,000mAh", "spec:10000mAh|10,000mAh")),
    ("USB-C cable", "USB-C cables", "a", ("spec:6 ft|6-foot|6ft", "spec:2m|2-meter", "pack:2-pack|2 pack")),
    ("monitor", "monitors", "a", ("spec:27-inch|27 inch", "spec:32-inch|32 inch", "ver:4K")),
    ("external hard drive", "external hard drives", "a", ("in:2TB|2 TB", "in:4TB|4 TB", "in:1TB|1 TB")),
    ("smartwatch", "smartwatches", "a", (("colour:midnight", "spec:45mm"), "spec:41mm", "ver:cellular")),
    ("Kindle Paperwhite", "", "a", ("in:16GB|16 GB", "ver:Signature Edition", "colour:agave green")),
    ("Nintendo Switch", "", "a", ("ver:OLED", "colour:white")),
    # home
    ("duvet cover", "duvet covers", "a", ("size:queen", "size:king", ("colour:sage green", "size:full"))),
    ("bath towels", "", "", ("pack:4-piece set", "colour:white", "pack:6-piece set")),
    ("robot vacuum", "robot vacuums", "a", ("ver:self-emptying", "colour:white", "with:mop attachment")),
    ("humidifier", "humidifiers", "a", ("spec:4L|4 L|4-liter", "ver:top-fill")),
    ("storage bins", "", "", ("pack:3-pack|3 pack", "spec:55-quart|55 qt")),
    # kitchen
    ("carry-on suitcase", "carry-on suitcases", "a", ("colour:olive", "ver:hardshell")),
    ("coffee grinder", "coffee grinders", "a", ("ver:burr", "colour:matte black")),
    ("air fryer", "air fryers", "a", ("spec:5.8-quart|5.8 qt", "spec:8-quart|8 qt", "ver:dual-basket")),
    ("water bottle", "water bottles", "a", ("spec:32 oz|32oz", "spec:24 oz|24oz", "colour:sage")),
    (
        "nonstick pan",
        "nonstick pans",
        "a",
        ("spec:10-inch|10 inch", "spec:12-inch|12 inch", "with:lid|a lid"),
    ),
    ("rice cooker", "rice cookers", "a", ("spec:6-cup|6 cup", "spec:10-cup|10 cup", "ver:induction")),
    ("knife set", "knife sets", "a", ("spec:15-piece|15 piece", "spec:7-piece|7 piece")),
    # beauty
    ("sunscreen", "", "a bottle of", ("ver:SPF 50|SPF50", "ver:SPF 30|SPF30", "spec:3.4 oz")),
    ("moisturizer", "", "a jar of", ("ver:fragrance-free", "spec:1.7 oz")),
    (
        "electric toothbrush",
        "electric toothbrushes",
        "a",
        ("pack:2-pack|2 pack", "ver:travel", "colour:blue"),
    ),
    ("hair dryer", "hair dryers", "a", ("colour:rose gold", "ver:ionic")),
    ("lipstick", "lipsticks", "a", ("colour:nude pink", "ver:matte", "colour:ruby red")),
    # sports
    ("yoga mat", "yoga mats", "a", ("spec:6mm|6 mm", "colour:purple", "ver:extra-long")),
    (
        "dumbbells",
        "",
        "a pair of",
        ("spec:10 lb|10lb|10-pound", "spec:25 lb|25lb|25-pound", "ver:adjustable"),
    ),
    ("bike helmet", "bike helmets", "a", ("size:M", "size:L", "colour:matte grey")),
    ("resistance bands", "", "", ("pack:5-piece set", "ver:heavy")),
    # baby
    ("diapers", "", "a box of", ("size:3", "size:4", "size:newborn")),
    ("stroller", "strollers", "a", ("colour:graphite", "ver:jogging", "ver:lightweight")),
    ("baby bottles", "", "", ("spec:8 oz|8oz", "pack:4-pack|4 pack")),
    ("car seat", "car seats", "a", ("ver:convertible", "ver:infant")),
    # pets
    ("cat food", "", "a bag of", ("spec:16 lb|16lb", "in:salmon", "ver:indoor formula")),
    ("dog leash", "dog leashes", "a", ("spec:6 ft|6-foot|6ft", "colour:red")),
    ("cat litter", "", "a bag of", ("spec:20 lb|20lb", "ver:unscented")),
    # office
    ("office chair", "office chairs", "a", ("with:headrest|a headrest", "colour:black", "ver:mesh")),
    ("gel pens", "", "", ("pack:12-pack|12 pack", "colour:black", "spec:0.5mm|0.5 mm")),
    ("printer paper", "", "a case of", ("spec:500 sheets|500-sheet", "ver:letter-size|letter size")),
    # food and drink
    ("whole bean coffee", "", "a bag of", ("spec:2 lb|2lb|2-pound", "ver:dark roast", "spec:12 oz|12oz")),
    ("coffee pods", "", "a box of", ("spec:72-count|72 count", "in:hazelnut")),
    ("protein powder", "", "a tub of", ("in:chocolate", "in:vanilla", "spec:5 lb|5lb")),
    ("green tea", "", "a box of", ("spec:100 bags|100-count", "ver:decaf")),
    ("mixed nuts", "", "a bag of", ("spec:2.5 lb", "ver:unsalted")),
    # furniture
    (
        "standing desk",
        "standing desks",
        "a",
        ("spec:60-inch|60 inch", "in:walnut", ("in:white", "spec:48-inch")),
    ),
    ("bookshelf", "bookshelves", "a", ("ver:5-shelf", "in:oak", "in:walnut")),
    ("sofa", "sofas", "a", ("ver:3-seater", "colour:light grey", "ver:sleeper")),
    ("mattress", "mattresses", "a", ("size:queen", "size:king", "ver:firm")),
    # books and media
    ("Atomic Habits", "", "", ("ed:hardcover", "ed:paperback", "ed:signed")),
)
# Plans: (product, kind, options); kind "plan" or "cover" (warranties and protection bought with
# goods). A part is "kind:value": bill (annual, monthly, quarterly), seats (a number), term (years),
# tier (storage), ver (a variant: family, single-user).
_EN_PLANS: tuple[tuple[str, str, tuple[_EnOption, ...]], ...] = (
    ("Pro plan", "plan", ("bill:annual", "bill:monthly", "seats:5")),
    ("Business plan", "plan", ("bill:annual", "seats:25", "bill:monthly", ("bill:annual", "seats:25"))),
    ("Starter plan", "plan", ("bill:monthly", "bill:annual")),
    ("Team plan", "plan", ("seats:10", "bill:annual", "bill:quarterly", ("bill:monthly", "seats:10"))),
    ("Premium membership", "plan", ("bill:annual", "bill:monthly")),
    ("Enterprise tier", "plan", ("term:3", "bill:annual", ("term:2", "seats:200"))),
    ("Plus subscription", "plan", ("bill:monthly", "ver:family")),
    ("Basic plan", "plan", ("bill:monthly", "ver:single-user")),
    ("Growth plan", "plan", ("bill:annual", "seats:50", ("bill:quarterly", "seats:50"))),
    ("Family plan", "plan", ("bill:annual", "bill:monthly")),
    ("Student plan", "plan", ("bill:monthly", "bill:annual")),
    ("Gold membership", "plan", ("bill:annual", "bill:monthly")),
    ("Premier Support package", "plan", ("bill:annual", "bill:quarterly")),
    ("cloud storage plan", "plan", ("tier:2TB", "tier:200GB", ("tier:2TB", "bill:annual"))),
    ("Priority Support add-on", "plan", ("bill:annual", "bill:monthly")),
    ("Scale plan", "plan", ("seats:100", "bill:annual")),
    ("extended warranty", "cover", ("term:2", "term:3")),
    ("accidental damage protection", "cover", ("term:2", "term:1")),
    ("protection plan", "cover", ("term:3", "term:4")),
)
# A plan part's words: (before the product, right after it, on its own, counted forms).
_EN_BILLING: dict[str, tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]] = {
    "annual": (
        ("annual", "yearly"),
        ("billed annually", "billed yearly", "paid annually", "on annual billing"),
        ("annual", "yearly", "annual billing"),
        ("annual", "annually", "yearly"),
    ),
    "monthly": (
        ("monthly", "month-to-month"),
        ("billed monthly", "paid monthly", "on monthly billing"),
        ("monthly", "month-to-month"),
        ("monthly", "month-to-month"),
    ),
    "quarterly": (
        ("quarterly",),
        ("billed quarterly", "paid quarterly"),
        ("quarterly",),
        ("quarterly",),
    ),
}
# By kind; {a}: an article or a count before goods, or nothing. Forms ending in a comma clause
# only when {v} ends the template.
_EN_PLAN_TEMPLATES: dict[str, tuple[str, ...]] = {
    "plan": (
        "we're on the {v}",
        "we've renewed the {v} twice already",
        "does the {v} include phone support?",
        "we switched to the {v} last quarter",
        "my colleague recommended the {v}",
        "we signed up for the {v} after the trial",
        "the {v} renews automatically, right?",
        "we were charged twice for the {v}",
        "can we downgrade from the {v}?",
        "the invoice for the {v} has the wrong company name",
        "I'd like to cancel the {v}",
        "is the {v} eligible for the nonprofit discount?",
        "the sales rep put us on the {v}",
        "our account still shows the {v}",
        "we only went with the {v} for the admin controls",
    ),
    "cover": (
        "I added the {v} at checkout",
        "I paid for the {v} when I bought it",
        "shouldn't the {v} cover this?",
        "I never got the paperwork for the {v}",
        "the {v} was supposed to include a free replacement",
        "I bought the {v} specifically for this",
        "does the {v} cover accidental drops?",
    ),
    "goods": (
        "I ordered the {v}",
        "I picked the {v} at checkout",
        "what arrived {was} the {v}, not what I ordered",
        "the {v} still {has}n't shipped",
        "my colleague recommended the {v}",
        "I bought {a}{v} from you a while back",
        "I'm returning the {v}",
        "the {v} I returned {is} still pending",
        "{is} the {v} back in stock?",
        "any idea when the {v} will be restocked?",
        "there's a problem with the {v}",
        "I got {a}{v} as a gift",
        "the {v} arrived damaged",
        "the {v} I received {does}n't match the listing",
        "can I exchange the {v}?",
        "you sent me {a}{v} instead",
        "the {v} came in a torn box",
        "I already sent the {v} back",
        "my order also had {a}{v} in it",
        "the {v} dropped in price right after I bought {it}",
        "I've bought {a}{v} from you before",
        "I still have the {v} in my cart",
        "the {v} {was} damaged too",
        "honestly the {v} {was} a disappointment",
        "I need to return {a}{v}",
        "I received {a}{v} yesterday",
    ),
}


def _en_article(phrase: str) -> str:
    """The article before ``phrase``, by how its first word is said: an XL, an 8-pack, a USB-C."""
    word = phrase.split()[0]
    if word[0].isdigit():
        digits = re.match(r"[0-9]+", word)
        run = digits.group() if digits else ""
        return "an" if run.startswith("8") or (run[:2] in ("11", "18") and len(run) in (2, 5)) else "a"
    if word[:2].isupper() or (len(word) == 1 and word.isupper()):  # letters said one by one
        return "an" if word[0] in "AEFHILMNORSX" else "a"
    vowel = word[0].lower() in "aeiou" and not word.lower().startswith(("uni", "use", "one", "eu"))
    return "an" if vowel else "a"


def _en_part(spec: str) -> tuple[str, list[str]]:
    """A goods option part "kind:spelling|spelling" as (kind, spellings)."""
    kind, _, spellings = spec.partition(":")
    return kind, spellings.split("|")


def _en_plan_words(spec: str) -> tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...], tuple[str, ...]]:
    """A plan option part's words: (before the product, right after it, on its own, counted)."""
    kind, _, value = spec.partition(":")
    if kind == "bill":
        return _EN_BILLING[value]
    if kind == "seats":
        n = value
        return (
            (f"{n}-seat", f"{n}-user"),
            (f"with {n} seats", f"for {n} users"),
            (f"{n} seats", f"{n} users"),
            (f"{n} seats", f"{n} users", f"{n}-seat"),
        )
    if kind == "term":
        n = int(value)
        word, years = en_words(n), ("year" if n == 1 else "years")
        return (
            (f"{n}-year", f"{word}-year"),
            (f"for {n} {years}", f"with a {n}-year term"),
            (f"{n}-year", f"{n} {years}", f"{n}-year term"),
            (f"{n}-year", f"{word}-year", f"{n} {years}", f"{word} {years}"),
        )
    if kind == "tier":  # 2TB; counted as "2 TB", which also finds 2TB
        spaced = re.sub(r"([0-9])([A-Z])", r"\1 \2", value)
        return (value,), (f"with {value}",), (value, f"{value} tier"), (spaced,)
    return (value,), (), (value,), (value,)  # a variant: family, single-user


def _en_goods_strings(products: Sequence[str], parts: Sequence[tuple[str, list[str]]]) -> list[str]:
    """What counts for goods: the product (or its plural, when written) with its option parts in any
    order, "size 10.5" for a size, and the forms with in / for / with / of the kinds take."""
    counted = [
        [*(s for s in spellings if not s[0].isdigit()), *(f"size {s}" for s in spellings)]
        if kind == "size"
        else spellings
        for kind, spellings in parts
    ]
    kinds = [kind for kind, _ in parts]
    out: list[str] = []
    for p in products:
        out += _orders(p, counted)
        for combo in itertools.product(*(spellings for _, spellings in parts)):
            if len(combo) == 2:
                a, b = combo
                out += [
                    f"{a} {p} {b}",
                    f"{p} {a} {b}",
                    f"{p} in {a} {b}",
                    f"{a} {p} in {b}",
                    f"{b} {p} in {a}",
                ]
                continue
            o, kind = combo[0], kinds[0]
            if kind in ("size", "colour", "in"):
                out += [f"{p} in {o}", f"{p} {o}"]
            elif kind == "model":
                out += [f"{p} for {o}", f"{p} for the {o}"]
            elif kind == "with":
                out.append(f"{p} with {o}")
            elif kind == "pack" and p.endswith("s"):  # 3-pack of socks, not of sock
                out.append(f"{o} of {p}")
            elif kind == "ed":
                out += [f"{o} edition of {p}", f"{o} copy of {p}"]
    return out


_EN_STATUS_FLIPS = (
    (
        "the replacement never showed up",
        "the replacement arrived this morning",
        "replacement not received",
        "replacement received",
    ),
    (
        "the refund still hasn't hit my account",
        "the refund finally came through",
        "refund not received",
        "refund received",
    ),
    ("I still can't log in", "I'm able to log in again", "cannot log in", "able to log in"),
    (
        "the invoice hasn't arrived yet",
        "the invoice showed up in my inbox",
        "invoice not received",
        "invoice received",
    ),
    (
        "the bank feed still isn't syncing",
        "the bank feed is syncing again",
        "bank feed not syncing",
        "bank feed syncing",
    ),
    (
        "the coupon never got applied",
        "the coupon shows up on the order now",
        "coupon not applied",
        "coupon applied",
    ),
    (
        "the verification texts aren't coming through",
        "the verification texts work now",
        "verification texts not received",
        "verification texts received",
    ),
)
_EN_STATUSES = (
    ("I never turned on two-factor", "two-factor not enabled"),
    ("auto-renew is already off", "auto-renew off"),
    ("I already reset my password twice", "password reset"),
    ("the package was marked delivered but it's not here", "marked delivered but not received"),
    ("the old card was cancelled", "old card cancelled"),
    ("I already cleared the cache", "cache cleared"),
    ("the app is on the latest version", "app up to date"),
    ("the item is still unopened", "item unopened"),
    ("my account is locked right now", "account locked"),
    ("the charge is still pending on my card", "charge pending"),
    ("we already removed the sub-users", "sub-users removed"),
)
_EN_STATUS_LEADS = ("", "", "right now ", "for context, ", "just so you know, ", "at the moment ")
_EN_FLIP_LEADS = ("update: ", "oh, ", "good news, ", "quick update, ", "FYI ", "")
_EN_AGENT_PROMISES = (  # (the customer's question in that round, the promise): see the Chinese
    ("can someone call me back by {weekday}?", "⟦we'll call you back by {weekday}⟧"),
    (
        "can I get the corrected invoice within {n} business days?",
        "⟦I'll have the corrected invoice sent to you within {n} business days⟧",
    ),
    (
        "how long does the refund take, {n} business days?",
        "⟦your refund will be processed within {n} business days⟧",
    ),
    ("who pays for the return shipping?", "⟦we'll cover the return shipping⟧"),
    ("can I get a return label?", "⟦I'll email you a prepaid return label today⟧"),
    ("can billing contact me within {h} hours?", "⟦someone from billing will reach out within {h} hours⟧"),
    (
        "could you do {pct}% off the next invoice for the trouble?",
        "⟦I'll apply a {pct}% discount to your next invoice⟧",
    ),
    ("when will the replacement ship?", "⟦we'll ship the replacement {when}⟧"),
    ("when can you unlock the account?", "⟦I'll unlock your account before end of day⟧"),
    ("", "⟦I'll keep this ticket open until it's resolved⟧"),
    ("will I get a confirmation within the hour?", "⟦you'll get a confirmation email within the hour⟧"),
    ("can you extend the trial by {n} days?", "⟦we'll extend your trial by {n} days⟧"),
    ("", "⟦I'll follow up with you on {weekday} morning⟧"),
    ("can you waive the late fee?", "⟦we will waive the late fee this month⟧"),
    ("any ETA on the fix?", "⟦our engineers will have a fix deployed by {weekday}⟧"),
)
_EN_WEEKDAYS = ("Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday")
_EN_WHEN = ("today", "tomorrow morning", "by Wednesday", "first thing Monday", "this afternoon")
_EN_AGENT_LEADS = (
    "Sure thing, ",
    "Understood. ",
    "I'm sorry about this. ",
    "",
    "Thanks for your patience, ",
    "Got it, ",
    "Okay, ",
)
_EN_CUSTOMER_PROMISES = (
    "⟦the guy on the phone last week said you'd cover shipping⟧",
    "⟦your rep promised me a {pct}% discount on renewal⟧",
    "⟦someone in chat told me the refund would be back in {n} days⟧",
    "⟦when I signed up I was told I could cancel anytime⟧",
    "⟦{name} from your team said she'd waive the late fee⟧",
    "⟦I was promised a callback within {h} hours⟧",
    "⟦the sales rep said the price was locked in for two years⟧",
    "⟦your email said the replacement would ship the same day⟧",
    "⟦the last agent said this would be fixed by the weekend⟧",
    "⟦I was told I'd get a month free for the trouble⟧",
    "⟦your website says free returns within {n} days⟧",
    "⟦the onboarding person said data migration was included⟧",
)
_EN_CUSTOMER_PROMISE_LEADS = ("", "", "honestly ", "for the record, ", "I remember ", "plus ")
_EN_REQUESTS = (
    "⟦text me instead of calling⟧",
    "please ⟦cancel the auto-renew⟧",
    "⟦put the refund back on my Visa, not store credit⟧",
    "could you ⟦send the invoice to our accounting team directly⟧",
    "⟦switch us to monthly billing⟧",
    "I'd like you to ⟦merge my two accounts⟧",
    "⟦just ship the replacement, don't wait for the return⟧",
    "⟦add {n} more seats⟧",
    "⟦remove the old card from the account⟧",
    "⟦the company name needs to be on the invoice⟧",
    "⟦don't call before 10am⟧",
    "⟦send everything in writing from now on⟧",
    "can you ⟦close the duplicate account⟧",
    "⟦change the shipping to my office address⟧",
    "⟦hold the order until I confirm⟧",
    "⟦add our VAT number to the receipts⟧",
    "⟦cc my bookkeeper on the receipts⟧",
    "⟦downgrade us at the end of this cycle⟧",
)
_EN_ID_TEMPLATES = (
    "my {label} is {v}",
    "it's {label} #{v}",
    "{label} {v} shows the wrong amount",
    "I have the confirmation email here, {label} {v}",
    "({label} {v})",
    "the {label} you sent, {v}, doesn't work",
    "{label} is {v} if that helps",
    "{v} is the {label} I'm talking about",
    "the {label} on my screen is {v}",
    "ref {v}",
)
_EN_AMOUNT_TEMPLATES = (
    "you charged me {v} twice",
    "the refund should be {v}",
    "I was billed {v} on my card",
    "it came to {v} with tax",
    "shipping was {v}, which seemed high",
    "we budget around {v} a month for this",
    "the invoice says {v} but the quote was lower",
    "there's an extra {v} on the statement",
    "I paid {v} upfront",
    "my bank shows a pending {v}",
    "the renewal went through at {v}",
    "the price difference of {v} was never credited",
)
_EN_DATE_TEMPLATES: dict[str, tuple[str, ...]] = {
    "past": (
        "it was charged {on}",
        "I placed the order {on}",
        "it stopped working {on}",
        "the package shipped {on}",
        "same thing happened {on}",
        "I called you guys {on} and nobody picked up",
        "the invoice went out {on}",
    ),
    "future": (
        "I need this sorted before {v}",
        "the contract renews {on}",
        "I'm traveling {on} so ideally before then",
        "the system says it auto-renews {on}",
        "our audit is {on}",
        "we need it working by {v} at the latest",
    ),
}
_EN_CODE_TEMPLATES = (
    "it throws {v}",
    "I keep getting {v} when I try to log in",
    "the app just says {v} and closes",
    "saw {v} in the console",
    "now it's a different one: {v}",
    "checkout fails with {v}",
    "the sync log shows {v}",
    "the API returns {v} about half the time",
    "exporting gives me {v}",
)
_EN_PHONE_TEMPLATES = (
    "you can reach me at {v}",
    "my cell is {v}",
    "call {v} after 5pm",
    "my number changed, it's {v} now",
    "the office line is {v}",
    "{v} is the best number for me",
    "I'm at {v} most of the day",
    "the delivery contact should be {v}",
)
_EN_EMAIL_TEMPLATES = (
    "email me at {v}",
    "my email is {v}",
    "the account is under {v}",
    "send it to {v}",
    "I registered with {v}, not my work one",
    "{v} is our billing inbox",
    "the verification emails to {v} never arrive",
)
_EN_ADDRESS_TEMPLATES = (
    "ship it to {v}",
    "my address is {v}",
    "we moved to {v} last month",
    "the billing address on file should be {v}",
    "deliveries go to {v}",
    "the old address is dead, it's {v} now",
)
_EN_STREETS = (
    "Maple Ave",
    "Oak St",
    "Harbor Street",
    "Elm Street",
    "Sunset Blvd",
    "Lakeview Dr",
    "Pine Road",
    "Cedar Lane",
    "Washington Ave",
    "Park Place",
    "Hillcrest Rd",
    "Market St",
    "River Rd",
    "Mill Street",
    "Broadway",
    "W 22nd Street",
    "N Clark St",
    "Spring Garden St",
    "Orchard Way",
    "Chestnut Ct",
)
_EN_CITIES = (
    ("Springfield", "IL", "627"),
    ("Portland", "OR", "972"),
    ("Austin", "TX", "787"),
    ("Denver", "CO", "802"),
    ("Columbus", "OH", "432"),
    ("Raleigh", "NC", "276"),
    ("Madison", "WI", "537"),
    ("Boise", "ID", "837"),
    ("Tucson", "AZ", "857"),
    ("Albany", "NY", "122"),
    ("Brooklyn", "NY", "112"),
    ("Seattle", "WA", "981"),
)
_EN_FILLER = (
    "sorry for the wall of text",
    "one moment please",
    "thanks so much",
    "I was hoping it would just work",
    "please bear with me",
    "I promise I'm not trying to be difficult",
    "would appreciate any help",
    "hope that makes sense",
    "no rush",
    "I've tried {k} times now",
    "been waiting about {k} minutes",
    "I'm not very technical, sorry",
    "anyway",
    "ok thanks",
    "I really hope we can sort this out",
    "this is the third time I'm writing in",
    "let me explain from the beginning",
    "sorry if this is confusing",
    "I did everything the help article said",
    "we've been customers for years",
    "I'd rather not go through all this again",
    "please don't take this the wrong way",
    "I get that things happen",
    "I was told to just wait, so I waited",
    "not sure if this is the right place to ask",
    "kind of frustrating honestly",
    "I tried a different browser, same thing",
    "it works on my phone but not on the laptop",
    "our whole team uses this",
    "I appreciate you looking into it",
    "thanks for your patience with me",
    "just checking in",
    "hang on a sec",
    "ugh",
    "fair enough",
    "that's all I can think of right now",
    "I swear it worked fine before",
    "I'm a bit stressed about this",
    "I hate to be a pain",
    "hope your day is going better than mine",
    "I'll be honest, I almost gave up",
    "if you could look into it that would be great",
    "sorry, typing on my phone",
    "long story short, it's still broken",
    "nothing changed on our end as far as I know",
    "I read your FAQ but it didn't cover this",
    "cheers",
)
_EN_ACKS = ("ok", "okay thanks", "got it", "sure", "thanks", "alright", "k", "sounds good")
_EN_AGENT_FILLER = (
    "Thanks for your patience.",
    "Got it.",
    "Sorry for the trouble.",
    "One moment while I take a look.",
    "I understand how frustrating that is.",
    "Thanks for the details.",
    "I appreciate you bearing with us.",
    "Let me check on that.",
)
_EN_PASSING_LEADS = (
    "Oh and ",
    "Also, ",
    "btw ",
    "By the way, ",
    "For what it's worth, ",
    "",
    "",
    "",
    "",
    "Another thing: ",
    "Just remembered, ",
)
_EN_PASSING_TAILS = ("", "", "", " if that matters", ", just so you know", ", fyi", " (in case it helps)")
_EN_SUBJECTS = (
    "Billing and invoice question",
    "Refund still missing",
    "Problem with my order",
    "Can't log in",
    "Question about renewal",
    "Replacement status",
    "Error when syncing",
)
_EN_GREETINGS = ("Hi", "Hello", "Hey there", "Hi team", "Good morning", "Hi,")
_EN_CLOSINGS = (
    "so where are we with all this?",
    "what happens next?",
    "can you give me a summary of where things stand?",
    "ok, I'll wait to hear back",
    "anything else you need from me?",
)


class EnWriter(Writer):
    lang = "en"

    def _amount(self) -> tuple[str, int]:
        rng = self.rng
        kind = rng.choice(
            ("cents", "dollars", "comma", "bucks", "words", "usd", "k", "hundred_and", "fifteen_hundred")
        )
        n = rng.choice((rng.randint(5, 99), rng.randint(100, 999), rng.randint(1000, 4999)))
        if kind == "cents":
            cents = rng.randint(1, 99)
            return f"${n}.{cents:02d}", n * 100 + cents
        if kind == "dollars":
            return rng.choice((f"${n}", f"{n} dollars", f"{n} dollars even")), n * 100
        if kind == "comma":
            n = rng.randint(1000, 49999)
            return rng.choice((f"${n:,}", f"${n:,}.00", f"{n:,} dollars")), n * 100
        if kind == "bucks":
            return f"{rng.randint(5, 400)} bucks", 0
        if kind == "words":
            n = rng.choice((rng.randint(2, 19) * 5, rng.randint(21, 99)))
            return f"{en_words(n)} {rng.choice(('dollars', 'bucks'))}", n * 100
        if kind == "usd":
            return rng.choice((f"USD {n}", f"{n} USD", f"US${n}", f"USD {n}.00")), n * 100
        if kind == "k":
            whole, tenth = rng.randint(1, 9), rng.randint(0, 9)
            written = f"{whole}.{tenth}k" if tenth else f"{whole}k"
            return rng.choice((written, "$" + written)), (whole * 10 + tenth) * 100 * 100
        if kind == "hundred_and":
            n = rng.randint(101, 199)
            return f"{en_words(n, a_hundred=True)} {rng.choice(('bucks', 'dollars'))}", n * 100
        n = rng.randint(11, 19) * 100
        return f"{en_words(n // 100)} hundred {rng.choice(('dollars', 'bucks'))}", n * 100

    def amount_value(self) -> tuple[str, int]:
        written, cents = self._amount()
        if cents == 0:  # "N bucks"
            cents = int(written.split()[0]) * 100
        return written, cents

    def make_amount(self) -> Piece:
        written, cents = self.amount_value()
        text = self.pick(_EN_AMOUNT_TEMPLATES).format(v=written)
        fact = self.fact("amount", written, (written, _money(cents, "USD")))
        return Piece(text, [fact], meta={"cents": cents})

    def make_id(self) -> Piece:
        _, label, prefixes = self.pick(_DOCS)
        value, _ = _id_value(self.rng, prefixes, long_digits=False)
        template = self.pick(_EN_ID_TEMPLATES)
        text = template.format(label=label, v=value)
        written = f"#{value}" if "#{v}" in template else value
        return Piece(
            text,
            [self.fact("id", written, (written, *_id_strings(value)))],
            meta={"value": value, "label": label},
        )

    def _date(self, absolute: bool) -> tuple[str, str, tuple[str, ...], DateRule | None]:
        """(as written, with its preposition, strings, rule)."""
        rng = self.rng
        kind = (
            rng.choice(("full", "yearless", "yearless", "relative", "relative"))
            if not absolute
            else "yearless"
        )
        if absolute and rng.random() < 0.3:
            kind = "full"
        month, day = rng.randint(1, 12), rng.randint(1, 28)
        name = calendar.month_name[month]
        ordinal = _ordinal(day)
        if kind == "full":
            year = rng.choice((2025, 2026, 2027))
            iso = date(year, month, day).isoformat()
            written = rng.choice(
                (f"{name} {day}, {year}", iso, f"{month:02d}/{day:02d}/{year}", f"{day} {name} {year}")
            )
            return written, f"on {written}", (written, iso), None
        if kind == "yearless":
            if rng.random() < 0.3:
                day = rng.randint(13, 28)
                written = rng.choice((f"{month}/{day}", f"{month:02d}/{day}"))
            else:
                written = rng.choice(
                    (
                        f"{name} {ordinal}",
                        f"{name} {day}",
                        f"{name[:3]} {day}",
                        f"the {ordinal} of {name}",
                        f"{day} {name}",
                    )
                )
            return written, f"on {written}", (written,), DateRule("yearless", month=month, day=day)
        choice = rng.randrange(5)
        if choice <= 2:
            wd = rng.randrange(7)
            weekday = _EN_WEEKDAYS[wd]
            if choice == 0:
                written = f"next {weekday}"
                rule = DateRule("weekday", weekday=wd, weeks=(1,), nearest=1)
            elif choice == 1:
                written = f"this {weekday}"
                rule = DateRule("weekday", weekday=wd, weeks=(0,))
            else:
                written = f"last {weekday}"
                rule = DateRule("weekday", weekday=wd, weeks=(-1,), nearest=-1)
            return written, written, (written,), rule
        months = (-1, 1)[choice - 3]
        written = f"the {ordinal} of {'last' if months < 0 else 'next'} month"
        return written, f"on {written}", (written,), DateRule("month_day", day=day, months=months)

    def make_date(self, absolute: bool = False) -> Piece:
        written, on, strings, rule = self._date(absolute)
        text = self.pick(_EN_DATE_TEMPLATES[_tense(rule, self.rng)]).format(v=written, on=on)
        return Piece(
            text, [self.fact("date", written, strings, rule=rule)], meta={"day": _month_day(strings, rule)}
        )

    def make_error_code(self) -> Piece:
        written, strings = _error_code(self.rng, False)
        text = self.pick(_EN_CODE_TEMPLATES).format(v=written)
        return Piece(text, [self.fact("error_code", written, strings)])

    def make_phone(self) -> Piece:
        written, digits = _en_phone(self.rng)
        text = self.pick(_EN_PHONE_TEMPLATES).format(v=written)
        return Piece(text, [self.fact("phone", written, (written, digits))])

    def make_email(self) -> Piece:
        written = _email(self.rng, False)
        text = self.pick(_EN_EMAIL_TEMPLATES).format(v=written)
        return Piece(text, [self.fact("email", written, _email_strings(written))])

    def _street(self, number: int, street: str, unit: str) -> str:
        return f"{number} {street}" + (f", {unit}" if unit else "")

    def make_address(self, unit_required: bool = False) -> Piece:
        rng = self.rng
        number = rng.randint(1, 9999)
        street = rng.choice(_EN_STREETS)
        city, state, zip3 = rng.choice(_EN_CITIES)
        zipcode = zip3 + _digits(rng, 2, first_nonzero=False)
        unit_kind = rng.choice(("Apt", "Apt.", "Unit", "Suite", "#", "Ste", "Apartment", ""))
        if unit_required and not unit_kind:
            unit_kind = "Apt"
        unit_value = rng.choice((f"{rng.randint(1, 30)}{rng.choice('ABCDEF')}", str(rng.randint(100, 950))))
        unit = (f"#{unit_value}" if unit_kind == "#" else f"{unit_kind} {unit_value}") if unit_kind else ""
        street_line = self._street(number, street, unit)
        full = rng.choice(
            (
                f"{street_line}, {city}, {state} {zipcode}",
                f"{street_line} {city} {state} {zipcode}",
                f"{street_line}, {city} {state} {zipcode}",
            )
        )
        if rng.random() < 0.15:
            full = full.lower()
        meta = {
            "number": number,
            "street": street,
            "unit_kind": unit_kind or "Apt",
            "unit_value": unit_value,
            "city": city,
            "state": state,
            "zip": zipcode,
        }
        text = self.pick(_EN_ADDRESS_TEMPLATES).format(v=full)
        return Piece(text, [self.fact("address", full, (full, street_line))], meta=meta)

    def make_person(self) -> Piece:
        rng = self.rng
        name = rng.choice(
            (
                rng.choice(_EN_FIRST),
                rng.choice(_EN_FIRST),
                rng.choice(_EN_LAST),
                f"{rng.choice(('Mr.', 'Ms.', 'Mrs.'))} {rng.choice(_EN_LAST)}",
            )
        )
        if rng.random() < 0.4:
            dept = rng.choice(_EN_DEPTS)
            lead = rng.choice(("", "my colleague ", "a guy named ", "my coworker ", "someone named "))
            core = f"{name} {rng.choice(('from', 'in'))} {dept}"
            written = lead + core
            strings: tuple[str, ...] = (core, f"{name} from {dept}", f"{name} in {dept}", f"{dept} {name}")
        else:
            role = rng.choice(_EN_ROLES)
            form = rng.choice(("our {r} {n}", "my {r}, {n},", "{n}, our {r},", "{n} (our {r})", "my {r} {n}"))
            written = form.format(r=role, n=name).rstrip(",")
            core = written.removeprefix("our ").removeprefix("my ")
            strings = (core, f"{role} {name}", f"{name} {role}", f"{name}, our {role}", f"{name}, my {role}")
        bare = re.sub(r"\b(?:Mr|Ms|Mrs)\. ", "", " | ".join(strings)).split(" | ")
        text = self.pick(_EN_PERSON_TEMPLATES).format(p=written)
        return Piece(text, [self.fact("person", core, (*strings, *bare))])

    def goods_phrase(
        self, noun: str, plural: str, many: bool, parts: list[tuple[str, str]], last: bool
    ) -> str:
        """``noun`` (the product, or its plural) with its option ``parts`` ((kind, as written)) as a
        customer writes them; ``many``: the noun is plural; ``last``: nothing follows in the clause,
        so a form ending in a comma clause may be used."""
        one = "ones" if many else "one"
        if len(parts) == 2:
            (_, a), (kind_b, b) = parts
            forms = [f"{noun} ({a}, {b})", f"{noun} ({a} / {b})"]
            if kind_b == "size":  # navy hoodie in XL, XL navy hoodie
                forms.append(f"{a} {noun} in {b}")
                if b.isupper() and len(b) > 1:
                    forms.append(f"{b} {a} {noun}")
                if last:
                    forms += [f"{a} {noun}, size {b}", f"{noun} in {a}, size {b}", f"{noun} - {a} / {b}"]
            else:  # 256GB iPhone 15 in blue
                forms += [f"{b} {noun} in {a}", f"{b} {a} {noun}", f"{a} {noun} ({b})"]
                if last:
                    forms += [f"{noun} - {a} / {b}", f"{a} {noun}, {b}"]
            return self.pick(forms)
        kind, o = parts[0]
        if kind == "size":
            lettered = o.isupper() or o[0].isdigit()
            forms = [f"{noun} in {o}", f"{noun} ({o})"]
            if len(o) > 1:  # XL hoodie, size 10.5 running shoes (not "M hoodie")
                forms.append(f"size {o} {noun}" if o[0].isdigit() else f"{o} {noun}")
            forms += [f"{noun} in size {o}", f"{noun} (size {o})"] if lettered else []
            tails = [f"{noun}, size {o}", f"{noun} - {o}"]
        elif kind in ("colour", "in"):
            forms = [f"{o} {noun}", f"{noun} in {o}", f"{noun} ({o})"]
            tails = [f"{noun}, the {o} {one}", f"{noun} - {o}"]
        elif kind == "spec":
            forms = [f"{o} {noun}", f"{noun} ({o})"]
            tails = [f"{noun}, the {o} {one}", f"{noun}, {o}"]
        elif kind == "ver":
            forms = [f"{o} {noun}", f"{noun} ({o})"]
            tails = [f"{noun}, the {o} {one}", f"{noun}, the {o} version"]
        elif kind == "model":  # phone case for the iPhone 15
            forms = [f"{noun} for {o}", f"{noun} for the {o}", f"{o} {noun}", f"{noun} ({o})"]
            tails = [f"{noun}, the {o} {one}"]
        elif kind == "with":
            forms = [f"{noun} with {o}", f"{noun} ({o})"]
            tails = [f"{noun}, {o}"]
        elif kind == "pack":  # 3-pack of merino wool socks
            forms = [f"{o} of {plural or noun}", f"{noun} ({o})"]
            forms += [f"{o} {noun}"] if o.endswith("pack") else []
            tails = [f"{noun}, {o}"]
        else:  # a book's edition
            forms = [
                f"{o} {noun}",
                f"{o} edition of {noun}",
                f"{o} copy of {noun}",
            ]  # not "the Atomic Habits"
            tails = []
        return self.pick(forms + tails if last else forms)

    def plan_phrase(self, product: str, specs: list[str], last: bool) -> str:
        """A plan with its option parts as written: annual Pro plan, Pro plan (billed yearly),
        25-seat Business plan, billed annually."""
        p = product
        if len(specs) == 1:
            adj, tail, bare, _ = _en_plan_words(specs[0])
            forms = [f"{self.pick(adj)} {p}", f"{p} ({self.pick(bare)})"]
            forms += [f"{p} {self.pick(tail)}"] if tail else []
            forms += [f"{p}, {self.pick(bare + tail)}"] if last else []
            return self.pick(forms)
        (adj_x, tail_x, bare_x, _), (adj_y, tail_y, bare_y, _) = (_en_plan_words(s) for s in specs)
        forms = [
            f"{self.pick(adj_x)} {self.pick(adj_y)} {p}",
            f"{p} ({self.pick(bare_x)}, {self.pick(bare_y)})",
        ]
        forms += [f"{self.pick(adj_x)} {p} {self.pick(tail_y)}"] if tail_y else []
        if last:
            forms += [
                f"{self.pick(adj_y)} {p}, {self.pick(tail_x + bare_x)}",
                f"{p}, {self.pick(bare_x)}, {self.pick(bare_y)}",
            ]
        return self.pick(forms)

    def make_plan(self) -> Piece:
        rng = self.rng
        if rng.random() < 0.4:
            product, kind, options = self.pick(_EN_PLANS)
            specs = list(self._parts(self.pick(options)))
            template = self.pick(_EN_PLAN_TEMPLATES[kind])
            written = self.plan_phrase(product, specs, template.endswith("{v}"))
            counted = [_en_plan_words(s)[3] for s in specs]
            strings = [written, *_orders(product, counted)]
            return Piece(template.format(v=written), [self.fact("plan", written, strings)])
        product, plural, unit, options = self.pick(_EN_GOODS)
        parts = [_en_part(p) for p in self._parts(self.pick(options))]
        chosen = [(kind, self.pick(spellings)) for kind, spellings in parts]
        template = self.pick(_EN_PLAN_TEMPLATES["goods"])
        noun, count = product, ""
        if "{a}" in template:  # a count before goods: two hoodies, a pair of, a bag of
            r = rng.random()
            if unit == "a" and plural and r < 0.25:
                noun, count = plural, self.pick(("two ", "2 ", "three "))
            elif unit not in ("a", "") and r < 0.8:
                head = unit.split()[1]
                heads = head + ("es" if head.endswith(("x", "s")) else "s")
                count = unit + " " if r < 0.6 else f"two {heads} of "
        many = noun == plural or (not plural and product.endswith("s") and not product[0].isupper())
        phrase = self.goods_phrase(noun, plural, many, chosen, template.endswith("{v}"))
        many = many and not (" of " in phrase and not phrase.startswith(noun))  # a 12-pack of gel pens is
        if count == "2 " and phrase[0].isdigit():  # two 48-inch standing desks, not 2 48-inch
            count = "two "
        written = count + phrase
        article = ""
        if "{a}" in template and not count:
            starts_with_option = not phrase.startswith(product)
            if unit == "a" or (not unit and starts_with_option and " of " in phrase):
                article = _en_article(phrase) + " "
        products = [product] + ([plural] if plural and plural in written else [])
        strings = [written, *_en_goods_strings(products, parts)]
        verbs = ("are", "were", "have", "do", "them") if many else ("is", "was", "has", "does", "it")
        agree = dict(zip(("is", "was", "has", "does", "it"), verbs, strict=True))
        text = template.format(v=written, a=article, **agree)
        return Piece(text, [self.fact("plan", written, strings)])

    @staticmethod
    def _parts(option: str | tuple[str, ...]) -> tuple[str, ...]:
        return (option,) if isinstance(option, str) else option

    def make_status(self, flip: bool = False) -> Piece:
        if flip:
            before, after, canon_before, canon_after = self.pick(_EN_STATUS_FLIPS)
            old = self.fact("status", before, (before, canon_before))
            new = self.fact("status", after, (after, canon_after))
            old.replaced_by = new
            return Piece(
                self.pick(_EN_STATUS_LEADS) + before,
                [old, new],
                meta={"second": self.pick(_EN_FLIP_LEADS) + after},
            )
        written, canon = self.pick(_EN_STATUSES)
        return Piece(self.pick(_EN_STATUS_LEADS) + written, [self.fact("status", written, (written, canon))])

    def make_agent_promise(self) -> Piece:
        values = {
            "n": self.rng.choice((2, 3, 5, 7, 10, 14)),
            "h": self.rng.choice((2, 4, 24, 48, 72)),
            "weekday": self.pick(_EN_WEEKDAYS[:5]),
            "when": self.pick(_EN_WHEN),
            "pct": self.rng.choice((10, 15, 20, 25, 50)),
        }
        ask, template = (t.format(**values) for t in self.pick(_EN_AGENT_PROMISES))
        text, fact = self.sentence_fact("agent_promise", template, speaker="agent")
        lead = self.agent_lead()
        if lead.endswith(". ") or not lead:
            text = text[0].upper() + text[1:]
        return Piece(lead + text, [fact], speaker="agent", meta={"ask": _ask(self.rng, ask)})

    def make_customer_promise(self) -> Piece:
        template = self.pick(_EN_CUSTOMER_PROMISES).format(
            n=self.rng.choice((3, 5, 7, 14, 30)),
            h=self.rng.choice((24, 48, 72)),
            pct=self.rng.choice((10, 15, 20, 25)),
            name=self.pick(("Maria", "Jen", "Ashley", "Kim", "Laura", "Nicole")),
        )
        text, fact = self.sentence_fact("customer_promise", template)
        return Piece(self.pick(_EN_CUSTOMER_PROMISE_LEADS) + text, [fact])

    def make_request(self) -> Piece:
        template = self.pick(_EN_REQUESTS).format(n=self.rng.randint(2, 9))
        text, fact = self.sentence_fact("request", template)
        return Piece(text, [fact])

    # corrections
    def correct_amount(self, original: Piece) -> Piece:
        old_written, old_cents = original.facts[0].written, original.meta["cents"]
        dollars = int(_typo(self.rng, str(old_cents // 100)))
        cents = dollars * 100 + (old_cents % 100 if self.rng.random() < 0.5 else 0)
        written = self.pick(
            (f"${dollars}", f"{dollars} dollars", f"${dollars:,}.{cents % 100:02d}", f"{dollars} bucks")
        )
        if "." not in written:  # "$215", "215 bucks" say no cents: the value has none
            cents = dollars * 100
        template = self.pick(
            (
                "sorry, I meant {new}, not {old}",
                "correction: it was {new}",
                "scratch that, the charge was actually {new}",
                "my bad, {new}, not {old}",
                "wait, I misread it, it's {new}",
            )
        )
        text = template.format(new=written, old=old_written)
        return Piece(text, [self.fact("amount", written, (written, _money(cents, "USD")))], after=original)

    def correct_date(self, original: Piece) -> Piece:
        new = self._other_date(original)
        template = self.pick(
            (
                "wait, it was {new}, not {old}",
                "sorry, wrong date, it's {new}",
                "correction: {new}, not {old}",
                "I got the date wrong, it was {new}",
            )
        )
        text = template.format(new=new.written, old=original.facts[0].written)
        return Piece(text, [new], after=original)

    def correct_id(self, original: Piece) -> Piece:
        value, label = original.meta["value"], original.meta["label"]
        new = _typo(self.rng, value)
        template = self.pick(
            (
                "sorry, typo in the {label} number, it's {new}",
                "I mistyped that, the {label} is {new}",
                "correction: {label} {new}, not {old}",
                "it's {new}, I swapped two digits",
            )
        )
        text = template.format(label=label, new=new, old=value)
        return Piece(text, [self.fact("id", new, _id_strings(new))], after=original)

    def correct_address(self, original: Piece) -> Piece:
        meta = original.meta
        old = meta["unit_value"]
        new = old
        while new == old:
            new = _typo(self.rng, old) if any(c.isdigit() for c in old) else old
            if old[-1].isalpha() and self.rng.random() < 0.6:
                new = old[:-1] + self.rng.choice([c for c in "ABCDEF" if c != old[-1]])
        kind = meta["unit_kind"]
        word = {
            "Apt": "apartment",
            "Apt.": "apartment",
            "Apartment": "apartment",
            "Unit": "unit",
            "Suite": "suite",
            "Ste": "suite",
            "#": "unit",
        }[kind]
        unit = f"#{new}" if kind == "#" else f"{kind} {new}"
        street_line = self._street(meta["number"], meta["street"], unit)
        full = f"{street_line}, {meta['city']}, {meta['state']} {meta['zip']}"
        template = self.pick(
            (
                "sorry, ⟦the {word} is {new}⟧, not {old}",
                "correction on the address: ⟦it's {word} {new}⟧",
                "oops, ⟦{word} {new}⟧, not {old}",
                "the {word} number is wrong, ⟦it should be {new}⟧",
            )
        )
        text, core = _core(template.format(word=word, new=new, old=old))
        return Piece(text, [self.fact("address", core, (full, street_line, core))], after=original)

    # turns
    def filler(self) -> str:
        return self.pick(_EN_FILLER).format(k=self.rng.randint(3, 40))

    def agent_filler(self) -> str:
        return self.pick(_EN_AGENT_FILLER)

    def agent_lead(self) -> str:
        return self.pick(_EN_AGENT_LEADS)

    def in_passing(self, clause: str) -> str:
        return self.pick(_EN_PASSING_LEADS) + clause + self.pick(_EN_PASSING_TAILS)

    def compose(self, clauses: list[str], *, opening: bool = False) -> str:
        rng = self.rng
        proper = rng.random() < 0.7
        out = self.pick(_EN_GREETINGS) + rng.choice((", ", "! ", " - ", ". ")) if opening else ""
        sentence_start = not opening or out.endswith((". ", "! "))
        for i, written in enumerate(clauses):
            clause = written
            if proper and sentence_start and clause[:1].islower():
                clause = clause[0].upper() + clause[1:]
            out += clause
            if clause.endswith(("?", "!")):
                out += " "
                sentence_start = True
                continue
            if i == len(clauses) - 1:
                out += rng.choice((".", ".", "!", "", "..."))
            else:
                sep = rng.choice((". ", ". ", ", ", " - ", "! ", "... ", "; "))
                out += sep
                sentence_start = sep in (". ", "! ", "... ")
        return out.strip()

    def subject(self) -> str:
        return self.pick(_EN_SUBJECTS)

    def closing(self) -> str:
        return self.pick(_EN_CLOSINGS)

    def ack(self) -> str:
        return self.pick(_EN_ACKS)


# -- the ticket -----------------------------------------------------------------------------------


def generate(rng: random.Random, language: str, rounds: int | None = None) -> Ticket:
    """One long ticket in ``language`` ("zh" or "en") of ``rounds`` rounds (40-80 by ``rng`` when None)."""
    if language not in LANGUAGES:
        raise ValueError(f"language must be one of {LANGUAGES}, not {language!r}")
    total = rounds if rounds is not None else rng.randint(MIN_ROUNDS, MAX_ROUNDS)
    if total < 12:
        raise ValueError("a ticket needs at least 12 rounds")
    writer: ZhWriter | EnWriter = ZhWriter(rng) if language == "zh" else EnWriter(rng)
    last = total - 1 - QUIET_TAIL  # the last round a fact may be planted in

    counts = {c: rng.choices(range(1, 9), weights=_COUNT_WEIGHTS)[0] for c in CATEGORIES}
    corrected = rng.sample(CORRECTABLE, rng.choices((0, 1, 2, 3), weights=(2, 3, 3, 2))[0])
    for category in corrected:
        counts[category] = max(counts[category], 2)
    flips = rng.choice((0, 1, 1, 2))
    counts["status"] = max(counts["status"], 2 * flips)

    pieces: list[Piece] = []
    seconds: list[Piece] = []  # corrections and flips: placed after their originals
    for category in CATEGORIES:
        n = counts[category]
        if category in corrected:
            original = writer.build(category, **_needs_correctable(category))
            correction = _build_correction(writer, category, original)
            pieces.append(original)
            seconds.append(correction)
            n -= 2
        if category == "status":
            for _ in range(flips):
                first = writer.build("status", flip=True)
                old, new = first.facts
                first.facts = [old]
                second = Piece(first.meta["second"], [new], after=first)
                new.fragment = second.text
                pieces.append(first)
                seconds.append(second)
            n -= 2 * flips
        pieces.extend(writer.build(category) for _ in range(n))

    # Rounds: originals of corrections early enough to be corrected at least two rounds later.
    by_round: dict[int, list[Piece]] = {}
    agent_by_round: dict[int, list[Piece]] = {}
    placed: dict[int, int] = {}
    for piece in pieces:
        late = any(piece is s.after for s in seconds)
        r = rng.randint(0, max(1, int(last * 0.6))) if late else rng.randint(0, last)
        placed[id(piece)] = r
        (agent_by_round if piece.speaker == "agent" else by_round).setdefault(r, []).append(piece)
    for r, promises in agent_by_round.items():
        for piece in promises:
            if piece.meta.get("ask"):
                by_round.setdefault(r, []).append(Piece(piece.meta["ask"], []))
    for piece in seconds:
        assert piece.after is not None
        r = rng.randint(min(placed[id(piece.after)] + 2, last), last)
        by_round.setdefault(r, []).append(piece)

    facts: list[Fact] = []
    turns: list[Round] = []
    for r in range(total):
        here = by_round.get(r, [])
        clauses = [writer.in_passing(p.text) if rng.random() < 0.6 else p.text for p in here]
        if r == total - 1:
            clauses.append(writer.closing())
        elif not here and rng.random() < 0.15:
            clauses.append(writer.ack())
        else:
            wall = rng.random() < 0.08
            k = rng.randint(4, 7) if wall else rng.randint(0, 2) if here else rng.randint(1, 3)
            clauses += _fillers(writer, k)
        rng.shuffle(clauses)
        if r == 0 and rng.random() < 0.7:
            clauses[:0] = [f for f in _fillers(writer, 1) if f not in clauses]
        customer = writer.compose(clauses, opening=r == 0)
        agent_parts = [p.text for p in agent_by_round.get(r, [])]
        if (not agent_parts and rng.random() < 0.4) or (agent_parts and rng.random() < 0.3):
            agent_parts.insert(0, writer.agent_filler())
        agent = _agent_text(agent_parts, writer.lang)
        turns.append(Round(customer, agent))
        for piece in [*here, *agent_by_round.get(r, [])]:
            for fact in piece.facts:
                fact.round = r
                facts.append(fact)
    return Ticket(language, writer.subject(), turns, facts)


def _needs_correctable(category: str) -> dict[str, Any]:
    if category == "date":
        return {"absolute": True}
    if category == "address":
        return {"unit_required": True}
    return {}


def _build_correction(writer: ZhWriter | EnWriter, category: str, original: Piece) -> Piece:
    maker = {
        "amount": writer.correct_amount,
        "date": writer.correct_date,
        "id": writer.correct_id,
        "address": writer.correct_address,
    }[category]
    for _ in range(200):
        piece = maker(original)
        strings = [s for f in piece.facts for s in f.strings]
        if writer.registry.free(strings):
            writer.registry.claim(strings)
            for fact in piece.facts:
                fact.fragment = piece.text
            original.facts[0].replaced_by = piece.facts[0]
            return piece
    raise RuntimeError(f"no free correction for {category}")


def _fillers(writer: Writer, k: int) -> list[str]:
    """``k`` different filler clauses holding no fact's string."""
    out: list[str] = []
    for _ in range(50 * k):
        if len(out) == k:
            break
        text = writer.filler()
        if text not in out and writer.registry.clean(text):
            out.append(text)
    return out


def _agent_text(parts: list[str], lang: str) -> str:
    if not parts:
        return ""
    if lang == "zh":
        return "".join(p if p.endswith(("。", "!", "?")) else p + "。" for p in parts)
    return " ".join(p if p.endswith((".", "!", "?")) else p + "." for p in parts)


# -- checks ---------------------------------------------------------------------------------------


def check(ticket: Ticket) -> list[str]:
    """Problems with a ticket's ground truth: a fact's string found in the ticket more often than
    the fragments that plant it (and its correction chain) account for, or not found at all."""
    problems = []
    text = "\n".join(f"{r.customer}\n{r.agent}" for r in ticket.rounds)
    for fact in ticket.facts:
        related = {fact}
        chain: Fact | None = fact
        while chain is not None:
            related.add(chain)
            chain = chain.replaced_by
        related |= {f for f in ticket.facts if f.replaced_by in related}
        own = "\n".join(dict.fromkeys(f.fragment for f in related))
        for s in fact.strings:
            found, expected = occurrences(s, text), occurrences(s, own)
            if found > expected:
                problems.append(
                    f"{fact.category} {s!r}: {found} in the ticket, {expected} in its own fragments"
                )
        if not any(appears(s, text) for s in fact.strings):
            problems.append(f"{fact.category} {fact.written!r}: none of its strings is in the ticket")
        if fact.fragment and fact.fragment.replace(" ", "").lower() not in text.replace(" ", "").lower():
            problems.append(f"{fact.category} {fact.written!r}: its fragment is not in the ticket")
    return problems


def main(argv: Sequence[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--show", nargs=2, metavar=("LANGUAGE", "SEED"))
    parser.add_argument(
        "--check", type=int, metavar="N", help="check the ground truth of N tickets per language"
    )
    args = parser.parse_args(argv)
    if args.show:
        language, seed = args.show[0], int(args.show[1])
        if seed >= 100_000:
            parser.error("seeds from 100000 on are bench_recall.py's held-out seeds: not to be looked at")
        ticket = generate(random.Random(f"recall-{language}-{seed}"), language)
        print(f"subject: {ticket.subject}")
        for r, turn in enumerate(ticket.rounds):
            print(f"[{r}] customer: {turn.customer}")
            if turn.agent:
                print(f"[{r}] agent+: {turn.agent}")
        for fact in ticket.facts:
            mark = " (superseded -> " + " | ".join(fact.current) + ")" if fact.superseded else ""
            print(f"  r{fact.round:<3} {fact.category:<16} {' | '.join(fact.strings)}{mark}")
    if args.check:
        bad = 0
        for language in LANGUAGES:
            for seed in range(args.check):
                ticket = generate(random.Random(f"recall-check-{language}-{seed}"), language)
                problems = check(ticket)
                if problems:
                    bad += 1
                    print(f"{language} seed {seed}: " + "; ".join(problems[:5]), file=sys.stderr)
        print(f"{bad} tickets with problems out of {2 * args.check}")


if __name__ == "__main__":
    main()

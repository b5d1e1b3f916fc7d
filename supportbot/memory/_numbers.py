"""Amounts as customers write them, normalised to ``CNY 3500.00``.

Forms read: digits with a currency before or after (``¥128``, ``128 元``, ``45 块``, ``30 USD``),
thousands separators, ``万`` and ``k``/``w`` multipliers (``1.2万``, ``2.8k``), and Chinese numerals
(``三千五百元``, ``两百块``, ``一万二``). Pure and deterministic.

Every digit or numeral run is read possessively (``++``) and may only start where the run starts
(a look-behind refuses a run's inside): a regex engine that backtracked into a 10,000-digit run
would try every split of it, for every start position, and take quadratic time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

_CN_DIGITS: Mapping[str, int] = {
    "零": 0,
    "〇": 0,
    "一": 1,
    "壹": 1,
    "二": 2,
    "贰": 2,
    "两": 2,
    "三": 3,
    "叁": 3,
    "四": 4,
    "肆": 4,
    "五": 5,
    "伍": 5,
    "六": 6,
    "陆": 6,
    "七": 7,
    "柒": 7,
    "八": 8,
    "捌": 8,
    "九": 9,
    "玖": 9,
}
_CN_UNITS: Mapping[str, int] = {"十": 10, "拾": 10, "百": 100, "佰": 100, "千": 1000, "仟": 1000}
_CN_BIG: Mapping[str, int] = {"万": 10_000, "萬": 10_000, "亿": 100_000_000}
CN_NUMERAL_CHARS = "".join([*_CN_DIGITS, *_CN_UNITS, *_CN_BIG])

_CURRENCY_BEFORE: Mapping[str, str] = {
    "¥": "CNY",
    "￥": "CNY",
    "RMB": "CNY",
    "CNY": "CNY",
    "人民币": "CNY",
    "US$": "USD",
    "$": "USD",
    "USD": "USD",
    "€": "EUR",
    "EUR": "EUR",
}
_CURRENCY_AFTER: Mapping[str, str] = {
    "元": "CNY",
    "圆": "CNY",
    "块钱": "CNY",
    "块": "CNY",
    "RMB": "CNY",
    "CNY": "CNY",
    "人民币": "CNY",
    "USD": "USD",
    "美元": "USD",
    "美金": "USD",
    "dollars": "USD",
    "dollar": "USD",
    "EUR": "EUR",
    "欧元": "EUR",
}


def _alternation(symbols: Mapping[str, str]) -> str:
    return "|".join(re.escape(s) for s in sorted(symbols, key=len, reverse=True))


_NUMBER = r"(?:[0-9]{1,3}(?:,[0-9]{3})++(?![0-9])|[0-9]++)(?:\.[0-9]++)?+"
_CN_NUMBER = rf"[{CN_NUMERAL_CHARS}]++"
# "块" is also a measure word ("2块硬盘"): money only when no noun follows it.
_AFTER_KUAI = r"(?![\u4e00-\u9fff])|(?=[了吧啊呀呢的吗左多钱,，。！？!?])"
_MULT = r"(?P<mult>[kKwW千万](?![A-Za-z]))"
_AMOUNT = re.compile(
    rf"(?:(?P<pre>{_alternation(_CURRENCY_BEFORE)})\s*+(?P<n1>{_NUMBER})(?P<m1>[kKwW千万](?![A-Za-z]))?"
    rf"|(?<![A-Za-z0-9.])(?<![0-9],)(?P<n2>{_NUMBER})\s*+{_MULT}?\s*+"
    rf"(?:(?P<post>(?:{_alternation({k: v for k, v in _CURRENCY_AFTER.items() if k != '块'})})(?![A-Za-z]))"
    rf"|(?P<kuai>块)(?:{_AFTER_KUAI}))?"
    rf"|(?<![{CN_NUMERAL_CHARS}几数上好])(?P<cn>{_CN_NUMBER})\s*+(?:(?P<cpost>元|圆|块钱|美元|欧元)|(?P<ckuai>块)(?:{_AFTER_KUAI})))"
)


class Amount(NamedTuple):
    start: int
    end: int
    text: str
    key: str  # "CNY 3500.00"


def amounts(text: str) -> Iterator[Amount]:
    """Every amount in ``text``, in order, with its canonical ``CUR 0.00`` key."""
    for m in _AMOUNT.finditer(text):
        found = _read(m)
        if found is not None and not _bare_count(m, text):
            currency, value = found
            yield Amount(m.start(), m.end(), m.group().strip(), f"{currency} {value:.2f}")


def _bare_count(m: re.Match[str], text: str) -> bool:
    # "1.2万用户", "8k分辨率": a multiplier with no currency, then a noun, counts things, not money.
    bare = m.group("n2") and not (m.group("post") or m.group("kuai"))
    return bool(bare) and _NOUN_NEXT.match(text, m.end("mult") if m.group("mult") else m.end()) is not None


_NOUN_NEXT = re.compile(r"[\u4e00-\u9fffA-Za-z](?<![了吧啊呀呢的吗左多])")


def canonical_amount(key: str) -> str:
    """A canonical key read again: the identity on ``CUR 0.00`` keys (normalisation is idempotent)."""
    currency, _, number = key.partition(" ")
    return f"{currency} {Decimal(number):.2f}"


def _read(m: re.Match[str]) -> tuple[str, Decimal] | None:
    if m.group("cn"):
        if len(m.group("cn")) > _MAX_NUMERAL_CHARS:  # a run that long is not one number
            return None
        value = parse_chinese(m.group("cn"))
        currency = "USD" if m.group("cpost") == "美元" else "EUR" if m.group("cpost") == "欧元" else "CNY"
        return None if value is None or value == 0 else (currency, value)
    if m.group("pre"):
        currency, number, mult = _CURRENCY_BEFORE[m.group("pre")], m.group("n1"), m.group("m1")
    else:
        number, mult = m.group("n2"), m.group("mult")
        if m.group("post"):
            currency = _CURRENCY_AFTER[m.group("post")]
        elif m.group("kuai") or (mult and mult in "kKwW万"):  # "2.8k", "1.2万": money in a support chat
            currency = "CNY"
        else:
            return None
    try:
        value = Decimal(number.replace(",", ""))
    except InvalidOperation:  # unreachable with _NUMBER; a regex edit must not crash a round
        return None
    if len(number) > 15:  # a digit run that long is a pasted log, not money
        return None
    return currency, value * _multiplier(mult)


_MAX_NUMERAL_CHARS = 16


def _multiplier(mult: str | None) -> int:
    if not mult:
        return 1
    return 1000 if mult in "kK千" else 10_000


def parse_chinese(numeral: str) -> Decimal | None:
    """The value of a Chinese numeral (``三千五百`` 3500, ``一万二`` 12000); None if malformed."""
    total, section, digit = 0, 0, None
    last_unit = 1
    for ch in numeral:
        if ch in _CN_DIGITS:
            if digit is not None and digit != 0:  # "三五" is not a numeral
                return None
            digit = _CN_DIGITS[ch]
        elif ch in _CN_UNITS:
            unit = _CN_UNITS[ch]
            if section and unit >= last_unit:  # "五百三千": units must fall within a section
                return None
            section += (digit or 1) * unit  # a 零 before a unit only holds a place: "万零十" is 10
            digit, last_unit = None, unit
        else:
            big = _CN_BIG[ch]
            section += digit or 0
            if section == 0:
                return None
            total += section * big
            section, digit, last_unit = 0, None, big
    if digit is not None:
        # Colloquial trailing digit: "一万二" is 12000, "三千五" is 3500 (a unit one step down).
        trailing = last_unit // 10 if last_unit >= 100 and numeral[-2] not in "零〇" else 1
        section += digit * (trailing if len(numeral) > 1 and numeral[-2] not in _CN_DIGITS else 1)
    return Decimal(total + section)

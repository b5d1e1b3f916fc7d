"""Amounts of money written the ways customers write them, with the value each one means.

Written by hand from how people write money (not from supportbot's reader, whose patterns this
file must not import): the test of the money reader and the refund benchmark draw from it. Every
form returns ``(text, currency, value)``; ``currency`` is None where only a multiplier says the
text is money ("1.2k").
"""

from __future__ import annotations

import random
from collections.abc import Callable
from decimal import Decimal

_DIGITS = "零一二三四五六七八九"
_FORMAL = "零壹贰叁肆伍陆柒捌玖"
_ONES = [
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
_TENS = ["_", "_", "twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"]


def chinese(n: int, *, formal: bool = False, two: str = "两") -> str:
    """1 <= n < 100,000,000 in Chinese numerals: 三千五百, 一万零五, 贰仟叁佰 (formal)."""
    digits, units = (_FORMAL, "拾佰仟") if formal else (_DIGITS, "十百千")
    high, low = divmod(n, 10_000)
    if high:
        rest = _below_10k(low, digits, units, two, leading_zero=low < 1000 and low > 0)
        return _below_10k(high, digits, units, two, leading_zero=False) + ("萬" if formal else "万") + rest
    return _below_10k(n, digits, units, two, leading_zero=False)


def _below_10k(n: int, digits: str, units: str, two: str, *, leading_zero: bool) -> str:
    parts: list[str] = ["零"] if leading_zero else []
    zero = False
    for value, unit in ((1000, units[2]), (100, units[1]), (10, units[0]), (1, "")):
        d = n // value % 10
        if d:
            if zero and parts and parts[-1] != "零":
                parts.append("零")
            big = unit in (units[2], units[1]) and d == 2 and digits is _DIGITS
            parts.append((two if big else digits[d]) + unit)
            zero = False
        elif parts:
            zero = True
    text = "".join(parts)
    return text[1:] if text.startswith(digits[1] + units[0]) and not leading_zero else text


def english(n: int) -> str:
    """1 <= n < 1,000,000 in English words: "two hundred and fifty", "forty-five thousand"."""
    thousands, rest = divmod(n, 1000)
    words = []
    if thousands:
        words.append(_english_below_1000(thousands) + " thousand")
    if rest:
        words.append(("and " if thousands and rest < 100 else "") + _english_below_1000(rest))
    return " ".join(words)


def _english_below_1000(n: int) -> str:
    hundreds, rest = divmod(n, 100)
    words = [f"{_ONES[hundreds]} hundred"] if hundreds else []
    if rest:
        tens, ones = divmod(rest, 10)
        below = _ONES[rest] if rest < 20 else _TENS[tens] + (f"-{_ONES[ones]}" if ones else "")
        words.append(("and " if hundreds else "") + below)
    return " ".join(words)


def _cents(value: Decimal) -> str:
    return f"{value:.2f}"


Form = Callable[[random.Random, Decimal], tuple[str, str | None, Decimal]]


def _whole(rng: random.Random) -> int:
    return rng.choice(
        [rng.randint(1, 99), rng.randint(100, 999), rng.randint(1000, 9999), rng.randint(10_000, 99_999)]
    )


def _digits_cny(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    text = rng.choice(
        [f"{value} 元", f"{value}元", f"¥{value}", f"￥ {value}", f"RMB {value}", f"{value} 块钱"]
    )
    return text, "CNY", value


def _grouped_cny(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    return rng.choice([f"{value:,} 元", f"¥{value:,}", f"CNY {value:,}"]), "CNY", value


def _kuai(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    n = _whole(rng)
    return rng.choice([f"{n}块", f"{n} 块钱", f"{n}块吧"]).removesuffix("吧"), "CNY", Decimal(n)


def _chinese_cny(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    n = _whole(rng)
    numeral = chinese(n, two=rng.choice(["两", "二"]))
    return numeral + rng.choice(["元", "块钱", "块"]), "CNY", Decimal(n)


def _formal_cny(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    n = _whole(rng)
    return chinese(n, formal=True) + rng.choice(["元", "圆"]), "CNY", Decimal(n)


def _multiplied(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    whole, tenth = rng.randint(1, 99), rng.randint(1, 9)
    if rng.random() < 0.5:
        k = Decimal(whole * 1000 + tenth * 100)
        return rng.choice([f"{whole}.{tenth}k 元", f"{whole}.{tenth}k元", f"¥{whole}.{tenth}k"]), "CNY", k
    w = Decimal(whole * 10_000 + tenth * 1000)
    return rng.choice([f"{whole}.{tenth}万元", f"{whole}.{tenth}万", f"{whole}.{tenth}w"]), "CNY", w


def _digits_usd(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    text = rng.choice(
        [f"${value}", f"USD {value}", f"{value} USD", f"{value} dollars", f"US${value}", f"{value} usd"]
    )
    return text, "USD", value


def _bucks(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    n = _whole(rng)
    return rng.choice([f"{n} bucks", f"{n} dollars", f"${n:,}"]), "USD", Decimal(n)


def _english_words(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    n = _whole(rng)
    currency, name = rng.choice([("USD", "dollars"), ("USD", "bucks"), ("CNY", "yuan"), ("EUR", "euros")])
    return f"{english(n)} {name}", currency, Decimal(n)


def _bare_k(rng: random.Random, value: Decimal) -> tuple[str, str | None, Decimal]:
    whole, tenth = rng.randint(1, 99), rng.randint(1, 9)
    return f"{whole}.{tenth}k", None, Decimal(whole * 1000 + tenth * 100)


CHINESE_FORMS: tuple[Form, ...] = (_digits_cny, _grouped_cny, _kuai, _chinese_cny, _formal_cny, _multiplied)
ENGLISH_FORMS: tuple[Form, ...] = (_digits_usd, _bucks, _english_words, _digits_cny, _bare_k)


def random_value(rng: random.Random) -> Decimal:
    """An amount with cents or without, from a wide range."""
    whole = _whole(rng)
    return Decimal(whole) if rng.random() < 0.5 else Decimal(whole) + Decimal(rng.randint(1, 99)) / 100


def written(rng: random.Random, *, language: str) -> tuple[str, str | None, Decimal]:
    """One amount written in a form of ``language`` ("zh" or "en")."""
    form = rng.choice(CHINESE_FORMS if language == "zh" else ENGLISH_FORMS)
    return form(rng, random_value(rng))

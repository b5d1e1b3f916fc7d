"""Amounts of money as customers write them: the one reader the package uses.

The memory ledger pins what it returns (keys such as ``CNY 3500.00``), the draft checks compare a
draft's amounts with the evidence's, and the refund step files what the customer asked. Forms read,
Chinese and English: digits with a currency before or after (``¥128``, ``128 元``, ``45 块``,
``30 USD``, ``$37.18``, ``37 bucks``), thousands separators, ``万``/``k``/``w`` multipliers
(``1.2万``, ``2.8k``, ``1.5k 元``), Chinese numerals in everyday and formal writing (``三千五百元``,
``两百块``, ``贰佰元``, ``一万二``) and English number words before a currency (``forty dollars``,
``two hundred and fifty bucks``, ``twelve hundred dollars``). Pure and deterministic.

Something written as money that is not a readable amount (a 30-digit run with a currency, a
numeral like ``三五元``) is returned with ``value=None``: a caller that acts on money (the refund
step) must refuse it, not skip it.

Every digit or numeral run is read possessively (``++``) and may only start where the run starts
(a look-behind refuses a run's inside): a regex engine that backtracked into a 10,000-digit run
would try every split of it, for every start position, and take quadratic time.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

__all__ = [
    "Amount",
    "Money",
    "amounts",
    "bare_figure",
    "canonical_amount",
    "maybe_money",
    "money_in",
    "parse_chinese",
    "parse_english",
]

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

# Currency names, matched without regard to case; the values are ISO codes.
_CURRENCY_BEFORE: Mapping[str, str] = {
    "¥": "CNY",
    "￥": "CNY",
    "rmb": "CNY",
    "cny": "CNY",
    "人民币": "CNY",
    "us$": "USD",
    "$": "USD",
    "usd": "USD",
    "€": "EUR",
    "eur": "EUR",
}
_CURRENCY_AFTER: Mapping[str, str] = {
    "元": "CNY",
    "圆": "CNY",
    "块钱": "CNY",
    "块": "CNY",
    "rmb": "CNY",
    "cny": "CNY",
    "yuan": "CNY",
    "人民币": "CNY",
    "usd": "USD",
    "美元": "USD",
    "美金": "USD",
    "dollars": "USD",
    "dollar": "USD",
    "bucks": "USD",
    "buck": "USD",
    "eur": "EUR",
    "euros": "EUR",
    "euro": "EUR",
    "欧元": "EUR",
}
_EN_ONES: Mapping[str, int] = {
    word: n
    for n, word in enumerate(
        [
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
    )
}
_EN_TENS: Mapping[str, int] = {
    word: 10 * n
    for n, word in enumerate(
        ["twenty", "thirty", "forty", "fifty", "sixty", "seventy", "eighty", "ninety"], 2
    )
}
_EN_SCALES: Mapping[str, int] = {"hundred": 100, "thousand": 1000, "million": 1_000_000}


def _alternation(symbols: Mapping[str, str] | Mapping[str, int]) -> str:
    return "|".join(re.escape(s) for s in sorted(symbols, key=len, reverse=True))


_NUMBER = r"(?:[0-9]{1,3}(?:,[0-9]{3})++(?![0-9])|[0-9]++)(?:\.[0-9]++)?+"
_CN_NUMBER = rf"[{CN_NUMERAL_CHARS}]++"
_EN_WORD = rf"(?:{_alternation({**_EN_ONES, **_EN_TENS, **_EN_SCALES})})"
_EN_NUMBER = rf"(?:an?\s++)?+{_EN_WORD}(?:(?:\s++and\s++|\s++|-){_EN_WORD})*+"
# "块" is also a measure word ("2块硬盘"): money only when no noun follows it.
# Characters that may follow an amount without making it a count of things ("2块硬盘", "8k分辨率").
# 进 and 一: "充了 1444 块进去", "11 块一年" (a price per period) are money too; "7489块才对".
_NOT_A_NOUN = "了吧啊呀呢的吗左多钱退还给或和到至也就整都进一才"
_AFTER_KUAI = rf"(?![\u4e00-\u9fff])|(?=[{_NOT_A_NOUN},，。！？!?])"
# Tenths of a yuan after 块, as said aloud: "86块4" is 86.40, "三块五(毛)" 3.50.
# Not when a period or a count follows: "两千九块一年" is 2,900 a year, "5块3个" three for 5.
_COUNTED = "年月天日周次个份件台张本套期号斤"
_JIAO = rf"(?P<jiao>[1-9])(?![0-9.%{_COUNTED}])[毛角]?+"
_CN_JIAO = rf"(?P<cjiao>[一二两三四五六七八九])(?![零〇一二两三四五六七八九十百千万亿{_COUNTED}])[毛角]?+"
_MULT = r"(?P<mult>[kKwW千万](?![A-Za-z]))"
# What an amount can start with: a currency before it, a digit, a Chinese numeral, an English
# number word or its "a"/"an" (first characters: see _facts).
_AMOUNT_STARTS = re.escape(
    "".join(
        sorted(
            {
                *(symbol[0] for symbol in _CURRENCY_BEFORE),
                *"0123456789",
                *CN_NUMERAL_CHARS,
                "a",
                *(word[0] for word in (*_EN_ONES, *_EN_TENS, *_EN_SCALES)),
            }
        )
    )
)
_AMOUNT = re.compile(
    rf"(?=[{_AMOUNT_STARTS}])"
    rf"(?:(?<![A-Za-z])(?P<pre>{_alternation(_CURRENCY_BEFORE)})\s*+(?P<n1>{_NUMBER})(?P<m1>[kKwW千万](?![A-Za-z]))?"
    rf"|(?<![A-Za-z0-9.])(?<![0-9],)(?P<n2>{_NUMBER})\s*+{_MULT}?\s*+"
    rf"(?:(?P<post>(?:{_alternation({k: v for k, v in _CURRENCY_AFTER.items() if k != '块'})})(?![A-Za-z]))"
    rf"|(?P<kuai>块)(?:{_JIAO}|{_AFTER_KUAI}))?"
    rf"|(?<![{CN_NUMERAL_CHARS}几数上好])(?P<cn>{_CN_NUMBER})\s*+(?:(?P<cpost>元|圆|块钱|美元|欧元)|(?P<ckuai>块)(?:{_CN_JIAO}|{_AFTER_KUAI}))"
    rf"|\b(?P<en>{_EN_NUMBER})\s++(?P<epost>dollars?|bucks?|usd|euros?|yuan|rmb)\b)",
    re.IGNORECASE,
)
# A digit run longer than this is a pasted log or a joke, not an amount of money.
_MAX_DIGITS = 15


class Money(NamedTuple):
    """One amount as written: where, the words, the currency (None when only a multiplier says it
    is money: "1.2k"), and the value (None when it is written as money but cannot be read)."""

    start: int
    end: int
    text: str
    currency: str | None
    value: Decimal | None


class Amount(NamedTuple):
    start: int
    end: int
    text: str
    key: str  # "CNY 3500.00"


def money_in(text: str) -> list[Money]:
    """Every amount of money in ``text``, in order (see the module doc for the forms)."""
    found: list[Money] = []
    for m in _AMOUNT.finditer(text) if _may_hold_money(text) else ():
        read = _read(m)
        if read is not None and not _bare_count(m, text):
            currency, value = read
            found.append(Money(m.start(), m.end(), m.group().strip(), currency, value))
    if _PAID_HINT(text):
        found.extend(_paid(text, found))
        found.sort(key=lambda money: money.start)
    return found


# The figure itself: a Chinese numeral holding a unit, a number with a multiplier, or yuan and fen
# as a bill prints them ("多出来一笔4787.84").
_BARE_SUM = (
    rf"(?P<n>(?<![{CN_NUMERAL_CHARS}])[{CN_NUMERAL_CHARS}]*?[十拾百佰千仟万萬亿][{CN_NUMERAL_CHARS}]*+"
    rf"|(?<![A-Za-z0-9.]){_NUMBER}\s*+[kKwW千万](?![A-Za-z])"
    r"|(?<![A-Za-z0-9.,])[0-9]++\.[0-9]{2}(?![0-9]))"
)
# A figure with no currency where only money can stand: after a verb of paying or charging or a
# budget, ending its clause ("一共付了一万三", "多收了七千九", "显示扣款六千一", "退我一千二",
# "报价单上写的是四万八", "充了 9k", "预算也就六千四左右", "账单上多出来一笔4787.84").
# Its currency is the conversation's (None here).
# A Chinese numeral must hold a unit: "付了一" is not an amount.
_PAID = re.compile(
    r"(?:付了|交了|扣了我?|收了我?|充了|花了|退了我?|赔了我?|转了|扣款|扣费|退我|赔我|(?:报价|价格|金额|费用|写的)是"
    r"|预算(?:是|有|也就|就|大概|大约|差不多|在)?|一笔)\s*+"
    + _BARE_SUM
    + r"(?=\s*+(?:左右|上下)?(?:$|[,，。.!！?？;；~～)）]|[了吧啊呀呢吗]|进去|过去)|\s++[\u4e00-\u9fff])"
)
# After a word that names a sum, a figure with no currency is that sum whatever follows it, unless a
# measure word makes it a count: "差价三千六还没补给我", "押金两千一直没退" (not "余额三千六百个积分").
_MONEY_NOUN = re.compile(
    r"(?:差价|押金|定金|订金|尾款|余额|运费|服务费|手续费|违约金|保证金|年费|月费|会费|续费|货款|房租|退款|赔偿款?|补偿款)"
    r"(?:应该是|应该有|好像是|大概是|是|有|还有|一共|共|才|就|要|也就|大概)?\s*+"
    + _BARE_SUM
    # (a sum for a period is still one: "续费要六千五一年", 一年 read off in _paid)
    + r"(?:(?<=一)(?=[年月天周])|(?![个件次人天台张位条份本只双套年月日号分积点度]))"
)
_PAID_HINT = re.compile(
    "付了|交了|扣了|收了|充了|花了|退了|赔了|转了|扣款|退我|赔我|是|预算|一笔|差价|押金|定金|订金|尾款|余额|运费|费|货款|房租|退款|赔偿|补偿款"
).search


# 一 that starts a word after a figure (一直, 一起, 一定, 一下, …, 一年) is not the figure's last digit.
_YI_WORD_ENDS = frozenset("直起定样般下些点共会边再旦切年月天周")  # and a period: 一年, 一个月


def _paid(text: str, found: list[Money]) -> Iterator[Money]:
    matches = sorted([*_PAID.finditer(text), *_MONEY_NOUN.finditer(text)], key=lambda m: m.start("n"))
    for m in matches:
        start, end = m.span("n")
        words = m.group("n")
        if words.endswith("一") and text[end : end + 1] in _YI_WORD_ENDS:  # "押金两千一直没退": 两千
            words, end = words[:-1], end - 1
        if any(f.start < end and start < f.end for f in found):
            continue
        if words[-1] in "kKwW千万" and words[0].isdigit():
            number = words[:-1].strip().replace(",", "")
            value: Decimal | None = Decimal(number) * _multiplier(words[-1])
        elif words[0].isdigit():  # 4787.84
            value = Decimal(words)
        else:
            value = parse_chinese(words) if len(words) <= _MAX_NUMERAL_CHARS else None
        if value:
            yield Money(start, end, words, None, value)


# Every form of _AMOUNT holds a digit, a Latin letter (number words) or 元/圆/块: a text with none of
# them (most sentences) skips the big pattern, which would otherwise be tried at every character.
_may_hold_money = re.compile("[0-9A-Za-z元圆块]").search


# Figures the reader does not take as money that may still be money where money is expected: "块"
# read as a measure word ("2块硬盘"), "1.2k" before a noun; and a bare number closing its clause.
_MAYBE_MONEY = re.compile(
    rf"(?:[0-9][0-9,.]*+|[{CN_NUMERAL_CHARS}]++)\s*+块|[0-9][0-9,.]*+\s*+[kKwW万](?![A-Za-z])"
)
_BARE_FIGURE = re.compile(
    r"(?<![A-Za-z0-9.,\-/:])[0-9]++(?:\.[0-9]++)?+(?=\s*+(?:$|[,，。.!！?？;；]))(?<!\.)"
)


def maybe_money(text: str, start: int = 0) -> list[str]:
    """The words, from ``start`` on, that :func:`money_in` does not read as money but that may be
    money where an amount is expected (a refund request): ``2块``, ``8.9k``."""
    return [m.group() for m in _MAYBE_MONEY.finditer(text, start)]


def bare_figure(text: str, start: int = 0) -> str | None:
    """The first number with no currency that ends its clause, from ``start`` on (``退款 200``)."""
    found = _BARE_FIGURE.search(text, start)
    return found.group() if found else None


def amounts(text: str, *, currency: str | None = "CNY") -> Iterator[Amount]:
    """Every readable amount in ``text``, in order, with its canonical ``CUR 0.00`` key; an amount
    with no currency written takes ``currency`` (None: its key is the bare ``0.00``)."""
    for money in money_in(text):
        if money.value is not None:
            code = money.currency or currency
            key = f"{code} {money.value:.2f}" if code else f"{money.value:.2f}"
            yield Amount(money.start, money.end, money.text, key)


def _bare_count(m: re.Match[str], text: str) -> bool:
    # "1.2万用户", "8k分辨率": a multiplier with no currency, then a noun, counts things, not money.
    bare = m.group("n2") and not (m.group("post") or m.group("kuai"))
    return bool(bare) and _NOUN_NEXT.match(text, m.end("mult") if m.group("mult") else m.end()) is not None


_NOUN_NEXT = re.compile(rf"[\u4e00-\u9fffA-Za-z](?<![{_NOT_A_NOUN}])")


def canonical_amount(key: str) -> str:
    """A canonical key read again: the identity on ``CUR 0.00`` keys (normalisation is idempotent)."""
    currency, _, number = key.rpartition(" ")
    return f"{currency} {Decimal(number):.2f}" if currency else f"{Decimal(number):.2f}"


def _read(m: re.Match[str]) -> tuple[str | None, Decimal | None] | None:
    """(currency, value) of a match; None when it is not money at all (a bare number)."""
    currency: str | None
    if m.group("cn"):
        currency = {"美元": "USD", "欧元": "EUR"}.get(m.group("cpost") or "", "CNY")
        value = parse_chinese(m.group("cn")) if len(m.group("cn")) <= _MAX_NUMERAL_CHARS else None
        if value and m.group("cjiao"):
            value += Decimal(_CN_DIGITS[m.group("cjiao")]) / 10
        return currency, None if value == 0 else value
    if m.group("en"):
        return _CURRENCY_AFTER[m.group("epost").lower()], parse_english(m.group("en"))
    if m.group("pre"):
        currency, number, mult = _CURRENCY_BEFORE[m.group("pre").lower()], m.group("n1"), m.group("m1")
    else:
        number, mult = m.group("n2"), m.group("mult")
        if mult and mult in "wW" and m.start("mult") != m.end("n2"):
            return None  # "8854 W 22nd Street": a direction; 万 is written "1.2w", never apart
        if m.group("post"):
            currency = _CURRENCY_AFTER[m.group("post").lower()]
        elif m.group("kuai"):
            currency = "CNY"
        elif mult and mult in "kKwW万":  # "2.8k", "1.2万": money in a support chat, currency unsaid
            currency = "CNY" if mult in "wW万" else None
        else:
            return None
    digits = number.replace(",", "")
    if len(digits.partition(".")[0]) > _MAX_DIGITS or len(digits.partition(".")[2]) > _MAX_DIGITS:
        return currency, None
    try:
        value = Decimal(digits)
    except InvalidOperation:  # unreachable with _NUMBER; a regex edit must not crash a round
        return currency, None
    tenths = Decimal(m.group("jiao")) / 10 if m.group("jiao") and not mult else Decimal(0)
    return currency, value * _multiplier(mult) + tenths


def parse_english(words: str) -> Decimal | None:
    """The value of English number words ("two hundred and fifty" 250, "twelve hundred" 1200,
    "a hundred" 100); None if they do not make one number ("five four")."""
    total, current, last = 0, 0, ""
    for word in re.findall(r"[a-z]+", words.lower()):
        if word == "and" or (word in ("a", "an") and not last):
            last = last or "a"
            continue
        if word in _EN_ONES or word in _EN_TENS:
            value = _EN_ONES.get(word, _EN_TENS.get(word, 0))
            if last in ("one", "teen") or (last == "ten" and (word in _EN_TENS or value >= 10)):
                return None  # "five four", "twenty thirty", "twenty twelve"
            current += value
            last = "ten" if word in _EN_TENS else "teen" if value >= 10 else "one"
        else:
            scale = _EN_SCALES[word]
            if scale == 100:
                if last in ("hundred",) or (current >= 100 and current % 100 == 0):
                    return None
                current = (current or 1) * 100
            else:
                if current == 0 and last not in ("a", ""):
                    return None
                total += (current or 1) * scale
                current = 0
            last = "hundred" if scale == 100 else "scale"
    value = total + current
    return Decimal(value) if value > 0 else None


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

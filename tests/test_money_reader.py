"""The one money reader (memory/_money.py): every form, both languages, and what it must refuse.

The forms come from tests/support/money_forms.py, written without the reader's patterns; the sentences
around them from wide pools of filler. A failure prints the text that was misread.
"""

from __future__ import annotations

import random
from decimal import Decimal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from support.money_forms import chinese, english, written

from supportbot.memory._money import amounts, money_in, parse_chinese, parse_english
from supportbot.run._refunds import asked_amount

_ZH_BEFORE = (
    "年付刚买了两周,用不上,申请退款",
    "麻烦帮我退",
    "想退",
    "我要退款",
    "申请退款,金额",
    "帮我退一下,",
)
_ZH_AFTER = ("", ",谢谢", "。", ",麻烦尽快", "吧", "!")
_EN_BEFORE = ("I'd like a refund of", "please refund me", "I want my money back:", "can you refund", "refund")
_EN_AFTER = ("", ", thanks", ".", " please", " asap!")


@settings(max_examples=400)
@given(st.integers(0, 2**32), st.sampled_from(["zh", "en"]))
def test_every_written_form_reads_back_its_amount_and_currency(seed: int, language: str) -> None:
    rng = random.Random(seed)
    text, currency, value = written(rng, language=language)
    before, after = (_ZH_BEFORE, _ZH_AFTER) if language == "zh" else (_EN_BEFORE, _EN_AFTER)
    message = f"{rng.choice(before)}{'' if language == 'zh' else ' '}{text}{rng.choice(after)}"
    found = money_in(message)
    assert [(m.currency, m.value) for m in found] == [(currency, value)], message
    asked = asked_amount(message)
    assert (asked.amount, asked.currency, asked.words) == (value, currency, text), message


@settings(max_examples=300)
@given(st.integers(1, 99_999_999))
def test_chinese_numerals_in_both_writings_read_back(n: int) -> None:
    assert parse_chinese(chinese(n)) == n
    assert parse_chinese(chinese(n, formal=True)) == n
    assert parse_chinese(chinese(n, two="二")) == n


@settings(max_examples=300)
@given(st.integers(1, 999_999))
def test_english_number_words_read_back(n: int) -> None:
    assert parse_english(english(n)) == n
    assert [m.value for m in money_in(f"it was {english(n)} dollars")] == [n]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("年付刚买了两周,用不上,申请退款两百块", ("CNY", "200")),
        ("申请退款二百元", ("CNY", "200")),
        ("申请退款贰佰元", ("CNY", "200")),
        ("申请退款一千二百元", ("CNY", "1200")),
        ("申请退款 1.2k", (None, "1200")),
        ("想退 1.5k 元", ("CNY", "1500")),
        ("我要把 200 块退回来", ("CNY", "200")),
        ("refund me $37.18", ("USD", "37.18")),
        ("37 bucks back please", ("USD", "37")),
        ("I want forty dollars back", ("USD", "40")),
        ("refund USD 95", ("USD", "95")),
        ("refund twelve hundred dollars", ("USD", "1200")),
        ("refund a hundred bucks", ("USD", "100")),
    ],
)
def test_the_forms_the_refund_step_once_filed_in_full(text: str, expected: tuple[str | None, str]) -> None:
    asked = asked_amount(text)
    assert (asked.currency, asked.amount) == (expected[0], Decimal(expected[1]))


@settings(max_examples=200)
@given(
    st.integers(16, 5000),
    st.sampled_from(["申请退款 {} 元", "refund ${}", "退 {}块", "{} USD refund", "¥{}"]),
)
def test_any_number_of_digits_is_refused_never_raised(digits: int, template: str) -> None:
    text = template.format("9" * digits)
    asked = asked_amount(text)
    assert asked.amount is None and asked.unreadable, text
    assert list(amounts(text)) == []  # nothing unreadable is pinned as a fact either


@pytest.mark.parametrize(
    ("text", "unclear"),
    [
        ("申请退款 200 元,或者 300 元也行", ("200 元", "300 元")),
        ("refund 200", ("200",)),
        ("申请退款 200。", ("200",)),
    ],
)
def test_what_could_be_two_amounts_or_no_currency_is_unclear(text: str, unclear: tuple[str, ...]) -> None:
    asked = asked_amount(text)
    assert asked.amount is None and asked.unclear == unclear


@pytest.mark.parametrize(
    "text",
    [
        "年付买错了,申请退款",
        "申请退款,账单 INV-C0006-20261002",
        "退款 3 天了还没到账",
        "2块硬盘坏了,申请退款",
    ],
)
def test_no_amount_is_no_amount(text: str) -> None:
    asked = asked_amount(text)
    assert asked.amount is None and not asked.unclear and not asked.unreadable


def test_malformed_numerals_are_unreadable_not_guessed() -> None:
    assert asked_amount("申请退款三五元").unreadable == "三五元"
    assert asked_amount("refund five four dollars").unreadable == "five four dollars"

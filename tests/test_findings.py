"""Findings: typed records with one rendering, stored and reloaded as records."""

from __future__ import annotations

import warnings
from datetime import date
from decimal import Decimal

import pytest

from supportbot._records import MODEL_ONLY, REFUND_OUTCOMES, Finding, RefundBasis, RefundQuote
from supportbot.backend.demo._refund_policy import entitlement
from supportbot.i18n import catalog
from supportbot.reply._findings import basis_finding, basis_text, render, render_line
from supportbot.store._codec import decode_fields, encode_fields

NOT_ANNUAL = RefundBasis.of("not_annual", invoice="INV-1", paid_on="2026-10-02", paid="99.00")
BASIS = (
    "账单 INV-1 于 2026-10-02 实付 99.00 元,不是年付套餐的账单;按退款政策只有年付套餐可以退款,"
    "月付套餐可以随时取消自动续费。"
)


def test_each_finding_is_one_line_of_the_prompt_in_chinese() -> None:
    found = (
        Finding.of("subscription", plan="专业版", cycle="年付", status="active", renews_on="2026-10-01"),
        Finding.of(
            "invoice", id="INV-1", amount="99.00", currency="CNY", issued_on="2026-10-02", status="paid"
        ),
        basis_finding(NOT_ANNUAL, committed="20.00", refundable="0.00"),
        Finding.of("refund_nothing_left", invoice="INV-1"),
    )
    assert render(found).splitlines() == [
        "订阅:专业版年付,状态 active,续费日 2026-10-01",
        "账单 INV-1:99.00 CNY,2026-10-02,paid",
        f"退款计算:{BASIS}该账单此前的退款申请合计 20.00 元(含待审批的),尚可申请 0.00 元。",
        "退款申请不能受理:账单 INV-1 没有可退的金额。",
    ]


def test_every_finding_has_words_in_both_languages() -> None:
    """The catalogues hold one text per kind (tests/test_i18n.py checks that both languages have
    the same keys and fields)."""
    kinds = set(REFUND_OUTCOMES | MODEL_ONLY | {"subscription", "invoice"})
    assert kinds <= catalog("findings", "en").keys()
    nothing = Finding.of("refund_nothing_left", invoice="INV-1")
    assert (
        render_line(nothing, "en")
        == "Nothing can be refunded on invoice INV-1, so the request cannot be accepted."
    )
    assert render_line(nothing) == "退款申请不能受理:账单 INV-1 没有可退的金额。"
    account = Finding.of("subscription", plan="专业版", cycle="年付", status="active", renews_on="")
    assert render_line(account, "en") == "Subscription: 专业版 年付, status active"


def test_a_basis_is_worded_in_each_language_from_its_kind_and_values() -> None:
    basis = basis_finding(NOT_ANNUAL, committed="", refundable="0.00")
    assert render_line(basis) == f"退款计算:{BASIS}"
    assert render_line(basis, "en").startswith(
        "Refund computation: invoice INV-1 (99.00 CNY, paid on 2026-10-02)"
    )
    pro_rata = entitlement(
        invoice_id="INV-1",
        paid=Decimal("3588"),
        paid_on=date(2026, 10, 2),
        billing_cycle="年付",
        as_of=date(2026, 10, 15),
    ).basis
    assert basis_text(pro_rata, "en") == (
        "invoice INV-1 was paid 3588.00 CNY on 2026-10-02; 13 of its 365 days were used by 2026-10-15, "
        "so the 352 unused days come to 3460.21 CNY."
    )
    assert basis_text(pro_rata, "zh").endswith("按未使用的 352 天折算可退 3460.21 元。")


def test_a_basis_in_the_business_system_s_own_words_is_shown_as_written() -> None:
    custom = basis_finding(RefundBasis.text("按合同第 3 条不退。"), committed="", refundable="0.00")
    assert render_line(custom) == "退款计算:按合同第 3 条不退。"
    assert render_line(custom, "en") == "Refund computation: 按合同第 3 条不退。"
    # A kind the catalogue does not word shows its values as given, never raises.
    assert basis_text(RefundBasis.of("tiered", tier="B", rate="50%"), "en") == "tier: B; rate: 50%"
    # A finding stored before bases had kinds keeps the words it was stored with.
    stored = Finding.of("refund_basis", basis="按合同第 3 条不退。", committed="", refundable="0.00")
    assert render_line(stored, "en") == "Refund computation: 按合同第 3 条不退。"


def test_a_quote_with_a_basis_in_words_is_still_accepted_for_one_release() -> None:
    with pytest.warns(DeprecationWarning, match=r"RefundBasis\.text"):
        quote = RefundQuote("INV-1", "CNY", Decimal(1), Decimal(0), Decimal(0), basis="按合同不退。")  # type: ignore[arg-type]
    assert quote.basis == RefundBasis.text("按合同不退。")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        RefundQuote("INV-1", "CNY", Decimal(1), Decimal(0), Decimal(0), basis=NOT_ANNUAL)


def test_the_kinds_a_customer_is_never_shown_are_not_refund_outcomes() -> None:
    assert MODEL_ONLY and not MODEL_ONLY & REFUND_OUTCOMES
    filed = Finding.of("refund_filed", refund="R000007", amount="100.00", currency="CNY")
    assert render_line(filed).startswith("(已提交退款申请 R000007:100.00 CNY")


def test_findings_are_stored_and_reloaded_as_records() -> None:
    found = (
        Finding.of("refund_not_paid", invoice="INV-2", status="void"),
        Finding.of("refund_no_paid_invoice"),
    )
    assert decode_fields(encode_fields({"account_findings": found}))["account_findings"] == found

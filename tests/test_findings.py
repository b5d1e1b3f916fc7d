"""Findings: typed records with one rendering, stored and reloaded as records."""

from __future__ import annotations

from supportbot._records import MODEL_ONLY, REFUND_OUTCOMES, Finding
from supportbot.reply._findings import render, render_line
from supportbot.store._codec import decode_fields, encode_fields

BASIS = "账单 INV-1 于 2026-10-02 实付 99.00 元,不是年付套餐的账单;按退款政策只有年付套餐可以退款。"


def test_each_finding_is_one_line_of_the_prompt_in_chinese() -> None:
    found = (
        Finding.of("subscription", plan="专业版", cycle="年付", status="active", renews_on="2026-10-01"),
        Finding.of(
            "invoice", id="INV-1", amount="99.00", currency="CNY", issued_on="2026-10-02", status="paid"
        ),
        Finding.of("refund_basis", basis=BASIS, committed="20.00", refundable="0.00"),
        Finding.of("refund_nothing_left", invoice="INV-1"),
    )
    assert render(found).splitlines() == [
        "订阅:专业版年付,状态 active,续费日 2026-10-01",
        "账单 INV-1:99.00 CNY,2026-10-02,paid",
        f"退款计算:{BASIS}该账单此前的退款申请合计 20.00 元(含待审批的),尚可申请 0.00 元。",
        "退款申请不能受理:账单 INV-1 没有可退的金额。",
    ]


def test_english_where_it_is_known_and_the_prompt_s_words_elsewhere() -> None:
    nothing = Finding.of("refund_nothing_left", invoice="INV-1")
    assert render_line(nothing, english=True) == (
        "Nothing can be refunded on invoice INV-1, so the request cannot be accepted."
    )
    basis = Finding.of("refund_basis", basis=BASIS, committed="", refundable="0.00")
    assert render_line(basis, english=True).startswith(
        "Refund computation: invoice INV-1 (99.00 CNY, paid on"
    )
    custom = Finding.of("refund_basis", basis="按合同第 3 条不退。", committed="", refundable="0.00")
    assert render_line(custom, english=True) == render_line(custom) == "退款计算:按合同第 3 条不退。"
    account = Finding.of("subscription", plan="专业版", cycle="年付", status="active", renews_on="")
    assert render_line(account, english=True) == render_line(account) == "订阅:专业版年付,状态 active"


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

"""What the account lookup found, in words: the one rendering of :class:`~supportbot._records.Finding`.

The ``act`` step (and ``refunds.request``) report what they found as ``Finding`` records: a
kind and its fields. :func:`render` turns them into the lines a model reads in the prompt's
account-findings section (Chinese, as the rest of the prompt) or, for a reply to a customer who
wrote in English, into English. The offline model reads the records themselves
(``context`` attaches them to the prompt, see ``llm.base.SECTIONS``), so nothing parses the
prose back.

One kind's text is not ours: ``refund_basis`` quotes the business system's explanation of a
refund quote (``RefundQuote.basis``). Its English is known only for the demo policy's sentences
(``backend.refund_policy``); any other basis is shown as written.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

from .._records import Finding

__all__ = ["render", "render_line"]


def render(findings: Iterable[Finding], *, english: bool = False) -> str:
    """The findings as the lines of a prompt's account-findings section (or in English)."""
    return "\n".join(render_line(f, english=english) for f in findings)


def render_line(finding: Finding, *, english: bool = False) -> str:
    """One finding as text; in English where its English is known, else as in the prompt."""
    if english and (text := _english(finding)) is not None:
        return text
    return _chinese(finding)


def _chinese(finding: Finding) -> str:
    f = finding.fields
    match finding.kind:
        case "subscription":
            renews = f",续费日 {f['renews_on']}" if f["renews_on"] else ""
            return f"订阅:{f['plan']}{f['cycle']},状态 {f['status']}{renews}"
        case "invoice":
            return f"账单 {f['id']}:{f['amount']} {f['currency']},{f['issued_on']},{f['status']}"
        case "refund_basis":
            committed = (
                f"该账单此前的退款申请合计 {f['committed']} 元(含待审批的),尚可申请 {f['refundable']} 元。"
                if f["committed"]
                else ""
            )
            return f"退款计算:{f['basis']}{committed}"
        case "refund_filed":
            return (
                f"(已提交退款申请 {f['refund']}:{f['amount']} {f['currency']},待人工审批;"
                "审批结果由系统附在回复末尾,回复中不要提及审批状态。)"
            )
        case "refund_repeat":
            return (
                f"本工单已为账单 {f['invoice']} 提交过退款申请 {f['refunds']},"
                "不重复提交;审批结果以系统通知为准。"
            )
        case "refund_invalid_amount":
            return f"退款申请不能受理:申请的金额「{f['amount']}」无效,退款金额至少 0.01 元,且最多两位小数。"
        case "refund_over_limit":
            return (
                f"退款申请不能受理:申请的 {f['asked']} 元超过账单 {f['invoice']} "
                f"可退的 {f['refundable']} 元。"
            )
        case "refund_nothing_left":
            return f"退款申请不能受理:账单 {f['invoice']} 没有可退的金额。"
        case "refund_not_theirs":
            return f"账单 {f['invoices']} 不在该客户名下,不能受理退款。"
        case "refund_not_paid":
            return f"账单 {f['invoice']} 的状态是 {f['status']},不能退款。"
        case "refund_not_quoted":
            return f"账单 {f['invoice']} 不在该客户名下或未支付,不能受理退款。"
        case "refund_no_paid_invoice":
            return "没有可退款的已支付账单。"
        case "refund_confirm_amount":
            return (
                f"退款申请尚未提交:写的金额({f['written']})不能确定就是要退的金额,需要确认要退多少;"
                f"账单 {f['invoice']} 目前最多可退 {f['refundable']} "
                f"{'元' if f['currency'] == 'CNY' else f['currency']}。"
            )
        case "refund_confirm_invoice":
            return (
                f"退款申请尚未提交:名下有 {f['count']} 张已支付账单({f['invoices']}),"
                "需要确认要退哪一张、退多少。"
            )


def _english(finding: Finding) -> str | None:
    f = finding.fields
    match finding.kind:
        case "refund_basis":
            # The basis only: the English reply has never stated the earlier refunds (``committed``).
            return "".join(_basis_in_english(f["basis"])) or None
        case "refund_repeat":
            return (
                f"A refund request ({f['refunds']}) for invoice {f['invoice']} was already submitted in this "
                "ticket; it is not submitted twice."
            )
        case "refund_invalid_amount":
            return (
                f'"{f["amount"]}" is not an amount that can be refunded: a refund is at least 0.01, in '
                "whole cents."
            )
        case "refund_over_limit":
            return (
                f"The refund you asked for ({f['asked']} CNY) is more than the {f['refundable']} CNY "
                f"refundable on invoice {f['invoice']}, so it cannot be accepted."
            )
        case "refund_nothing_left":
            return f"Nothing can be refunded on invoice {f['invoice']}, so the request cannot be accepted."
        case "refund_no_paid_invoice":
            return "There is no paid invoice that could be refunded."
        case "refund_confirm_amount":
            return (
                f"No refund has been requested yet: we are not sure which amount you want refunded "
                f"({f['written']}); please confirm the amount. Invoice {f['invoice']} can be refunded up to "
                f"{f['refundable']} {f['currency']}."
            )
        case "refund_confirm_invoice":
            return (
                f"No refund has been requested yet: you have {f['count']} paid invoices ({f['invoices']}); "
                "please tell us which one, and how much you want refunded."
            )
        case _:
            return None


# The demo refund policy's explanations (backend.refund_policy.entitlement), in English.
_BASIS_IN_ENGLISH: tuple[tuple[re.Pattern[str], str], ...] = tuple(
    (re.compile(pattern), english)
    for pattern, english in (
        (
            r"^账单 (\S+) 于 (\S+) 实付 (\S+) 元,年付按 (\d+) 天计,至 (\S+) 已使用 (\d+) 天,"
            r"按未使用的 (\d+) 天折算可退 (\S+) 元。",
            "Refund computation: invoice {0} was paid {2} CNY on {1}; {5} of its {3} days were used by {4}, "
            "so the {6} unused days come to {7} CNY.",
        ),
        (
            r"^账单 (\S+) 于 (\S+) 实付 (\S+) 元,不是年付套餐的账单;",
            "Refund computation: invoice {0} ({2} CNY, paid on {1}) is not for an annual plan; only annual "
            "plans are refundable, and a monthly plan can be cancelled at any time.",
        ),
        (
            r"^账单 (\S+) 于 (\S+) 实付 (\S+) 元,至 (\S+) 已过 (\d+) 天,超过付款后 (\d+) 天",
            "Refund computation: invoice {0} was paid {2} CNY on {1}, {4} days before {3}: past the {5} days "
            "after payment in which a refund can be asked for.",
        ),
    )
)


def _basis_in_english(basis: str) -> list[str]:
    return [
        english.format(*m.groups()) for pattern, english in _BASIS_IN_ENGLISH if (m := pattern.search(basis))
    ]

"""What the account lookup found, in words: the one rendering of :class:`~supportbot._records.Finding`.

The ``act`` step (and ``refunds.request``) report what they found as ``Finding`` records: a
kind and its fields. :func:`render` words them from the ``findings`` catalogue: the lines a model
reads in the prompt's account-findings section, or a reply's lines in the customer's language.
The offline model reads the records themselves (``context`` attaches them to the prompt, see
``llm.base.SECTIONS``), so nothing parses the prose back.

A refund quote's basis (:class:`~supportbot._records.RefundBasis`) is a kind and its values,
worded by :func:`basis_text` in each language; a basis of kind ``text`` is the business system's
own words, shown as written.
"""

from __future__ import annotations

import string
from collections.abc import Iterable, Mapping

from .._records import Finding, RefundBasis
from ..i18n import Language, catalog

__all__ = ["basis_finding", "basis_text", "render", "render_line"]


def render(findings: Iterable[Finding], lang: Language = "zh") -> str:
    """The findings as the lines of a prompt's account-findings section, in ``lang``."""
    return "\n".join(render_line(f, lang) for f in findings)


def render_line(finding: Finding, lang: Language = "zh") -> str:
    """One finding as text in ``lang``."""
    texts = catalog("findings", lang)
    f = dict(finding.fields)
    match finding.kind:
        case "subscription":
            renews = texts["subscription.renews"].format(**f) if f["renews_on"] else ""
            return texts["subscription"].format(**f, renews=renews)
        case "refund_basis":
            committed = texts["refund_basis.committed"].format(**f) if f["committed"] else ""
            return texts["refund_basis"].format(basis=_basis_of_finding(f, lang), committed=committed)
        case "refund_confirm_amount":
            f["currency"] = texts.get(f"currency.{f['currency']}", f["currency"])
    return texts[finding.kind].format(**f)


def basis_text(basis: RefundBasis, lang: Language) -> str:
    """How a refund quote was computed, in ``lang``; a kind the catalogue does not word (or whose
    values it lacks) shows its values as the business system gave them."""
    template = catalog("findings", lang).get(f"basis.{basis.kind}")
    if template is not None and _names(template) <= basis.values.keys():
        return template.format(**basis.values)
    return basis.values.get("text") or "; ".join(f"{name}: {value}" for name, value in basis.values.items())


_FINDING_FIELDS = frozenset({"basis_kind", "committed", "refundable"})


def basis_finding(basis: RefundBasis, *, committed: str, refundable: str) -> Finding:
    """The ``refund_basis`` finding of a quote: the basis's kind and values beside the amounts."""
    values = {name: value for name, value in basis.values.items() if name not in _FINDING_FIELDS}
    return Finding.of(
        "refund_basis", **values, basis_kind=basis.kind, committed=committed, refundable=refundable
    )


def _basis_of_finding(fields: Mapping[str, str], lang: Language) -> str:
    # A finding stored before bases had kinds holds the business system's words under "basis".
    if "basis_kind" not in fields:
        return fields.get("basis", "")
    values = {name: value for name, value in fields.items() if name not in _FINDING_FIELDS}
    return basis_text(RefundBasis(fields["basis_kind"], values), lang)


def _names(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}

"""Mask personal data in text derived from conversations: phones, emails, ID cards and bank cards.

Raw turns keep what the customer wrote (``forget`` deletes them); everything *derived* from them
and kept longer or shown more widely (summaries, the pinned-facts ledger, ticket facts, profiles)
goes through :func:`mask_text` first, so a leaked profile cannot leak a card number.

What is masked, keeping a few characters so an agent can still tell two numbers apart:

* CN mobiles ``13812345678``, ``138 1234 5678``, with ``+86``/``0086``/``86`` → ``138****5678``
* North American numbers ``(212) 555-0187``, ``212.555.0187`` → ``(***) ***-0187``
* other international numbers written with ``+`` → ``+44 ** **** 0958``; CN landlines
  ``0571-88886666`` → ``0571-****6666`` (grouped, bracketed or spaced as the ledger reads them)
* emails → ``w***@example.com``
* CN resident ID numbers (18 characters, birth date inside, last may be X) → ``110***********1234``
* bank cards, 16–19 digits, plain or in groups of four → ``6222 **** **** 1234``

What is deliberately *not* masked: anything glued to letters (``INV-2026-0042``, ``B20260915001``,
``OD20240415008``, ``E3001``), amounts (``¥128.00``), dates, and digit runs shorter than a phone.
A 16–19 digit run right after a word naming a reference (订单号, 账单, invoice, refund …) is an
order number, not a card: shops such as Taobao use 18–19 digit order numbers, and masking them
would lose the one fact a follow-up needs. Phones and emails are masked even there.

The masks are idempotent (a masked form matches no pattern) and use ASCII ``*`` only.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence

from .._state import Turn

__all__ = ["Placeholders", "mask_summarizer", "mask_text"]

_NOT_BEFORE = r"(?<![A-Za-z0-9_+])"  # explicit ASCII: \w would also refuse CJK neighbours
_NOT_AFTER = r"(?![A-Za-z0-9_])"

_EMAIL = (
    r"(?<![A-Za-z0-9._%+-])(?P<email_local>[A-Za-z0-9][A-Za-z0-9._%+-]*)"
    r"@(?P<email_domain>[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*"
    r"\.[A-Za-z]{2,})"
)
# Region (6), birth date (8), sequence (3), check character: the date makes a random 18-digit run
# unlikely to pass for one, and one that does not falls through to the bank-card rule anyway.
_ID_CARD = (
    _NOT_BEFORE + r"(?P<idcard>[1-9][0-9]{5}(?:18|19|20)[0-9]{2}(?:0[1-9]|1[0-2])"
    r"(?:0[1-9]|[12][0-9]|3[01])[0-9]{3}[0-9Xx])" + _NOT_AFTER
)
_BANK_CARD = (
    _NOT_BEFORE + r"(?P<card>[0-9]{16,19}|[0-9]{4}(?P<sep>[ -])[0-9]{4}(?P=sep)[0-9]{4}(?P=sep)[0-9]{4}"
    r"(?:(?P=sep)[0-9]{1,3})?)" + _NOT_AFTER
)
_CN_MOBILE = (
    _NOT_BEFORE + r"(?P<cn_prefix>(?:\+|00)?86[ -]?)?"
    r"(?P<mobile>1[3-9][0-9](?:[ -]?[0-9]{4}){2})" + _NOT_AFTER
)
_INTL_PHONE = r"(?<![A-Za-z0-9_+])(?P<intl>\+[1-9][0-9]{0,2}(?:[ -]?[0-9]){6,14})" + _NOT_AFTER
# Every form the ledger reads as a landline (memory/_contacts.py): 0571-88886666, 0532-1082-8636,
# 0571-4879-481, (0532)9923640, (010) 8765 4321, 0512 4337288.
_LANDLINE = (
    r"(?<![A-Za-z0-9_+-])(?P<landline>(?:(?P<area>0[1-9][0-9]{1,2})-|\((?P<area_b>0[1-9][0-9]{1,2})\)\s?"
    r"|(?P<area_sp>0[1-9][0-9]{1,2}) )(?:[0-9]{7,8}|[0-9]{3,4}[ -][0-9]{4}|[0-9]{4}[ -][0-9]{3}))"
    + _NOT_AFTER
)
# North American numbers written without "+1": (212) 555-0187, 212.555.0187, 212-555-0187.
_US_PHONE = (
    r"(?<![A-Za-z0-9_+.-])(?P<us>(?:\([2-9][0-9]{2}\)\s?|[2-9][0-9]{2}[.-])[2-9][0-9]{2}[.-][0-9]{4})"
    + _NOT_AFTER
)

# Order matters where two forms start at the same place: a card before a mobile, +86 before the
# generic international form.
# The leading look-ahead changes no match (every form starts with one of these characters) but
# makes the scan about 5x faster on CJK text, where it rejects most positions at once. The
# look-behind after it changes no match either (every form refuses these characters before it,
# the email and landline forms a few more) and rejects the inside of ASCII words just as fast,
# instead of trying all six forms there: English text scans about 1.6x faster.
_PII = re.compile(
    "(?=[A-Za-z0-9+(])"
    + r"(?<![A-Za-z0-9_+])"
    + "(?:"
    + "|".join([_EMAIL, _ID_CARD, _BANK_CARD, _CN_MOBILE, _INTL_PHONE, _LANDLINE, _US_PHONE])
    + ")"
)

# A reference number's label just before a long digit run: then it is an order number.
_REFERENCE_LABEL = re.compile(
    r"(?:订单号|订单|账单号|账单|发票号|发票|工单号|工单|退款单号|退款单|退款号|单号|流水号|交易号|"
    r"order|bill|invoice|ticket|refund|case|transaction)"
    r"\s*(?:号码|编号|number|no\.?|id)?\s*(?:是|为|is)?\s*(?:[:：]\s*)?#?\s*$",
    re.IGNORECASE,
)
_LABEL_LOOKBACK = 24


def mask_text(text: str) -> str:
    """``text`` with every phone, email, ID-card and bank-card number masked."""
    if not text:
        return text
    return _PII.sub(lambda m: _mask_match(m, text), text)


def mask_summarizer(summarize: Callable[[str, Sequence[Turn]], str]) -> Callable[[str, Sequence[Turn]], str]:
    """A summarizer whose output is masked: wrap ``extractive_summarize`` or a model's with this."""

    def masked(previous_summary: str, turns: Sequence[Turn]) -> str:
        return mask_text(summarize(previous_summary, turns))

    return masked


def _mask_match(m: re.Match[str], text: str) -> str:
    if m.group("email_local") is not None:
        return f"{m.group('email_local')[0]}***@{m.group('email_domain')}"
    if m.group("idcard") is not None:
        return m.group() if _after_reference_label(text, m.start()) else _keep(m.group(), head=3, tail=4)
    if m.group("card") is not None:
        return m.group() if _after_reference_label(text, m.start()) else _keep(m.group(), head=4, tail=4)
    if m.group("mobile") is not None:
        return (m.group("cn_prefix") or "") + _keep(m.group("mobile"), head=3, tail=4)
    if m.group("intl") is not None:
        number = m.group("intl")
        code = re.match(r"\+[0-9]{1,3}(?=[ -])", number)
        head = len(code.group()) - 1 if code else 2
        return "+" + _keep(number[1:], head=head, tail=4)
    if m.group("us") is not None:
        return _keep(m.group("us"), head=0, tail=4)
    area = m.group("area") or m.group("area_b") or m.group("area_sp")
    return _keep(m.group("landline"), head=len(area), tail=4)


# -- placeholders: the model never sees personal data -------------------------------------------


class Placeholders:
    """Stable stand-ins for a ticket's personal data (``Settings.pii_placeholders``).

    Built from the ticket's own texts: each phone, email, ID or bank card number gets a
    placeholder by kind and order of first appearance (``[PHONE_1]``, ``[EMAIL_1]``), so the same
    ticket always maps the same value to the same placeholder, round after round. :meth:`hide`
    replaces the values in what goes to the model, :meth:`show` puts them back in what it returns;
    a placeholder the model made up is left as it wrote it (and the draft checks see it).
    """

    def __init__(self, texts: Sequence[str]) -> None:
        self._by_value: dict[str, str] = {}
        counts: dict[str, int] = {}
        for text in texts:
            for m in _PII.finditer(text) if text else ():
                value = m.group()
                if value in self._by_value or _kept_as_reference(m, text):
                    continue
                kind = _kind_of(m)
                counts[kind] = counts.get(kind, 0) + 1
                self._by_value[value] = f"[{kind}_{counts[kind]}]"
        self._by_placeholder = {v: k for k, v in self._by_value.items()}
        # Longest values first, so a number inside a longer one is not replaced piecemeal.
        self._values = sorted(self._by_value, key=len, reverse=True)
        self._hide = re.compile("|".join(map(re.escape, self._values))) if self._values else None
        self._show = re.compile(r"\[(?:PHONE|EMAIL|ID|CARD)_[0-9]+\]")

    def __bool__(self) -> bool:
        return bool(self._by_value)

    def hide(self, text: str) -> str:
        if self._hide is None or not text:
            return text
        return self._hide.sub(lambda m: self._by_value[m.group()], text)

    def show(self, text: str) -> str:
        if not self._by_placeholder or not text:
            return text
        return self._show.sub(lambda m: self._by_placeholder.get(m.group(), m.group()), text)


def _kind_of(m: re.Match[str]) -> str:
    if m.group("email_local") is not None:
        return "EMAIL"
    if m.group("idcard") is not None:
        return "ID"
    return "CARD" if m.group("card") is not None else "PHONE"


def _kept_as_reference(m: re.Match[str], text: str) -> bool:
    """An order number after its label looks like a card or an ID: mask_text keeps it, so do we."""
    return (m.group("idcard") is not None or m.group("card") is not None) and _after_reference_label(
        text, m.start()
    )


def _after_reference_label(text: str, start: int) -> bool:
    return _REFERENCE_LABEL.search(text[max(0, start - _LABEL_LOOKBACK) : start]) is not None


def _keep(value: str, *, head: int, tail: int) -> str:
    """``value`` with its digits (and a final X) masked, except the first ``head`` and last ``tail``."""
    positions = [i for i, ch in enumerate(value) if ch.isascii() and (ch.isdigit() or ch in "Xx")]
    hidden = (
        set(positions[head : len(positions) - tail])
        if len(positions) > head + tail
        else set(positions[head:])
    )
    return "".join("*" if i in hidden else ch for i, ch in enumerate(value))

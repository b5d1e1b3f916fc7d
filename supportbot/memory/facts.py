"""Exact facts pinned outside the summary: numbers, codes, amounts, dates, promises and requests.

A summary paraphrases, and a paraphrase may turn "INV-2026-0042" into "the invoice" or drop the
"reply within 3 working days" an agent promised ten turns ago. The ledger built here keeps those
verbatim, found by plain regular expressions so the same conversation always yields the same
ledger, with no model call and no I/O.

Kinds: ``id`` (order, bill, invoice, ticket, refund numbers), ``error_code``, ``amount`` (key like
``CNY 128.00``), ``date`` (key in ISO form, ``--MM-DD`` when the year is not given), ``promise``
(agent turns only) and ``request`` (customer turns only).
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import NamedTuple

from ..errors import InvalidInput
from ..state import Fact, Role, Turn
from .mask import mask_text

FACT_KINDS: tuple[str, ...] = ("id", "error_code", "amount", "date", "promise", "request")
FACT_LABELS_ZH: Mapping[str, str] = {
    "id": "单号",
    "error_code": "错误码",
    "amount": "金额",
    "date": "日期",
    "promise": "已承诺",
    "request": "客户诉求",
}
FACT_LABELS_EN: Mapping[str, str] = {
    "id": "Reference numbers",
    "error_code": "Error codes",
    "amount": "Amounts",
    "date": "Dates",
    "promise": "Promised",
    "request": "Customer asked",
}
SENTENCE_KINDS: frozenset[str] = frozenset({"promise", "request"})

# A promise or request is kept as its sentence; customers paste whole logs without punctuation,
# and one "sentence" must not be allowed to fill the prompt.
MAX_SENTENCE_CHARS = 160

_DIGITS = "[0-9]"  # not \d: that also matches full-width and other scripts' digits

# Speed, not meaning: a pattern whose look-behind comes first is tried at every character, so
# here the look-behind follows the first character (and checks the one before it), and patterns
# with alternatives start with a look-ahead naming every character a match can start with (under
# the same flags). Either way the regex engine skips the CJK text in between at once.

# -- ids and error codes ------------------------------------------------------------------------
_ERROR_CODE = re.compile(r"E(?<![A-Za-z0-9]E)[0-9]{3,5}(?![A-Za-z0-9])")  # = (?<![A-Za-z0-9])E[0-9]{3,5}...
_ERROR_CODE_AFTER_LABEL = re.compile(
    r"(?=[错报e])(?:错误码|错误代码|报错码|error\s+code)"
    r"\s*(?:是|为|is)?\s*[:：#]?\s*([A-Za-z]{0,4}[0-9]{3,6})(?![A-Za-z0-9])",
    re.IGNORECASE,
)
# INV-2026-0042, B20260915001, T000153: an upper-case prefix and at least four digits.
_PREFIXED_ID = re.compile(  # = (?<![A-Za-z0-9-])[A-Z]{1,4}-?[0-9]{4,}...
    r"[A-Z](?<![A-Za-z0-9-][A-Z])[A-Z]{0,3}-?[0-9]{4,}(?:-[0-9]+)*(?![A-Za-z0-9])"
)
# Bare digit runs are ids only right after a word that names one; otherwise they are phone
# numbers, quantities or timestamps.
_ID_AFTER_LABEL = re.compile(
    r"(?=[订账发工退单流obitrc])"
    r"(?:订单号|订单|账单号|账单|发票号|发票|工单号|工单|退款单号|退款单|退款号|单号|流水号|"
    r"order|bill|invoice|ticket|refund|case)"
    r"\s*(?:号码|编号|number|no\.?|id)?\s*(?:是|为|is)?\s*[:：#]?\s*([0-9]{5,})(?![0-9])",
    re.IGNORECASE,
)
_NOT_ID_PREFIXES = frozenset({"USD", "RMB", "CNY", "EUR", "HKD"})

# -- amounts ----------------------------------------------------------------------------------
_NUMBER = r"(?:[0-9]{1,3}(?:,[0-9]{3})+|[0-9]+)(?:\.[0-9]+)?"
_CURRENCY_BEFORE = {
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
# "块" alone is also a measure word ("2块硬盘"), so only "块钱" counts as money.
_CURRENCY_AFTER = {
    "元": "CNY",
    "块钱": "CNY",
    "RMB": "CNY",
    "CNY": "CNY",
    "人民币": "CNY",
    "USD": "USD",
    "美元": "USD",
    "dollars": "USD",
    "dollar": "USD",
    "EUR": "EUR",
    "欧元": "EUR",
}


def _alternation(symbols: Mapping[str, str]) -> str:
    return "|".join(re.escape(s) for s in sorted(symbols, key=len, reverse=True))


def _first_chars(symbols: Mapping[str, str]) -> str:
    return re.escape("".join(sorted({s[0] for s in symbols})))


# One pattern with both orders, so "20 USD 30 元" is read left to right as two amounts instead
# of "USD 30" being claimed by the currency-first form.
_AMOUNT = re.compile(
    rf"(?=[{_first_chars(_CURRENCY_BEFORE)}0-9])"
    rf"(?:(?P<pre>{_alternation(_CURRENCY_BEFORE)})\s*(?P<n1>{_NUMBER})(?P<w1>万)?"
    rf"|(?<![A-Za-z0-9.,])(?P<n2>{_NUMBER})\s*(?P<w2>万)?\s*(?P<post>{_alternation(_CURRENCY_AFTER)})(?![A-Za-z]))"
)

# -- dates ------------------------------------------------------------------------------------
_MONTHS = {
    "jan": 1,
    "feb": 2,
    "mar": 3,
    "apr": 4,
    "may": 5,
    "jun": 6,
    "jul": 7,
    "aug": 8,
    "sep": 9,
    "oct": 10,
    "nov": 11,
    "dec": 12,
}
_MONTH_NAME = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
# A year must not be the start of something longer ("Sept 15 2026-09-15" holds two dates).
_YEAR_TAIL = r"(?:,?\s+(?P<{name}>[0-9]{{4}})(?![0-9]|-[0-9]))?"
_DATE = re.compile(
    r"(?=[0-9A-Za-z])(?:"  # every form starts with a digit or a month name: lets the scan skip the rest
    r"(?<![0-9])(?P<cy>[0-9]{4})\s*年\s*(?P<cm>[0-9]{1,2})\s*月\s*(?P<cd>[0-9]{1,2})\s*[日号]"
    r"|(?<![A-Za-z0-9-])(?P<iy>[0-9]{4})(?P<sep>[-/.])(?P<im>[0-9]{1,2})(?P=sep)(?P<id>[0-9]{1,2})(?![0-9])"
    r"|(?<![0-9年])(?P<mm>[0-9]{1,2})\s*月\s*(?P<md>[0-9]{1,2})\s*[日号]"
    rf"|\b(?P<en1>{_MONTH_NAME})\.?\s+(?P<ed1>[0-9]{{1,2}})(?:st|nd|rd|th)?(?![0-9]){_YEAR_TAIL.format(name='ey1')}"
    rf"|(?<![0-9])(?P<ed2>[0-9]{{1,2}})(?:st|nd|rd|th)?\s+(?P<en2>{_MONTH_NAME})\b\.?{_YEAR_TAIL.format(name='ey2')})",
    re.IGNORECASE,
)

# -- promises and requests ----------------------------------------------------------------------
_PROMISE = re.compile(
    r"(?=[我本同工专会将稍已为wi])(?:"
    r"(?:我们|我|本人|同事|工程师|专员)(?:这边)?(?:不)?(?:会|将|保证|承诺)|会在|将在|会于|将于|稍后(?:会|将)"
    r"|(?:已|已经)(?:为您|帮您|给您)?(?:申请|提交|登记|记录|安排|升级|转交)|为您(?:安排|申请|处理|跟进)|工作日内"
    r"|\b(?:we|i)(?:'ll|\s+will|\s+shall|\s+are\s+going\s+to|\s+am\s+going\s+to|\s+promise)\b"
    r"|\bwill\s+(?:reply|respond|refund|get\s+back|follow\s+up|send|contact|process|escalate|credit)\b"
    r"|\bwithin\s+[0-9]+\s+(?:business\s+|working\s+)?(?:days?|hours?)\b"
    r"|\b(?:i|we)(?:'ve|\s+have)\s+(?:filed|submitted|escalated|logged|scheduled|issued)\b)",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"(?=[希请麻能可帮给提我需要pcwirh])(?:"
    r"希望|请|麻烦|能不能|能否|可不可以|可以(?:帮|给|把)|帮我|帮忙|给我|提醒我|我想|我要|我需要|需要你们|要求"
    r"|\bplease\b|\b(?:could|can|would|will)\s+you\b|\bi(?:'d|\s+would)\s+like\b|\bi\s+(?:want|need)\b"
    r"|\bremind\s+me\b|\bhelp\s+me\b)",
    re.IGNORECASE,
)
_SENTENCE_END = re.compile(r"(?=[。！？!?；;\s])(?:[。！？!?；;\n]+|(?<=[.])\s+)")
_CJK = r"\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
_SPACE_NEXT_TO_CJK = re.compile(rf"(?<=[{_CJK}])\s+|\s+(?=[{_CJK}])")
_TRAILING_PUNCT = re.compile(r"[\s。！？!?；;.,，、…]+$")


# Every id, error code, amount and date holds an ASCII digit (each pattern requires a [0-9], which
# matches no other character, case-insensitive or not): a text without one is not scanned for them.
_has_digit = re.compile("[0-9]").search


class _Found(NamedTuple):
    start: int
    kind: str
    value: str
    key: str


def extract(turn: Turn, index: int, *, mask: bool = True) -> list[Fact]:
    """Facts stated in ``turn``, in order of appearance, each once; ``index`` is its position.

    With ``mask`` (the default, as ``Settings.mask_pii``) the turn is masked before it is read, so
    no value or key in the ledger holds a phone, email, ID-card or bank-card number.
    """
    text = mask_text(turn.content) if mask else turn.content
    found = sorted(_scan(text, turn.role), key=lambda f: (f.start, FACT_KINDS.index(f.kind)))
    seen: set[tuple[str, str]] = set()
    facts: list[Fact] = []
    for item in found:
        if (item.kind, item.key) not in seen:
            seen.add((item.kind, item.key))
            facts.append(Fact(kind=item.kind, value=item.value, key=item.key, turn=index))
    return facts


def update_ledger(
    ledger: tuple[Fact, ...], turns: Sequence[Turn], start: int, *, mask: bool = True
) -> tuple[Fact, ...]:
    """``ledger`` plus the new facts of ``turns[start:]``, deduplicated by ``(kind, key)``.

    A fact keeps the first turn it appeared in, and the order is stable: existing facts first,
    then new ones in order of appearance, so rescanning a turn is harmless.
    """
    if start < 0:
        raise InvalidInput(f"update_ledger start must be >= 0, got {start}")
    found = [fact for index in range(start, len(turns)) for fact in extract(turns[index], index, mask=mask)]
    if not found:  # most turns state no fact: then the (long) ledger need not be indexed
        return ledger
    seen = {(fact.kind, fact.key) for fact in ledger}
    added: list[Fact] = []
    for fact in found:
        if (fact.kind, fact.key) not in seen:
            seen.add((fact.kind, fact.key))
            added.append(fact)
    return ledger + tuple(added) if added else ledger


_VALUES_PER_PIECE = 16


def render_facts(facts: Sequence[Fact], *, labels: Mapping[str, str] = FACT_LABELS_ZH) -> str:
    """A compact bullet list for the prompt, one line per kind; sentences get a line each."""
    return "".join(fact_pieces(facts, labels=labels))


def fact_pieces(facts: Sequence[Fact], *, labels: Mapping[str, str] = FACT_LABELS_ZH) -> list[str]:
    """:func:`render_facts`'s text in pieces, so that counting it (``tokens.count_joined``) as the
    ledger grows recounts only what changed: a line per kind, cut after every ``_VALUES_PER_PIECE``
    values (the ledger only grows, so a new value changes the line's last piece), and a piece per
    sentence."""
    by_kind: dict[str, list[Fact]] = {kind: [] for kind in FACT_KINDS}
    for fact in facts:  # one pass: this runs for every prompt, over a ledger that only grows
        by_kind.setdefault(fact.kind, []).append(fact)
    pieces: list[str] = []
    for kind in [*FACT_KINDS, *sorted(by_kind.keys() - set(FACT_KINDS))]:
        items = by_kind[kind]
        if not items:
            continue
        head = ("\n" if pieces else "") + f"- {labels.get(kind, kind)}:"
        if kind in SENTENCE_KINDS:
            pieces.append(head)
            pieces.extend(f"\n  - {f.value}" for f in items)
        else:
            shown = [_display(f) for f in items]
            for start in range(0, len(shown), _VALUES_PER_PIECE):
                lead = f"{head} " if start == 0 else ", "
                pieces.append(lead + ", ".join(shown[start : start + _VALUES_PER_PIECE]))
    return pieces


def split_sentences(text: str) -> list[str]:
    """Non-empty sentences of ``text``, split on Chinese and English sentence ends and newlines."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def normalize_sentence(text: str) -> str:
    """The dedup key of a sentence: case, spacing around CJK and trailing punctuation ignored."""
    collapsed = " ".join(text.split())
    return _TRAILING_PUNCT.sub("", _SPACE_NEXT_TO_CJK.sub("", collapsed)).lower()


def mentions_fact(text: str, *, role: Role | None = None) -> bool:
    """Whether ``text`` holds a fact; with ``role=None`` both promises and requests count."""
    exact = (_PREFIXED_ID, _ID_AFTER_LABEL, _ERROR_CODE, _AMOUNT, _DATE)
    if _has_digit(text) and any(p.search(text) for p in exact):
        return True
    if role != "customer" and _PROMISE.search(text):
        return True
    return role != "agent" and _REQUEST.search(text) is not None


def clip(text: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def _scan(text: str, role: Role) -> Iterator[_Found]:
    if _has_digit(text):
        yield from _error_codes(text)
        yield from _ids(text)
        yield from _amounts(text)
        yield from _dates(text)
    if role == "agent":
        yield from _sentences(text, "promise", _PROMISE)
    elif role == "customer":
        yield from _sentences(text, "request", _REQUEST)


def _error_codes(text: str) -> Iterator[_Found]:
    for m in _ERROR_CODE.finditer(text):
        yield _Found(m.start(), "error_code", m.group(), m.group())
    for m in _ERROR_CODE_AFTER_LABEL.finditer(text):
        yield _Found(m.start(1), "error_code", m.group(1), m.group(1).upper())


def _ids(text: str) -> Iterator[_Found]:
    for m in _PREFIXED_ID.finditer(text):
        value = m.group()
        prefix = re.match(r"[A-Z]+", value)
        if _ERROR_CODE.fullmatch(value) or (prefix and prefix.group() in _NOT_ID_PREFIXES):
            continue
        yield _Found(m.start(), "id", value, value)
    for m in _ID_AFTER_LABEL.finditer(text):
        yield _Found(m.start(1), "id", m.group(1), m.group(1))


def _amounts(text: str) -> Iterator[_Found]:
    for m in _AMOUNT.finditer(text):
        if m.group("pre"):
            currency, number, wan = _CURRENCY_BEFORE[m.group("pre")], m.group("n1"), m.group("w1")
        else:
            currency, number, wan = _CURRENCY_AFTER[m.group("post")], m.group("n2"), m.group("w2")
        try:
            value = Decimal(number.replace(",", ""))
        except InvalidOperation:  # unreachable with _NUMBER, kept so a regex edit cannot crash a round
            continue
        if wan:
            value *= 10_000
        yield _Found(m.start(), "amount", m.group().strip(), f"{currency} {value:.2f}")


def _dates(text: str) -> Iterator[_Found]:
    for m in _DATE.finditer(text):
        g = m.groupdict()
        if g["cy"]:
            key = _iso(g["cy"], g["cm"], g["cd"])
        elif g["iy"]:
            key = _iso(g["iy"], g["im"], g["id"])
        elif g["mm"]:
            key = _iso(None, g["mm"], g["md"])
        elif g["en1"]:
            key = _iso(g["ey1"], str(_MONTHS[g["en1"][:3].lower()]), g["ed1"])
        else:
            key = _iso(g["ey2"], str(_MONTHS[g["en2"][:3].lower()]), g["ed2"])
        if key is not None:
            yield _Found(m.start(), "date", m.group().strip(), key)


def _iso(year: str | None, month: str, day: str) -> str | None:
    """``YYYY-MM-DD``, or ISO 8601's ``--MM-DD`` without a year; None for impossible dates."""
    try:
        # A leap year stands in for a missing one, so "2月29日" is accepted.
        when = date(int(year) if year else 2000, int(month), int(day))
    except ValueError:
        return None
    if year is None:
        return f"--{when:%m-%d}"
    return when.isoformat() if 1900 <= when.year <= 2100 else None


def _sentences(text: str, kind: str, marker: re.Pattern[str]) -> Iterator[_Found]:
    # A sentence is a piece of the text with a non-word character (or nothing) on either side, and
    # the markers have no anchor or look-behind: what a marker matches in a sentence, it matches in
    # the whole text. So a text it does not match is not cut into sentences.
    if not marker.search(text):
        return
    offset = 0
    for piece in _SENTENCE_END.split(text):
        start = text.find(piece, offset)
        offset = start + len(piece)
        sentence = piece.strip()
        if sentence and marker.search(sentence):
            value = clip(sentence)
            yield _Found(start, kind, value, normalize_sentence(value))


def _display(fact: Fact) -> str:
    # Normalized amounts read unambiguously ("¥" is also the yen sign); a yearless date reads
    # better as written than as "--09-15".
    if fact.kind == "amount" or (fact.kind == "date" and not fact.key.startswith("--")):
        return fact.key
    return fact.value

"""Exact facts pinned outside the summary, in the forms customers write them.

A summary paraphrases, and a paraphrase may turn "INV-2026-0042" into "the invoice" or drop the
"reply within 3 working days" an agent promised ten turns ago. The ledger built here keeps those
exactly, found by plain patterns so the same conversation always yields the same ledger, with no
model call and no I/O. Each fact keeps the words as written (``value``) beside a canonical form
(``key``): amounts as ``CNY 3500.00`` (:mod:`.numbers`), dates in ISO form with relative ones
resolved against the turn's own time (:mod:`.dates`), ids and codes case-folded to upper case,
phones as digits, emails lower-cased (:mod:`.contacts`).

Kinds: ``id``, ``error_code``, ``amount``, ``date``, ``phone``, ``email``, ``address``, ``person``
(name and role), ``plan``, ``status`` (a yes/no fact: ``收到退款`` = 是/否), ``promise`` (agent
turns), ``promise_reported`` (a promise the customer says they were given), ``request`` (customer
turns; politeness is not a request).

**Supersession.** A fact may name its ``subject`` (``升级费``, ``续费日``, ``收到退款``). A later
fact of the same kind and subject with another value supersedes the current one; so does a fact
written as a correction (``不对,应该是 1860 元``) of the latest one of its kind, or of the value the
turn names as wrong (``不是11月24号,是2/21``), or of the id it types again with a typo fixed
(``正确的是1Z87327004``), or of the amount or day it retypes with one digit changed (before the
latest value of its subject: ``the charge was actually $48317`` after ``$48,377``). The ledger
stays append-only: the new fact records the position of the one it replaces (``supersedes``).

What a text holds is read by ``_typed`` (the typed values) and ``_sentences`` (the sentence kinds
and the floor); this module makes facts of them and keeps the ledger current.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from decimal import Decimal
from typing import Literal, NamedTuple, get_args

from .._state import Fact, Role, Turn
from ..errors import InvalidInput
from ..i18n._prompts import fact_labels
from ._mask import mask_text
from ._money import money_in
from ._sentences import (
    CITED,
    SENTENCE_KINDS,
    Found,
    details_in,
    normalize_sentence,
)
from ._typed import (
    CJK_CHAR,
    CORRECTION,
    NEGATION,
    PLURAL_SUBJECTS,
    SAYS_WRONG_AFTER,
    currency_of,
    is_negated,
    scan,
)

FactKind = Literal[
    "id",
    "error_code",
    "amount",
    "date",
    "phone",
    "email",
    "address",
    "person",
    "plan",
    "status",
    "promise",
    "promise_reported",
    "request",
    "detail",
]
FACT_KINDS: tuple[FactKind, ...] = get_args(FactKind)
# Each kind's label in a prompt and on a screen, from the prompt catalogue (i18n/prompt.*.json).
FACT_LABELS_ZH: Mapping[str, str] = fact_labels("zh")
FACT_LABELS_EN: Mapping[str, str] = fact_labels("en")
OPERATOR = "operator"  # the role of a fact an operator corrected or retracted (run/_corrections.py)
# Exact values: the ledger's first rank, never left out while anything else could go instead.
EXACT_KINDS: frozenset[str] = frozenset({"id", "amount", "date", "error_code", "phone", "email"})


def extract(turn: Turn, index: int, *, mask: bool = True, plans: Sequence[str] = ()) -> list[Fact]:
    """Facts stated in ``turn``, in order of appearance, each once; ``index`` is its position.

    With ``mask`` (the default, as ``Settings.mask_pii``) the turn is masked before it is read, so
    no value or key in the ledger holds a full phone, email, ID-card or bank-card number: phones
    and emails are pinned in their masked forms. ``plans`` is the backend's plan catalogue, if any.
    """
    return [said.fact for said in _extract(turn, index, mask=mask, plans=plans)]


class _Said(NamedTuple):
    """A fact as a turn states it: whether as a correction, and of which refused value."""

    fact: Fact
    correction: bool
    refused: str = ""  # "不是 11月24号,是 2/21": the key of the value the turn says is wrong
    # Owned as one's own slip ("scratch that, the charge was actually $230", "我写错了"): it fixes
    # the speaker's latest value of the kind even where it names another subject than that one.
    retracting: bool = False


def _extract(
    turn: Turn, index: int, *, mask: bool, plans: Sequence[str], currency: str | None = None
) -> list[_Said]:
    text = mask_text(turn.content) if mask else turn.content
    if turn.role == "agent" and "[KB-" in text:
        # An article's citation (and its link) is the reply's reference, not a fact the agent
        # gave: it is not pinned as an id or an address, nor kept in a promise's words. Read
        # without it, a reply in Chinese often holds no Latin letter or digit, and the patterns
        # for those are not tried at all.
        text = CITED.sub("", text)
    scanned = list(scan(text, turn.role, turn.created_at, plans, currency_of(text, currency), negated=True))
    codes = {f.start for f in scanned if f.kind == "error_code"}
    # A code reported as an error ("fails with NET-6519") is not also an id, and one code read by
    # two patterns ("报错503 service unavailable") is one fact: the one that read more of it.
    # An id or code after 不是/not is the wrong one, named to be refused: "order 3EL7TK9Z, not 3EL7TK2Z".
    scanned = [
        f._replace(negated=True) if f.kind in _RETYPED_KINDS and is_negated(text, f.start) else f
        for f in scanned
    ]
    typed = [
        f
        for f in scanned
        if not f.negated and not (f.kind == "id" and f.start in codes) and not _read_longer(f, scanned)
    ]
    refused = [f for f in scanned if f.negated]
    if turn.role == "customer":
        typed.extend(details_in(text, scanned))
    found = sorted(typed, key=lambda f: (f.start, FACT_KINDS.index(f.kind)))
    seen: set[tuple[str, str, str]] = set()
    facts: list[_Said] = []
    for item in found:
        if (item.kind, item.key, item.subject) not in seen:
            seen.add((item.kind, item.key, item.subject))
            fact = Fact(item.kind, item.value, item.key, index, item.subject, turn.role, None)
            wrong = _refused_beside(text, item, refused, found) or _refused_token(text, item)
            retracting = (
                item.correction
                and _SLIP.search(text, max(0, item.start - _SLIP_REACH), item.start) is not None
            )
            facts.append(_Said(fact, item.correction or bool(wrong), wrong, retracting))
    if any(said.correction for said in facts):
        # "不是四万九,是¥49400", "contract 5479934, not 5879934": the refusal alone says nothing
        # the correction does not (its note names the value it replaced).
        facts = [
            said
            for said in facts
            if not (said.fact.kind == "detail" and _ONLY_REFUSAL.fullmatch(said.fact.value))
        ]
    return facts


# Words that take back what one just said, unlike "should be" or "改成" (which may ask for a change).
_SLIP = re.compile(
    r"scratch\s+that|i\s+mistyped|\btypo\b|my\s+(?:mistake|bad)|[说写打记看]错了", re.IGNORECASE
)
_SLIP_REACH = 48  # characters before the value: "Scratch that, the charge was actually "


# A clause that only names a value as the wrong one.
_ONLY_REFUSAL = re.compile(
    r"(?:而)?不是\s*\S{1,12}|(?:not|isn'?t|wasn'?t)\s+(?:the\s+)?\S{1,40}", re.IGNORECASE
)
# A token named as the wrong one beside a value no pattern reads on its own: "contract 5479934,
# not 5879934" (a bare number is an id only after a label), "return 3G5GHDKS, not 9G5GHDKS".
_REFUSED_TOKEN = re.compile(
    NEGATION
    + r"\s*(?:the\s+)?#?(?P<token>(?=[0-9A-Za-z_-]*[0-9])[0-9A-Za-z][0-9A-Za-z_-]{2,38})(?![0-9A-Za-z_-])",
    re.IGNORECASE,
)


# A bare figure refused beside an amount: "不是83.26,是86 元" (a figure with no currency is read as
# money only where a verb or a label says so, and 不是 does not).
_REFUSED_FIGURE = re.compile(
    NEGATION + r"\s*(?:the\s+)?(?P<figure>[0-9]{1,9}(?:\.[0-9]{1,2})?)(?![0-9A-Za-z.%])", re.IGNORECASE
)


def _refused_token(text: str, item: Found) -> str:
    """The id-like token the text refuses right beside ``item`` (an id or a code), upper-cased
    like an id's key, or the bare figure it refuses beside an amount, as a key in that amount's
    currency; "" if none."""
    if item.kind in _RETYPED_KINDS:
        tokens = [m.group("token").upper() for m in _REFUSED_TOKEN.finditer(_around(text, item))]
    elif item.kind == "amount":
        currency = item.key.rpartition(" ")[0]
        figures = (m.group("figure") for m in _REFUSED_FIGURE.finditer(_around(text, item)))
        tokens = [f"{currency} {Decimal(f):.2f}".lstrip() for f in figures]
    else:
        return ""
    return next((t for t in tokens if t != item.key), "")


def _around(text: str, item: Found) -> str:
    """The text within ``_REFUSAL_REACH`` of ``item``, in its sentence."""
    first = max(0, item.start - _REFUSAL_REACH)
    last = item.start + len(item.value)
    ends = list(_SENTENCE_END.finditer(text, first, item.start))
    first = ends[-1].end() if ends else first
    after = _SENTENCE_END.search(text, last, last + _REFUSAL_REACH)
    return text[first : after.start() if after else last + _REFUSAL_REACH]


def _read_longer(item: Found, scanned: Sequence[Found]) -> bool:
    """Whether another error code found in ``scanned`` covers ``item``'s text and more."""
    if item.kind != "error_code":
        return False
    end = item.start + len(item.value)
    return any(
        f.kind == "error_code"
        and f.start <= item.start
        and f.start + len(f.value) >= end
        and len(f.value) > len(item.value)
        for f in scanned
    )


# How far apart a refused value and its replacement may stand: "不是11月24号,是2/21" (one clause
# each), "it's $45, not $54", "not the 3rd but the 5th" and "the 6th of December, not 3 January".
_REFUSAL_REACH = 32


def _refused_beside(text: str, item: Found, refused: Sequence[Found], found: Sequence[Found]) -> str:
    """The key of the value of ``item``'s kind that the text refuses right beside it, in its
    sentence, if any ("不是2/23,是9/18。发票是上星期一开的" refuses nothing beside 上星期一). A
    refusal replaces one value, the one of the kind nearest it: "我12月20号要出差,…,不是2026.02.12,
    是6/25" refuses nothing beside 12月20号."""
    near = [
        f
        for f in refused
        if f.kind == item.kind
        and abs(f.start - item.start) <= _REFUSAL_REACH
        and not _SENTENCE_END.search(text, min(f.start, item.start), max(f.start, item.start))
    ]
    if not near:
        return ""
    wrong = min(near, key=lambda f: abs(f.start - item.start))
    distance = abs(wrong.start - item.start)
    # ``found`` is in text order: only the values within ``distance`` of the refusal are looked at,
    # so a text of many refusals costs no more per value than one
    lo = bisect.bisect_left(found, wrong.start - distance + 1, key=lambda f: f.start)
    hi = bisect.bisect_left(found, wrong.start + distance, key=lambda f: f.start)
    if any(f.kind == item.kind and f is not item for f in found[lo:hi]):
        return ""
    return wrong.key


_SENTENCE_END = re.compile(r"[。！？!?\n]|\.\s")  # not ；: "不是2/23；是9/18" is one thought


def update_ledger(
    ledger: tuple[Fact, ...],
    turns: Sequence[Turn],
    start: int,
    *,
    mask: bool = True,
    plans: Sequence[str] = (),
) -> tuple[Fact, ...]:
    """``ledger`` plus the new facts of ``turns[start:]``, with supersession (see the module doc).

    A fact already current (same kind and key) is not added again, so rescanning a turn is
    harmless; the order is stable: existing facts first, then new ones in order of appearance.
    """
    return _updated(ledger, turns, start, mask=mask, plans=plans, extract=_extract)


def ledger_of_lines(turns: Sequence[Turn]) -> tuple[Fact, ...]:
    """``update_ledger((), turns, 0, mask=False)`` for texts that come back call after call (a
    summary's lines, each round): each text is scanned once while it stays in a small memo."""
    return _updated((), turns, 0, mask=False, plans=(), extract=_extract_remembered)


def forget_cached() -> None:
    """Drop the memo of scanned lines (customer words among them), after a customer is forgotten."""
    _extract_text.cache_clear()


def _extract_remembered(
    turn: Turn, index: int, *, mask: bool, plans: Sequence[str], currency: str | None = None
) -> list[_Said]:
    said = _extract_text(turn.content, turn.role, turn.created_at, mask, tuple(plans), currency)
    return [s._replace(fact=dataclasses.replace(s.fact, turn=index)) for s in said]


@functools.lru_cache(maxsize=512)  # a summary has tens of lines; a few bots' worth fit
def _extract_text(
    content: str, role: Role, when: datetime | None, mask: bool, plans: tuple[str, ...], currency: str | None
) -> tuple[_Said, ...]:
    turn = Turn(role=role, content=content, created_at=when)
    return tuple(_extract(turn, 0, mask=mask, plans=plans, currency=currency))


def _updated(
    ledger: tuple[Fact, ...],
    turns: Sequence[Turn],
    start: int,
    *,
    mask: bool,
    plans: Sequence[str],
    extract: Callable[..., list[_Said]],
) -> tuple[Fact, ...]:
    if start < 0:
        raise InvalidInput(f"update_ledger start must be >= 0, got {start}")
    found = []
    currency = conversation_currency(ledger)
    for index in range(start, len(turns)):
        pairs = extract(turns[index], index, mask=mask, plans=plans, currency=currency)
        currency = conversation_currency([said.fact for said in pairs]) or currency
        found += pairs
    # Most turns state no fact and correct none: then the (long) ledger need not be indexed. A
    # correction may retype an id no pattern reads on its own ("正确的是ct_vllnyqt": no digit).
    if not found and not any(_may_correct(t) for t in turns[start:]):
        return ledger
    book = _Book(ledger)
    for said in found:
        book.add(*said)
    for index in range(start, len(turns)):
        if turns[index].role == "customer":
            for replaced, fact in list(book.part_corrections(turns[index], index, mask=mask)):
                book.replace(replaced, fact)
            for replaced, fact in list(book.retyped(turns[index], index, mask=mask)):
                book.replace(replaced, fact)
    return book.facts if len(book.facts) > len(ledger) else ledger


def _may_correct(turn: Turn) -> bool:
    """Whether a customer turn says it corrects something (what ``part_corrections`` and
    ``retyped`` look for)."""
    return turn.role == "customer" and _says_it_corrects(turn.content)


def _says_it_corrects(text: str) -> bool:
    """Whether ``text`` has words of a correction, a refusal (不是, not) or a mistake owned after
    the value ("it's 453259, I swapped two digits")."""
    return bool(CORRECTION.search(text) or _REFUSAL.search(text) or SAYS_WRONG_AFTER.search(text))


# A correction of part of a value: "不好意思,是208,不是203", "sorry, it's 4B, not 4D", "不是515,是155".
# The part may carry its unit: "是751室不是715室".
_PART_UNIT = "[室号栋楼层座幢]?"
_PART_CORRECTION = re.compile(
    rf"(?:是|is|it'?s|should\s+be|\b(?:apartment|apt|unit|suite|ste|room)\.?\s*\#?)\s*(?P<new>[0-9A-Za-z-]{{1,10}}){_PART_UNIT}\s*[,，]?\s*(?:不是|而不是|not)\s*(?P<old>[0-9A-Za-z-]{{1,10}})(?![0-9A-Za-z])"
    rf"|(?:不是|not)\s*(?P<old2>[0-9A-Za-z-]{{1,10}}){_PART_UNIT}\s*[,，]?\s*(?:而是|是|but|it'?s)\s*(?P<new2>[0-9A-Za-z-]{{1,10}})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_PART_KINDS = ("address", "id", "detail")
# A correction that names the part and gives only the new value: "门牌号说错了,应该是1041",
# "the apartment number is wrong, it's 12C". The part is the address's last number.
_NAMED_PART_CORRECTION = re.compile(
    r"(?:门牌号?|房间号|房号|室号|楼号|单元号)(?:说错了|写错了|填错了|错了|有误)[,，]?\s*(?:应该是|应为|是|改成|改为)\s*"
    r"(?P<new>[0-9A-Za-z-]{1,10})(?![0-9A-Za-z])"
    r"|\b(?:apartment|apt|unit|suite|room|door|house)\s+(?:number\s+|no\.?\s+|#\s*)?(?:is\s+|was\s+)?wrong[,.;]?\s*"
    r"(?:it'?s|it\s+should\s+be|should\s+be|it\s+is)\s+(?:#\s*)?(?P<new2>[0-9A-Za-z-]{1,10})(?![0-9A-Za-z])"
    # In a turn that says it corrects ("更正一下地址,房间号是711"): the part and its new value.
    r"|(?:门牌号?|房间号|房号|室号)\s*(?:应该是|应为|是|改成|改为|为)\s*(?P<new3>[0-9A-Za-z-]{1,10})(?![0-9A-Za-z])"
    # ... in English: "correction on the address: it's unit 16F" (not "12 Oak St, unit 5B", a new address)
    r"|\b(?:it'?s|it\s+is|should\s+be)\s+(?:apartment|apt|unit|suite|ste|room)\.?\s+\#?\s*"
    r"(?P<new4>[0-9][0-9A-Za-z-]{0,9})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_LAST_NUMBER = re.compile(r"[0-9][0-9A-Za-z-]*(?=[^0-9]*$)")
_APARTMENT = re.compile(
    r"(?<=\b(?:apt|ste)\.\s)[0-9A-Za-z-]+"
    r"|(?:(?<=\bapt\s)|(?<=\bste\s)|(?<=\bapartment\s)|(?<=\bunit\s)|(?<=\bsuite\s)|(?<=#))[0-9A-Za-z-]+",
    re.IGNORECASE,
)


def _rewritten(fact: Fact, value: str, index: int, position: int) -> Fact:
    """``fact`` with a part of its value corrected in turn ``index``: the value that replaces it."""
    key = normalize_sentence(value) if fact.kind == "detail" else re.sub(r"\s+", "", value).upper()
    return Fact(fact.kind, value, key, index, fact.subject, "customer", position)


# A token shaped like a system's code: letters, digits, dashes and underscores, with a digit or an
# underscore ("pay_aasuxza": a payment id need not hold a digit).
_CODE_TOKEN = re.compile(
    r"(?<![0-9A-Za-z_-])(?=[0-9A-Za-z_-]*[0-9_])[0-9A-Za-z][0-9A-Za-z_-]{3,38}[0-9A-Za-z](?![0-9A-Za-z_-])"
)
_RETYPED_KINDS = ("id", "error_code")
# A date, person or plan said again in other words: its wordings joined (上个月24日、上星期二;
# last Tuesday; Nov 24), at most this many.
_SAID_AGAIN = re.compile("、|; ")
_MAX_WORDINGS = 3
_SAID_AGAIN_KINDS = frozenset({"date", "person", "plan"})
_DATED_IN_FULL = re.compile(r"[0-9]{4}[0-9年月日号/.\- ]+")  # 2025年4月3日, 2025-04-03: the key says it all
_REFUSAL = re.compile(r"不是|\bnot\b", re.IGNORECASE)  # "是3866-7509-2547,不是3866-7590-2547"


def _differing(old: str, new: str) -> int | None:
    """How many characters of ``new`` differ from ``old``, case aside; None when their lengths do."""
    if len(old) != len(new):
        return None
    return sum(a != b for a, b in zip(old.lower(), new.lower(), strict=True))


def _near_part(old: str, new: str) -> bool:
    """Whether a room number ``new`` fixes ``old``: as long, and at most half its characters differ
    or two are swapped (710 for 170)."""
    differing = _differing(old, new)
    swapped = differing == 2 and sorted(old.lower()) == sorted(new.lower())
    return differing is not None and (differing * 2 <= len(old) or swapped)


def _digits_of(key: str) -> str:
    """An amount key's significant digits: "CNY 5158.00" → "5158", "USD 37.18" → "3718"."""
    return re.sub(r"[^0-9]", "", key.removesuffix(".00"))


def _compared(key: str, kind: str) -> str:
    """What a typo is looked for in: a date's ISO key with its dashes (10-16 for 11-06 is no swap
    of neighbours: the two digits stand apart as written), an amount's significant digits."""
    return key if kind == "date" else _digits_of(key)


def _whole_part(key: str) -> str:
    """An amount key's digits before its decimal point: "CNY 7832.99" → "7832"."""
    return re.sub(r"[^0-9]", "", key.partition(".")[0])


def _mistyped(old: str, new: str) -> bool:
    """Whether digits ``new`` fix ``old``: as long (three or more), one digit changed or two
    neighbours swapped."""
    if len(old) != len(new) or len(old) < 3:
        return False
    differing = [k for k in range(len(old)) if old[k] != new[k]]
    if len(differing) == 1:
        return True
    if len(differing) != 2:
        return False
    a, b = differing
    return b == a + 1 and old[a] == new[b] and old[b] == new[a]


def _retypes(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` typed again with one or two characters changed (or two swapped)."""
    differing = _differing(old, new)
    return differing is not None and len(old) >= 5 and 0 < differing <= 2


# The stages a thing goes through to the customer, last first (status verbs, _contacts._VERBS).
_STAGES = ("收到", "到", "寄出", "开具")
_ISO_DAY = re.compile(r"[0-9]{4}-[0-9]{2}-[0-9]{2}")


def earlier_stages(subject: str) -> tuple[str, ...]:
    """The status subjects of the same thing at the stages before ``subject``'s, latest first: what
    arrived was issued and sent (发票已经收到了 settles 发票还没开出来; 换货的已经到了 settles 换货的
    还没寄出)."""
    verb = next((v for v in _STAGES if subject.startswith(v)), None)
    if verb is None:
        return ()
    thing = subject[len(verb) :]
    return tuple(earlier + thing for earlier in _STAGES[_STAGES.index(verb) + 1 :])


# A day written as a calendar day ("6月23号", "12号", "9/14", "20 May 2027"), not counted from
# today ("in 30 days", "明天"): what one mistypes and corrects.
_MONTHS = r"\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\b"
_CALENDAR_DAY = re.compile(rf"[0-9]\s*[/.\-月]\s*[0-9]|[0-9]\s*[日号]|{_MONTHS}", re.IGNORECASE)
# ... with its month written out ("8月21号", "11/22"), not counted from this one ("上个月5日")
_DAY_OF_NAMED_MONTH = re.compile(rf"[0-9]\s*[/.\-月]\s*[0-9]|{_MONTHS}", re.IGNORECASE)


class _Book:
    """The ledger being extended: what is current per (kind, key) and per (kind, subject)."""

    def __init__(self, ledger: tuple[Fact, ...]) -> None:
        self._all = list(ledger)
        superseded = {f.supersedes for f in ledger if f.supersedes is not None}
        self._current_keys: dict[tuple[str, str], int] = {}
        self._by_subject: dict[tuple[str, str], int] = {}
        # A turn scanned again states what it stated before: that is no correction of a later value.
        self._said = {(f.kind, f.key, f.turn) for f in ledger}
        for i, fact in enumerate(ledger):
            if i not in superseded:
                self._note(i, fact)

    @property
    def facts(self) -> tuple[Fact, ...]:
        return tuple(self._all)

    def _note(self, i: int, fact: Fact) -> None:
        self._current_keys[(fact.kind, fact.key)] = i
        if fact.subject:
            self._by_subject[(fact.kind, fact.subject)] = i

    def part_corrections(self, turn: Turn, index: int, *, mask: bool) -> Iterator[tuple[int, Fact]]:
        """The values a correction of their part rewrites: the latest current address or id that
        holds the old part as a whole token gets it replaced by the new one."""
        text = mask_text(turn.content) if mask else turn.content
        for m in _PART_CORRECTION.finditer(text):
            new, old = (
                (m.group("new"), m.group("old")) if m.group("new") else (m.group("new2"), m.group("old2"))
            )
            if new.lower() == old.lower():
                continue
            token = re.compile(rf"(?<![0-9A-Za-z]){re.escape(old)}(?![0-9A-Za-z])", re.IGNORECASE)
            for i in sorted(self._current_positions(), reverse=True):
                fact = self._all[i]
                if fact.kind in _PART_KINDS and fact.turn < index and token.search(fact.value):
                    yield i, _rewritten(fact, token.sub(new, fact.value, count=1), index, i)
                    break

        for m in _NAMED_PART_CORRECTION.finditer(text):
            if (m.group("new3") or m.group("new4")) and not CORRECTION.search(text):
                continue  # "房间号是711" alone is a room number, not a correction of one
            new = m.group("new") or m.group("new2") or m.group("new3") or m.group("new4")
            english = m.group("new2") or m.group("new4")
            part = _APARTMENT if english else _LAST_NUMBER  # an English address ends with its zip
            candidates = [
                (i, last)
                for i in sorted(self._current_positions(), reverse=True)
                if (self._all[i].kind == "address" or (m.group("new2") and self._all[i].kind == "detail"))
                and self._all[i].turn < index
                and (last := part.search(self._all[i].value)) is not None
            ]
            # The address whose part the new value fixes (7219 for 2219), else the latest one; of
            # several, the fewest characters changed (2910 fixes 2919 before 2612), then the latest.
            # One whose part is already the new value is not the one fixed.
            candidates = [c for c in candidates if c[1].group().lower() != new.lower()]
            close = [c for c in candidates if _near_part(c[1].group(), new)]
            close.sort(key=lambda c: _differing(c[1].group(), new) or 0)  # stable: latest first
            for i, last in (close or candidates)[:1]:
                fact = self._all[i]
                value = fact.value[: last.start()] + new + fact.value[last.end() :]
                yield i, _rewritten(fact, value, index, i)

    def retyped(self, turn: Turn, index: int, *, mask: bool) -> Iterator[tuple[int, Fact]]:
        """The ids a correction types again with a character or two fixed ("快递单号我抄错了,
        正确的是1Z87327004", "是3866-7509-2547,不是3866-7590-2547"): the new value replaces the
        current id it differs from, even where no pattern reads it as an id on its own."""
        text = mask_text(turn.content) if mask else turn.content
        if not _says_it_corrects(text):
            return
        for m in _CODE_TOKEN.finditer(text):
            key = m.group().upper()
            if is_negated(text, m.start()) or any(
                (kind, key) in self._current_keys for kind in _RETYPED_KINDS
            ):
                continue
            position = self._near(_RETYPED_KINDS, key, before=index)
            if position is not None:
                old = self._all[position]
                kind = old.kind if old.kind in _RETYPED_KINDS else "id"  # the id a floor sentence held
                yield position, Fact(kind, m.group(), key, index, old.subject, "customer", position)

    def _near(
        self, kinds: Sequence[str], key: str, *, before: int, details_before: int | None = None
    ) -> int | None:
        """The newest current fact of ``kinds`` stated before turn ``before`` whose key ``key``
        retypes with a character or two fixed, if any; or a floor sentence that holds such a value
        as a token ("Another thing: ref 532162683" before "I mistyped that, the return is
        532162638": no pattern read the first as an id). The typed fact first: a floor sentence that
        also names it ("357392 is the transaction ID I'm talking about") is not what is retyped.
        Floor sentences only before turn ``details_before`` if given: a correction's own sentence
        ("correction: transaction ID tr_cmbtsse, not tr_ambtsse") is pinned too and holds the
        value it refuses, a neighbour of the new one."""
        earlier = [i for i in sorted(self._current_positions(), reverse=True) if self._all[i].turn < before]
        for i in earlier:
            if self._all[i].kind in kinds and _retypes(self._all[i].key, key):
                return i
        for i in earlier:
            fact = self._all[i]
            if (
                fact.kind == "detail"
                and (details_before is None or fact.turn < details_before)
                and any(_retypes(t.upper(), key) for t in _CODE_TOKEN.findall(fact.value))
            ):
                return i
        return None

    def _own_latest(self, fact: Fact) -> int | None:
        """The value a correction that names neither value nor subject fixes: the speaker's own
        latest of its kind (a customer's "I got the date wrong" corrects a date the customer gave,
        not the day the agent promised). A calendar day ("日期我记错了,应该是9/14") fixes
        a calendar day before the 周末 or "in 30 days" said since: a day counted from today is not
        mistyped."""
        calendar = fact.kind == "date" and _CALENDAR_DAY.search(fact.value) is not None
        # "应该是8月21号" fixes a day written with its month ("1月13日") before one written from
        # this month ("上个月5日"), before one counted from today.
        named = calendar and _DAY_OF_NAMED_MONTH.search(fact.value) is not None

        def rank(old: Fact) -> int:  # 0: the best
            if not _CALENDAR_DAY.search(old.value):
                return 2
            return 1 if named and not _DAY_OF_NAMED_MONTH.search(old.value) else 0

        later: dict[int, int] = {}  # the latest of ranks 1 and 2, if none of rank 0 comes before
        for i in sorted(self._current_positions(), reverse=True):
            old = self._all[i]
            if old.kind != fact.kind or old.role != fact.role:
                continue
            if not calendar or (found := rank(old)) == 0:
                return i
            later.setdefault(found, i)
        return later.get(1, later.get(2))

    def _holding(self, token: str, *, before: int) -> int | None:
        """The newest current detail stated before turn ``before`` that holds ``token`` whole."""
        whole = re.compile(rf"(?<![0-9A-Za-z_-]){re.escape(token)}(?![0-9A-Za-z_-])", re.IGNORECASE)
        for i in sorted(self._current_positions(), reverse=True):
            fact = self._all[i]
            if fact.kind == "detail" and fact.turn < before and whole.search(fact.value):
                return i
        return None

    def _mistyped(self, fact: Fact) -> int | None:
        """The newest current amount or date (of the same subject, if both name one) that
        ``fact``'s figure fixes: as many digits, at least three, one of them changed or two next to
        each other swapped (5158 → 5518, 2026-11-23 → 2026-12-23)."""
        if fact.kind == "date" and not _ISO_DAY.fullmatch(fact.key):
            return None  # a day not worked out (rel:…, --MM-DD) has no digits to compare
        for i in sorted(self._current_positions(), reverse=True):
            old = self._all[i]
            if (
                old.kind == fact.kind
                and old.role == fact.role  # one fixes one's own typo, not the other side's figure
                # a day counted from today ("周末" = 12-05) is not mistyped as 11-05
                and (
                    fact.kind == "amount" or (_ISO_DAY.fullmatch(old.key) and _CALENDAR_DAY.search(old.value))
                )
                and old.turn <= fact.turn
                and not (old.subject and fact.subject and old.subject != fact.subject)
                and (
                    _mistyped(_compared(old.key, fact.kind), _compared(fact.key, fact.kind))
                    # "是7839块钱" fixes 7832.99: the whole part mistyped, the cents not said again
                    or (fact.kind == "amount" and _mistyped(_whole_part(old.key), _whole_part(fact.key)))
                )
            ):
                return i
        return None

    def replace(self, position: int, fact: Fact) -> None:
        """Append ``fact`` as the value that replaces the one at ``position``."""
        if (fact.kind, fact.key, fact.turn) in self._said:
            return
        self._said.add((fact.kind, fact.key, fact.turn))
        old = self._all[position]
        if self._current_keys.get((old.kind, old.key)) == position:
            del self._current_keys[(old.kind, old.key)]
        self._all.append(fact)
        self._note(len(self._all) - 1, fact)

    def _earlier_stage(self, subject: str) -> int | None:
        """The current "not yet" status of the same thing at a stage before ``subject``'s."""
        for earlier in earlier_stages(subject):
            at = self._by_subject.get(("status", earlier))
            if at is not None and self._all[at].key.endswith("=否"):
                return at
        return None

    def _current_positions(self) -> list[int]:
        return sorted(set(self._current_keys.values()))

    def add(self, fact: Fact, correction: bool, refused: str = "", retracting: bool = False) -> None:
        if (fact.kind, fact.key, fact.turn) in self._said:
            return
        self._said.add((fact.kind, fact.key, fact.turn))
        by_subject = fact.subject and (correction or fact.subject not in PLURAL_SUBJECTS)
        # The value the turn names as wrong is the one replaced, whatever came after it; else an
        # id the correction retypes with a typo fixed ("order 3EL7TK9Z, not 3EL7TK2Z").
        target = self._current_keys.get((fact.kind, refused)) if refused else None
        if target is None and refused:
            # A value pinned only as a detail (no pattern read "the contract you sent, 5879934" as an id)
            target = self._holding(refused, before=fact.turn)
        if target is None and correction and fact.kind in _RETYPED_KINDS:
            target = self._near((fact.kind,), fact.key, before=fact.turn + 1, details_before=fact.turn)
        if target is None and correction and fact.kind in ("amount", "date"):
            # "更正一下,刚才那个金额是5518块" fixes the 5158 said before, not a sum named in between;
            # "我记错了,应该是12/23" the 11月23号 said before, not a day named since; "the charge
            # was actually $48317" the $48,377 said before, not the last sum called a charge.
            target = self._mistyped(fact)
        if target is None and by_subject:
            target = self._by_subject.get((fact.kind, fact.subject))
        if target is None and fact.kind == "status" and fact.key.endswith("=是"):
            target = self._earlier_stage(fact.subject)
        if (
            target is None
            and correction
            and (retracting or not fact.subject)
            and fact.kind not in SENTENCE_KINDS
        ):
            target = self._own_latest(fact)
        if target is not None and self._all[target].key == fact.key:
            self._said_again(target, fact)  # the current value, said again
            return
        if target is None and (fact.kind, fact.key) in self._current_keys:
            self._said_again(self._current_keys[(fact.kind, fact.key)], fact)
            return
        if target is not None:
            old = self._all[target]
            fact = Fact(
                fact.kind, fact.value, fact.key, fact.turn, fact.subject or old.subject, fact.role, target
            )
            if self._current_keys.get((old.kind, old.key)) == target:
                del self._current_keys[(old.kind, old.key)]
        self._all.append(fact)
        self._note(len(self._all) - 1, fact)

    def _said_again(self, position: int, fact: Fact) -> None:
        """A day, a person or a plan named again in other words (上星期二 for the 11/24 said before;
        IT孙经理 after 运维孙经理; 黄金会员连续包季 after 季卡黄金会员): one fact whose words name
        both, so the model sees every phrase the turns use for it and nothing is decided that the
        customer did not say (the same man, or two; the same membership, or one renewing itself).
        Recorded as a restatement (``supersedes`` the fact it extends, with the same key), never as
        a correction. Words that add nothing (孙经理 after 运维孙经理) are not added."""
        old = self._all[position]
        if fact.kind not in _SAID_AGAIN_KINDS or fact.role != old.role:
            return
        if fact.kind == "date" and _DATED_IN_FULL.fullmatch(fact.value):
            return
        words = _SAID_AGAIN.split(old.value)
        said = normalize_sentence(fact.value)
        if len(words) >= _MAX_WORDINGS or any(said in normalize_sentence(w) for w in words):
            return
        value = old.value + ("、" if CJK_CHAR.search(old.value + fact.value) else "; ") + fact.value
        self._all.append(Fact(old.kind, value, old.key, fact.turn, old.subject, old.role, position))
        self._note(len(self._all) - 1, self._all[-1])


def current_facts(facts: Sequence[Fact]) -> list[tuple[int, Fact]]:
    """``(position, fact)`` of every fact no later fact supersedes."""
    superseded = {f.supersedes for f in facts if f.supersedes is not None}
    return [(i, f) for i, f in enumerate(facts) if i not in superseded]


def conversation_currency(facts: Sequence[Fact]) -> str | None:
    """The currency of the latest amount written with one ("$37", "200 元"): what an amount
    written without one ("2.1k") means in this conversation."""
    for fact in reversed(facts):
        if fact.kind == "amount" and (written := money_in(fact.value)) and written[0].currency:
            return written[0].currency
    return None

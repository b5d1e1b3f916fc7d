"""How the pinned facts read in a prompt, within a token allowance.

Every current fact is shown, grouped by kind, its canonical value first: ``CNY 1860.00`` reads
unambiguously where ``¥`` might be yen and ``三千五`` might be misread. A corrected fact shows the
values it replaced, newest first, marked: ``升级费 CNY 1860.00(原为 CNY 1680.00)``. The sentences of
a kind share its line (a line each costs 2-3 tokens more). Values the agent stated are
marked ``[客服]``; everything else is the customer's word, and the section label says so, so a
customer cannot write something that reads as the agent's or the system's.

There is no fixed count. The facts have a token allowance (what the history budget leaves after
the summary and the recent turns); only when it is exhausted are facts left out, lowest rank
first: values that corrected an earlier one rank first, then exact values (ids, amounts, dates,
codes, phones, emails), then open promises and requests, then people, plans,
addresses and statuses, then satisfied requests and promises (a later "yes" status completes
them: 退款我已经收到了 after 想申请退款), then details (the floor: a customer's sentence with a
figure no typed fact holds), and the notes of replaced values last (an exact value's with the
exact values: a correction that names no value may have guessed the one it fixes). How
many were left out is said in the prompt and reported in ``state.context_usage["facts_omitted"]``.

Requests and promises are shown only from folded turns: newer ones are in the history verbatim.
Goods, an id, phone or email, or a sentence that a request or promise of the same turn holds whole
are shown inside it once its turn is folded, not again on their own line (a person also inside a
status or goods); when room leaves that sentence out, they are shown on their own, at their rank.
An operator's correction (run/_corrections.py) is always shown, marked ``[客服核实]``, and a
retracted value reads ``… [客服核实有误,勿用]``, whatever the turns in the history say.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, replace
from difflib import SequenceMatcher
from http import HTTPStatus

from .._state import Fact
from ..i18n._prompts import fact_labels, prompt_words
from ._contacts import STATUS_VERBS, status_text
from ._facts import EXACT_KINDS, FACT_KINDS, OPERATOR, conversation_currency, current_facts, earlier_stages
from ._sentences import SENTENCE_KINDS, normalize_sentence, terse, without_tail
from ._tokens import count_joined, counter

_ABSOLUTE = re.compile(r"[0-9年月日号/.\- ]+")
_BARE_FIGURE = re.compile(r"[0-9]")  # an amount's key with no currency in front
_YEAR = re.compile(r"[0-9]{4}")
_HTTP_KEY = re.compile(r"HTTP ([1-5][0-9]{2})")
_TIERS: Mapping[str, int] = {**dict.fromkeys(EXACT_KINDS, 0), **dict.fromkeys(SENTENCE_KINDS, 1)}
_OTHER_TIER = 2
_CORRECTION_TIER = -1  # a value that replaced another: shown before anything else
_SATISFIED_TIER = 3  # a request or promise that a later "yes" status settles
_DETAIL_TIER = 4  # a customer's sentence with a figure no typed fact holds: the floor, after them all
_NOTE_TIER = 5  # "(原为 …)": what a corrected fact replaced
_CJK_PAIR = re.compile(r"(?=([\u4e00-\u9fff]{2}))")
# A space typed between a CJK character and a digit or Latin letter ("在 7 个工作日内", "382 号"):
# Chinese needs none, and each costs a token (2 in "在 7 个").
_CJK_SPACING = re.compile(
    r"(?<=[\u4e00-\u9fff])[ \t]+(?=[0-9A-Za-z])|(?<=[0-9A-Za-z%])[ \t]+(?=[\u4e00-\u9fff])"
)
_VALUES_PER_PIECE = 16
_QUOTING_KINDS = ("request", "promise", "promise_reported")
_ENTITY_KINDS = frozenset({"id", "error_code", "phone", "email", "person", "address"})


@dataclass(frozen=True, slots=True)
class Unit:
    """One fact as shown: its text, and the note of the value it replaced (shown if room allows)."""

    position: int
    fact: Fact
    text: str
    note: str
    tier: int
    short: str = ""  # the text shorter, for want of room: a sentence without the trailing clauses
    # that other facts pin, a date by its ISO form alone ("" or the text: nothing to shorten)
    held_by: int | None = None  # the position of a sentence that shows this whole (_held_by_sentences)


@dataclass(frozen=True, slots=True)
class View:
    pieces: tuple[str, ...]  # the section body in pieces (see ``fact_pieces``)
    shown: tuple[Fact, ...]
    omitted: int  # facts left out for the allowance (replaced-value notes not counted)


def display(fact: Fact, lang: str = "zh", currency: str | None = None, *, words: bool = True) -> str:
    """A fact's value as the prompt shows it (in a prompt of language ``lang``); an amount written
    without a currency ("3k") in the conversation's ``currency``, or as written beside its figure
    when the conversation names none. ``words=False`` shows a resolved date by its ISO form alone,
    without the words it was said in (what room allows when facts would be left out)."""
    if fact.kind == "status":
        # The customer's own words ("东西还没拆封"), which say more than the yes/no key; a key
        # without them (a ledger written before they were kept) reads as the key.
        text = fact.value or status_text(fact.key)
    elif fact.kind == "date":
        if fact.key.startswith(("rel:", "--")):  # unresolved or yearless: as written
            text = fact.value
        else:
            # Written with its digits and year (2026年3月5日): the ISO form says it all; a phrase
            # resolved against the turn's day (下周五) or a date whose year was inferred (3/25)
            # keeps the words beside it, so the model sees what was said and what was worked out.
            said_all = _ABSOLUTE.fullmatch(fact.value) and _YEAR.search(fact.value)
            text = fact.key if said_all or not words else f"{fact.key}({fact.value})"
    elif fact.kind == "amount" and _BARE_FIGURE.match(fact.key):
        text = f"{currency} {fact.key}" if currency else f"{fact.key}({fact.value})"
    elif fact.kind == "error_code" and (status := _HTTP_KEY.fullmatch(fact.key)):
        text = f"{fact.key} {_reason(int(status.group(1)))}".rstrip()
    elif fact.kind in ("amount", "id", "error_code", "phone", "email"):
        text = fact.key
    else:
        text = fact.value
    text = _CJK_SPACING.sub("", text)
    if fact.subject and fact.kind in ("amount", "date"):
        text = f"{fact.subject} {text}"
    if fact.role == OPERATOR:  # staff checked it: the model may rely on it over the customer's words
        return text + prompt_words(lang)["facts.operator_mark"]
    mark = prompt_words(lang)["facts.agent_mark"]
    return text + (mark if fact.role == "agent" and fact.kind not in SENTENCE_KINDS else "")


def _reason(code: int) -> str:
    """An HTTP status's reason phrase ("Too Many Requests"); "" for a code HTTP does not define."""
    try:
        return HTTPStatus(code).phrase
    except ValueError:
        return ""


def units(facts: Sequence[Fact], *, summarized_upto: int, lang: str = "zh") -> list[Unit]:
    """The facts the prompt would show with no allowance, in ledger order."""
    return [unit for unit, quoted in _every_unit(facts, lang) if _shown(unit.fact, quoted, summarized_upto)]


def _shown(fact: Fact, quoted: bool, summarized_upto: int) -> bool:
    """Whether a unit is shown once ``turns[:summarized_upto]`` are folded (``quoted``: a detail
    that a request or promise of its own turn holds whole)."""
    # An operator's correction is shown even while the turn it corrects is in the history.
    if fact.kind in SENTENCE_KINDS and fact.turn >= summarized_upto and fact.role != OPERATOR:
        return False
    # A customer's sentence that a pinned request or promise quotes whole ("…就行,我试了8次了")
    # is shown once, inside it; the request is pinned once its turn is folded.
    return not (quoted and fact.turn < summarized_upto)


def _every_unit(facts: Sequence[Fact], lang: str) -> tuple[tuple[Unit, bool], ...]:
    """Every current fact as shown, with whether it is a quoted detail (see ``_shown``), whatever
    the turns folded: remembered for the last ledgers, which each round shows twice (for
    compression's count and in the prompt) and most rounds leave as they were."""
    if type(facts) is not tuple:  # only a tuple cannot change behind the memo's back
        return _units_of(facts, lang)
    seen = _BY_LEDGER.get((id(facts), lang))
    if seen is not None and seen[0] is facts:
        return seen[1]
    found = _units_of(facts, lang)
    if len(_BY_LEDGER) >= _BY_LEDGER_SIZE:
        _BY_LEDGER.clear()  # a bound, not an eviction order: a ticket's next round refills it
    _BY_LEDGER[(id(facts), lang)] = (facts, found)  # the tuple is kept, so its id is not reused meanwhile
    return found


# The units of recent ledgers, by the ledger tuple's identity (a round's states share one tuple
# until a fact is added; a correction adds one, so it makes a new tuple and is never missed).
_BY_LEDGER: dict[tuple[int, str], tuple[tuple[Fact, ...], tuple[tuple[Unit, bool], ...]]] = {}
_BY_LEDGER_SIZE = 256


def forget_cached() -> None:
    """Drop the memo of ledgers shown (customer words among them), after a customer is forgotten."""
    _BY_LEDGER.clear()


def _units_of(facts: Sequence[Fact], lang: str) -> tuple[tuple[Unit, bool], ...]:
    result = []
    current = current_facts(facts)
    currency = conversation_currency(facts)
    settled = [f for _, f in current if f.kind == "status" and f.key.endswith(("=是", "=yes"))]
    # The values each turn pins on their own (an email, a person, a code): a sentence's clause that
    # only carries one of them may go when room is short (see ``view``).
    # Dates and amounts are left in: a deadline or a sum is part of what is promised or asked.
    pinned: dict[int, list[str]] = {}
    for _, f in current:
        if f.kind in _ENTITY_KINDS:
            pinned.setdefault(f.turn, []).extend(_CJK_SPACING.sub("", v) for v in (f.value, f.key))
    words = prompt_words(lang)
    staged: dict[int, list[tuple[int, Fact]]] = {}
    replaced = _replacements(facts, lang, currency)
    for holder, settler, (position, pending) in _stages_settled(facts, current):
        staged.setdefault(holder, []).append((position, pending))
        # a sentence quoting a settled stage marks it too, by the word that settled it
        mark = words["facts.corrected_to"].format(value=display(settler, lang, currency))
        replaced.append((pending.value, settler.value, mark))
    corrected = _corrected_by_turn(facts, current)
    hidden = {position for settled_ones in staged.values() for position, _ in settled_ones}
    for i, fact in current:
        # A sentence pinned both as goods and as a request ("我要退的是纯牛奶,24盒装的") is shown once.
        if i in hidden or _shown_as_goods(fact, current):
            continue
        quoted = fact.kind == "detail" and (_quoted(fact, current) or _restates_correction(fact, corrected))
        note = ""
        at = fact.supersedes
        old = facts[at] if at is not None and 0 <= at < len(facts) else None
        # Every value this one replaced, newest first: a budget restated twice, a phone that
        # changed twice; none of what the customer gave is lost while room remains.
        earlier = [_named(f, fact, lang, currency) for f in _replaced(facts, fact)] if old is not None else []
        earlier += [display(f, lang, currency) for _, f in staged.get(i, ())]
        # A date said again in other words replaced nothing: its note is empty.
        if earlier:
            note = words["facts.replaced"].format(value=words["facts.value_separator"].join(earlier))
        if old is not None and not fact.value:  # retracted by an operator: the old value, marked as wrong
            text = words["facts.retracted"].format(value=display(old, lang, currency))
            result.append((Unit(i, fact, text, "", _CORRECTION_TIER), quoted))
            continue
        tier = _DETAIL_TIER if fact.kind == "detail" else _TIERS.get(fact.kind, _OTHER_TIER)
        if fact.kind in ("promise", "promise_reported", "request") and _satisfied(fact, settled):
            tier = _SATISFIED_TIER
        elif note:  # never leave out the value that replaced one while older values are shown
            tier = _CORRECTION_TIER
        text = display(fact, lang, currency)
        if fact.kind in SENTENCE_KINDS or fact.kind == "status":
            text = _marked(text, replaced)
        if fact.kind in _QUOTING_KINDS:
            short = without_tail(fact.kind, text, pinned.get(fact.turn, ()))
        elif fact.kind == "date":
            short = display(fact, lang, currency, words=False)
        else:
            short = ""
        result.append((Unit(i, fact, text, note, tier, short if short != text else ""), quoted))
    return _held_by_sentences(result)


def _stages_settled(
    facts: Sequence[Fact], current: Sequence[tuple[int, Fact]]
) -> list[tuple[int, Fact, tuple[int, Fact]]]:
    """The current "not yet" statuses that a "yes" status of the same thing at a later stage,
    said after them, settles: 发票已经收到了 settles both 发票还没开出来 and 发票还没收到 (a fact
    replaces only one; the others would read as still open). A stage once passed stays passed:
    a later "郝姐说发票还没收到" replaces the yes but does not reopen 发票还没开出来. Each as
    (the current fact that holds the yes: itself or what replaced it, the yes, the settled one);
    shown in the holder's note, not on their own."""
    pending = {f.subject: (i, f) for i, f in current if f.kind == "status" and f.key.endswith("=否")}
    if not pending:
        return []
    now = {i for i, _ in current}
    replaced_by = {f.supersedes: j for j, f in enumerate(facts) if f.supersedes is not None}
    settled = []
    for i, fact in enumerate(facts):
        if fact.kind != "status" or not fact.key.endswith("=是"):
            continue
        holder = i
        while holder not in now and replaced_by.get(holder, -1) > holder:
            holder = replaced_by[holder]
        if holder not in now:
            continue
        for subject in earlier_stages(fact.subject):
            if subject in pending and pending[subject][1].turn <= fact.turn:
                settled.append((holder, fact, pending.pop(subject)))
    return settled


def _held_by_sentences(result: list[tuple[Unit, bool]]) -> tuple[tuple[Unit, bool], ...]:
    """``result`` with each unit that a sentence of its turn holds whole, in every form the view
    may show it (full, short, terse), given that sentence's position (``Unit.held_by``): while the
    sentence is shown, the unit is shown inside it and not again on its own line (a Chinese long
    ticket repeats about one such in three). When room leaves the sentence out, the unit is shown
    on its own, at its own rank.

    Goods are held by a request or promise ("白衬衫我要修身款的" in "白衬衫我要修身款的,上次发错了");
    a person also by a status or goods ("老熊(出纳)说发票到现在还没收到"); an id, phone or email, as
    the section shows it, by a request or promise ("发票发li@x.cn就行").
    """
    holders = [u for u, _ in result if u.fact.kind in _HOLDING_KINDS and not u.note]
    if not holders:
        return tuple(result)
    forms = {h.position: [normalize_sentence(form) for form in _forms(h)] for h in holders}
    marked = []
    for found, quoted in result:
        unit = found
        kinds = _HELD_BY.get(unit.fact.kind)
        if kinds and not unit.note:
            said = normalize_sentence(unit.text)
            # an exact value as a whole token ("7460" is not in "2024b7460"), else as whole words
            edge = _TOKEN_EDGE if unit.fact.kind in EXACT_KINDS else _WORD_EDGE
            holder = next(
                (
                    h
                    for h in holders
                    if h.fact.kind in kinds
                    and h.fact.turn == unit.fact.turn
                    and h.position != unit.position
                    and all(_whole_in(form, said, edge) for form in forms[h.position])
                ),
                None,
            )
            if holder is not None:
                unit = replace(unit, held_by=holder.position)
        marked.append((unit, quoted))
    return tuple(marked)


_WORD_EDGE = frozenset("0123456789abcdefghijklmnopqrstuvwxyz")  # normalized text is lower case
_TOKEN_EDGE = _WORD_EDGE | frozenset("@._+-")


def _whole_in(text: str, said: str, edge: frozenset[str]) -> bool:
    """Whether ``said`` stands in ``text`` with no ``edge`` character either side, nor a dot and a
    letter or digit after it ("x@y.cn" is not whole in "x@y.cn.com"). By ``str.find``: a pattern
    made for each unit overflowed the ``re`` module's cache, and compiling cost more than reading."""
    at = text.find(said)
    while at >= 0:
        end = at + len(said)
        after = text[end : end + 1]
        if (
            (at == 0 or text[at - 1] not in edge)
            and after not in edge
            and not (after == "." and text[end + 1 : end + 2] in _WORD_EDGE)
        ):
            return True
        at = text.find(said, at + 1)
    return False


# What may hold what (see ``_held_by_sentences``). An address is held by nothing: a sentence may
# name it in part, where its own line says where it is. Goods are not held by a status, which names
# them in its own words ("瑜伽垫我已经寄回去了" is about the mat, not which one).
_HELD_BY: Mapping[str, frozenset[str]] = {
    "plan": frozenset(_QUOTING_KINDS),
    "person": frozenset({*_QUOTING_KINDS, "status", "plan"}),
    **dict.fromkeys(("id", "phone", "email"), frozenset(_QUOTING_KINDS)),
}
_HOLDING_KINDS = frozenset({*_QUOTING_KINDS, "status", "plan"})


def _forms(unit: Unit) -> tuple[str, ...]:
    """Every text ``view`` may show a unit as."""
    short = unit.short or unit.text
    if unit.fact.kind not in _QUOTING_KINDS:
        return unit.text, short
    return unit.text, short, terse(unit.fact.kind, short)


# Values a sentence may quote after a correction replaced them ("上次给我的合同号是8R29RD3C,…" once
# 8R29RD6C replaced it): marked where quoted, so no old value reads as current.
_MARKED_KINDS = frozenset({"id", "error_code", "phone", "email", "amount", "address", "date", "status"})
# A date is marked only where it names its day and month ("11/17", "6月16号", "April 14"): a
# sentence's 明天, 周末 or "the 3rd" names its own time, not the date a correction replaced.
_DAY_AND_MONTH = re.compile(
    r"[0-9]+\s*[/.\-月]\s*[0-9]+|\b(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)[a-z]*\.?\s+[0-9]"
    r"|[0-9]\s*(?:st|nd|rd|th)?\s+(?:of\s+)?(?:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)",
    re.IGNORECASE,
)


def _replacements(facts: Sequence[Fact], lang: str, currency: str | None) -> list[tuple[str, str, str]]:
    """``(old words, new words, mark)`` for each value of ``_MARKED_KINDS`` a correction replaced,
    the mark naming the value current now."""
    replaced_by = {f.supersedes: j for j, f in enumerate(facts) if f.supersedes is not None}
    result: list[tuple[str, str, str]] = []
    for i, old in enumerate(facts):
        if old.kind not in _MARKED_KINDS or i not in replaced_by or not old.value:
            continue
        j = i
        while j in replaced_by and replaced_by[j] > j:  # to the value no later fact replaced
            j = replaced_by[j]
        new = facts[j]
        if new.key != old.key and new.value:  # not a restatement or a retraction
            mark = prompt_words(lang)["facts.corrected_to"].format(value=display(new, lang, currency))
            result.extend((quoted, new.value, mark) for quoted in _quotable(old, new))
    return result


def _quotable(old: Fact, new: Fact) -> list[str]:
    """How a sentence may quote ``old``: whole, and an address also by its start up to a comma,
    as long as that start holds the part the correction changed ("Ship it to 8358 Pine Road, Unit
    752" quotes "8358 Pine Road, Unit 752, Seattle, WA 98143"), longest first."""
    if old.kind == "date" and not _DAY_AND_MONTH.search(old.value):
        return []
    changed = next((i for i, (a, b) in enumerate(zip(old.value, new.value, strict=False)) if a != b), None)
    if old.kind != "address" or changed is None:
        quotes = [old.value]
    else:
        starts = [m.start() for m in re.finditer(r",\s", old.value) if m.start() > changed]
        quotes = [old.value, *(old.value[:end] for end in reversed(starts))]
    # As the prompt shows a sentence: "多出来一笔994 元" is shown "多出来一笔994元" (``display``).
    return list(dict.fromkeys(form for quote in quotes for form in (quote, _CJK_SPACING.sub("", quote))))


def _marked(text: str, replaced: Sequence[tuple[str, str, str]]) -> str:
    """``text`` with each replaced value it quotes marked, unless it quotes the new value too (a
    correction's own words: "是5518块,不是5158元")."""
    for old, new, mark in replaced:
        # As a whole value: "3/20" is not quoted in "13/20", nor 5158 in 51580.
        quoted = re.search(rf"(?<![0-9A-Za-z]){re.escape(old)}(?![0-9A-Za-z])", text)
        if quoted and new not in text and _CJK_SPACING.sub("", new) not in text and mark not in text:
            text = text[: quoted.end()] + mark + text[quoted.end() :]
    return text


_CHAIN = 4  # replaced values a note names at most


def _replaced(facts: Sequence[Fact], fact: Fact) -> list[Fact]:
    """The facts ``fact`` replaced, newest first, each value once (at most ``_CHAIN``)."""
    chain: list[Fact] = []
    seen = {fact.key}
    at = fact.supersedes
    while at is not None and 0 <= at < len(facts) and len(chain) < _CHAIN:
        old = facts[at]
        if old.key not in seen:
            seen.add(old.key)
            chain.append(old)
        at = old.supersedes if old.supersedes is not None and old.supersedes < at else None
    return chain


_TOKEN = re.compile(r"#?[0-9A-Za-z][0-9A-Za-z_-]*[0-9][0-9A-Za-z_-]*|#?[0-9]")


def _named(old: Fact, new: Fact, lang: str, currency: str | None) -> str:
    """How the note of ``new`` names a value it replaced: a detail by the token of it that ``new``
    fixes ("#9G5GHDKS" of "it's return #9G5GHDKS"), anything else as shown, without its subject."""
    tokens: list[str] = _TOKEN.findall(old.value) if old.kind == "detail" and new.kind != "detail" else []
    if tokens:
        return max(
            tokens, key=lambda t: SequenceMatcher(None, t.lstrip("#").upper(), new.key.upper()).ratio()
        )
    return display(old, lang, currency).removeprefix(f"{old.subject} ")


# What is left of "是99920250,不是99920205" or "return 3G5GHDKS, not 9G5GHDKS" without its values.
_CORRECTION_WORDS_ONLY = re.compile(
    r"(?:[\s,，;；:：#.。!！~]|是|不是|而是|应该是|it'?s|is|not|but)*", re.IGNORECASE
)


def _corrected_by_turn(facts: Sequence[Fact], current: Sequence[tuple[int, Fact]]) -> dict[int, set[str]]:
    """Per turn, the values its corrections show (upper-cased): each new value and the values its
    note names."""
    values: dict[int, set[str]] = {}
    for _, fact in current:
        if fact.supersedes is not None and fact.value:
            for said in (fact, *_replaced(facts, fact)):
                values.setdefault(fact.turn, set()).update((said.value.upper(), said.key.upper()))
    return values


def _restates_correction(detail: Fact, corrected: Mapping[int, set[str]]) -> bool:
    """Whether ``detail`` says only what a correction of its turn shows (``corrected``: see
    ``_corrected_by_turn``): the new value, and the old one its note names. Shown once, there,
    like a quoted detail."""
    values = corrected.get(detail.turn)
    if not values:
        return False
    rest = detail.value.upper()
    for value in sorted(values, key=len, reverse=True):
        rest = rest.replace(value, " ")
    return _CORRECTION_WORDS_ONLY.fullmatch(rest) is not None


def _quoted(detail: Fact, current: Sequence[tuple[int, Fact]]) -> bool:
    """Whether a request, promise or status of the same turn holds ``detail`` whole (a status
    shows its sentence: "密码已经重置过两次了" is pinned both ways)."""
    said = normalize_sentence(detail.value)
    return any(
        f.turn == detail.turn
        and (
            (f.kind in _QUOTING_KINDS and said in f.key)
            or (f.kind == "status" and said in normalize_sentence(f.value))
        )
        for _, f in current
    )


def _shown_as_goods(fact: Fact, current: Sequence[tuple[int, Fact]]) -> bool:
    """Whether ``fact`` is a request whose sentence a goods clause of the same turn holds whole
    (both are shown only once folded, so the goods are shown whenever the request would be)."""
    if fact.kind != "request" or fact.supersedes is not None:
        return False
    said = normalize_sentence(fact.value)
    return any(
        f.kind == "plan"
        and f.turn == fact.turn
        and f.supersedes is None
        and said in normalize_sentence(f.value)
        for _, f in current
    )


# Statuses that say what was asked for has happened: 退款我已经收到了 settles 想申请退款. Any other
# verb settles only a sentence that names it: 发票已经作废了 does not settle 把发票抬头改成….
_COMPLETING = frozenset({"收到", "寄出", "开具", "解决", "恢复", "生效", "开通", "到"})


def _satisfied(fact: Fact, settled: Sequence[Fact]) -> bool:
    """Whether a later "yes" status settles this request or promise: two CJK characters of the
    status's object (收到退款 → 退款) appear in the sentence, and its verb completes what was
    asked (收到, 寄出, …) or appears there too (注销账号 settles 把我的账号注销掉)."""
    for status in settled:
        if status.turn <= fact.turn:
            continue
        verb = max((v for v in STATUS_VERBS if status.subject.startswith(v)), key=len, default="")
        topic = status.subject[len(verb) :] or status.subject
        if any(pair in fact.value for pair in _CJK_PAIR.findall(topic)) and (
            verb in _COMPLETING or (verb and verb in fact.value)
        ):
            return True
    return False


def view(
    facts: Sequence[Fact],
    *,
    summarized_upto: int,
    allowance: int | None = None,
    lang: str = "zh",
) -> View:
    """The facts section's body in ``lang``, held to ``allowance`` tokens (None: everything).

    When the facts as shown leave some out, they are tried shorter: sentences without their trailing
    clauses that only restate values other facts pin ("…,付款是人事那边的黎哥操作的") and dates by
    their ISO form alone; then also without trailing clauses in which the customer only narrates
    (``_sentences.terse``). Whichever leaves fewest facts out is shown; the full text whenever the
    shorter ones leave out no fewer."""
    shown = units(facts, summarized_upto=summarized_upto, lang=lang)
    best = _fitted(shown, allowance, lang)
    if not best.omitted:
        return best
    compact = [_worded(u, u.short) if u.short else u for u in shown]
    # Then also without trailing clauses that hold nothing the section needs ("…,我们团队有好几个人在用").
    tersest = [
        _worded(u, terse(u.fact.kind, u.text)) if u.fact.kind in _QUOTING_KINDS else u for u in compact
    ]
    for candidate in (compact, tersest):
        if any(c.text != u.text for c, u in zip(candidate, shown, strict=True)):
            fitted = _fitted(candidate, allowance, lang)
            if fitted.omitted < best.omitted:
                best = fitted
    return best


def _worded(unit: Unit, text: str) -> Unit:
    """``unit`` showing ``text``: the same unit when that is its text (most are, and a copy per
    unit per view is what the view would otherwise spend its time on)."""
    return unit if text == unit.text else replace(unit, text=text)


def _fitted(shown: Sequence[Unit], allowance: int | None, lang: str) -> View:
    labels = fact_labels(lang)
    words = prompt_words(lang)
    omitted_text, joiner = words["facts.omitted"], words["facts.joiner"]
    notes = {u.position for u in shown if u.note}
    pieces = fact_pieces(shown, notes, labels=labels, joiner=joiner)
    if allowance is None or count_joined(pieces) <= allowance:
        return View(tuple(pieces), tuple(u.fact for u in shown), 0)
    # Highest rank first; within a rank, the newest first (older ones are likelier in the summary).
    ranked = sorted(shown, key=lambda u: (u.tier, -u.position))
    count = counter()
    costs = [(u.tier, u.position, False, count(u.text) + 1) for u in ranked]
    # What a correction replaced goes last, but an old id, amount or date goes with the exact
    # values: the correction may have guessed which one it fixes ("日期我记错了,应该是8月28号"
    # after two days were given), and the one it did not fix is still true.
    costs += [
        (0 if u.fact.kind in EXACT_KINDS else _NOTE_TIER, u.position, True, count(u.note))
        for u in ranked
        if u.note
    ]
    costs.sort(key=lambda c: (c[0], -c[1]))
    # A unit a sentence holds (Unit.held_by) is paid for at its own rank; once its sentence is
    # kept it costs nothing, and what was paid for it is given back.
    held_by = {u.position: u.held_by for u in shown}
    held: dict[int, list[int]] = {}  # by the sentence that holds them
    for position, holder in held_by.items():
        if holder is not None:
            held.setdefault(holder, []).append(position)
    paid: dict[int, int] = {}
    # The omitted-count line is paid for before any value, a kind's label and line end with its
    # first value kept (paid up front for every kind, they let a smaller, lower-ranked value in
    # where a higher-ranked one would have fitted).
    spent = count(omitted_text.format(n=len(shown))) + 4
    labelled: set[str] = set()
    keep: set[int] = set()
    keep_notes: set[int] = set()
    kind_of = {u.position: u.fact.kind for u in shown}
    # A kind whose correction did not fit shows none of its older values either: a stale value
    # never stands in for the one that replaced it.
    blocked: set[str] = set()
    for tier, position, is_note, cost in costs:
        if (is_note and position not in keep) or (not is_note and kind_of[position] in blocked):
            continue
        if not is_note and held_by.get(position) in keep:
            keep.add(position)
            continue
        label = _LABEL_COST if not is_note and kind_of[position] not in labelled else 0
        if spent + cost + label > allowance:
            if tier == _CORRECTION_TIER:
                blocked.add(kind_of[position])
            continue
        spent += cost + label
        (keep_notes if is_note else keep).add(position)
        if not is_note:
            labelled.add(kind_of[position])
            paid[position] = cost
            spent -= sum(paid.pop(h, 0) for h in held.get(position, ()))
    _fill(shown, keep, keep_notes, kind_of, blocked, allowance, labels, omitted_text, joiner)
    while True:
        keep.update(p for p, h in held_by.items() if h in keep)  # shown inside a kept sentence
        chosen = [u for u in shown if u.position in keep]
        omitted = len(shown) - len(chosen)
        pieces = fact_pieces(chosen, keep_notes, labels=labels, joiner=joiner)
        if omitted:
            pieces.append(("\n" if pieces else "") + omitted_text.format(n=omitted))
        if count_joined(pieces) <= allowance or not keep:
            return View(tuple(pieces), tuple(u.fact for u in chosen), omitted)
        # The estimate fell short (tokens do not add exactly): drop the lowest-ranked shown fact
        # (not one a kept sentence shows: it costs nothing).
        lowest = max(
            (u for u in chosen if u.held_by not in keep),
            key=lambda u: (u.tier, -u.position),
            default=chosen[-1],
        )
        keep.discard(lowest.position)
        keep_notes.discard(lowest.position)
        # what that leaves room for, counted exactly (a higher-ranked fact the estimate passed over)
        _fill(shown, keep, keep_notes, kind_of, blocked, allowance, labels, omitted_text, joiner)


_LABEL_COST = 4  # tokens of a kind's line: "\n- 邮箱: " and the line end


def _fill(
    shown: Sequence[Unit],
    keep: set[int],
    keep_notes: set[int],
    kind_of: Mapping[int, str],
    blocked: set[str],
    allowance: int,
    labels: Mapping[str, str],
    omitted_text: str,
    joiner: str,
) -> None:
    """Add, in rank order, facts the estimate left out that still fit when counted exactly: the
    estimate pays for labels up front, so it stops short of the allowance. A fact larger than
    what is left is passed over without a count, so a smaller one after it may still go in."""

    def exact() -> int:
        chosen = [u for u in shown if u.position in keep]
        pieces = fact_pieces(chosen, keep_notes, labels=labels, joiner=joiner)
        if len(chosen) < len(shown):
            pieces.append("\n" + omitted_text.format(n=len(shown) - len(chosen)))
        return count_joined(pieces)

    left = sorted((u for u in shown if u.position not in keep and kind_of[u.position] not in blocked),
                  key=lambda u: (u.tier, -u.position))  # fmt: skip
    used = exact()
    count = counter()
    for unit in left:
        if count(unit.text) + 1 > allowance - used:
            continue
        keep.add(unit.position)
        size = exact()
        if size > allowance:
            keep.discard(unit.position)
        else:
            used = size


def fact_pieces(
    shown: Sequence[Unit], notes: set[int], *, labels: Mapping[str, str], joiner: str = "；"
) -> list[str]:
    """The section's text in pieces, so that counting it (``tokens.count_joined``) as the ledger
    grows recounts only what changed: a line per kind, cut after every ``_VALUES_PER_PIECE``
    values, and a piece per sentence (sentences joined by ``joiner``). A unit whose sentence is
    among ``shown`` is shown there (``Unit.held_by``)."""
    by_kind: dict[str, list[Unit]] = {kind: [] for kind in FACT_KINDS}
    positions = {unit.position for unit in shown}
    for unit in shown:
        if unit.held_by is None or unit.held_by not in positions:
            by_kind.setdefault(unit.fact.kind, []).append(unit)
    pieces: list[str] = []
    for kind in [*FACT_KINDS, *sorted(by_kind.keys() - set(FACT_KINDS))]:
        items = by_kind[kind]
        if not items:
            continue
        head = ("\n" if pieces else "") + f"- {labels.get(kind, kind)}:"
        texts = [u.text + (u.note if u.position in notes else "") for u in items]
        if kind in SENTENCE_KINDS:
            # On the kind's line, joined: a line per sentence costs 2-3 tokens more each, and
            # 20-30 sentences are common in a long ticket (the facts left out for it).
            said = [t.rstrip("。.;；") or t for t in texts]
            pieces.append(f"{head} {said[0]}")
            pieces.extend(joiner + t for t in said[1:])
        else:
            for start in range(0, len(texts), _VALUES_PER_PIECE):
                lead = f"{head} " if start == 0 else ", "
                pieces.append(lead + ", ".join(texts[start : start + _VALUES_PER_PIECE]))
    return pieces


def render_facts(facts: Sequence[Fact], *, summarized_upto: int | None = None, lang: str = "zh") -> str:
    """Every current fact as the prompt shows it (sentences from all turns unless ``summarized_upto``)."""
    upto = (
        len(facts) + max((f.turn for f in facts), default=0) + 1
        if summarized_upto is None
        else summarized_upto
    )
    return "".join(view(facts, summarized_upto=upto, lang=lang).pieces)

"""Fold old turns into a running summary when a ticket's history outgrows its budget.

The history sent to the model is ``summary + turns[summarized_upto:]``. When that is too long,
everything but the last ``keep_last`` turns is folded into the summary: the customer's latest
wording matters, so recent turns always stay verbatim. Exact facts (bill numbers, amounts,
promises) are pinned in the ledger from :mod:`.facts` before anything is folded, so a summary
that paraphrases them away loses nothing.

Only turns are ever folded. Tool calls and their results live in the state's ``tool_log``, not in
``turns``, so compression can never separate a tool result from the call that produced it (the
"orphaned tool message" that breaks chat APIs when history is trimmed by message count).

:func:`compress` is pure: the summarizer and the token counter are passed in, and it reports
failures in its result instead of raising, so a broken summarizer cannot end a round.
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from collections.abc import Callable, Generator, Sequence
from dataclasses import dataclass
from typing import Any

from .._state import Fact, Turn
from ..errors import InvalidInput
from ..i18n._prompts import (
    ROLES_BY_LABEL,
    SECTIONS,
    SummarySections,
    language_of,
    section_labels,
    speaker_labels,
    system_prompts,
    system_words,
)
from ._facts import EXACT_KINDS, ledger_of_lines, update_ledger
from ._sentences import SENTENCE_KINDS, clip, normalize_sentence, repeats_pinned, split_sentences
from ._tokens import MESSAGE_OVERHEAD, count_joined, count_tokens, covered_chars, turn_tokens
from ._typed import mentions_fact

TurnCounter = Callable[[Turn], int]
Summarizer = Callable[[str, Sequence[Turn]], str]
# What folding asks its driver for: a summary of (the previous summary, the turns to fold). With no
# turns, the previous summary condensed. The driver sends the summarizer's text back, or throws
# its error in (``folding``).
SummaryAsk = tuple[str, Sequence[Turn]]
Folding = Generator[SummaryAsk, str, "Compression"]

# A summary request's instructions in every language: how a model, or a test's fake, knows one.
SUMMARY_PROMPTS = system_prompts("summary")
# The Chinese ones, for callers that compare against them; a ticket's request carries its language's.
SUMMARY_PROMPT = SUMMARY_PROMPTS["zh"]

# Where a summary may be cut when it has to be hard-truncated: after a sentence end or newline.
_CUT_AFTER = re.compile(r"[。！？!?；;\n]+|(?<=[.])\s+")
_ELLIPSIS = "…"  # marks a sentence cut by characters


@dataclass(frozen=True, slots=True)
class Compression:
    """What one :func:`compress` call decided. Equal inputs give an equal ``Compression``."""

    summary: str
    summarized_upto: int
    folded: range  # indices of the turns folded by this call; empty when nothing was folded
    tokens_before: int  # summary + pending turns, before this call
    tokens_after: int
    summarizer_calls: int
    error: str | None  # set when the summarizer failed; summary and summarized_upto are then unchanged
    facts: tuple[Fact, ...]  # the ledger, covering every turn up to the end of the conversation
    triggered_by: (
        str | None
    )  # "budget", "context_window" or "max_pending_turns"; None if no fold was attempted


def compress(
    turns: Sequence[Turn],
    summary: str,
    summarized_upto: int,
    *,
    summarize: Summarizer | None = None,
    **options: Any,
) -> Compression:
    """Fold ``turns[summarized_upto:-keep_last]`` into ``summary`` when a trigger fires, asking
    ``summarize`` (default :func:`extractive_summarize`) for the summary: :func:`folding` driven by
    a plain function. The options are :func:`folding`'s."""
    return drive(folding(turns, summary, summarized_upto, **options), summarize or extractive_summarize)


def drive(fold: Folding, summarize: Summarizer) -> Compression:
    """Run ``fold`` to its end, answering each of its asks with ``summarize`` (an asyncio caller
    drives it the same way with ``await``: run/_steps_async.py)."""
    try:
        ask = next(fold)
        while True:
            try:
                text = summarize(*ask)
            except Exception as exc:  # noqa: BLE001 - folding reports it and the round goes on
                ask = fold.throw(exc)
            else:
                ask = fold.send(text)
    except StopIteration as done:
        result: Compression = done.value
        return result


def folding(
    turns: Sequence[Turn],
    summary: str,
    summarized_upto: int,
    *,
    budget: int = 1200,
    keep_last: int = 4,
    count: TurnCounter = turn_tokens,
    max_pending_turns: int | None = None,
    context_window: int | None = None,
    trigger_fraction: float | None = None,
    summary_cap: int | None = None,
    facts: tuple[Fact, ...] = (),
    facts_upto: int = 0,
    mask: bool = True,
    facts_allowance: int | None = None,
    plans: Sequence[str] = (),
    lang: str = "zh",
) -> Folding:
    """Fold ``turns[summarized_upto:-keep_last]`` into ``summary`` when a trigger fires: a
    generator that yields each summary it needs (``SummaryAsk``), is sent the summarizer's text
    (or thrown its error), and returns the ``Compression``. It does no I/O itself: the same
    folding serves a synchronous and an asynchronous caller.

    Triggers, checked only when more than ``keep_last`` turns are pending: tokens above
    ``budget``; tokens above ``trigger_fraction * context_window`` (both must be set); more than
    ``max_pending_turns`` turns pending. ``facts`` must be the ledger from the previous call:
    turns already folded, and turns before ``facts_upto`` (already scanned), are not rescanned;
    ``mask`` masks personal data in the facts it adds.

    The new summary may use what the budget leaves after the kept turns (and the facts, below),
    or ``summary_cap`` tokens if that is less: if the first summary is longer, the summarizer is
    asked once more to condense it alone, as ``summarize(long_summary, ())``; if that is still too
    long, its lines go in the order of :func:`extractive_summarize` (lines whose only facts the
    ledger pins, then lines with no fact, oldest first), and a single line left too long is cut at
    a sentence end. A summary line that says word for word what the facts section shows (a request
    or promise of a folded turn) is left out: the prompt never pays for it twice.

    With ``facts_allowance`` the pinned facts share ``budget`` with the summary and the turns: they
    may take up to ``facts_allowance`` tokens of what the kept turns leave (never less than a
    half of ``budget``, as before they shared it: the last turns are kept whole even when they
    alone are too long, and exact facts are worth more than the budget's letter), and
    the summary gets the rest, never less than ``MIN_SUMMARY_TOKENS`` (a quarter of ``summary_cap``
    when one is set) unless facts are left out: then the facts come first. Facts are left out
    only when that room is used up (``memory._ledger.view``).
    """
    _check_options(
        turns,
        summarized_upto,
        budget=budget,
        keep_last=keep_last,
        summary_cap=summary_cap,
        max_pending_turns=max_pending_turns,
        context_window=context_window,
        trigger_fraction=trigger_fraction,
    )
    # Facts first: once a turn is folded only the summary remembers it, and the summary may err.
    ledger = update_ledger(
        facts, turns, max(summarized_upto, min(facts_upto, len(turns))), mask=mask, plans=plans
    )
    pending_counts = [count(turn) for turn in turns[summarized_upto:]]
    floor = MIN_SUMMARY_TOKENS if summary_cap is None else summary_cap // 4  # the summary's least room
    if facts_allowance is not None:
        kept = sum(pending_counts[-keep_last:]) if keep_last else 0
        labels = label_tokens(lang)
        room = shared_allowance(budget, facts_allowance, used=kept, labels=labels)
        facts_tokens, omitted = ledger_tokens(ledger, len(turns), room, lang)
        budget = max(budget - facts_tokens - labels, 0)
        if omitted:  # the facts fill the budget: exact, they outrank the lossy summary
            floor = 0
    before = text_tokens(summary, count) + sum(pending_counts)
    foldable = len(pending_counts) - keep_last
    reason = _trigger(
        before,
        len(pending_counts),
        budget=budget,
        max_pending_turns=max_pending_turns,
        context_window=context_window,
        trigger_fraction=trigger_fraction,
    )
    unchanged = Compression(
        summary=summary,
        summarized_upto=summarized_upto,
        folded=range(summarized_upto, summarized_upto),
        tokens_before=before,
        tokens_after=before,
        summarizer_calls=0,
        error=None,
        facts=ledger,
        triggered_by=None,
    )
    if reason is None or foldable <= 0:
        return unchanged
    calls = [0]
    upto = summarized_upto + foldable
    left = budget - sum(pending_counts[foldable:])
    if summary_cap is None:
        cap = max(left, floor)
    else:  # a fixed cap, as it was set, and within what the facts leave
        cap = summary_cap if facts_allowance is None else max(min(summary_cap, left), floor)
    try:
        new_summary = yield from _capped_summary(
            summary, turns[summarized_upto:upto], calls=calls, count=count, cap=cap, ledger=ledger
        )
    except Exception as exc:  # noqa: BLE001 - any summarizer failure is reported; the round goes on
        return dataclasses.replace(
            unchanged, summarizer_calls=calls[0], error=_describe(exc), triggered_by=reason
        )
    after = text_tokens(new_summary, count) + sum(pending_counts[foldable:])
    return dataclasses.replace(
        unchanged,
        summary=new_summary,
        summarized_upto=upto,
        folded=range(summarized_upto, upto),
        tokens_after=after,
        summarizer_calls=calls[0],
        triggered_by=reason,
    )


# The least a summary may take when the kept turns alone fill the budget: a fold keeps some memory
# of what it folded (a line or two). Not against the pinned facts: they are exact and the summary
# lossy, so when facts are left out the summary gets no floor (the recall benchmark's Chinese
# tickets, 40-60 facts at 1,200 tokens, left out up to 10 facts while these tokens held filler).
MIN_SUMMARY_TOKENS = 40

# What the labels of the facts, summary, history and latest-message sections and the blank lines
# between them cost in a Chinese prompt (context.LABELS; a test keeps the two in step): with the
# facts inside the budget, the labels are too. Other languages: label_tokens().
PROMPT_LABEL_TOKENS = 62


def shared_allowance(budget: int, allowance: int, *, used: int, labels: int = PROMPT_LABEL_TOKENS) -> int:
    """The facts' room in a history ``budget`` of which the turns and the summary take ``used``
    and the section labels ``labels``: at most ``allowance``, and never under half the budget
    (exact facts outrank even the history budget when the last turns alone fill it)."""
    return min(allowance, max(budget - labels - used, budget // 2))


def ledger_tokens(
    ledger: Sequence[Fact], summarized_upto: int, allowance: int, lang: str = "zh"
) -> tuple[int, int]:
    """Tokens the pinned facts take in a prompt under ``allowance`` (their label not included),
    and how many facts that allowance leaves out."""
    from ._ledger import view  # ledger.py renders; compress only needs its size

    shown = view(ledger, summarized_upto=summarized_upto, allowance=allowance, lang=lang)
    return count_joined(shown.pieces), shown.omitted


@functools.cache
def label_tokens(lang: str) -> int:
    """What those labels cost in a prompt labelled in ``lang`` (counted once per process)."""
    if lang == "zh":
        return PROMPT_LABEL_TOKENS
    names = ("facts", "summary", "history", "latest")
    return sum(count_tokens(section_labels(lang)[name] + "\n") for name in names) + len(names) + 4


def text_tokens(text: str, count: TurnCounter) -> int:
    """Tokens of a summary placed in the prompt: one agent-side message, or nothing when empty."""
    return count(Turn(role="agent", content=text)) if text else 0


def render_turns(turns: Sequence[Turn], lang: str = "zh") -> str:
    """The conversation as ``客户:`` / ``客服:`` lines (``Customer:`` / ``Agent:`` in English), as
    every prompt shows it."""
    speakers = speaker_labels(lang)
    return "\n".join(f"{speakers.get(turn.role, turn.role)}:{turn.content}" for turn in turns)


def summary_messages(
    previous_summary: str, turns: Sequence[Turn], *, lang: str = "zh"
) -> list[dict[str, Any]]:
    """Chat messages asking a model to merge ``turns`` into ``previous_summary``, worded in ``lang``
    (the ticket's language: its instructions, the two parts' labels and the speakers').

    With no turns, the request is to condense the previous summary: that is the second pass
    :func:`compress` makes when a summary exceeds its cap. The user message carries the request
    as records too (``prompts.SummarySections``), for a model that reads structure.
    """
    words = system_words(lang)
    parts = [f"{words['summary.previous']}\n{previous_summary.strip() or words['none']}"]
    new = f"{words['summary.new']}\n{render_turns(turns, lang)}" if turns else words["summary.condense"]
    parts.append(new)
    request = SummarySections(
        previous=previous_summary.strip(), turns=tuple(turns) if turns else None, language=lang
    )
    user = {"role": "user", "content": "\n\n".join(parts), SECTIONS: request}
    return [{"role": "system", "content": words["summary"]}, user]


def extractive_summarize(
    previous_summary: str,
    turns: Sequence[Turn],
    *,
    max_chars: int | None = None,
    lang: str | None = None,
) -> str:
    """A deterministic summary made of sentences copied from the conversation.

    Keeps every line of the previous summary, every sentence of ``turns`` that holds a fact
    (id, code, amount, date, contact, status, promise, request) and the first sentence of each
    customer turn, each once, labelled by speaker.

    A line stating a value that a later line corrects (``升级费 1680 元`` before ``升级费应该是
    1860 元``, ``还没收到退款`` before ``退款收到了``) is dropped: a summary never states a replaced
    value as current. It has no length of its own: :func:`compress` fits it to the room the budget
    leaves. Beyond ``max_chars``, if given, lines go in this order, oldest first within each: lines
    whose only facts are exact values (ids, amounts, dates, codes, phones, emails: the ledger pins
    those), then lines without facts, then the rest (requests, promises, statuses, people).
    Speakers are labelled in ``lang`` (the ticket's language), else in the customer turns'.
    """
    lines = [line.strip() for line in previous_summary.splitlines() if line.strip()]
    speakers = speaker_labels(lang or language_of([t.content for t in turns if t.role == "customer"]))
    for turn in turns:
        label = speakers.get(turn.role, turn.role)
        for position, sentence in enumerate(split_sentences(turn.content)):
            if (position == 0 and turn.role == "customer") or mentions_fact(sentence, role=turn.role):
                lines.append(f"{label}:{clip(sentence)}")
    classified = _classify(_dedup(lines))
    return (
        "\n".join(line for line, _ in classified)
        if max_chars is None
        else "\n".join(_fit(classified, max_chars))
    )


# What a summary line holds, in the order lines are dropped when the summary is too long.
_EXACT_ONLY, _PLAIN, _FACTS = 0, 1, 2


def _classify(lines: list[str]) -> list[tuple[str, int]]:
    """Each line with its drop class; lines whose values later lines supersede are left out."""
    turns = [
        Turn(role=ROLES_BY_LABEL.get(line.partition(":")[0], "customer"), content=line) for line in lines
    ]
    ledger = ledger_of_lines(turns)  # the same lines come back every round: each is scanned once
    superseded = _superseded(ledger)
    replaced = {f.turn for i, f in enumerate(ledger) if i in superseded}
    kinds: dict[int, set[str]] = {}
    for fact in ledger:
        kinds.setdefault(fact.turn, set()).add(fact.kind)
    classified = []
    for i, line in enumerate(lines):
        if i in replaced:
            continue
        held = kinds.get(i, set())
        classified.append((line, _PLAIN if not held else _EXACT_ONLY if held <= EXACT_KINDS else _FACTS))
    return classified


def _superseded(ledger: Sequence[Fact]) -> set[int]:
    """Positions of values a later one replaced (a day named again in other words is no such value)."""
    return {f.supersedes for f in ledger if f.supersedes is not None and ledger[f.supersedes].key != f.key}


def _summarized(previous: str, turns: Sequence[Turn], calls: list[int]) -> Generator[SummaryAsk, str, str]:
    """Ask for one summary; count the ask (one that fails too) and refuse a non-text answer."""
    calls[0] += 1
    result = yield (previous, turns)
    if not isinstance(result, str):
        raise TypeError(f"summarizer returned {type(result).__name__}, expected str")
    return result.strip()


def _capped_summary(
    previous: str,
    to_fold: Sequence[Turn],
    *,
    calls: list[int],
    count: TurnCounter,
    cap: int,
    ledger: Sequence[Fact],
) -> Generator[SummaryAsk, str, str]:
    summary = _without_pinned((yield from _summarized(previous, to_fold, calls)), ledger)
    if text_tokens(summary, count) <= cap:
        return summary
    # Second, hierarchical pass: the summary alone, nothing new, so the model only has to condense.
    summary = _without_pinned((yield from _summarized(summary, (), calls)), ledger)
    if text_tokens(summary, count) <= cap:
        return summary
    return truncate_to_tokens(_fit_lines(summary, cap, count), cap, count=count)


def _without_pinned(summary: str, ledger: Sequence[Fact]) -> str:
    """``summary`` less the lines that repeat pinned requests or promises: word for word, or
    clause by clause with nothing but filler besides (``_sentences.repeats_pinned``)."""
    # Statuses and goods show the customer's own clause: a summary line of it says it twice too.
    pinned = [f.key for f in ledger if f.kind in SENTENCE_KINDS]
    pinned += [normalize_sentence(f.value) for f in ledger if f.kind in ("status", "plan")]
    if not pinned:
        return summary
    kept = [line for line in summary.splitlines() if not repeats_pinned(_unlabelled(line), pinned)]
    return "\n".join(kept)


def _unlabelled(line: str) -> str:
    """A summary line without its speaker label."""
    label, colon, rest = line.partition(":")
    return rest if colon and label in ROLES_BY_LABEL else line


def _fit_lines(summary: str, cap: int, count: TurnCounter) -> str:
    """The summary's lines in the drop order of :func:`extractive_summarize` until it fits."""
    lines = [line for line in summary.splitlines() if line.strip()]
    if len(lines) < 2:
        return "\n".join(lines)  # nothing to drop, nothing a later line supersedes
    classified = _classify(lines)
    order = sorted(range(len(classified)), key=lambda i: (classified[i][1], i))
    dropped: set[int] = set()
    costs = [count_tokens(line) + 1 for line, _ in classified]
    total = text_tokens(summary, count)
    for i in order:
        if total <= cap or len(dropped) == len(classified) - 1:
            break
        dropped.add(i)
        total -= costs[i]
    return "\n".join(line for i, (line, _) in enumerate(classified) if i not in dropped)


def truncate_to_tokens(text: str, cap: int, *, count: TurnCounter) -> str:
    """The longest prefix of ``text`` that ends at a sentence end and fits ``cap`` tokens.

    Last resort only, so the summary cannot grow without bound. When not even the first sentence
    fits, that sentence is cut by characters and marked with an ellipsis; the result may be "".
    """
    cuts = [m.end() for m in _CUT_AFTER.finditer(text)]
    cuts = [c for c in cuts if c < len(text)] + [len(text)]

    def by_sentences(n: int) -> str:
        return text[: cuts[n - 1]].rstrip() if n else ""

    # Each search starts from where the text's own tokens run out: one encode, instead of a count
    # per step of a blind binary search. ``count`` still decides every answer.
    guess = bisect.bisect_right(cuts, covered_chars(text, cap - MESSAGE_OVERHEAD)) if len(cuts) > 1 else 0
    kept = by_sentences(
        _longest(len(cuts), lambda n: text_tokens(by_sentences(n), count) <= cap, guess=guess)
    )
    if kept:
        return kept
    first = text[: cuts[0]].rstrip()

    def by_chars(n: int) -> str:
        return first[:n].rstrip() + _ELLIPSIS if n else ""

    guess = covered_chars(first, cap - MESSAGE_OVERHEAD - count_tokens(_ELLIPSIS))
    cut = by_chars(_longest(len(first), lambda n: text_tokens(by_chars(n), count) <= cap, guess=guess))
    # "客户…" or "客户:…" says nothing and costs the label's tokens: a cut that keeps no more than a
    # speaker's label keeps nothing.
    label, colon, _ = first.partition(":")
    if colon and label in ROLES_BY_LABEL and len(cut.removesuffix(_ELLIPSIS)) <= len(label) + 1:
        return ""
    return cut


def _longest(upper: int, fits: Callable[[int], bool], *, guess: int) -> int:
    """Largest n in [0, upper] with fits(n), assuming fits(0), searched for outward from ``guess``.

    Steps of 1, 2, 4... from the guess bracket the answer, then a binary search closes in: with a
    guess that is right or off by one, that is two or three calls of ``fits`` instead of about
    log2(upper). Token counts are only nearly monotone in prefix length; when they are monotone,
    the answer is the one a plain binary search finds, and it always satisfies ``fits``, which is
    what the cap needs.
    """
    guess = min(max(guess, 0), upper)
    if guess == 0 or fits(guess):
        low, high = _gallop_up(guess, upper, fits)
    else:
        low, high = _gallop_down(guess, fits)
    while high - low > 1:  # fits(low), and not fits(high) unless high == upper + 1
        middle = (low + high) // 2
        if fits(middle):
            low = middle
        else:
            high = middle
    return low


def _gallop_up(start: int, upper: int, fits: Callable[[int], bool]) -> tuple[int, int]:
    """(low, high) with fits(low) and not fits(high), or high == upper + 1; given fits(start).

    Probes start+1, start+2, start+4...: a guess one short of the answer costs one probe more.
    """
    low, offset = start, 1
    while low < upper:
        probe = min(start + offset, upper)
        if not fits(probe):
            return low, probe
        low, offset = probe, offset * 2
    return low, upper + 1


def _gallop_down(start: int, fits: Callable[[int], bool]) -> tuple[int, int]:
    """(low, high) with fits(low) and not fits(high); given not fits(start), and fits(0)."""
    high, offset = start, 1
    while True:
        probe = max(start - offset, 0)
        if probe == 0 or fits(probe):
            return probe, high
        high, offset = probe, offset * 2


def _trigger(
    tokens: int,
    pending: int,
    *,
    budget: int,
    max_pending_turns: int | None,
    context_window: int | None,
    trigger_fraction: float | None,
) -> str | None:
    if tokens > budget:
        return "budget"
    if (
        context_window is not None
        and trigger_fraction is not None
        and tokens > trigger_fraction * context_window
    ):
        return "context_window"
    if max_pending_turns is not None and pending > max_pending_turns:
        return "max_pending_turns"
    return None


def _describe(exc: Exception) -> str:
    # First line only: model errors can carry whole response bodies, and this ends up in state.
    lines = str(exc).strip().splitlines()
    return f"summarizer failed: {type(exc).__name__}" + (f": {clip(lines[0], 200)}" if lines else "")


def _check_options(
    turns: Sequence[Turn],
    summarized_upto: int,
    *,
    budget: int,
    keep_last: int,
    summary_cap: int | None,
    max_pending_turns: int | None,
    context_window: int | None,
    trigger_fraction: float | None,
) -> None:
    if not 0 <= summarized_upto <= len(turns):
        raise InvalidInput(
            f"summarized_upto={summarized_upto} is outside the {len(turns)} turns of this ticket"
        )
    if budget < 0 or keep_last < 0 or (summary_cap is not None and summary_cap < 0):
        raise InvalidInput("budget, keep_last and summary_cap must be >= 0")
    if max_pending_turns is not None and max_pending_turns < 0:
        raise InvalidInput("max_pending_turns must be >= 0 or None")
    if (context_window is None) != (trigger_fraction is None):
        # Half of this pair silently does nothing, which would hide a misconfiguration.
        raise InvalidInput("set both context_window and trigger_fraction, or neither")
    if trigger_fraction is not None and not 0 < trigger_fraction <= 1:
        raise InvalidInput(f"trigger_fraction must be in (0, 1], got {trigger_fraction}")


def _dedup(lines: list[str]) -> list[str]:
    seen: set[str] = set()
    unique = []
    for text in lines:
        key = normalize_sentence(text)
        if key not in seen:
            seen.add(key)
            unique.append(text)
    return unique


def _fit(lines: list[tuple[str, int]], max_chars: int) -> list[str]:
    # Drop order (see extractive_summarize): the ledger pins exact values, so a line holding only
    # those is the cheapest loss; a line of context the ledger cannot hold comes next.
    order = sorted(range(len(lines)), key=lambda i: (lines[i][1], i))
    dropped: set[int] = set()
    total = sum(len(text) + 1 for text, _ in lines)
    for i in order:
        if total <= max_chars + 1:
            break
        dropped.add(i)
        total -= len(lines[i][0]) + 1
    return [text for i, (text, _) in enumerate(lines) if i not in dropped]

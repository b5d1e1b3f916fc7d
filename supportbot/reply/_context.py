"""What the model sees, within a token budget.

Order, as in the seed: reference material (help-center hits, account findings), then ticket
basics → customer profile → pinned facts → early-conversation summary → recent turns → the
customer's latest message, last and labelled (models otherwise answer an earlier question).

When a prompt does not fit, :func:`fit` degrades it one rung at a time: fewer help-center hits,
then shorter account findings. Folding more history needs the summarizer, so the step does that
(see ``steps._prompt``) before giving up with ``ContextBudgetExceeded``. The latest customer
message is never cut. Every prompt reports its size per section (``Prompt.usage``), which the
steps keep in ``state.context_usage`` so operators can see how full the context is.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, NamedTuple, Protocol

from .._records import Finding
from .._state import Fact, SupportState, Turn
from ..config import Settings
from ..i18n import Language
from ..i18n._prompts import LABELS as LABELS  # the Chinese labels, for callers that read them
from ..i18n._prompts import (
    SECTIONS,
    PromptSections,
    is_english,
    language_of,
    majority_language,
    section_labels,
    system_prompt,
)
from ..memory import _ledger as ledger
from ..memory._compress import label_tokens, render_turns, shared_allowance, text_tokens
from ..memory._tokens import MESSAGE_OVERHEAD, count_joined, count_tokens, turn_tokens
from ._caches import Caches, Section
from ._findings import render_line

# The Chinese instructions, for callers that compare against them. A ticket's prompt carries its
# language's, as its section labels do: system_prompt(name, ticket_language(state)).
CLASSIFY_PROMPT = system_prompt("classify", "zh")
DRAFT_PROMPT = system_prompt("draft", "zh")
REVIEW_PROMPT = system_prompt("review", "zh")

# The most room a prompt leaves in the model's window for its answer (answer_room below).
ANSWER_RESERVE = 1024


@dataclass(frozen=True, slots=True)
class Trim:
    """One rung of the degradation ladder: how much reference material a prompt may carry."""

    max_hits: int | None = None  # None: all retrieved articles
    findings_tokens: int | None = None  # None: the account findings in full
    facts_scale: float = 1.0  # share of the facts allowance this rung may use


# Fewer hits first (the best hit comes first and stays), then shorter findings.
LADDER: tuple[Trim, ...] = (
    Trim(),
    Trim(max_hits=2),
    Trim(max_hits=1),
    Trim(max_hits=1, findings_tokens=200),
    Trim(max_hits=1, findings_tokens=50),
)
# Once history is folded, the pinned facts shrink last, lowest rank first (see memory/_ledger.py).
LAST_RUNGS: tuple[Trim, ...] = (
    Trim(max_hits=1, findings_tokens=50, facts_scale=0.5),
    Trim(max_hits=1, findings_tokens=50, facts_scale=0.25),
)


@dataclass(frozen=True, slots=True)
class Prompt:
    messages: list[dict[str, Any]]
    usage: dict[str, int]  # tokens per section, plus "total" and "budget"
    trim: Trim = Trim()

    @property
    def tokens(self) -> int:
        return self.usage["total"]


class Builder(Protocol):
    """A prompt builder: ``classify_prompt``, ``draft_prompt`` or ``review_prompt``."""

    def __call__(
        self,
        state: SupportState,
        trim: Trim = ...,
        budget: int = ...,
        *,
        facts_allowance: int | None = ...,
        caches: Caches | None = ...,
    ) -> Prompt: ...


FACTS_OMITTED = "facts_omitted"  # a usage entry that counts facts, not tokens


def facts_allowance(settings: Settings) -> int:
    """The history budget (or the prompt budget, when the model's window is the smaller) that the
    pinned facts share with the summary and the turns: they may take what those leave
    (``memory._compress.shared_allowance``); compress folds the history to leave them room."""
    return min(settings.history_budget, prompt_budget(settings))


def prompt_budget(settings: Settings) -> int:
    """Tokens a prompt may use: the model's window minus room for its answer."""
    return max(settings.context_window - answer_room(settings), 0)


def answer_room(settings: Settings) -> int:
    """Room kept in the window for an answer: the longest answer any call may ask for
    (``llm_max_tokens``, ``llm_max_tokens_small``), at most ANSWER_RESERVE. A server with a
    2,048-token window and 96-token answers gives prompts 1,952 tokens, not 1,024."""
    return min(ANSWER_RESERVE, max(settings.llm_max_tokens, settings.llm_max_tokens_small))


def fit(build: Builder, state: SupportState, budget: int, ladder: Sequence[Trim] = LADDER) -> Prompt | None:
    """The first rung of ``ladder`` whose prompt fits ``budget``; None when even the last does not."""
    for trim in ladder:
        prompt = build(state, trim, budget)
        if prompt.tokens <= budget:
            return prompt
    return None


def classify_prompt(
    state: SupportState,
    trim: Trim = Trim(),
    budget: int = 0,
    *,
    facts_allowance: int | None = None,
    caches: Caches | None = None,
) -> Prompt:
    return _prompt("classify", [], state, trim, budget, facts_allowance, caches)


def draft_prompt(
    state: SupportState,
    trim: Trim = Trim(),
    budget: int = 0,
    *,
    facts_allowance: int | None = None,
    caches: Caches | None = None,
) -> Prompt:
    sections, shown = _reference(state, trim)
    labels = section_labels(ticket_language(state))
    if state.review is not None and not state.review.passed:
        problems = "\n".join(f"- {p}" for p in state.review.problems)
        sections.append(_section("problems", labels["problems"] + "\n" + problems))
    if state.reviewer_note:
        sections.append(_section("reviewer", labels["reviewer"] + "\n" + state.reviewer_note))
        shown["reviewer_note"] = state.reviewer_note
    return _prompt("draft", sections, state, trim, budget, facts_allowance, caches, shown)


def review_prompt(
    state: SupportState,
    trim: Trim = Trim(),
    budget: int = 0,
    *,
    facts_allowance: int | None = None,
    caches: Caches | None = None,
) -> Prompt:
    """The draft, after the articles and findings it was written from: a reviewer asked to catch
    unsupported amounts or another customer's data needs to see what the draft may rely on."""
    reference, shown = _reference(state, trim)
    evidence = [text for name, text, _ in reference if name in ("hits", "findings")]
    # In pieces, so the counts of the findings (the draft prompt's) and of the draft (wanted again
    # for the reply, see steps._reply) are reused.
    pieces = [piece for text in evidence for piece in ("\n\n", text)][1:]
    labels = section_labels(ticket_language(state))
    sections = [_section("evidence", labels["evidence"] + "\n", *pieces)] if evidence else []
    sections.append(_section("draft", f"{labels['draft']}\n", state.draft))
    shown["draft"] = state.draft
    return _prompt("review", sections, state, trim, budget, facts_allowance, caches, shown)


def over_budget_message(prompt: Prompt, budget: int, settings: Settings) -> str:
    largest = sorted(
        ((n, k) for k, n in prompt.usage.items() if k not in ("total", "budget", FACTS_OMITTED)), reverse=True
    )[:3]
    parts = ", ".join(f"{k} {n}" for n, k in largest)
    return (
        f"the prompt needs {prompt.tokens} tokens but may use {budget} (context_window "
        f"{settings.context_window} minus {answer_room(settings)} for the answer), even with one help-center "
        f"article, shortened findings and the history folded into the summary; largest sections: {parts}. "
        "Set SUPPORTBOT_CONTEXT_WINDOW to your model's window if it is larger, or ask the customer for a "
        "shorter message"
    )


def ticket_sections(
    state: SupportState, trim: Trim = Trim(), *, facts_allowance: int | None = None
) -> list[tuple[str, str]]:
    """The ticket part of every prompt, in the seed's order, the latest message last."""
    allowance = _allowance(state, trim, facts_allowance)
    return [(name, text) for name, text, _ in _ticket_part(state, allowance, None)[0]]


class Allowance(NamedTuple):
    """The pinned facts' room in the shared budget, and what the summary may take back."""

    facts: int  # what the summary and the unfolded turns leave
    without_summary: int  # what the unfolded turns alone leave (the summary yields to facts)
    left: int  # the budget less the turns and the labels: what facts and summary share


def _allowance(state: SupportState, trim: Trim, facts_allowance: int | None) -> Allowance | None:
    """The facts' room: what the summary and the unfolded turns leave of the shared budget."""
    if facts_allowance is None:
        return None
    turns = sum(turn_tokens(turn) for turn in state.turns[state.summarized_upto :])
    labels = label_tokens(ticket_language(state))

    def room(used: int) -> int:
        return int(
            shared_allowance(facts_allowance, facts_allowance, used=used, labels=labels) * trim.facts_scale
        )

    summary = text_tokens(state.summary, turn_tokens)
    return Allowance(room(turns + summary), room(turns), facts_allowance - labels - turns)


def _ticket_part(
    state: SupportState, allowance: Allowance | None, caches: Caches | None
) -> tuple[tuple[Section, ...], int]:
    """The sections, and how many facts the allowance left out; from ``caches`` when they hold it."""
    if caches is None:
        return _build_ticket_part(state, allowance, None)
    # Everything the part is made of, cheapest comparisons first.
    key = (
        allowance,
        state.summarized_upto,
        len(state.turns),
        state.summary,
        state.profile,
        state.ticket,
        state.facts,
        state.turns,
    )
    part = caches.ticket_parts.get(key)
    if part is None:
        part = _build_ticket_part(state, allowance, caches)
        caches.ticket_parts.put(key, part)
    return part


def _facts_section(
    state: SupportState, allowance: int | None, caches: Caches | None
) -> tuple[Section | None, int]:
    # Kept apart from the rest of the part: the summary changes in most rounds, the ledger in fewer.
    lang = ticket_language(state)
    key = (allowance, state.summarized_upto, state.facts, lang)
    found = caches.facts_sections.get(key) if caches is not None else None
    if found is None:
        shown = ledger.view(
            state.facts, summarized_upto=state.summarized_upto, allowance=allowance, lang=lang
        )
        label = section_labels(lang)["facts"]
        section = _section("facts", label + "\n", *shown.pieces) if shown.pieces else None
        found = (section, shown.omitted)
        if caches is not None:
            caches.facts_sections.put(key, found)
    return found


def _build_ticket_part(
    state: SupportState, allowance: Allowance | None, caches: Caches | None
) -> tuple[tuple[Section, ...], int]:
    t = state.ticket
    lang = ticket_language(state)
    labels = section_labels(lang)
    sections = [_section("basics", labels["basics"].format(email=t.customer_email, subject=t.subject))]
    if state.profile:
        sections.append(_section("profile", labels["profile"] + state.profile))
    facts, omitted = _facts_section(state, allowance.facts if allowance else None, caches)
    summary = state.summary
    if omitted and summary and allowance and allowance.without_summary > allowance.facts:
        # The facts are exact and the summary lossy: facts are left out only once the summary has
        # given up its room (a summary folded while the facts still fitted is not folded again);
        # it keeps its newest lines that fit beside them.
        facts, omitted = _facts_section(state, allowance.without_summary, caches)
        used = facts[2] - count_tokens(labels["facts"] + "\n") if facts else 0  # the body, as facts_allowance
        summary = _newest_lines(summary, allowance.left - used)
    if facts:
        sections.append(facts)
    if summary:
        # The summary's own count is known from compress(): the label costs the rest.
        sections.append(_section("summary", labels["summary"] + "\n", summary))
    # Each turn's count is stored with it (a turn never changes), so the conversation costs no
    # counting here; the label in front of each turn is within MESSAGE_OVERHEAD.
    latest = state.latest_customer_message
    history = [turn for turn in state.turns[state.summarized_upto :] if turn is not latest]
    if history:
        sections.append(
            (
                "history",
                labels["history"] + "\n" + render_turns(history, lang),
                sum(turn_tokens(turn) for turn in history),
            )
        )
    if latest is not None:
        sections.append(("latest", labels["latest"] + latest.content, turn_tokens(latest)))
    else:
        sections.append(("latest", labels["latest"] + t.body, count_tokens(t.body)))
    return tuple(sections), omitted


def _newest_lines(summary: str, room: int) -> str:
    """The newest lines of ``summary`` that fit ``room`` tokens (counted as the prompt counts it)."""
    lines = summary.splitlines()
    while lines and text_tokens("\n".join(lines), turn_tokens) > room:
        del lines[0]
    return "\n".join(lines)


def ticket_language(state: SupportState) -> Language:
    """The language of the ticket: its customer's. Its prompts, the replies the system writes
    (a hand-off, a refund decision) and what the host is told of it (hand-off reasons, the
    resolution) are in it."""
    # A round asks a dozen times over one turns tuple (states share it until a turn is added):
    # by the tuple's identity that is one lookup, not a pass over every turn.
    turns = state.turns
    seen = _BY_TURNS.get(id(turns))
    if seen is not None and seen[0] is turns:
        return seen[1]
    english, said = _english_turns(state)
    found = majority_language(english, said) if said else language_of((state.ticket.body,))
    if len(_BY_TURNS) >= _BY_TURNS_SIZE:
        _BY_TURNS.clear()
    _BY_TURNS[id(turns)] = (turns, found)  # the tuple is kept, so its id is not reused meanwhile
    return found


_BY_TURNS: dict[int, tuple[tuple[Turn, ...], Language]] = {}
_BY_TURNS_SIZE = 256


def _english_turns(state: SupportState) -> tuple[int, int]:
    """How many of the ticket's customer turns are English, and how many there are. Counted on
    from the ticket's last count when its turns begin with the turns that count was made of
    (a round adds a turn or two): a new turns tuple costs its new turns, not every turn again."""
    turns = state.turns
    start, english, said = 0, 0, 0
    last = _COUNTED.get(state.ticket.id)
    if last is not None and len(last[0]) <= len(turns) and turns[: len(last[0])] == last[0]:
        start, english, said = len(last[0]), last[1], last[2]
    for turn in turns[start:]:
        if turn.role == "customer":
            said += 1
            english += is_english(turn.content)
    if len(_COUNTED) >= _BY_TURNS_SIZE:
        _COUNTED.clear()  # a bound, not an eviction order: a ticket's next round counts it again
    _COUNTED[state.ticket.id] = (turns, english, said)
    return english, said


# Each ticket's last count of its English customer turns, with the turns it was made of.
_COUNTED: dict[str, tuple[tuple[Turn, ...], int, int]] = {}


def forget_cached() -> None:
    """Drop the memos of tickets' turns (customer words among them), after a customer is forgotten."""
    _BY_TURNS.clear()
    _COUNTED.clear()


def pinned_facts(state: SupportState, allowance: int | None = None) -> list[Fact]:
    """The facts the prompt shows: every current fact, requests and promises only from folded
    turns (newer ones are in the history verbatim), held to ``allowance`` tokens by rank."""
    return list(ledger.view(state.facts, summarized_upto=state.summarized_upto, allowance=allowance).shown)


def _section(name: str, *pieces: str) -> Section:
    return name, "".join(pieces), count_joined(pieces)


def _reference(state: SupportState, trim: Trim) -> tuple[list[Section], dict[str, Any]]:
    """The help-center and account sections, and what they show as records (``PromptSections``)."""
    sections, shown = [], dict[str, Any]()
    labels = section_labels(ticket_language(state))
    hits = state.hits if trim.max_hits is None else state.hits[: trim.max_hits]
    if hits:
        articles = "\n".join(f"[{h.id}] {h.title}:{h.body}" for h in hits)
        sections.append(_section("hits", labels["hits"] + "\n" + articles))
        shown["hits"] = hits
    if state.findings:
        findings, kept = state.findings, None
        if trim.findings_tokens is not None:
            kept = _kept_lines(findings, trim.findings_tokens)
            findings = _clipped(findings, kept, labels["cut"])
        sections.append(_section("findings", labels["findings"] + "\n" + findings))
        shown["findings"] = _kept_findings(state.account_findings, kept)
    return sections, shown


def _kept_findings(found: tuple[Finding, ...], lines: int | None) -> tuple[Finding, ...]:
    """The findings whose lines a clipped findings section still shows."""
    if lines is None:
        return found
    kept = []
    for finding in found:
        lines -= render_line(finding).count("\n") + 1
        if lines < 0:
            break
        kept.append(finding)
    return tuple(kept)


def _prompt(
    name: str,
    reference: list[Section],
    state: SupportState,
    trim: Trim,
    budget: int,
    facts_allowance: int | None,
    caches: Caches | None,
    shown: dict[str, Any] | None = None,
) -> Prompt:
    """The messages of the ``name`` prompt (its instructions in the ticket's language); the user
    message also carries the records its sections show (``prompts.PromptSections``)."""
    system = system_prompt(name, ticket_language(state))
    part, omitted = _ticket_part(state, _allowance(state, trim, facts_allowance), caches)
    sections = [*reference, *part]
    usage = {"system": count_tokens(system) + MESSAGE_OVERHEAD}
    for name, _, size in sections:
        usage[name] = size
    # +1 per section for the blank line that joins it to the next.
    usage["total"] = sum(usage.values()) + MESSAGE_OVERHEAD + len(sections)
    usage["budget"] = budget
    if omitted:
        usage[FACTS_OMITTED] = omitted
    body = "\n\n".join(text for _, text, _ in sections)
    latest = state.latest_customer_message
    records = PromptSections(
        latest=latest.content if latest is not None else state.ticket.body,
        language=ticket_language(state),
        **(shown or {}),
    )
    if records.draft is not None and reference and reference[0][0] == "evidence":
        # What a draft must agree with: everything the prompt shows but the draft itself.
        evidence = "\n\n".join(text for name, text, _ in sections if name != "draft")
        records = dataclasses.replace(records, evidence=evidence)
    user = {"role": "user", "content": body, SECTIONS: records}
    return Prompt([{"role": "system", "content": system}, user], usage, trim)


def _clip_tokens(text: str, limit: int, cut: str) -> str:
    return _clipped(text, _kept_lines(text, limit), cut)


def _kept_lines(text: str, limit: int) -> int | None:
    """How many leading lines of ``text`` fit ``limit`` tokens; None when all of it does."""
    if count_tokens(text) <= limit:
        return None
    kept = list[str]()
    for line in text.splitlines():
        if count_tokens("\n".join([*kept, line])) > limit:
            break
        kept.append(line)
    return len(kept)


def _clipped(text: str, lines: int | None, cut: str) -> str:
    if lines is None:
        return text
    return "\n".join(text.splitlines()[:lines]) + "\n" + cut

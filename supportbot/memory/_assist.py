"""An optional model pass that adds facts the rules missed, and never invents one.

With a real small model configured, the turns just scanned by the rules are shown to the model
with the facts already pinned, and it proposes more (kind, value, canonical value, source turn,
quote, what it supersedes). A proposal is kept only if its quote appears literally in the turn
it names and its value appears literally in its quote: a model may read better than the rules,
but it may not put words in a customer's mouth. The rule extractor stays the floor: this pass
only adds, and the offline default never runs it.
"""

from __future__ import annotations

from collections.abc import Sequence

from pydantic import BaseModel, ConfigDict, Field

from .._state import Fact, Turn
from ..i18n._prompts import system_prompt, system_words
from ._facts import FACT_KINDS, FactKind, current_facts
from ._mask import mask_text

ProposedKind = FactKind  # a model proposes facts of the kinds the rules know


class ProposedFact(BaseModel):
    model_config = ConfigDict(frozen=True)

    kind: ProposedKind
    value: str = Field(description="the words exactly as written in the turn")
    canonical: str = Field(description="normalised: CNY 3500.00, 2026-03-27, upper-case ids")
    source_turn: int = Field(description="index of the turn the fact is stated in")
    quote: str = Field(description="a span copied verbatim from that turn that contains the value")
    subject: str = Field(default="", description="what the fact is about, e.g. 升级费")
    supersedes: int | None = Field(default=None, description="ledger index of the fact it corrects")


class ProposedFacts(BaseModel):
    model_config = ConfigDict(frozen=True)

    facts: list[ProposedFact] = Field(default_factory=list)


# The Chinese instructions, for callers that compare against them; a ticket's request carries its
# language's (assist_messages).
ASSIST_PROMPT = system_prompt("assist", "zh")


def assist_messages(
    turns: Sequence[Turn], start: int, ledger: Sequence[Fact], *, lang: str = "zh"
) -> list[dict[str, str]]:
    """The request for facts in ``turns[start:]`` that ``ledger`` does not hold, worded in ``lang``
    (the ticket's language)."""
    words = system_words(lang)
    conversation = "\n".join(f"[{i}] {turns[i].role}: {turns[i].content}" for i in range(start, len(turns)))
    pinned = "\n".join(f"({i}) {f.kind}: {f.key}" for i, f in current_facts(ledger)) or words["none"]
    request = f"{words['assist.turns']}\n{conversation}\n\n{words['assist.pinned']}\n{pinned}"
    return [{"role": "system", "content": words["assist"]}, {"role": "user", "content": request}]


def accept(
    proposed: ProposedFacts, turns: Sequence[Turn], start: int, ledger: Sequence[Fact], *, mask: bool = True
) -> list[Fact]:
    """The proposals that quote their source turn literally and add something, as ledger facts.

    Dropped: a source turn outside ``turns[start:]``; a quote not in that turn, or a value not in
    its quote; a fact already current in the ledger; a ``supersedes`` that names no current fact
    of the same kind (then the fact is kept, superseding nothing). Masked like the rule facts.
    """
    held = {(f.kind, f.key) for _, f in current_facts(ledger)}
    current = dict(current_facts(ledger))
    added: list[Fact] = []
    replaced: set[int] = set()
    for p in proposed.facts:
        if not start <= p.source_turn < len(turns) or p.kind not in FACT_KINDS:
            continue
        turn = turns[p.source_turn]
        quote = p.quote.strip()
        if not quote or quote not in turn.content or not p.value.strip() or p.value.strip() not in quote:
            continue  # the model's words, not the customer's: no invented facts
        value = mask_text(p.value.strip()) if mask else p.value.strip()
        key = mask_text(p.canonical.strip()) if mask else p.canonical.strip()
        if not key or (p.kind, key) in held:
            continue
        target = p.supersedes
        ok = target in current and current[target].kind == p.kind and target not in replaced
        supersedes = target if ok else None
        if supersedes is not None:
            replaced.add(supersedes)
        held.add((p.kind, key))
        added.append(Fact(p.kind, value, key, p.source_turn, p.subject.strip(), turn.role, supersedes))
    return added

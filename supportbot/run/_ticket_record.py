"""The record a round that resolves a ticket leaves in the business system: its category, current
facts, lasting wishes, how it was answered, and what the next ticket inherits (stated contact
preferences and current contact details, each with the day it became true). Profiles are built
from these records. Pure: the bot's caches remember verdicts across rounds."""

from __future__ import annotations

import itertools
import re
from typing import Any

from .._state import Fact, SupportState
from ..memory._facts import current_facts, update_ledger
from ..memory._mask import mask_text
from ..memory._preferences import Stated, stated_preferences
from ..memory._sentences import split_sentences
from ..reply._caches import WISHES_SIZE, Caches
from ..reply._guardrails import CITATION
from ._speech import says

# The look-ahead names every character a match can start with (case-folded like the rest): it
# changes no match, but lets the scan skip the CJK text in between (see memory/_typed.py).
LASTING_WISH = re.compile(
    r"(?=[希提以今下到rin])(?:希望|提醒|以后|今后|下次|到期前|\bremind|\bin (?:the )?future\b|\bnext time\b)",
    re.IGNORECASE,
)


def ticket_facts(state: SupportState, *, mask: bool = True, caches: Caches | None = None) -> dict[str, Any]:
    """The structured record kept when a round resolves the ticket; profiles are built from these.

    It outlives the ticket's turns in the business system, so with ``mask`` (``Settings.mask_pii``)
    phone, email, ID and card numbers are masked in it. ``caches``: the bot's, where the verdicts
    on the ticket's requests are remembered.
    """
    wishes = caches.wishes if caches is not None else {}
    by_kind: dict[str, list[str]] = {}
    # The ledger already covers the turns prepare_context saw; only later ones are scanned.
    ledger = update_ledger(state.facts, state.turns, min(state.facts_upto, len(state.turns)), mask=False)
    for _, fact in current_facts(ledger):  # a corrected value is not the ticket's fact any more
        by_kind.setdefault(fact.kind, []).append(mask_text(fact.value) if mask else fact.value)
    # The article that answered the ticket's first question, like its topic: the profile says how
    # the customer's issue was handled, and a later refund round must not replace the fix before it.
    replies = itertools.chain((t.content for t in state.turns if t.role == "agent"), [state.draft])
    cited = next(
        (found[:1] for text in replies if (found := CITATION.findall(text))), []
    )  # stops at the first
    say = says(state)
    return {
        "category": state.topic or (state.triage.category if state.triage else "other"),
        "error_codes": sorted({code.upper() for code in by_kind.get("error_code", [])}),
        "amounts": by_kind.get("amount", []),
        "ids": by_kind.get("id", []),
        "dates": by_kind.get("date", []),
        # Only wishes that outlive the ticket ("希望到期前提醒"): "我想申请退款" was handled in it.
        "requests": [r for r in by_kind.get("request", []) if lasting_wish(r, wishes)],
        "promises": by_kind.get("promise", []),
        "resolution": say("resolution.cited", articles=say("article_separator").join(cited))
        if cited
        else say("resolution.answered"),
        # What the next ticket inherits, each with the day it became true (memory/_preferences.py).
        "preferences": _stated(state, mask=mask, seen=caches.stated if caches is not None else {}),
        "contacts": _contacts(state, ledger, mask=mask),
    }


def _day_of(state: SupportState, turn: int) -> str:
    """When the turn was written (its date says the day; the time orders a day's statements)."""
    when = state.turns[turn].created_at if 0 <= turn < len(state.turns) else None
    return (when or state.ticket.created_at).isoformat()


def _stated(state: SupportState, *, mask: bool, seen: dict[str, tuple[Stated, ...]]) -> list[dict[str, str]]:
    """The customer's stated contact preferences, the latest per slot. ``seen``: what each turn
    already read states (the bot's cache): a round rereads every turn of the ticket."""
    latest: dict[str, dict[str, str]] = {}
    for index, turn in enumerate(state.turns):
        if turn.role != "customer":
            continue
        for said in _preferences_in(turn.content, seen):
            text = mask_text(said.text) if mask else said.text
            latest[said.slot] = {
                "slot": said.slot,
                "value": said.value,
                "text": text,
                "since": _day_of(state, index),
            }
    return list(latest.values())


def _preferences_in(message: str, seen: dict[str, tuple[Stated, ...]]) -> tuple[Stated, ...]:
    found = seen.get(message)
    if found is None:
        if len(seen) >= WISHES_SIZE:
            seen.clear()  # a bound, not an eviction order, as for the wishes
        found = seen[message] = tuple(
            said for sentence in split_sentences(message) for said in stated_preferences(sentence)
        )
    return found


def _contacts(state: SupportState, ledger: tuple[Fact, ...], *, mask: bool) -> list[dict[str, str]]:
    """The customer's current phone, email and address, the latest of each."""
    latest: dict[str, dict[str, str]] = {}
    for _, fact in current_facts(ledger):
        if fact.kind in ("phone", "email", "address") and fact.role != "agent":
            value = mask_text(fact.value) if mask else fact.value
            latest[fact.kind] = {
                "slot": fact.kind,
                "value": value,
                "text": value,
                "since": _day_of(state, fact.turn),
            }
    return list(latest.values())


def lasting_wish(request: str, wishes: dict[str, bool]) -> bool:
    # Every round rereads all of the ticket's requests, and a request never changes.
    found = wishes.get(request)
    if found is None:
        if len(wishes) >= WISHES_SIZE:
            wishes.clear()  # a bound, not an eviction order: the ticket's requests come back next round
        found = wishes[request] = LASTING_WISH.search(request) is not None
    return found

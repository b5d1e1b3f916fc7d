"""The step graph of one round: which steps there are, where each goes next, where a round pauses.

    start_round → load_customer → prepare_context → classify ─┬─ needs a human ──────────► handoff → END
                                                              └─► retrieve ─┬─ account data ─► act ─┐
                                                                            └───────────────────────┴─► draft
    draft → check ─┬─ passed, refund pending ─► approval (pauses for a human's decision) → finalize → END
                   │                   a reviewer's note: approval → respond → approval (still paused)
                   ├─ passed ───────────────────────────────────────────────────────────► finalize → END
                   ├─ failed, revisions left ─► draft
                   └─ failed, none left, or the draft leaks the prompts ─► handoff → END

Between rounds a person may take the ticket over (human_takeover), answer (human_reply) and hand it
back (hand_back): records outside the graph, after which the next customer message starts a round.

The engine (run/_engine.py) runs this graph: it records every step, pauses at the interrupts and resumes
from the recorded step. Steps are plain functions of the state and the dependencies; ``STEPS`` in
run/_steps_async.py names them.
"""

from __future__ import annotations

from collections.abc import Callable

from .._state import ROUND_START, SupportState

Route = Callable[[SupportState, int], str | None]  # (state after the step, max revisions) -> next step

START = ROUND_START
# Not step functions: the records of a human's decision on a paused round (SupportBot.approve),
# and of a reviewer's note to the agent that leaves it undecided (SupportBot.respond).
DECISION = "human_decision"
REVIEWER_NOTE = "reviewer_note"
# Not step functions either: a person's actions between rounds (run/_takeover.py). Each is recorded
# with next step None, so no round ever resumes into one, and replaying it only sets state fields.
TAKEOVER, HUMAN_REPLY, HAND_BACK = "human_takeover", "human_reply", "hand_back"
CORRECT_FACT = "correct_fact"  # an operator's correction or retraction of a pinned fact (run/_corrections.py)


def _after_classify(state: SupportState, _: int) -> str:
    return "handoff" if state.triage is not None and state.triage.needs_human else "retrieve"


def _after_retrieve(state: SupportState, _: int) -> str:
    needs_account = state.triage is not None and state.triage.needs_account_data
    return "act" if needs_account and state.customer else "draft"


def _after_check(state: SupportState, max_revisions: int) -> str:
    assert state.review is not None
    if state.handoff_reason:  # check found a draft no redraft may follow (see steps.check)
        return "handoff"
    if state.review.passed:
        refund = state.refund_request
        return "approval" if refund is not None and refund.status == "pending" else "finalize"
    return "draft" if state.revisions <= max_revisions else "handoff"


def _to(step: str | None) -> Route:
    return lambda _state, _max_revisions: step


# Where each step goes next; None ends the round.
ROUTES: dict[str, Route] = {
    START: _to("load_customer"),
    "load_customer": _to("prepare_context"),
    "prepare_context": _to("classify"),
    "classify": _after_classify,
    "retrieve": _after_retrieve,
    "act": _to("draft"),
    "draft": _to("check"),
    "check": _after_check,
    DECISION: _to("approval"),
    REVIEWER_NOTE: _to("respond"),
    "respond": _to("approval"),  # the refund still waits: the round pauses again
    "approval": _to("finalize"),
    "finalize": _to(None),
    "handoff": _to(None),
}

# A step here waits until its condition holds; the round pauses and the ticket's lease is freed.
INTERRUPTS: dict[str, Callable[[SupportState], bool]] = {"approval": lambda s: s.approval is not None}


def pauses_before(step: str | None, state: SupportState) -> bool:
    """Whether a round whose next step is ``step`` waits there for a person, given ``state``."""
    interrupt = INTERRUPTS.get(step) if step is not None else None
    return interrupt is not None and not interrupt(state)


# Steps that act on the business system: they run inside the transaction that records them.
EFFECT_STEPS = frozenset({"act", "respond", "finalize", "handoff"})
REPLY_STEPS = frozenset({"respond", "finalize", "handoff"})  # effect steps that add a reply turn

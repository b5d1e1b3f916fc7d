"""What the system says of a ticket, to its customer and its host, in the ticket's language: the
hand-off reasons the host is told, the reply a hand-off sends, a failure's reason. Pure."""

from __future__ import annotations

from .._state import SupportState
from ..errors import ContextBudgetExceeded, ModelError
from ..i18n import Translate, translator
from ..reply import _context as context


def handoff_reason(state: SupportState) -> str:
    say = says(state)
    if state.triage is not None and state.triage.needs_human:
        return say("handoff.triage")
    if state.review is not None and not state.review.passed:
        return say("handoff.review_failed", problems=say("problem_separator").join(state.review.problems))
    return say("handoff.other")


def failure_reason(state: SupportState, step: str, exc: ModelError | ContextBudgetExceeded) -> str:
    """Why a model fault or a prompt that cannot fit handed the ticket to a person."""
    what = "handoff.model_failed" if isinstance(exc, ModelError) else "handoff.context_too_long"
    return says(state)(what, step=step, error=exc)


def says(state: SupportState) -> Translate:
    """What the system says of the ticket, to its customer and its host, in the ticket's language."""
    return translator("round", context.ticket_language(state))

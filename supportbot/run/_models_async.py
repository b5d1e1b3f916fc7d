"""How a step asks a model: which model, how long an answer may be, within the round's model time.

Every model call of a round goes through :func:`ask`, with its kind:

    kind      model      max_tokens
    classify  small      llm_max_tokens_small   a Triage object
    check     small      llm_max_tokens_small   a Review object
    facts     small      llm_max_tokens_small   the facts the rules missed (fact_assist)
    summary   small      llm_max_tokens, at most summary_cap (else history_budget): longer is cut anyway
    draft     large      llm_max_tokens, at most the room context_window leaves for an answer
    answer    large      as draft: the answer to a reviewer's note

The limits reach the client beside the call (``llm._limits``), so a host's model needs no new
argument. The round's model time (``Deps.model_time``) is checked before each call and handed to
the client as a deadline; a call refused for want of time raises ``ModelError(reason="round_time")``
and the round hands the ticket to a person, as for any model fault.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

from pydantic import BaseModel

from ..config import Settings
from ..errors import ModelError
from ..llm._limits import CallLimits, limited
from ..llm.base import Completion, Message
from ..reply._context import ANSWER_RESERVE
from ._deps_async import Deps, ModelTime

Kind = Literal["classify", "check", "facts", "summary", "draft", "answer"]
_SMALL: frozenset[Kind] = frozenset({"classify", "check", "facts", "summary"})
# Reasons of a ModelError that say the model could not be reached or refused the key, not that it
# answered badly: a worker waits them out (run/_worker.py) instead of handing tickets off.
OUTAGE_REASONS = frozenset({"unavailable", "unauthorized"})


def max_tokens(settings: Settings, kind: Kind) -> int:
    """The most tokens an answer of ``kind`` may take (the module docstring's table)."""
    if kind in ("classify", "check", "facts"):
        return settings.llm_max_tokens_small
    if kind == "summary":
        budget = settings.summary_cap if settings.summary_cap is not None else settings.history_budget
        return max(1, min(settings.llm_max_tokens, budget))
    return max(1, min(settings.llm_max_tokens, ANSWER_RESERVE))


async def ask(
    deps: Deps, kind: Kind, messages: Sequence[Message], *, schema: type[BaseModel] | None = None
) -> Completion:
    """The answer of the model for ``kind``, within the round's model time (see the module docstring)."""
    model = deps.small_llm if kind in _SMALL else deps.llm
    meter = deps.model_time or ModelTime(deps.settings.llm_round_seconds)
    left = meter.left()
    if left <= 0:
        raise ModelError(
            f"the round used its {meter.limit:g} s of model time before the {kind} call; raise "
            "SUPPORTBOT_LLM_ROUND_SECONDS, or use a faster model",
            step=deps.step or None,
            reason="round_time",
        )
    started = time.monotonic()
    limits = CallLimits(kind=kind, max_tokens=max_tokens(deps.settings, kind), deadline=started + left)
    try:
        with limited(limits):
            completion = await model.chat(messages, schema=schema)
    finally:
        meter.spent += time.monotonic() - started
    if meter.watch is not None:
        meter.watch.answered()
    return completion

# Generated from _deps_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Everything a step may touch outside the state: models, the business system, the clock, effects."""

from __future__ import annotations

import dataclasses
import time
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from functools import partial
from typing import Any, Protocol, TypeVar

from pydantic_core import to_jsonable_python

from .._records import CustomerRecords, ToolCall
from .._state import SupportState
from ..backend.base import Backend
from ..config import Settings
from ..errors import ModelError
from ..llm._placeholders import PlaceholderModel
from ..llm.base import LLM
from ..memory._mask import Placeholders
from ..reply._caches import Caches
from ..store._handles import Tx
from ..store._rows import EffectRecord
from ._profiles import Profiles

_Result = TypeVar("_Result")


@dataclass(frozen=True, slots=True)
class Effects:
    """Runs side effects on the business system at most once per (ticket, round, step, kind).

    The engine opens the transaction before the step runs; the effect's record goes into it (with
    the step's own record, in the statement that writes both: ``records``), so with a backend on
    the same database the effect, its record and the step commit together. A
    committed effect therefore always comes with its step's record, and the engine never runs a
    recorded step again: nothing is read before acting. Should a bug ever re-run one, the
    record's primary key aborts the transaction, and the effect (same database) with it; another
    backend gets the same key again and must treat it as a repeat.
    """

    tx: Tx
    ticket_id: str
    round: int
    step: str
    records: list[EffectRecord] = field(default_factory=list)  # written by the step's record

    @property
    def ran(self) -> bool:
        """Whether an effect happened in this step (its record must then commit durably)."""
        return bool(self.records)

    def run(self, kind: str, call: Callable[[str, Tx], object]) -> object:
        """Call ``call(key, tx)`` and record it under its key; return its JSON result."""
        key = f"{self.ticket_id}:{self.round}:{self.step}:{kind}"
        result = to_jsonable_python(call(key, self.tx))
        self.records.append(
            {"key": key, "round": self.round, "step": self.step, "kind": kind, "result": result}
        )
        return result

    def call(
        self,
        kind: str,
        tools: ToolRecorder,
        name: str,
        method: Callable[..., object],
        /,
        *,
        logged_as: Mapping[str, object] | None = None,
        **args: Any,
    ) -> object:
        """Call the business system's ``method(**args, key=, tx=)`` as effect ``kind``: with the
        effect's key and this transaction, logged by ``tools`` as tool ``name``; return its JSON result."""
        return self.run(
            kind,
            lambda key, tx: tools.call(name, partial(method, tx=tx), logged_as=logged_as, **args, key=key),
        )


@dataclass(slots=True)
class ToolRecorder:
    """Times backend calls and keeps them for the step to return as its tool_log update."""

    round: int
    step: str
    calls: list[ToolCall] = field(default_factory=list)

    def call(
        self,
        name: str,
        fn: Callable[..., _Result],
        /,
        *,
        logged_as: Mapping[str, object] | None = None,
        logged_result: Callable[[_Result], object] | None = None,
        **args: Any,
    ) -> _Result:
        """Call ``fn(**args)`` and log it; ``logged_as`` replaces bulky arguments in the log only,
        and ``logged_result`` picks the part of the result the log keeps."""
        started = time.perf_counter()
        shown = {**args, **logged_as} if logged_as else args
        try:
            result = fn(**args)
        except Exception as exc:
            self._log(name, shown, None, f"{type(exc).__name__}: {exc}", started)
            raise
        self._log(name, shown, result if logged_result is None else logged_result(result), None, started)
        return result

    def _log(
        self, name: str, args: Mapping[str, object], result: object, error: str | None, started: float
    ) -> None:
        elapsed = (time.perf_counter() - started) * 1000
        self.calls.append(
            ToolCall(
                name=name,
                args=to_jsonable_python(args),
                result=to_jsonable_python(result),
                error=error,
                duration_ms=round(elapsed, 3),
                round=self.round,
                step=self.step,
            )
        )


class ModelWatch(Protocol):
    """Who is told how the round's model calls go: a worker, which gives a ticket back instead of
    handing it to a person while the model is down (run/_worker.py)."""

    def answered(self) -> None:
        """A model call answered."""

    def defer(self, exc: ModelError) -> bool:
        """Whether the round that met ``exc`` should give its ticket back rather than hand it off."""


@dataclass(slots=True)
class ModelTime:
    """The model time one round has used, against ``Settings.llm_round_seconds``: the time spent
    in model calls, not the round's wall time (database waits and the business system do not count)."""

    limit: float
    spent: float = 0.0
    watch: ModelWatch | None = None

    def left(self) -> float:
        return max(0.0, self.limit - self.spent)


@dataclass(frozen=True, slots=True)
class Deps:
    llm: LLM
    small_llm: LLM
    backend: Backend
    settings: Settings
    clock: Callable[[], datetime]
    round: int = 0
    step: str = ""
    effects: Effects | None = None  # set only for steps that act on the business system
    profiles: Profiles | None = None  # None leaves the profile empty
    caches: Caches = field(default_factory=Caches)  # this bot's caches of customer text
    # The customer's records as read for this round before it started (a worker reads those of
    # every ticket it claims in one call); load_customer reads them itself when None.
    records: CustomerRecords | None = None
    # The round's model time; None outside a round (a reviewer's note): each call gets the bound anew.
    model_time: ModelTime | None = None

    def tools(self) -> ToolRecorder:
        return ToolRecorder(round=self.round, step=self.step)

    def require_effects(self) -> Effects:
        if self.effects is None:
            raise RuntimeError(
                f"step {self.step!r} acts on the business system; list it in engine.EFFECT_STEPS"
            )
        return self.effects


def with_placeholders(deps: Deps, state: SupportState) -> Deps:
    """``deps`` whose models see the ticket's personal data only as placeholders (see
    ``llm._placeholders``); the placeholders follow from the ticket's own texts, so they are the
    same in every step and round."""
    table = _placeholders(state, deps.caches)
    if not table:
        return deps
    return dataclasses.replace(
        deps,
        llm=PlaceholderModel(deps.llm, table),
        small_llm=PlaceholderModel(deps.small_llm, table),
    )


def _placeholders(state: SupportState, caches: Caches) -> Placeholders:
    """The ticket's placeholder table, read from every text of it: built once for the steps that
    share those texts (a round's steps share the turns and the ledger until one adds to them), not
    in every step. The key is what the table is read from; tuples that share their items compare
    fast."""
    key = (state.ticket, state.turns, state.profile, state.summary, state.facts)
    table = caches.placeholders.get(key)
    if table is None:
        texts = [
            state.ticket.subject,
            state.ticket.body,
            state.ticket.customer_email,
            *(turn.content for turn in state.turns),
            state.profile,
            state.summary,
            *(fact.value for fact in state.facts),
        ]
        table = Placeholders(texts)
        caches.placeholders.put(key, table)
    return table

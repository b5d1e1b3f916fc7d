"""What the model calls cost: a thread-safe ledger, and a wrapper that fills it.

    ledger = Ledger()
    llm = MeteredLLM(OpenAICompatible(...), ledger=ledger)
    llm.for_ticket("T-1", round=2).chat(messages)   # recorded under T-1 and (T-1, 2)
    ledger.for_ticket("T-1").cost, llm.spent().calls

Calls that return a ``Completion`` are recorded. A call that ends in ``ModelError`` is recorded
too when the model says what it was billed for (``OpenAICompatible`` attaches ``spent``, a
``Completion``, to the error after answers it could not use); otherwise it cannot be seen here.

The ticket's durable figures live in its state: ``SupportState.cost`` (the whole ticket) and
``SupportState.round_spend`` (calls, tokens and cost of the current round), both summed from the
completions the steps received.
"""

from __future__ import annotations

import threading
from collections.abc import Sequence
from dataclasses import dataclass

from pydantic import BaseModel

from ..errors import InvalidInput, ModelError
from .base import LLM, Completion, Message

__all__ = ["Ledger", "MeteredLLM", "Spend"]


@dataclass(frozen=True, slots=True)
class Spend:
    """Totals over some set of model calls."""

    calls: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost: float = 0.0

    @property
    def total_tokens(self) -> int:
        return self.prompt_tokens + self.completion_tokens

    def plus_spend(self, other: Spend) -> Spend:
        return Spend(calls=self.calls + other.calls, prompt_tokens=self.prompt_tokens + other.prompt_tokens,
                     completion_tokens=self.completion_tokens + other.completion_tokens, cost=self.cost + other.cost)

    def plus(self, completion: Completion) -> Spend:
        return Spend(
            calls=self.calls + 1,
            prompt_tokens=self.prompt_tokens + completion.usage.prompt_tokens,
            completion_tokens=self.completion_tokens + completion.usage.completion_tokens,
            cost=self.cost + completion.cost,
        )


class Ledger:
    """Accumulates calls, tokens and cost overall, per ticket and per (ticket, round).

    One lock guards all three tables, so a reader never sees a call counted in the total but not
    yet in its ticket. Readers get frozen ``Spend`` values, never a live view.
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._total = Spend()
        self._tickets: dict[str, Spend] = {}
        self._rounds: dict[tuple[str, int], Spend] = {}

    def record(self, completion: Completion, *, ticket_id: str | None = None, round: int | None = None) -> None:
        """Add one call. A round only means something within a ticket, so it needs ``ticket_id``."""
        if round is not None and ticket_id is None:
            raise InvalidInput(f"round={round} was recorded without a ticket_id; pass the ticket it belongs to")
        with self._lock:
            self._total = self._total.plus(completion)
            if ticket_id is not None:
                self._tickets[ticket_id] = self._tickets.get(ticket_id, Spend()).plus(completion)
            if ticket_id is not None and round is not None:
                key = (ticket_id, round)
                self._rounds[key] = self._rounds.get(key, Spend()).plus(completion)

    def total(self) -> Spend:
        with self._lock:
            return self._total

    def for_ticket(self, ticket_id: str) -> Spend:
        with self._lock:
            return self._tickets.get(ticket_id, Spend())

    def for_round(self, ticket_id: str, round: int) -> Spend:
        with self._lock:
            return self._rounds.get((ticket_id, round), Spend())

    def tickets(self) -> dict[str, Spend]:
        """A snapshot of every ticket's totals."""
        with self._lock:
            return dict(self._tickets)


class MeteredLLM:
    """Wraps any ``LLM`` and records every ``Completion`` it returns into a ``Ledger``.

    ``for_ticket`` returns a wrapper bound to a ticket (and round) that shares the model and the
    ledger, so one metered model can serve many tickets at once without shared mutable context.
    """

    def __init__(
        self, llm: LLM, *, ledger: Ledger | None = None, ticket_id: str | None = None, round: int | None = None
    ) -> None:
        if round is not None and ticket_id is None:
            raise InvalidInput(f"MeteredLLM got round={round} without a ticket_id")
        self.llm = llm
        self.ledger = ledger if ledger is not None else Ledger()
        self.ticket_id = ticket_id
        self.round = round

    def for_ticket(self, ticket_id: str, *, round: int | None = None) -> MeteredLLM:
        return MeteredLLM(self.llm, ledger=self.ledger, ticket_id=ticket_id, round=round)

    def chat(
        self,
        messages: Sequence[Message],
        *,
        schema: type[BaseModel] | None = None,
        temperature: float = 0.0,
    ) -> Completion:
        try:
            completion = self.llm.chat(messages, schema=schema, temperature=temperature)
        except ModelError as exc:
            spent = getattr(exc, "spent", None)
            if isinstance(spent, Completion):
                self.ledger.record(spent, ticket_id=self.ticket_id, round=self.round)
            raise
        self.ledger.record(completion, ticket_id=self.ticket_id, round=self.round)
        return completion

    def spent(self) -> Spend:
        """The spend of this wrapper's scope: its round, else its ticket, else the whole ledger."""
        if self.ticket_id is not None and self.round is not None:
            return self.ledger.for_round(self.ticket_id, self.round)
        if self.ticket_id is not None:
            return self.ledger.for_ticket(self.ticket_id)
        return self.ledger.total()

    def __repr__(self) -> str:
        return f"MeteredLLM({self.llm!r}, ticket_id={self.ticket_id!r}, round={self.round!r})"

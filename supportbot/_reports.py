"""What the lifecycle calls report (forget_customer, reset, pruned): shared by the synchronous and
the asynchronous bot, whose modules are generated one from the other (a class must exist once)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal


@dataclass(frozen=True, slots=True)
class DeletionReport:
    """What ``forget_customer`` deleted: the customer's tickets and rows per ``schema.table``."""

    email: str
    tickets: list[str]
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


@dataclass(frozen=True, slots=True)
class ResetReport:
    """What ``reset`` emptied: the tickets that existed and rows per ``schema.table``."""

    tickets: list[str]
    rows: dict[str, int]

    @property
    def total(self) -> int:
        return sum(self.rows.values())


@dataclass(frozen=True, slots=True)
class Pruned:
    """A ticket's pruning so far: step records before ``kept_from`` are gone."""

    ticket_id: str
    kept_from: int
    steps: int
    checkpoints: int
    bytes: int
    pruned_at: datetime


KeepMode = Literal["last", "final"]
"""What ``prune`` keeps of a closed ticket: its last round from its checkpoint on, or only its final state."""

"""Values the round's modules return (service clocks, retention reports, a submitted message):
shared by the synchronous and the asynchronous code, whose modules are generated one from the other
(a class must exist once)."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Literal

from ..config import Settings


@dataclass(frozen=True, slots=True)
class ServiceClock:
    """One running service-level clock: the ticket, what it waits for, since when, and by when."""

    ticket_id: str
    customer_email: str
    subject: str
    kind: ClockKind
    owner: str | None  # the person who took the ticket over, if any
    since: datetime
    due: datetime
    seconds_left: int  # negative once breached

    @property
    def breached(self) -> bool:
        return self.seconds_left < 0


@dataclass(frozen=True, slots=True)
class RetentionPolicy:
    steps_days: int
    summaries_days: int
    facts_days: int
    audit_days: int

    @classmethod
    def of(cls, settings: Settings) -> RetentionPolicy:
        return cls(
            settings.retention_steps_days,
            settings.retention_summaries_days,
            settings.retention_facts_days,
            settings.retention_audit_days,
        )


@dataclass(frozen=True, slots=True)
class RetentionReport:
    """What a sweep removed (``apply``) or would remove now (``due``), per kind."""

    steps: int  # tickets whose step log shrank to the final state
    summaries: int  # summaries emptied
    facts: int  # fact rows deleted
    audit: int  # audit rows deleted
    tickets: tuple[str, ...] = ()  # the tickets changed (apply only)


@dataclass(frozen=True, slots=True)
class Submitted:
    """A customer message stored for the workers to answer; pass it to ``wait()``."""

    ticket_id: str
    idx: int  # the message's position among the ticket's turns
    message_id: str | None = None
    stored: bool = True  # False: the message_id was stored before, and this call stored nothing


ClockKind = Literal["approval", "first_response", "next_response"]


@dataclass(frozen=True, slots=True)
class WorkerStats:
    """This process's worker counters since it started."""

    rounds: int
    failures: int  # failed rounds (each retried, or handed to a human after the last attempt)
    handed_off: int
    running: int  # tickets claimed and not finished: being driven, or claimed ahead
    max_wait: float  # the longest a claimed ticket had waited, in seconds
    deferred: int = 0  # rounds that gave their ticket back in a model outage (none handed off)

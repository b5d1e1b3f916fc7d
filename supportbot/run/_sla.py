# Generated from _sla_async.py by scripts/async_to_sync.py: edit that file and run the script.
"""Service levels: how long a person may take, and how long each waiting ticket has left.

Three clocks, each with its own target (``Settings.sla_*_minutes``):

* ``approval``: a refund waits for a decision, from the request until someone decides.
* ``first_response``: a handed-off ticket, from the hand-off until a person first replies.
* ``next_response``: a ticket a person owns, from the customer's first unanswered message until
  the person replies.

A clock runs only while a person has the turn: once the person has replied and the customer has
not written since, or while the bot holds the ticket, there is no clock. Times come from the
stored turns and approvals, so every process computes the same clocks.
"""

from __future__ import annotations

from datetime import datetime, timedelta

from ..config import Settings
from ..store._rows import Waiting
from ._values import ClockKind, ServiceClock


def clocks(rows: list[Waiting], settings: Settings, now: datetime) -> list[ServiceClock]:
    """The running clocks of ``rows``, the soonest due first."""
    found = [c for row in rows if (c := _clock(row, settings, now)) is not None]
    return sorted(found, key=lambda c: (c.due, c.ticket_id))


def _clock(row: Waiting, settings: Settings, now: datetime) -> ServiceClock | None:
    kind: ClockKind
    if row.status == "waiting_approval":
        kind, since = "approval", row.requested_at or row.updated_at
    elif not row.human_replied:  # handed off: nobody has answered yet
        kind, since = "first_response", row.handed_off_at or row.updated_at
    elif row.unanswered_since is not None:
        kind, since = "next_response", row.unanswered_since
    else:
        return None  # the person answered; the customer has the turn
    due = since + timedelta(minutes=_target(kind, settings))
    left = int((due - now).total_seconds())
    return ServiceClock(
        row.ticket_id, row.customer_email, row.subject, kind, row.human_agent, since, due, left
    )


def _target(kind: ClockKind, settings: Settings) -> int:
    if kind == "approval":
        return settings.sla_approval_minutes
    if kind == "first_response":
        return settings.sla_first_response_minutes
    return settings.sla_next_response_minutes

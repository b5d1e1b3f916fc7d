"""Checks on what callers pass to the public API, run before anything reaches the database.

Each check returns the value to use (an email stripped, say) or raises an
:class:`~supportbot.errors.InvalidInput` subclass that says what to pass instead. Nothing is
written before they pass, so a refused call leaves every table as it was.

Why each limit: PostgreSQL cannot store NUL in text, UTF-8 cannot encode a lone surrogate (what
``surrogateescape`` makes of undecodable bytes), a btree index refuses a key over ~2,700 bytes
(message ids and emails are indexed; at 4 bytes a character the limits below stay well under
it), and step numbers are 32-bit integers. The limits are far above any real value: they exist
so that a wrong value fails here, clearly, instead of deep in the driver.
"""

from __future__ import annotations

import re
import sys
from collections.abc import Sequence
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import TypeVar, get_args

from .._records import CENT
from .._state import TicketStatus
from ..errors import (
    AmountRefused,
    EmptyMessage,
    InvalidChoice,
    InvalidDate,
    InvalidEmail,
    InvalidInput,
    InvalidStepNumber,
    InvalidText,
    MessageTooLong,
    TextTooLong,
    WrongType,
)
from ..store._audit import SOURCE_CHARS

C = TypeVar("C", bound=str)
INT32_MAX = 2**31 - 1
TICKET_ID_CHARS = 64
EMAIL_CHARS = 254  # the longest address SMTP carries (RFC 5321)
MESSAGE_ID_CHARS = 255
NAME_CHARS = 200
SUBJECT_CHARS = 500
NOTE_CHARS = 4_000
STATUSES: tuple[TicketStatus, ...] = get_args(TicketStatus)

_EMAIL = re.compile(r"^[^@\s]+@[^@\s]+\.[^@\s]+$")


def text(name: str, value: object, *, limit: int, empty: bool = True) -> str:
    """``value`` if it is storable text of at most ``limit`` characters (and not blank unless ``empty``)."""
    if not isinstance(value, str):
        raise WrongType(f"the {name} must be text (str), not {type(value).__name__}")
    if "\x00" in value:
        where = value.index("\x00")
        raise InvalidText(
            f"the {name} contains a NUL character (at {where}), which cannot be stored; remove it",
            reason="nul",
            field=name,
            position=where,
        )
    try:
        value.encode("utf-8")
    except UnicodeEncodeError as exc:
        raise InvalidText(
            f"the {name} contains a lone surrogate (U+{ord(value[exc.start]):04X} at {exc.start}), which is "
            "not valid Unicode; decode the bytes it came from with errors='replace'",
            reason="surrogate",
            field=name,
            position=exc.start,
        ) from None
    if len(value) > limit:
        raise TextTooLong(
            f"the {name} has {len(value)} characters, more than the limit of {limit}",
            field=name,
            length=len(value),
            limit=limit,
        )
    if not empty and not value.strip():
        raise InvalidText(f"the {name} is empty", reason="empty", field=name)
    return value


def optional_text(name: str, value: object, *, limit: int) -> str | None:
    return None if value is None else text(name, value, limit=limit)


def ticket_id(value: object) -> str:
    return text("ticket id", value, limit=TICKET_ID_CHARS, empty=False)


def email(value: object, name: str = "email") -> str:
    """The address stripped of surrounding spaces, if it looks like name@example.com."""
    address = text(name, value, limit=sys.maxsize).strip()  # spaces around are forgiven
    shown = repr(address[:60]) + ("…" if len(address) > 60 else "")
    if len(address) > EMAIL_CHARS:
        raise InvalidEmail(
            f"{shown} has {len(address)} characters: no email address is longer than {EMAIL_CHARS}",
            reason="too_long",
            length=len(address),
            limit=EMAIL_CHARS,
        )
    if not _EMAIL.match(address):
        raise InvalidEmail(f"{shown} is not an email address like name@example.com", address=shown)
    return address


def message(value: object, *, limit: int) -> str:
    """A message for the customer's conversation, stripped: not blank, at most ``limit`` characters."""
    # No length limit here: the limit applies to the stripped text, with its own error below.
    stripped = text("message", value, limit=sys.maxsize).strip()
    if not stripped:
        raise EmptyMessage("the message is empty; send the customer's words", field="message")
    if len(stripped) > limit:
        raise MessageTooLong(
            f"the message has {len(stripped)} characters, more than the limit of {limit}; "
            "split it, or raise SUPPORTBOT_MAX_MESSAGE_CHARS",
            field="message",
            length=len(stripped),
            limit=limit,
        )
    return stripped


def agent(value: object) -> str:
    """The name of the person who takes over, replies or hands back, stripped."""
    return text("agent", value, limit=NAME_CHARS, empty=False).strip()


def actor(value: object) -> str:
    """Who acts, as the audit log names them, stripped; ``anonymous`` when no one is named."""
    return "anonymous" if value is None else text("actor", value, limit=NAME_CHARS, empty=False).strip()


def source(value: object) -> str:
    """Where an action comes from, as the audit log records it (an address, a host, ``cli``), stripped."""
    return text("source", value, limit=SOURCE_CHARS, empty=False).strip()


def approver(value: object, *, ticket_id: str) -> str:
    """The name of the person who approves or rejects a refund, stripped."""
    name = text("approver", value, limit=NAME_CHARS).strip()
    if not name:
        raise InvalidInput(
            "approve() needs the approver's name (approver='...')",
            ticket_id=ticket_id,
            reason="no_approver",
        )
    return name


def step_number(value: object) -> int:
    """A step number as ``history`` lists them: 1 for a ticket's first step, up to 2**31 - 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongType(f"a step number must be an int, not {type(value).__name__}")
    if not 1 <= value <= INT32_MAX:
        raise InvalidStepNumber(
            f"step {value} does not exist: steps are numbered from 1 (the ticket's first step) up; "
            "history() lists a ticket's steps. There is no step 0: before its first step a ticket "
            "has nothing to rebuild or fork (open a new ticket instead)",
            value=value,
        )
    return value


def flag(name: str, value: object) -> bool:
    if not isinstance(value, bool):
        raise WrongType(f"{name} must be True or False, not {type(value).__name__}")
    return value


def moment(name: str, value: object) -> datetime:
    """A timezone-aware datetime that converts to UTC (the database's clock)."""
    if not isinstance(value, datetime):
        kind = "a date without a time" if isinstance(value, date) else type(value).__name__
        raise WrongType(f"{name} must be a timezone-aware datetime, not {kind}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise InvalidDate(
            f"{name} must be timezone-aware, e.g. datetime.now(UTC) - timedelta(days=90)",
            reason="naive",
            field=name,
        )
    try:
        value.astimezone(UTC)
    except (OverflowError, ValueError):
        raise InvalidDate(
            f"{name} {value.isoformat()} is out of range in UTC; use a date before 9999-12-31",
            reason="range",
            field=name,
            value=value.isoformat(),
        ) from None
    return value


def position(name: str, value: object) -> int:
    """A position in a list counted from 0 (a fact in a ticket's ledger), up to 2**31 - 1."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongType(f"{name} must be an int, not {type(value).__name__}")
    if not 0 <= value <= INT32_MAX:
        raise InvalidInput(f"{name} {value} is out of range: positions count from 0")
    return value


def choice(name: str, value: object, choices: Sequence[C]) -> C:
    """``value`` as the member of ``choices`` it equals, typed as that choice."""
    if not isinstance(value, str):
        raise WrongType(f"{name} must be one of {tuple(choices)}, not {type(value).__name__}")
    for member in choices:
        if member == text(name, value, limit=200):
            return member
    shown = repr(value[:40]) + ("…" if len(value) > 40 else "")
    raise InvalidChoice(
        f"{name} must be one of {tuple(choices)}, not {shown}",
        field=name,
        choices=tuple(choices),
        value=shown,
    )


def count(name: str, value: object, *, limit: int = 10_000) -> int:
    """A whole number from 1 to ``limit`` (threads, rows to list)."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongType(f"{name} must be an int, not {type(value).__name__}")
    if not 1 <= value <= limit:
        raise InvalidInput(f"{name} must be between 1 and {limit}, not {value}")
    return value


def seconds(name: str, value: object) -> float:
    """A finite, non-negative number of seconds."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        raise WrongType(f"{name} must be a number of seconds, not {type(value).__name__}")
    if not 0 <= value < float("inf"):
        raise InvalidInput(f"{name} must be a finite number of seconds, at least 0, not {value}")
    return float(value)


def round_number(value: object) -> int:
    """A round number as RoundResult gives it: 1 for a ticket's first round."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise WrongType(f"a round number must be an int, not {type(value).__name__}")
    if not 1 <= value <= INT32_MAX:
        raise InvalidInput(f"round {value} does not exist: rounds are numbered from 1")
    return value


# The largest amount a refund table holds (numeric(12, 2)).
MAX_AMOUNT = Decimal("9999999999.99")


def amount(name: str, value: object) -> Decimal:
    """A money amount: a Decimal (or int) of whole cents, at least 0.01. A float is refused: it
    cannot hold most cent amounts exactly (0.1 + 0.2), and money is never rounded behind a caller."""
    if isinstance(value, bool) or not isinstance(value, Decimal | int):
        raise WrongType(
            f"the {name} must be a Decimal (or an int), not {type(value).__name__}; pass Decimal('150.00')",
            field=name,
        )
    number = Decimal(value)
    if not number.is_finite() or number < CENT or number > MAX_AMOUNT or number != number.quantize(CENT):
        raise AmountRefused(
            f"the {name} must be whole cents from 0.01 to {MAX_AMOUNT}, not {value}",
            reason="invalid",
            field=name,
            amount=str(value),
        )
    return number.quantize(CENT)

"""Every error supportbot raises on purpose.

    SupportbotError
    ├── ConfigError (ValueError)              a setting is missing or malformed
    │   └── ConsoleConfigError                the console has no usable operators file
    ├── InvalidInput (ValueError)             the caller passed something unusable
    │   ├── EmptyMessage
    │   ├── TextTooLong                       a text argument is longer than its limit
    │   │   └── MessageTooLong
    │   ├── InvalidEmail
    │   ├── WrongType (TypeError)             an argument of the wrong type (None, bytes, int...)
    │   ├── InvalidText                       NUL or a lone surrogate: text PostgreSQL cannot store
    │   ├── InvalidStepNumber                 a step number below 1 or beyond 32 bits
    │   ├── InvalidDate                       a naive or out-of-range datetime
    │   ├── InvalidChoice                     a value outside a fixed set (a status, a keep mode)
    │   ├── IdempotencyConflict               a message_id reused with different text
    │   ├── ForkRefused                       forking inside a round that holds a refund request
    │   └── AmountRefused                     approve(amount=) more than asked, or not a cent amount
    ├── NotFound (LookupError)
    │   ├── UnknownTicket
    │   ├── UnknownStep
    │   │   └── StepPruned                    the step's record was removed by prune()
    │   └── UnknownCustomer
    ├── StateError
    │   ├── UnknownStateField (KeyError)      a step wrote a field the state does not declare
    │   ├── AppendOnlyViolation               a step tried to rewrite turns or the tool log
    │   └── ReplayMismatch                    a stored ticket does not fit the current step graph
    ├── ApprovalNotPending                    approve()/respond() on a ticket that is not waiting (final)
    ├── RespondRefused                        respond(): the agent's answer to the note failed the checks
    ├── TicketBusy                            another worker runs a round of it: retry after ``retry_after`` s
    ├── CustomerBusy                          forget_customer() while a ticket is mid-round or waiting
    ├── TakeoverRefused                       take_over() on a ticket inside a round or another person's
    ├── NotTakenOver                          reply_as_human()/hand_back() by someone who does not own it
    ├── LeaseLost                             another worker took the ticket over mid-round
    ├── StoreError                            the database could not be reached or set up
    │   ├── StoreUnavailable                  the connection to PostgreSQL was lost or refused
    │   └── StoreBusy                         no pooled connection, lock or answer within its timeout
    ├── ContextBudgetExceeded                 the prompt cannot fit the model's context
    ├── ModelError                            the model failed after retries
    ├── WaitTimeout (TimeoutError)            no answer within wait()'s timeout; the message stays queued
    └── ClaimConflict                         the console: another reviewer holds the approval, or
                                              the reviewer's own claim lapsed

Each carries the ticket id and step when they are known, and its message says what to do next.
The message is English (API text). ``details`` holds the facts the message is built from (a limit,
a length, which setting), and ``reason`` tells apart the cases one class covers, so a caller that
speaks another language (the CLI, the console) can say the same thing in its own words.
"""

from __future__ import annotations

from typing import Protocol


class SupportbotError(Exception):
    """Root of every error supportbot raises on purpose."""

    def __init__(
        self,
        message: str,
        *,
        ticket_id: str | None = None,
        step: str | None = None,
        reason: str | None = None,
        **details: object,
    ) -> None:
        super().__init__(message)
        self.ticket_id = ticket_id
        self.step = step
        self.reason = reason  # which case of the class, when it covers several ("empty", "decided")
        self.details: dict[str, object] = details  # the message's facts, for callers that word it


class ConfigError(SupportbotError, ValueError):
    pass


class InvalidInput(SupportbotError, ValueError):
    pass


class EmptyMessage(InvalidInput):
    pass


class TextTooLong(InvalidInput):
    pass


class MessageTooLong(TextTooLong):
    pass


class InvalidEmail(InvalidInput):
    pass


class NotFound(SupportbotError, LookupError):
    pass


class UnknownTicket(NotFound):
    pass


class UnknownStep(NotFound):
    pass


class StepPruned(UnknownStep):
    pass


class UnknownCustomer(NotFound):
    pass


class StateError(SupportbotError):
    pass


class UnknownStateField(StateError, KeyError):
    def __str__(self) -> str:  # KeyError would otherwise quote the whole message
        return str(self.args[0])


class AppendOnlyViolation(StateError):
    pass


class ReplayMismatch(StateError):
    pass


class ApprovalNotPending(SupportbotError):
    pass


class RespondRefused(SupportbotError):
    pass


class CustomerBusy(SupportbotError):
    """A ticket of the customer is being worked on or waits for a human; ``tickets`` names them."""

    def __init__(self, message: str, *, tickets: tuple[str, ...]) -> None:
        super().__init__(message, ticket_id=tickets[0] if tickets else None)
        self.tickets = tickets


class LeaseLost(SupportbotError):
    pass


class StoreError(SupportbotError):
    pass


class StoreUnavailable(StoreError):
    """The database could not be reached, or the connection broke mid-call (the cause is chained).

    A write whose commit was in flight may or may not have landed: retry it (``send`` with a
    ``message_id`` stores a message once, and a round's effects run once whatever happens).
    """


class StoreBusy(StoreError):
    """No pooled connection came free within ``pool_timeout``, or a statement waited past
    ``db_timeout``; the database is up, so trying again later is safe."""


class ContextBudgetExceeded(SupportbotError):
    pass


class ModelError(SupportbotError):
    """``spent``: what the failed call still cost when the provider billed it (both answers of a
    failed schema repair, say), else None; the engine adds it to the round's spend. Like
    ``details``, it is not part of the message.

    ``reason``, where the OpenAI-compatible client or the round knows it: ``unavailable`` (no
    answer: connection refused or dropped, a timeout, 429 or 5xx after the retries),
    ``unauthorized`` (401, 403), ``context_length`` (the prompt is over the server's window),
    ``invalid_output`` (no valid answer after a repair), ``round_time`` (the round's model time,
    ``Settings.llm_round_seconds``, ran out), ``rejected`` (any other refusal). A worker waits out
    the first two (``Settings.model_outage_grace``); a host's own model may raise them too."""

    def __init__(
        self,
        message: str,
        *,
        spent: BilledCall | None = None,
        ticket_id: str | None = None,
        step: str | None = None,
        reason: str | None = None,
        **details: object,
    ) -> None:
        super().__init__(message, ticket_id=ticket_id, step=step, reason=reason, **details)
        self.spent = spent


class BilledTokens(Protocol):
    @property
    def prompt_tokens(self) -> int: ...
    @property
    def completion_tokens(self) -> int: ...


class BilledCall(Protocol):
    """A model call's tokens and cost, as ``ModelError.spent`` holds them: a
    ``supportbot.llm.base.Completion``, described by its parts because this module imports nothing."""

    @property
    def usage(self) -> BilledTokens: ...
    @property
    def cost(self) -> float: ...


# -- input hygiene ------------------------------------------------------------------------------
# Raised before anything is written (supportbot/_front/_validate.py), so a caller can fix and retry.


class WrongType(InvalidInput, TypeError):
    pass


class InvalidText(InvalidInput):
    pass


class InvalidStepNumber(InvalidInput):
    pass


class InvalidDate(InvalidInput):
    pass


class InvalidChoice(InvalidInput):
    pass


class IdempotencyConflict(InvalidInput):
    """A message_id was reused with a different text; the first text stays, the new one is refused."""


class ForkRefused(InvalidInput):
    pass


class AmountRefused(InvalidInput):
    pass


class TicketBusy(SupportbotError):
    """Another worker runs a round of the ticket; retrying after ``retry_after`` seconds finds it free
    (the round ended, or its worker's lease ran out)."""

    def __init__(self, message: str, *, ticket_id: str | None = None, retry_after: float) -> None:
        super().__init__(message, ticket_id=ticket_id)
        self.retry_after = retry_after


class TakeoverRefused(SupportbotError):
    """take_over() refused: another person owns the ticket, or it is inside a round (paused for an
    approval, or a round a crashed worker left unfinished). Nothing was recorded."""


class NotTakenOver(SupportbotError):
    """reply_as_human() or hand_back() by someone who does not own the ticket. Nothing was recorded."""


class CorrectionRefused(InvalidInput):
    """correct_fact() or correct_profile() refused: nothing current to correct there, the value is
    the one already kept, or the ticket is inside a round. Nothing was recorded."""


# -- operator console ---------------------------------------------------------------------------
# Raised by supportbot.console (an optional extra); the core never raises them.


class ConsoleConfigError(ConfigError):
    pass


class ClaimConflict(SupportbotError):
    """Another reviewer holds the approval's claim (``holder``), or the caller's own claim lapsed
    (``holder`` is None): claim it again before deciding."""

    def __init__(self, message: str, *, ticket_id: str, holder: str | None) -> None:
        super().__init__(message, ticket_id=ticket_id)
        self.holder = holder


class WaitTimeout(SupportbotError, TimeoutError):
    """No answer within the timeout given to ``wait()``; the message stays queued for the workers."""

"""The caches of customer text that one ``SupportBot`` keeps, so that forgetting a customer can
clear them.

Every cache here holds what customers wrote or what was derived from it (prompt sections, the
evidence a draft is checked against, the requests of a ticket). They belong to the bot's
``Deps`` (one ``Caches`` per bot), never to a module: ``SupportBot.forget_customer`` and
``reset`` clear exactly their own bot's caches with :meth:`Caches.clear`. Caches of the system's
own text (the tokenizer, the grams of the system prompts) stay with their modules; the token
counter's memo of counts is cleared by ``memory.tokens.forget_cached``.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Generic, TypeVar

from ..memory._mask import Placeholders
from ..memory._preferences import Stated
from ._guardrails import EvidenceScans

__all__ = ["Caches", "Recent", "Section"]

V = TypeVar("V")
Section = tuple[str, str, int]  # a prompt section: name, text, tokens

# A ticket's requests, remembered with whether they outlive it; a round rereads all of them.
WISHES_SIZE = 4096


class Recent(Generic[V]):
    """The last few results, found by comparing keys for equality: keys that hold a ticket's whole
    ledger and conversation are cheap to compare (the tuples share their items) but not to hash."""

    def __init__(self, size: int) -> None:
        self._size = size
        self._items: tuple[tuple[object, V], ...] = ()

    def get(self, key: object) -> V | None:
        return next((value for seen, value in self._items if seen == key), None)

    def put(self, key: object, value: V) -> None:
        self._items = ((key, value), *self._items[: self._size - 1])  # one assignment: safe across threads

    def clear(self) -> None:
        self._items = ()

    def __len__(self) -> int:
        return len(self._items)


def _recent_parts() -> Recent[tuple[tuple[Section, ...], int]]:
    return Recent(4)


def _recent_facts() -> Recent[tuple[Section | None, int]]:
    return Recent(4)


def _recent_placeholders() -> Recent[Placeholders]:
    return Recent(4)


@dataclass(frozen=True, slots=True)
class Caches:
    """One bot's caches of customer text (see the module docstring)."""

    # The classify, draft and review prompts of a round, and every rung of context.fit(), show one
    # ticket part: the sections, and how many facts the allowance left out.
    ticket_parts: Recent[tuple[tuple[Section, ...], int]] = field(default_factory=_recent_parts)
    facts_sections: Recent[tuple[Section | None, int]] = field(default_factory=_recent_facts)
    # The scans of the evidence a draft is checked against: a redraft is checked against the same.
    evidence: EvidenceScans = field(default_factory=EvidenceScans)
    # run._ticket_record.ticket_facts: request → whether it outlives the ticket.
    wishes: dict[str, bool] = field(default_factory=dict)
    # run._ticket_record.ticket_facts: customer message → the contact preferences it states.
    stated: dict[str, tuple[Stated, ...]] = field(default_factory=dict)
    # deps.with_placeholders: a ticket's placeholder table, the same for every step until a text
    # it is built from changes (a new turn, summary or fact).
    placeholders: Recent[Placeholders] = field(default_factory=_recent_placeholders)

    def clear(self) -> None:
        self.ticket_parts.clear()
        self.facts_sections.clear()
        self.evidence.clear()
        self.wishes.clear()
        self.stated.clear()
        self.placeholders.clear()

    def size(self) -> int:
        """How many entries the caches hold in all."""
        return (
            len(self.ticket_parts)
            + len(self.facts_sections)
            + self.evidence.size()
            + len(self.wishes)
            + len(self.stated)
            + len(self.placeholders)
        )

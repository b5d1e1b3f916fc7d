"""The words prompts are made of, and the language a customer writes in.

The labels that head each section of a prompt, the speaker labels of a rendered conversation, the
instructions of every request to a model (its system prompt) and the layout of a summary request
live here, once: the context builder, the guardrails and compression write with them, and the test
fakes find their way in a prompt with them. A label changed here changes everywhere at once.

Every text is in the ticket's language: a model told in Chinese what to do with an English ticket
answers worse (and may answer in Chinese), so the instructions follow the labels. What recognises
a prompt by its text (the prompt-leak guard, the offline model telling a summary request from a
draft) takes every language's (:func:`system_prompts`).

A prompt also carries the records its sections were rendered from (:class:`PromptSections`,
:class:`SummarySections`, under the ``SECTIONS`` key of its user message): the offline model
reads those, so no code parses the prose back.

:func:`is_english` decides the language of a message, :func:`language_of` that of a ticket: the
offline model writes English to a customer who wrote English, and the system's own messages (a
hand-off, a refund decision, the reasons the host is told) follow the ticket's language.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from .._records import Finding, Hit
from .._state import Role, Turn
from . import LANGUAGES, Language, catalog

__all__ = [
    "EVIDENCE_LABEL",
    "LABELS",
    "NO_SUMMARY",
    "ROLES_BY_LABEL",
    "SECTIONS",
    "SPEAKER_LABELS",
    "SUMMARY_NEW_LABEL",
    "SUMMARY_PREVIOUS_LABEL",
    "PromptSections",
    "SummarySections",
    "fact_labels",
    "identifier_words",
    "is_english",
    "language_of",
    "problem_words",
    "prompt_words",
    "section_labels",
    "speaker_labels",
    "system_prompt",
    "system_prompts",
    "system_words",
]


# The words of every prompt's sections, in the ticket's language (the prompt catalogue,
# prompt.zh.json / prompt.en.json: one catalogue for the context builder, the ledger and the CLI).
def prompt_words(lang: str) -> Mapping[str, str]:
    """The prompt catalogue of ``lang`` ("zh" or "en"; anything else: "zh")."""
    return catalog("prompt", "en" if lang == "en" else "zh")


def section_labels(lang: str) -> Mapping[str, str]:
    """Section name -> its label in ``lang``: basics, profile, facts, summary, history, latest, …"""
    return _prefixed(lang, "section.")


def fact_labels(lang: str) -> Mapping[str, str]:
    """Fact kind -> its label in ``lang``."""
    return _prefixed(lang, "fact.")


def problem_words(lang: str) -> Mapping[str, str]:
    """What a draft check says is wrong with a draft, in ``lang``: ``empty``, ``no_citation``, …
    (templates with ``{values}`` and the like), and ``list_separator``."""
    return _prefixed(lang, "problem.")


def identifier_words(lang: str) -> Mapping[str, str]:
    """Identifier kind (``email``, ``invoice``, …) -> how a draft check names it, in ``lang``."""
    return _prefixed(lang, "identifier.")


def speaker_labels(lang: str) -> Mapping[str, str]:
    """``customer``/``agent`` -> who said a line of a rendered conversation, in ``lang``."""
    return _prefixed(lang, "speaker.")


@functools.cache
def _prefixed(lang: str, prefix: str) -> Mapping[str, str]:
    words = prompt_words(lang)
    return {key.removeprefix(prefix): text for key, text in words.items() if key.startswith(prefix)}


LABELS: Mapping[str, str] = section_labels("zh")
# Heads the section of a review prompt that holds the data a draft must agree with (Chinese, for
# callers that read it; a ticket's prompt carries its language's, section_labels(lang)["evidence"]).
EVIDENCE_LABEL = LABELS["evidence"]

# Who said a line of a rendered conversation (memory.compress.render_turns), and back.
SPEAKER_LABELS: Mapping[str, str] = speaker_labels("zh")
ROLES_BY_LABEL: Mapping[str, Role] = {
    text: role  # type: ignore[misc]
    for lang in ("zh", "en")
    for role, text in speaker_labels(lang).items()
}


# The instructions of each request and the fixed words of the summary and fact-assist requests
# (the system catalogue, system.zh.json / system.en.json). Kept apart from the prompt catalogue:
# these are whole paragraphs a model obeys, not labels, and they are edited on their own.
def system_words(lang: str) -> Mapping[str, str]:
    """The system catalogue of ``lang`` ("zh" or "en"; anything else: "zh")."""
    return catalog("system", "en" if lang == "en" else "zh")


def system_prompt(name: str, lang: str) -> str:
    """The instructions of the ``name`` request in ``lang``: ``classify``, ``draft``, ``review``,
    ``summary`` or ``assist``."""
    return system_words(lang)[name]


def system_prompts(name: str) -> Mapping[Language, str]:
    """The instructions of the ``name`` request in every language, for what recognises a request
    by its text: a ticket's language decides which one it is sent."""
    return {lang: system_prompt(name, lang) for lang in LANGUAGES}


# The two parts of a Chinese summary request (memory.compress.summary_messages; in a ticket's
# language: system_words(lang)["summary.previous"], …).
SUMMARY_PREVIOUS_LABEL = system_words("zh")["summary.previous"]
SUMMARY_NEW_LABEL = system_words("zh")["summary.new"]
NO_SUMMARY = system_words("zh")["none"]

# The key of a prompt's user message under which its PromptSections travel (never sent by a client).
SECTIONS = "sections"


@dataclass(frozen=True, slots=True)
class PromptSections:
    """What a prompt's sections show, as records: the context builder attaches them to the user
    message (under ``SECTIONS``) beside the prose it rendered from them, so a model that reads
    structure (the offline model) never parses the prose back. Only what the prompt shows: the
    hits and findings left after trimming, the draft and evidence only in a review prompt."""

    latest: str  # the customer's latest message
    hits: tuple[Hit, ...] = ()
    findings: tuple[Finding, ...] = ()
    draft: str | None = None  # the draft under review
    evidence: str | None = None  # a review prompt's text without the draft, when it has evidence
    reviewer_note: str | None = None  # a reviewer's note the reply answers from (SupportBot.respond)
    language: Language = "zh"  # the ticket's, which the prompt's labels and instructions are in


@dataclass(frozen=True, slots=True)
class SummarySections:
    """What a summary request shows, as records (attached like ``PromptSections``): the summary so
    far (stripped; "" for none) and the turns to merge into it, or None for a request to condense
    the summary alone."""

    previous: str
    turns: tuple[Turn, ...] | None
    # The ticket's, which the speakers are labelled in (a fold of "Alright" and "Cheers" alone
    # reads as no language); None: judged from the turns.
    language: str | None = None


_CJK = re.compile(r"[\u3400-\u9fff]")
_LATIN_WORD = re.compile(r"[A-Za-z]{2,}")


def is_english(text: str) -> bool:
    """True for a message in English: Latin words and no Chinese characters."""
    return not _CJK.search(text) and len(_LATIN_WORD.findall(text)) >= 2


def language_of(texts: Sequence[str]) -> Language:
    """ "en" when the customer's texts are English (more English than Chinese ones), else "zh"."""
    return majority_language(sum(1 for text in texts if is_english(text)), len(texts))


def majority_language(english: int, texts: int) -> Language:
    """:func:`language_of` ``texts`` texts of which ``english`` are English (for a caller that
    counts as texts arrive)."""
    return "en" if english * 2 > texts else "zh"

"""One language per reader: the message catalogs of every sentence people read.

The screens (CLI, console) speak the operator's language (:func:`language`); what the system
says of a ticket, to its customer and to the host (the ``round`` catalog: hand-off replies and
reasons, refund decisions, resolutions; the ``findings`` catalog: the account lookup and refund
bases) speaks the ticket's, which is its customer's (``reply._context.ticket_language``).

A catalog is a JSON object ``{key: text}`` per domain and language, in this folder, named
``DOMAIN.LANG.json`` (``cli.zh.json``, ``cli.en.json``, ``console.en.json``…). Texts are
``str.format`` templates with named fields. Every language of a domain has the same keys and the
same fields in each text (tests/test_i18n.py checks it), so a screen built in one language never
falls back to another.

Why not gettext: its catalogs are compiled ``.mo`` files, which need a toolchain (msgfmt) at
build time and binaries in the repository; JSON is read by the standard library as it is, and
a key is a stable name rather than the English sentence.

``label`` words a status, outcome or role from the ``common`` catalog; ``error_text`` words any
SupportbotError from the ``errors`` catalog (its class, ``reason`` and fields), for every screen.

The replies a model writes are not here: a model writes them in the customer's language.
"""

from __future__ import annotations

import json
import os
import string
from collections.abc import Mapping
from functools import cache
from pathlib import Path
from typing import Literal, Protocol, get_args

from ..errors import SupportbotError

Language = Literal["zh", "en"]
LANGUAGES: tuple[Language, ...] = get_args(Language)
DEFAULT: Language = "zh"  # the demo's language, and the fallback when the locale says nothing usable

_HERE = Path(__file__).resolve().parent


class Translate(Protocol):
    language: Language

    def __call__(self, key: str, /, **fields: object) -> str: ...


def language(env: Mapping[str, str] | None = None) -> Language:
    """SUPPORTBOT_LANG (``zh``/``en``), else the locale (LC_ALL, LC_MESSAGES, LANG), else ``zh``."""
    env = os.environ if env is None else env
    chosen = env.get("SUPPORTBOT_LANG", "").strip().lower()
    if chosen:
        return _match(chosen) or DEFAULT
    for variable in ("LC_ALL", "LC_MESSAGES", "LANG"):
        value = env.get(variable, "").strip().lower()
        if value and value not in ("c", "posix", "c.utf-8"):
            return _match(value) or DEFAULT
    return DEFAULT


def _match(value: str) -> Language | None:
    for lang in LANGUAGES:
        if value == lang or value.startswith((f"{lang}_", f"{lang}-", f"{lang}.")):
            return lang
    return None


@cache
def catalog(domain: str, lang: Language) -> Mapping[str, str]:
    """The texts of ``domain`` in ``lang``; read once per process."""
    path = _HERE / f"{domain}.{lang}.json"
    with path.open(encoding="utf-8") as file:
        texts: dict[str, str] = json.load(file)
    return texts


def domains() -> list[str]:
    return sorted({p.name.split(".")[0] for p in _HERE.glob("*.json")})


class _Translator:
    def __init__(self, domain: str, lang: Language) -> None:
        self.domain = domain
        self.language = lang
        self._texts = catalog(domain, lang)

    def __call__(self, key: str, /, **fields: object) -> str:
        return self._texts[key].format(**fields)


def translator(domain: str, lang: Language | None = None) -> Translate:
    """``tr = translator("cli"); tr("approved", ticket="T000002")``; a missing key is a KeyError,
    which the catalog test catches before any user could."""
    return _Translator(domain, lang or language())


# -- labels and errors, worded for any screen --------------------------------------------------


def label(common: Translate, kind: str, value: str | None) -> str:
    """A status, outcome or role in the screen's language; a value the catalog lacks shows as is."""
    if not value:
        return "—"
    try:
        return common(f"{kind}.{value}")
    except KeyError:
        return value


def error_text(exc: SupportbotError, lang: Language) -> str:
    """The error in ``lang``, from its class, ``reason`` and fields; never the class's name.

    The most specific catalog entry whose fields the error carries wins, walking up the class tree
    (``StepPruned`` → ``UnknownStep`` → ``NotFound`` …) to ``SupportbotError``, which needs none.
    The library's English message is not shown: with --debug the traceback holds it.
    """
    texts = catalog("errors", lang)
    fields = _error_fields(exc, lang)
    for cls in type(exc).__mro__:
        if not issubclass(cls, SupportbotError):
            continue
        for key in ((f"{cls.__name__}.{exc.reason}",) if exc.reason else ()) + (cls.__name__,):
            template = texts.get(key)
            if template is not None and _names(template) <= fields.keys():
                return template.format(**fields)
    return texts["SupportbotError"]


def _names(template: str) -> set[str]:
    return {name for _, name, _, _ in string.Formatter().parse(template) if name}


def _error_fields(exc: SupportbotError, lang: Language) -> dict[str, object]:
    texts = catalog("errors", lang)
    raw: dict[str, object] = {
        "ticket": exc.ticket_id,
        "step": exc.step,
        "tickets": getattr(exc, "tickets", None),
        "retry_after": getattr(exc, "retry_after", None),
        **exc.details,
    }
    fields: dict[str, object] = {}
    for name, value in raw.items():
        if value is None:
            continue
        if name == "field":
            fields[name] = texts.get(f"field.{value}", value)
        elif name == "status":
            fields[name] = label(translator("common", lang), "status", str(value))
        elif isinstance(value, (tuple, list)):
            fields[name] = texts["list_separator"].join(str(v) for v in value)
        else:
            fields[name] = value
    return fields

"""Text for the terminal, in one language: argparse speaking the catalog's language, help that
wraps Chinese by display width, argument checks (errors are worded by i18n.error_text)."""

from __future__ import annotations

import argparse
import json
import re
import unicodedata
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, NoReturn

from pydantic_core import to_jsonable_python

from ..i18n import Language, Translate, catalog, translator

PROG = "python -m supportbot"  # how usage lines and hints name the command


def cli_words(args: argparse.Namespace) -> Translate:
    """The CLI catalog in the language this command runs in (set once by the parser)."""
    return translator("cli", args.language)


def common_words(args: argparse.Namespace) -> Translate:
    """The catalog the CLI shares with the console (statuses, outcomes), in the command's language."""
    return translator("common", args.language)


_UNITS = re.compile(r"[!-~]+|\s+|.")  # an ASCII word, a run of spaces, or any one other character
_NO_LINE_START = frozenset(",。、;:)」』!?")


def columns(text: str) -> int:
    """Width in a terminal, where a CJK character takes two columns."""
    return sum(2 if unicodedata.east_asian_width(ch) in "WF" else 1 for ch in text)


def wrap(text: str, width: int) -> list[str]:
    """Lines of at most ``width`` columns, broken at spaces or between CJK characters.

    textwrap breaks only at spaces, so a Chinese sentence is one long word to it and gets cut
    inside whatever ASCII word reaches the margin (``escal``/``ated``). Here an ASCII word is never
    cut (one longer than the line overflows it) and closing punctuation never starts a line.
    """
    lines: list[str] = []
    line = ""
    for unit in _UNITS.findall(" ".join(text.split())):
        if unit.isspace():
            line += " " if line else ""
            continue
        if line.strip() and columns(line + unit) > width and unit[0] not in _NO_LINE_START:
            lines.append(line.rstrip())
            line = ""
        line += unit
    if line.strip():
        lines.append(line.rstrip())
    return lines


class HelpFormatter(argparse.HelpFormatter):
    """argparse's formatter, wrapping help and descriptions by display width (see ``wrap``)."""

    def _split_lines(self, text: str, width: int) -> list[str]:
        return wrap(text, width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        return "\n".join(indent + line for line in wrap(text, width - len(indent)))

    def _format_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None) -> str:
        # argparse indents the usage's continuation lines by len("usage: " + prog), which is three
        # columns short under "用法:" (three characters, six columns).
        prefix = vars(argparse)["_"]("usage: ") if prefix is None else prefix
        text: str = super()._format_usage(usage, actions, groups, prefix)
        extra = columns(prefix) - len(prefix)
        lines = text.split("\n")
        return "\n".join(lines[:1] + [" " * extra + line if line.strip() else line for line in lines[1:]])


# -- argparse in one language ----------------------------------------------------------------
#
# argparse words its own texts (``usage:``, ``options``, ``show this help message and exit``, "the
# following arguments are required") through the name ``_`` it imports from gettext, so gettext's
# msgids are the hook it offers for translation. Installing a gettext catalog would need compiled
# .mo files and would route through process-wide gettext state chosen by LANGUAGE/LC_*, not by
# SUPPORTBOT_LANG; matching English messages after the fact would miss any we did not foresee.
# Instead ``Parser`` binds argparse's ``_`` (and ``ngettext``) to the ``argparse`` catalog, keyed
# by those msgids, for exactly as long as one of its own methods runs, and restores it after: a
# parser built for ``zh`` speaks Chinese whoever else uses argparse in the process, and a msgid
# the catalog lacks stays argparse's English (the CLI's language tests would show it).


@contextmanager
def speaking(lang: Language) -> Iterator[None]:
    texts = catalog("argparse", lang)
    names = vars(argparse)  # the module's globals, where its functions look `_` up at call time
    saved = names["_"], names["ngettext"]

    def plural(singular: str, plural: str, n: int) -> str:
        msgid = singular if n == 1 else plural
        return texts.get(msgid, msgid)

    names["_"], names["ngettext"] = (lambda msgid: texts.get(msgid, msgid)), plural
    try:
        yield
    finally:
        names["_"], names["ngettext"] = saved


class Parser(argparse.ArgumentParser):
    """An ArgumentParser whose own texts (headers, usage, errors) are in ``language``.

    Subparsers inherit the class and need ``language=`` passed to ``add_parser``; parents given to
    ``parents=`` must be Parsers of the same language, or their "options" group would keep its
    English title and show up as a second section.
    """

    def __init__(self, *args: Any, language: Language, **kwargs: Any) -> None:
        self.language = language
        with speaking(language):
            super().__init__(*args, **kwargs)

    def parse_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> argparse.Namespace:
        with speaking(self.language):  # it words "unrecognized arguments" itself
            return super().parse_args(args, namespace)

    def parse_known_args(  # type: ignore[override]
        self, args: Sequence[str] | None = None, namespace: argparse.Namespace | None = None
    ) -> tuple[argparse.Namespace, list[str]]:
        with speaking(self.language):
            return super().parse_known_args(args, namespace)

    def format_usage(self) -> str:
        with speaking(self.language):
            return super().format_usage()

    def format_help(self) -> str:
        with speaking(self.language):
            return super().format_help()

    def error(self, message: str) -> NoReturn:
        with speaking(self.language):
            super().error(message)


# -- argument types --------------------------------------------------------------------------

_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def email_argument(lang: Language) -> Callable[[str], str]:
    def email(text: str) -> str:
        if not _EMAIL.fullmatch(text.strip()):
            raise argparse.ArgumentTypeError(translator("cli", lang)("arg.not_email", value=repr(text)))
        return text.strip()

    return email


def step_argument(lang: Language) -> Callable[[str], int]:
    """A step number as typed; its range is the library's to check (InvalidStepNumber)."""

    def step(text: str) -> int:
        try:
            return int(text)
        except ValueError:
            raise argparse.ArgumentTypeError(
                translator("cli", lang)("arg.not_step", value=repr(text))
            ) from None

    return step


def emit_json(value: Any) -> None:
    """What --json prints: the value as indented JSON, Chinese kept as it is."""
    print(json.dumps(to_jsonable_python(value), ensure_ascii=False, indent=2))


def when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "—"


def pad(text: str, width: int) -> str:
    """Left-justify for a terminal, where a CJK character takes two columns."""
    return text + " " * max(0, width - columns(text))


def indented(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])

"""Text for the terminal: help that wraps Chinese by display width, argument checks."""

from __future__ import annotations

import argparse
import re
import unicodedata

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


_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


def email_argument(text: str) -> str:
    if not _EMAIL.fullmatch(text.strip()):
        raise argparse.ArgumentTypeError(f"{text!r} 不是邮箱地址,要 name@example.com 这样的")
    return text.strip()

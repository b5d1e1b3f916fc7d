"""One language per screen: every command's help and errors in `zh` hold no English prose, and in
`en` no Chinese, argparse's own texts included.

The CLI runs in-process through main() with SUPPORTBOT_LANG set, so the whole matrix (every
command, both languages) costs well under a second; the errors that need a database use the
embedded one. What counts as "the other language": in `en`, any CJK character or full-width
punctuation; in `zh`, argparse's English headers and messages, and any word of the English
catalogs that the Chinese catalogs do not also use (those are names: commands, options, tables).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import get_args

import psycopg
import pytest
from test_cli import COMMANDS

from supportbot import SupportBot, TicketStatus, errors, i18n
from supportbot._front._lifecycle import KEEP_MODES
from supportbot.backend.demo import load_demo_data
from supportbot.cli._main import main
from supportbot.i18n import error_text
from supportbot.memory._profile import ENTRIES

_CJK = re.compile(r"[\u3000-\u303f\u3400-\u9fff\uff00-\uffef]")
_ARGPARSE_ENGLISH = (
    "usage:",
    "options:",
    "positional arguments",
    "show this help",
    "error:",
    "error: argument",
    "the following arguments",
    "invalid choice",
    "unrecognized arguments",
    "one of the arguments",
    "expected one argument",
)
# Words the Chinese screens legitimately show: values an operator types (statuses, keep modes).
_TYPED = {
    *get_args(TicketStatus),
    *KEEP_MODES,
    *ENTRIES,
    "status",
    "migrate",
    "last",
    "final",
    "agent",
    "approver",
}
_TYPED |= {"phone", "email", "address", "contact"}  # a profile's contact slots, typed as they are
LANGUAGES = ("zh", "en")


# Not prose: fields, options, addresses, dotted or snake_case names, placeholders (EMAIL, TICKET).
_NAMES = re.compile(r"\{[^}]*\}|%\([a-z_]+\)[rs]|%[rs]|-[-a-z]+|\S+@\S+|\S*[._/$]\S*|\b[A-Z]{2,}\b")


def _prose(text: str) -> list[str]:
    return re.findall(r"[A-Za-z]{3,}", _NAMES.sub(" ", text))


def _words(texts: Iterator[str]) -> set[str]:
    return {word.lower() for text in texts for word in _prose(text)}


def _english_words() -> set[str]:
    """Words of the English catalogs that no Chinese catalog uses."""
    domains = ("cli", "errors", "common", "argparse")
    english = _words(v for d in domains for v in i18n.catalog(d, "en").values())
    chinese = _words(v for d in domains for v in i18n.catalog(d, "zh").values())
    return english - chinese - {w.lower() for w in _TYPED} - set(COMMANDS)


ENGLISH_WORDS = _english_words()


def other_language(text: str, lang: str) -> list[str]:
    """The pieces of ``text`` that belong to the language that is not ``lang``."""
    if lang == "en":
        return _CJK.findall(text)
    leaks = [h for h in _ARGPARSE_ENGLISH if h in text]
    return leaks + sorted(w for w in _prose(text) if w.lower() in ENGLISH_WORDS)


def cli(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], lang: str, *argv: str
) -> tuple[int, str]:
    monkeypatch.setenv("SUPPORTBOT_LANG", lang)
    monkeypatch.setenv("SUPPORTBOT_BACKEND", "demo")
    try:
        code = main(list(argv))
    except SystemExit as exc:
        code = int(exc.code or 0)
    captured = capsys.readouterr()
    return code, captured.out + captured.err


def test_the_scan_knows_english_words() -> None:
    """A scan with an empty word list would pass anything."""
    assert {"ticket", "approval", "refund", "customer", "usage", "options"} <= ENGLISH_WORDS
    assert other_language("ticket T000001 is not waiting", "zh") and other_language("工单", "en")
    assert not other_language("工单 T000001 不在等待审批(状态:已答复)", "zh")


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("command", [None, *COMMANDS])
def test_help_is_in_one_language(
    command: str | None, lang: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = cli(monkeypatch, capsys, lang, *([command] if command else []), "--help")
    assert code == 0 and ("用法:" if lang == "zh" else "usage:") in text
    assert not other_language(text, lang), (command, other_language(text, lang))


# One usage error per command (and the bare program), decided before any database is touched.
USAGE_ERRORS = [
    [],
    ["bogus"],
    ["chat"],
    ["chat", "--ticket", "T000001", "nobody@example.com", "hi"],
    ["tickets", "--status", "bogus"],
    ["approvals", "--bogus"],
    ["approve", "T000001", "--yes"],
    ["approve", "T000001", "--yes", "--no", "--by", "me"],
    ["demo", "--json"],
    ["show"],
    ["history", "T1", "T2"],
    ["state", "T000001", "--at", "x"],
    ["fork", "T000001"],
    ["profile", "nobody"],
    ["db", "bogus"],
    ["forget", "nobody@example.com"],
    ["prune", "--closed-before", "bogus", "--yes"],
    ["prune", "--closed-before", "2026-10-01"],
    ["reset"],
    ["tickets", "--customer"],
]


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("argv", USAGE_ERRORS, ids=lambda argv: " ".join(argv) or "(none)")
def test_usage_errors_are_in_one_language(
    argv: list[str], lang: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    code, text = cli(monkeypatch, capsys, lang, *argv, "--database-url", "postgresql://nowhere.invalid/x")
    assert code == 2, text
    assert ("错误:" if lang == "zh" else "error:") in text or not argv  # no command: the help
    assert not other_language(text, lang), (argv, other_language(text, lang))


@pytest.fixture
def story(database_url: str) -> tuple[str, str, str]:
    """吴刚's ticket waiting for a refund approval, and 李娜's answered one."""
    with SupportBot.open(database_url, backend="demo") as bot:
        with psycopg.connect(database_url) as conn:  # the demo's tables exist once the bot opened
            load_demo_data(conn)
        first = bot.open_ticket("wugang@example.com", body="招商银行的流水又同步失败了,提示 E3001")
        bot.send(first.ticket_id, "重新授权了还是不行,另外这个年付我想申请退款 200 元")
        other = bot.open_ticket("lina@example.com", body="发票抬头写错了,能改吗")
    return database_url, first.ticket_id, other.ticket_id


def test_library_errors_are_in_one_language(
    story: tuple[str, str, str], monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """The errors the library raises in English, as each command meets them."""
    url, waiting, resolved = story
    cases = {
        ("show", "T999999"): ("没有工单 T999999", "there is no ticket T999999"),
        ("history", "T999999"): ("tickets 列出工单", "tickets lists the tickets"),
        ("state", waiting, "--at", "0"): ("没有第 0 步", "there is no step 0"),
        ("state", waiting, "--at", "999"): (
            f"工单 {waiting} 没有第 999 步",
            f"ticket {waiting} has no step 999",
        ),
        ("fork", waiting, "--at", "999"): (f"history {waiting}", f"history {waiting}"),
        ("approve", resolved, "--no", "--by", "李主管"): ("状态:已答复", "status: answered"),
        ("profile", "nobody@example.com"): ("没有邮箱为 nobody@example.com", "no customer with the email"),
        ("forget", "wugang@example.com", "--yes"): (f"工单 {waiting} 正在处理", "--yes --force"),
        ("approve", waiting, "--yes", "--by", "王经理", "--note", "长" * 5000): (
            "审批意见有 5000 个字符",
            "the note",
        ),
    }
    for argv, expected in cases.items():
        for lang, needle in zip(LANGUAGES, expected, strict=True):
            code, text = cli(monkeypatch, capsys, lang, *argv, "--database-url", url)
            assert code == 1 and needle in text, (argv, lang, text)
            assert "Error" not in text and text.count("\n") == 1, text  # one line, no class name
            shown = text.replace("长" * 5000, "")
            assert not other_language(shown, lang), (argv, lang, other_language(shown, lang))


@pytest.mark.parametrize("lang", LANGUAGES)
def test_an_unexpected_error_is_in_one_language(
    lang: str, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # A URL that is no URL: the driver refuses it before connecting (whatever error class it is).
    code, text = cli(monkeypatch, capsys, lang, "tickets", "--database-url", "no url")
    assert code == 1 and text.count("\n") == 1
    assert "Error" not in text and not other_language(text, lang), text


def _every_error() -> list[type[errors.SupportbotError]]:
    found: list[type[errors.SupportbotError]] = []
    todo = [errors.SupportbotError]
    while todo:
        cls = todo.pop()
        found.append(cls)
        todo.extend(cls.__subclasses__())
    return found


ENGLISH_MESSAGE = "the library's English message, which the operator does not read"


@pytest.mark.parametrize("lang", LANGUAGES)
@pytest.mark.parametrize("cls", _every_error(), ids=lambda cls: cls.__name__)
def test_every_error_class_has_words_in_each_language(cls: type[errors.SupportbotError], lang: str) -> None:
    """With no fields at all an error still says something in the screen's language, never its
    class name nor the library's English message."""
    if cls is errors.CustomerBusy:
        exc: errors.SupportbotError = errors.CustomerBusy(ENGLISH_MESSAGE, tickets=("T000001", "T000002"))
    elif cls is errors.TicketBusy:
        exc = errors.TicketBusy(ENGLISH_MESSAGE, ticket_id="T000001", retry_after=2.5)
    elif cls is errors.ClaimConflict:
        exc = errors.ClaimConflict(ENGLISH_MESSAGE, ticket_id="T000001", holder="wang")
    else:
        exc = cls(ENGLISH_MESSAGE)
    text = error_text(exc, lang)  # type: ignore[arg-type]
    assert text and cls.__name__ not in text and "library" not in text
    assert not other_language(text, lang), (cls.__name__, text)


def test_fields_fill_the_message_in_both_languages() -> None:
    exc = errors.TextTooLong("the note has 5000 characters", field="note", length=5000, limit=4000)
    assert error_text(exc, "zh") == "审批意见有 5000 个字符,超过上限 4000"
    assert error_text(exc, "en") == "the note has 5000 characters, more than the limit of 4000"
    busy = errors.CustomerBusy("busy", tickets=("T000001", "T000002"))
    assert "T000001、T000002" in error_text(busy, "zh") and "T000001, T000002" in error_text(busy, "en")
    pruned = errors.StepPruned("gone", ticket_id="T1", at=3, pruned_on="2026-11-30", kept_from=9)
    assert error_text(pruned, "en") == (
        "step 3 of ticket T1 was pruned on 2026-11-30; steps from 9 on can still be rebuilt"
    )
    # Without the fields its own text needs, the parent's wording is used, not a KeyError.
    assert error_text(errors.StepPruned("gone", ticket_id="T1"), "zh") == "没有找到(加 --debug 查看详情)"

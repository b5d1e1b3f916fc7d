"""python -m supportbot: the operator CLI.

Every command opens one SupportBot (embedded PostgreSQL unless a URL is configured), does one
thing and exits: 0 on success, 2 on a usage error (argparse's convention, also used for refusing a
destructive command without --yes), 1 on any other error, reported as one `错误:…`/`error: …` line on
stderr (a traceback only with --debug). Read commands take --json for scripts.

Everything it prints is in one language, SUPPORTBOT_LANG (``zh``/``en``, else the locale, else
zh): argparse's own texts included (cli_text.Parser), errors worded from their fields
(i18n.error_text). Customer messages and replies are data and stay in the customer's language.

This module is the parser and the entry point; the commands live with their concept in
cli_conversations, cli_memory, cli_admin, cli_chat, cli_takeover and cli_worker.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from decimal import Decimal, InvalidOperation
from typing import Any, get_args

from .._front._bot import SupportBot
from .._front._lifecycle import KEEP_MODES
from .._state import TicketStatus
from ..config import Settings
from ..errors import (
    ApprovalNotPending,
    ConfigError,
    ConsoleConfigError,
    CustomerBusy,
    InvalidStepNumber,
    SupportbotError,
    UnknownStep,
    UnknownTicket,
)
from ..i18n import Language, Translate, error_text, language, translator
from ..memory._profile import ENTRIES
from . import _takeover as cli_takeover
from ._admin import db, forget, prune, reset, retention
from ._chat import run_chat
from ._conversations import approvals, approve, demo, respond, tickets
from ._memory import correct, correct_profile, fork, history, profile, show, state_at
from ._serve import add_serve_command
from ._text import PROG, HelpFormatter, Parser, cli_words, email_argument, step_argument
from ._worker import add_worker_commands

TICKET_STATUSES: tuple[TicketStatus, ...] = get_args(TicketStatus)


# -- entry point -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.handler is None:
        parser.print_help(sys.stderr)
        return 2
    args.validate(args)
    t = cli_words(args)
    try:
        settings = Settings.from_env()
        if (adjust := getattr(args, "adjust_settings", None)) is not None:
            settings = adjust(settings, args)  # e.g. the worker sizes its pool by its threads
        if args.handler is db:
            return int(db(args, settings))
        if getattr(args, "standalone", False):  # opens what it needs itself (console)
            return int(args.handler(args, settings))
        if args.handler is run_chat:
            return int(run_chat(args, settings, lambda **models: _open_bot(args, settings, **models)))
        with _open_bot(args, settings, **_demo_options(args)) as bot:
            return int(args.handler(bot, args))
    except SupportbotError as exc:
        return _fail(args, exc, error_text(exc, args.language) + _hint(exc, args))
    except KeyboardInterrupt:
        print("\n" + t("interrupted"), file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error worth a message. Point stdout at
        # devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - unexpected: still one line, the traceback is behind --debug
        # Neither the class nor its message: both are English whatever the screen speaks.
        return _fail(args, exc, t("unexpected"))


def _demo_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.handler is not demo:
        return {}
    from ..backend.demo._data import demo_clock

    return {"clock": demo_clock()}  # the demo is played on its own day, whatever today's date


def _hint(exc: SupportbotError, args: argparse.Namespace) -> str:
    """The CLI's way to the next step; the library's messages name API calls, not commands."""
    t, ticket = cli_words(args), getattr(args, "ticket", None)
    if isinstance(exc, UnknownTicket):
        return t("hint.tickets", prog=PROG)
    if isinstance(exc, ApprovalNotPending):
        return t("hint.approvals", prog=PROG)
    if isinstance(exc, (InvalidStepNumber, UnknownStep)) and ticket:
        return t("hint.history", prog=PROG, ticket=ticket)
    if isinstance(exc, CustomerBusy) and args.handler is forget:
        return t("hint.forget_force", prog=PROG, email=args.email)
    if isinstance(exc, ConsoleConfigError):
        return t("hint.console_add_user", prog=PROG)
    if isinstance(exc, ConfigError) and exc.reason == "backend_missing":
        return t("hint.backend")
    return ""


def _fail(args: argparse.Namespace, exc: BaseException, message: str) -> int:
    if args.debug:
        raise exc
    print(cli_words(args)("error", message=" ".join(message.split())), file=sys.stderr)
    return 1


def _backend(args: argparse.Namespace, settings: Settings) -> str | None:
    """The business system the command acts on: --backend, else SUPPORTBOT_BACKEND; `demo` always
    plays on the demo. None: SupportBot.open() refuses (ConfigError), so a command never decides a
    refund on the demo tables of a deployment that has its own business system."""
    return "demo" if args.handler is demo else args.backend or settings.backend


@contextmanager
def _open_bot(args: argparse.Namespace, settings: Settings, **models: Any) -> Iterator[SupportBot]:
    embedded = not (args.database_url or settings.database_url)
    if embedded and sys.stderr.isatty():
        # The first start runs initdb, which takes a few seconds: say why nothing happens.
        print(cli_words(args)("starting_embedded"), end="", file=sys.stderr, flush=True)
    try:
        bot = SupportBot.open(
            args.database_url, backend=_backend(args, settings), settings=settings, **models
        )
    finally:
        if embedded and sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr, flush=True)
    with bot:
        yield bot


# -- the parser ------------------------------------------------------------------------------


def _global_options(lang: Language, *, on_subcommand: bool, json_output: bool = True) -> Parser:
    """--database-url, --backend, --json and --debug, accepted before or after the subcommand.

    On subcommands the defaults are SUPPRESS, so an option given before the subcommand is not
    reset by the subcommand's own default.
    """
    t = translator("cli", lang)
    unset: Any = argparse.SUPPRESS if on_subcommand else None
    options = Parser(add_help=False, language=lang)
    options.add_argument("--database-url", metavar="URL", default=unset, help=t("opt.database_url"))
    options.add_argument("--backend", metavar="SPEC", default=unset, help=t("opt.backend"))
    if json_output:  # not offered by commands that have no JSON output (chat, demo)
        options.add_argument(
            "--json", action="store_true", default=unset if on_subcommand else False, help=t("opt.json")
        )
    options.add_argument(
        "--debug", action="store_true", default=unset if on_subcommand else False, help=t("opt.debug")
    )
    return options


def build_parser(lang: Language | None = None) -> Parser:
    """The CLI's parser, in ``lang`` (default: SUPPORTBOT_LANG, then the locale, then zh)."""
    lang = lang or language()
    t = translator("cli", lang)
    parser = Parser(
        prog=PROG,
        parents=[_global_options(lang, on_subcommand=False)],
        formatter_class=HelpFormatter,
        description=t("description"),
        language=lang,
    )
    parser.set_defaults(handler=None, language=lang)
    sub = parser.add_subparsers(title=t("commands"), metavar="COMMAND")
    common = [_global_options(lang, on_subcommand=True)]
    without_json = [_global_options(lang, on_subcommand=True, json_output=False)]

    def command(
        name: str,
        handler: Callable[..., int],
        validate: Callable[[argparse.Namespace, argparse.ArgumentParser], None] | None = None,
        **fields: object,
    ) -> argparse.ArgumentParser:
        summary = t(f"cmd.{name}", **fields)
        parents = without_json if handler in (run_chat, demo) else common
        p = sub.add_parser(
            name,
            parents=parents,
            help=summary,
            description=summary,
            formatter_class=HelpFormatter,
            language=lang,
        )
        p.set_defaults(handler=handler, validate=lambda args: (validate or _check_json)(args, p))
        return p

    _add_conversation_commands(command, t, lang)
    _add_memory_commands(command, t, lang)
    _add_admin_commands(command, t, lang)
    _add_console_command(command, t)
    add_serve_command(command, t)
    add_worker_commands(command, t)
    cli_takeover.add_commands(command, _moment(lang), t)
    return parser


def _amount(lang: Language) -> Callable[[str], Decimal]:
    def parse(text: str) -> Decimal:
        try:
            return Decimal(text)
        except InvalidOperation:
            raise argparse.ArgumentTypeError(translator("cli", lang)("usage.amount", text=text)) from None

    return parse


def _check_amount(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    _check_json(args, parser)
    if args.amount is not None and not args.approved:
        parser.error(cli_words(args)("usage.amount_with_no"))


def _check_json(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    # Only reachable as `--json chat ...`: the subcommands themselves do not accept it.
    if args.json and args.handler in (run_chat, demo):
        parser.error(cli_words(args)("usage.no_json"))


def _add_conversation_commands(
    command: Callable[..., argparse.ArgumentParser], t: Translate, lang: Language
) -> None:
    email = email_argument(lang)
    p = command("chat", run_chat, validate=_check_chat)
    p.add_argument("email", nargs="?", type=email, metavar="EMAIL", help=t("opt.chat.email"))
    p.add_argument("message", nargs="?", metavar="MESSAGE", help=t("opt.chat.message"))
    p.add_argument("--ticket", metavar="ID", help=t("opt.chat.ticket"))
    p.add_argument("--subject", metavar="TEXT", help=t("opt.chat.subject"))
    p.add_argument("--by", metavar="NAME", help=t("opt.chat.by"))

    p = command("tickets", tickets)
    p.add_argument("--customer", type=email, metavar="EMAIL", help=t("opt.tickets.customer"))
    p.add_argument(
        "--status",
        choices=TICKET_STATUSES,
        metavar="S",
        help=t("opt.tickets.status", statuses=t("list_separator").join(TICKET_STATUSES)),
    )

    p = command("approvals", approvals)

    p = command("approve", approve)
    p.add_argument("ticket", metavar="TICKET")
    decision = p.add_mutually_exclusive_group(required=True)
    decision.add_argument(
        "--yes", dest="approved", action="store_true", default=None, help=t("opt.approve.yes")
    )
    decision.add_argument("--no", dest="approved", action="store_false", help=t("opt.approve.no"))
    p.add_argument("--by", metavar="NAME", required=True, help=t("opt.approve.by"))
    p.add_argument("--note", metavar="TEXT", default="", help=t("opt.approve.note"))
    p.add_argument("--amount", metavar="AMOUNT", type=_amount(lang), help=t("opt.approve.amount"))
    p.set_defaults(validate=lambda args, parser=p: _check_amount(args, parser))

    p = command("respond", respond)
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("--note", metavar="TEXT", required=True, help=t("opt.respond.note"))
    p.add_argument("--by", metavar="NAME", required=True, help=t("opt.approve.by"))

    command("demo", demo, day=_demo_day())


def _add_memory_commands(
    command: Callable[..., argparse.ArgumentParser], t: Translate, lang: Language
) -> None:
    for name, handler in (("show", show), ("history", history)):
        p = command(name, handler)
        p.add_argument("ticket", metavar="TICKET")

    for name, handler in (("state", state_at), ("fork", fork)):
        p = command(name, handler)
        p.add_argument("ticket", metavar="TICKET")
        p.add_argument("--at", type=step_argument(lang), required=True, metavar="SEQ", help=t("opt.at"))

    p = command("profile", profile)
    p.add_argument("email", type=email_argument(lang), metavar="EMAIL")

    p = command("correct", correct)
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("position", type=int, metavar="N", help=t("opt.correct.position"))
    _correction_options(p, t)

    p = command("correct-profile", correct_profile)
    p.add_argument("email", type=email_argument(lang), metavar="EMAIL")
    p.add_argument(
        "entry", choices=ENTRIES, metavar="ENTRY", help=t("opt.correct.entry", entries=", ".join(ENTRIES))
    )
    p.add_argument("key", metavar="KEY", help=t("opt.correct.key"))
    _correction_options(p, t)


def _correction_options(p: argparse.ArgumentParser, t: Translate) -> None:
    what = p.add_mutually_exclusive_group(required=True)
    what.add_argument("--value", metavar="TEXT", help=t("opt.correct.value"))
    what.add_argument("--retract", action="store_true", help=t("opt.correct.retract"))
    p.add_argument("--reason", metavar="TEXT", required=True, help=t("opt.correct.reason"))
    p.add_argument("--by", metavar="NAME", required=True, help=t("opt.reply.by"))


def _add_admin_commands(
    command: Callable[..., argparse.ArgumentParser], t: Translate, lang: Language
) -> None:
    p = command("db", db)
    p.add_argument(
        "action", choices=["status", "migrate"], metavar="{status,migrate}", help=t("opt.db.action")
    )
    p.add_argument("--demo", action="store_true", help=t("opt.db.demo"))

    p = command("forget", forget, validate=_needs_yes("usage.forget_yes"))
    p.add_argument("email", type=email_argument(lang), metavar="EMAIL")
    p.add_argument("--yes", action="store_true", help=t("opt.confirm_delete"))
    p.add_argument("--force", action="store_true", help=t("opt.forget.force"))

    p = command("prune", prune, validate=_needs_yes("usage.prune_yes"))
    p.add_argument(
        "--closed-before",
        type=_moment(lang),
        required=True,
        metavar="DATE",
        help=t("opt.prune.closed_before"),
    )
    p.add_argument("--keep", choices=KEEP_MODES, default="last", help=t("opt.prune.keep"))
    p.add_argument("--yes", action="store_true", help=t("opt.confirm_delete"))

    p = command("retention", retention)
    p.add_argument("--apply", action="store_true", help=t("opt.retention.apply"))

    p = command("reset", reset, validate=_needs_yes("usage.reset_yes"))
    p.add_argument("--yes", action="store_true", help=t("opt.reset.yes"))


def _add_console_command(command: Callable[..., argparse.ArgumentParser], t: Translate) -> None:
    # The console is an optional extra (supportbot[console]): its module is imported only when it
    # runs; its option texts are in its own catalog.
    tr = translator("console", t.language)
    p = command("console", console)
    p.add_argument("--host", default="127.0.0.1", help=tr("cli.help_host"))
    p.add_argument("--port", type=int, default=8088, help=tr("cli.help_port"))
    p.add_argument("--add-user", metavar="NAME", help=tr("cli.help_add_user"))
    p.add_argument("--role", choices=["agent", "approver"], default="agent", help=tr("cli.help_role"))
    p.add_argument("--set-teams", nargs=2, metavar=("NAME", "TEAMS"), help=tr("cli.help_set_teams"))
    p.set_defaults(standalone=True)


def console(args: argparse.Namespace, settings: Settings) -> int:
    try:
        from ..console import run
    except ImportError as exc:  # the extra is not installed
        raise ConfigError(
            f"the console needs its extra: pip install 'supportbot[console]' ({exc.name} is missing)"
        ) from exc
    return run(args, settings)


def _check_chat(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    _check_json(args, parser)
    if args.ticket and (args.email or args.message):
        parser.error(cli_words(args)("usage.chat_both"))
    if not args.ticket and not (args.email and args.message):
        parser.error(cli_words(args)("usage.chat_neither"))


def _needs_yes(key: str) -> Callable[[argparse.Namespace, argparse.ArgumentParser], None]:
    def check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
        if not args.yes:
            parser.error(cli_words(args)(key))

    return check


def _demo_day() -> str:
    from ..backend.demo._data import DEMO_TODAY

    return DEMO_TODAY.isoformat()


def _moment(lang: Language) -> Callable[[str], datetime]:
    t = translator("cli", lang)

    def moment(text: str) -> datetime:
        try:
            moment = datetime.fromisoformat(text)
        except ValueError:
            raise argparse.ArgumentTypeError(t("arg.not_date", value=repr(text))) from None
        try:
            return moment if moment.tzinfo else moment.astimezone()  # naive: the operator's local time
        except (OverflowError, ValueError):  # the last hours of 9999-12-31, west of UTC
            raise argparse.ArgumentTypeError(t("arg.date_range", value=repr(text))) from None

    return moment

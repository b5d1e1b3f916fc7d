"""python -m supportbot: the operator CLI.

Every command opens one SupportBot (embedded PostgreSQL unless a URL is configured), does one
thing and exits: 0 on success, 2 on a usage error (argparse's convention, also used for refusing a
destructive command without --yes), 1 on any other error, reported as one `错误:…`/`error: …` line on
stderr (a traceback only with --debug). Read commands take --json for scripts.

Everything it prints is in one language, SUPPORTBOT_LANG (``zh``/``en``, else the locale, else
zh): argparse's own texts included (cli_text.Parser), errors worded from their fields
(i18n.error_text). Customer messages and replies are data and stay in the customer's language.
"""

from __future__ import annotations

import argparse
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, get_args

from pydantic_core import to_jsonable_python

from . import cli_takeover
from .bot import SupportBot
from .cli_chat import clip, context_text, run_chat
from .cli_text import HelpFormatter, Parser, email_argument, emit_json, pad, step_argument, when
from .cli_worker import add_worker_commands
from .config import Settings
from .engine import RoundResult
from .errors import (
    ApprovalNotPending,
    ConfigError,
    ConsoleConfigError,
    CustomerBusy,
    InvalidStepNumber,
    SupportbotError,
    UnknownStep,
    UnknownTicket,
)
from .i18n import Language, Translate, error_text, label, language, translator
from .lifecycle import KEEP_MODES
from .memory.facts import FACT_LABELS_EN, FACT_LABELS_ZH
from .memory.profile import Profile
from .opening import migrate, migration_status
from .state import SupportState, TicketStatus

PROG = "python -m supportbot"
DEMO_EMAIL = "wugang@example.com"
DEMO_SUBJECT = "银行流水又同步失败了"  # how `demo` finds the ticket it played
TICKET_STATUSES: tuple[TicketStatus, ...] = get_args(TicketStatus)

# Where each kind of memory lives, so `show` can say it and operators can find it with psql; the
# descriptions are in the catalogs ("storage.turns"...).
STORAGE = ("turns", "summary", "facts", "profile", "context_usage", "tool_calls", "steps", "approvals")


def _tr(args: argparse.Namespace) -> Translate:
    return translator("cli", args.language)


def _common(args: argparse.Namespace) -> Translate:
    return translator("common", args.language)


def storage(t: Translate) -> dict[str, str]:
    return {name: t(f"storage.{name}") for name in STORAGE}


# -- entry point -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.handler is None:
        parser.print_help(sys.stderr)
        return 2
    args.validate(args)
    t = _tr(args)
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
    from .backend.demo_data import demo_clock

    return {"clock": demo_clock()}  # the demo is played on its own day, whatever today's date


def _hint(exc: SupportbotError, args: argparse.Namespace) -> str:
    """The CLI's way to the next step; the library's messages name API calls, not commands."""
    t, ticket = _tr(args), getattr(args, "ticket", None)
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
    return ""


def _fail(args: argparse.Namespace, exc: BaseException, message: str) -> int:
    if args.debug:
        raise exc
    print(_tr(args)("error", message=" ".join(message.split())), file=sys.stderr)
    return 1


def _backend(args: argparse.Namespace, settings: Settings) -> str:
    # The CLI is the demo business system's console unless SUPPORTBOT_BACKEND names the host's;
    # `demo` always plays on the demo.
    return "demo" if args.handler is demo else settings.backend or "demo"


@contextmanager
def _open_bot(args: argparse.Namespace, settings: Settings, **models: Any) -> Iterator[SupportBot]:
    embedded = not (args.database_url or settings.database_url)
    if embedded and sys.stderr.isatty():
        # The first start runs initdb, which takes a few seconds: say why nothing happens.
        print(_tr(args)("starting_embedded"), end="", file=sys.stderr, flush=True)
    try:
        # The CLI is the demo business system's console: a host application's own Backend is
        # reached through the library, where it is passed to SupportBot.open().
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
    """--database-url, --json and --debug, accepted before or after the subcommand.

    On subcommands the defaults are SUPPRESS, so an option given before the subcommand is not
    reset by the subcommand's own default.
    """
    t = translator("cli", lang)
    unset: Any = argparse.SUPPRESS if on_subcommand else None
    options = Parser(add_help=False, language=lang)
    options.add_argument("--database-url", metavar="URL", default=unset, help=t("opt.database_url"))
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
    add_worker_commands(command, t)
    cli_takeover.add_commands(command, _moment(lang), t)
    return parser


def _check_json(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    # Only reachable as `--json chat ...`: the subcommands themselves do not accept it.
    if args.json and args.handler in (run_chat, demo):
        parser.error(_tr(args)("usage.no_json"))


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
    p.set_defaults(standalone=True)


def console(args: argparse.Namespace, settings: Settings) -> int:
    try:
        from .console import run
    except ImportError as exc:  # the extra is not installed
        raise ConfigError(
            f"the console needs its extra: pip install 'supportbot[console]' ({exc.name} is missing)"
        ) from exc
    return run(args, settings)


def _check_chat(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    _check_json(args, parser)
    if args.ticket and (args.email or args.message):
        parser.error(_tr(args)("usage.chat_both"))
    if not args.ticket and not (args.email and args.message):
        parser.error(_tr(args)("usage.chat_neither"))


def _needs_yes(key: str) -> Callable[[argparse.Namespace, argparse.ArgumentParser], None]:
    def check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
        if not args.yes:
            parser.error(_tr(args)(key))

    return check


def _demo_day() -> str:
    from .backend.demo_data import DEMO_TODAY

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


# -- output helpers --------------------------------------------------------------------------


def indented(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


# -- conversations ---------------------------------------------------------------------------


def tickets(bot: SupportBot, args: argparse.Namespace) -> int:
    rows = bot.tickets(email=args.customer, status=args.status)
    if args.json:
        emit_json(rows)
        return 0
    t, c = _tr(args), _common(args)
    for row in rows:
        status, turns = pad(label(c, "status", row.status), 16), t("n_turns", n=f"{row.turn_count:>3}")
        updated = t("updated_at", when=when(row.updated_at))
        subject = pad(clip(row.subject, 20), 40)
        print(f"{row.id}  {status} {turns}  {row.customer_email:<24} {subject}  {updated}")
    print(t("tickets.count", n=len(rows)) if rows else t("tickets.none"))
    return 0


def approvals(bot: SupportBot, args: argparse.Namespace) -> int:
    pending = bot.pending_approvals()
    if args.json:
        emit_json(pending)
        return 0
    t = _tr(args)
    for p in pending:
        refund = p.request.get("refund_request") or {}
        print(
            t(
                "approvals.row",
                ticket=p.ticket_id,
                round=p.round,
                email=p.customer_email,
                subject=clip(p.subject, 20),
                amount=refund.get("amount", "?"),
                currency=refund.get("currency", ""),
                invoice=refund.get("invoice_id", "?"),
                when=when(p.requested_at),
            )
        )
    print(t("approvals.count", n=len(pending), prog=PROG) if pending else t("approvals.none"))
    return 0


def approve(bot: SupportBot, args: argparse.Namespace) -> int:
    decide = bot.approve if args.approved else bot.reject
    result = decide(args.ticket, approver=args.by, note=args.note, source=cli_takeover.SOURCE)
    if args.json:
        emit_json(result)
        return 0
    t = _tr(args)
    if args.approved and result.approved is False:  # the business system could not apply it
        print(t("approve.failed", ticket=args.ticket, by=args.by, note=result.decision_note))
    else:
        print(t("approve.approved" if args.approved else "approve.rejected", ticket=args.ticket, by=args.by))
    _print_result(result, args)
    return 0


def _print_result(result: RoundResult, args: argparse.Namespace) -> None:
    t = _tr(args)
    print(t("reply.header", outcome=label(_common(args), "outcome", result.outcome), round=result.round))
    print(result.reply or t("reply.waiting"))


def demo(bot: SupportBot, args: argparse.Namespace) -> int:
    """Load the demo data and play 吴刚's ticket once; a second run reloads the data and says so.

    Playing it again would add a fifth E3001 ticket to his history and change his profile, so a
    database keeps one played demo ticket until it is forgotten or reset. The customer's messages
    and the replies are Chinese in any language: they are the customer's.
    """
    from .backend.demo import DemoBackend
    from .backend.demo_data import DEMO_TODAY

    t = _tr(args)
    print(t("demo.loading"), file=sys.stderr, flush=True)
    assert isinstance(bot.backend, DemoBackend)  # _open_bot opens every CLI bot on the demo
    counts = bot.backend.load_demo_data()
    print(t("demo.data", counts=t("list_separator").join(f"{table} {n}" for table, n in counts.items())))
    played = [row for row in bot.tickets(email=DEMO_EMAIL) if row.subject == DEMO_SUBJECT]
    if played:
        status = label(_common(args), "status", played[0].status)
        print(t("demo.played", ticket=played[0].id, day=DEMO_TODAY, status=status))
        print(t("demo.profile", text=bot.profile(DEMO_EMAIL).text))
        print(t("demo.replay", prog=PROG, email=DEMO_EMAIL))
        _demo_next(played[0].id, t)
        return 0
    print(t("demo.day", day=DEMO_TODAY, text=bot.profile(DEMO_EMAIL).text))
    message = "招商银行的流水又同步失败了,提示 E3001,怎么办?"
    first = bot.open_ticket(DEMO_EMAIL, subject=DEMO_SUBJECT, body=message)
    _demo_turn(message, first, args)
    message = "重新授权了还是不行,另外这个年付我想申请退款 200 元"
    second = bot.send(first.ticket_id, message)
    _demo_turn(message, second, args)
    if second.outcome == "waiting_approval":
        print(t("demo.approval", ticket=second.ticket_id))
        second = bot.approve(second.ticket_id, approver="值班主管", note="符合 30 天内退款政策")
        _print_result(second, args)
    state = bot.state(first.ticket_id)
    steps = len(bot.history(state.ticket.id))
    print(
        "\n"
        + t("demo.memory", ticket=state.ticket.id, turns=len(state.turns), rounds=state.round, steps=steps)
    )
    print(t("demo.profile_after", text=bot.profile(DEMO_EMAIL).text))
    _demo_next(state.ticket.id, t)
    return 0


def _demo_next(ticket_id: str, t: Translate) -> None:
    later = (f"show {ticket_id}", f"history {ticket_id}", f"chat --ticket {ticket_id}")
    print("\n" + t("demo.next", commands="  ·  ".join(f"{PROG} {command}" for command in later)))


def _demo_turn(message: str, result: RoundResult, args: argparse.Namespace) -> None:
    print(f"\n吴刚> {message}")
    _print_result(result, args)


# -- memory ----------------------------------------------------------------------------------


def show(bot: SupportBot, args: argparse.Namespace) -> int:
    state = bot.state(args.ticket)
    steps = bot.history(args.ticket)
    row = bot.ticket(args.ticket)
    t, c = _tr(args), _common(args)
    where = storage(t)
    if args.json:
        emit_json(
            {
                "ticket": row,
                **_memory(state),
                "steps": len(steps),
                "tool_calls": len(state.tool_log),
                "storage": where,
            }
        )
        return 0
    print(t("show.title", ticket=row.id, email=row.customer_email, subject=row.subject))
    print(
        t(
            "show.status",
            status=label(c, "status", row.status),
            round=state.round,
            outcome=label(c, "outcome", state.outcome),
            cost=f"{state.cost:.4f}",
            created=when(row.created_at),
            updated=when(row.updated_at),
        )
    )
    _print_memory(state, t, c)
    _section(t("show.other"), "")
    print("    " + t("show.steps", n=len(steps), where=where["steps"]))
    print("    " + t("show.tool_calls", n=len(state.tool_log), where=where["tool_calls"]))
    print("    " + t("show.approvals", where=where["approvals"]))
    return 0


def _memory(state: SupportState) -> dict[str, Any]:
    return {
        "round": state.round,
        "outcome": state.outcome,
        "cost": state.cost,
        "turns": state.turns,
        "summary": state.summary,
        "summarized_upto": state.summarized_upto,
        "facts": state.facts,
        "profile": state.profile,
        "context_usage": state.context_usage,
    }


def _section(title: str, where: str) -> None:
    print(f"\n── {title}" + (f"  [{where}]" if where else ""))


def _print_memory(state: SupportState, t: Translate, c: Translate) -> None:
    where = storage(t)
    _section(t("memory.turns", n=len(state.turns)), where["turns"])
    for turn in state.turns:
        folded = t("memory.folded") if turn.idx is not None and turn.idx < state.summarized_upto else ""
        role = label(c, "role", turn.role)
        print(f"  #{turn.idx} {t('round_n', n=turn.round)} {role}{folded}  {when(turn.created_at)}")
        print(indented(turn.content))
    _section(t("memory.summary", n=state.summarized_upto), where["summary"])
    print(indented(state.summary) if state.summary else "    " + t("memory.no_summary"))
    _section(t("memory.facts", n=len(state.facts)), where["facts"])
    labels = FACT_LABELS_ZH if t.language == "zh" else FACT_LABELS_EN
    for fact in state.facts:
        print(
            "    " + t("memory.fact", kind=labels.get(fact.kind, fact.kind), value=fact.value, turn=fact.turn)
        )
    _section(t("memory.profile"), where["profile"])
    print(indented(state.profile or t("memory.no_profile")))
    _section(context_text(state.context_usage, t), where["context_usage"])
    for name, tokens in state.context_usage.items():
        if name not in ("total", "budget"):
            print(f"    {label(t, 'context', name)}: {tokens}")


def history(bot: SupportBot, args: argparse.Namespace) -> int:
    steps = bot.history(args.ticket)
    if args.json:
        emit_json(steps)
        return 0
    t = _tr(args)
    mark = bot.pruned(args.ticket)
    if mark is not None:
        print(
            "   …  "
            + t(
                "history.pruned",
                last=mark.kept_from - 1,
                when=when(mark.pruned_at),
                kb=f"{mark.bytes / 1024:.1f}",
            )
        )
    for s in steps:
        ends = pad(s.next_step or t("round_end"), 15)
        print(f"{s.seq:>4}  {pad(t('round_n', n=s.round), 7)} {s.step:<15} → {ends}  {when(s.created_at)}")
    print(t("history.count", n=len(steps), prog=PROG, ticket=args.ticket))
    return 0


def state_at(bot: SupportBot, args: argparse.Namespace) -> int:
    state = bot.state_at(args.ticket, args.at)  # --at 0 is refused as in the API: steps start at 1
    (record,) = [s for s in bot.history(args.ticket) if s.seq == args.at]
    if args.json:
        emit_json(
            {
                "ticket_id": args.ticket,
                "seq": record.seq,
                "step": record.step,
                "next_step": record.next_step,
                "state": {**to_jsonable_python(state), "reply": state.reply},
            }
        )  # reply is derived
        return 0
    t, c = _tr(args), _common(args)
    print(
        t(
            "state.title",
            ticket=args.ticket,
            seq=record.seq,
            step=record.step,
            round=state.round,
            next=record.next_step or t("round_end"),
        )
    )
    review = "—" if state.review is None else t("state.passed" if state.review.passed else "state.failed")
    print(
        "    "
        + t(
            "state.line",
            category=label(c, "category", state.triage.category if state.triage else None),
            hits=", ".join(h.id for h in state.hits) or "—",
            chars=len(state.draft),
            revision=state.revisions,
            review=review,
            outcome=label(c, "outcome", state.outcome),
        )
    )
    if state.refund_request:
        r = state.refund_request
        refund = label(c, "refund", r.status)
        print(
            "    "
            + t(
                "state.refund",
                id=r.id,
                amount=r.amount,
                currency=r.currency,
                invoice=r.invoice_id,
                status=refund,
            )
        )
    if state.approval:
        decided = t("approved" if state.approval.approved else "rejected")
        print("    " + t("state.approval", decision=decided, by=state.approval.approver))
    _print_memory(state, t, c)
    if record.next_step is not None and state.refund_request is not None:
        print("\n" + t("state.no_fork"))
    else:
        print("\n" + t("state.fork_here", prog=PROG, ticket=args.ticket, at=args.at))
    return 0


def fork(bot: SupportBot, args: argparse.Namespace) -> int:
    new_id = bot.fork(args.ticket, args.at, source=cli_takeover.SOURCE)
    if args.json:
        emit_json({"ticket_id": new_id, "forked_from": args.ticket, "at": args.at})
        return 0
    t = _tr(args)
    print(t("fork.done", ticket=args.ticket, at=args.at, new=new_id))
    print(t("chat.resume_hint", command=f"{PROG} chat --ticket {new_id}"))
    return 0


def profile(bot: SupportBot, args: argparse.Namespace) -> int:
    p: Profile = bot.profile(args.email)
    if args.json:
        emit_json(p)
        return 0
    t = _tr(args)
    plan = f"{p.plan}{p.billing_cycle or ''}" if p.plan else t("profile.no_plan")
    print(t("profile.title", name=p.name, id=p.customer_id, plan=plan, vip=" · VIP" if p.is_vip else ""))
    print(t("profile.text"))
    print(indented(p.text))
    if p.recurring:
        print(t("profile.recurring"))
        for issue in p.recurring:
            fixes = t("list_separator").join(sorted({r for r in issue.resolutions if r})) or "—"
            print(
                "    "
                + t(
                    "profile.issue",
                    label=issue.label,
                    n=issue.count,
                    months=", ".join(issue.months),
                    fixes=fixes,
                )
            )
    print(t("profile.open_requests", items="; ".join(p.open_requests) or "—"))
    print(t("profile.promises", items="; ".join(p.promises) or "—"))
    print(t("profile.basis", tickets=p.ticket_count, skipped=p.skipped_records))
    return 0


# -- administration --------------------------------------------------------------------------


def db(args: argparse.Namespace, settings: Settings) -> int:
    """Runs without opening a bot, which would migrate first: status reports what is pending."""
    url = args.database_url
    done = migrate(url, demo=args.demo, settings=settings) if args.action == "migrate" else []
    states = migration_status(url, settings=settings)
    rows = [{"version": m.version, "name": m.name, "applied": done_ or m in done} for m, done_ in states]
    if args.json:
        emit_json({"applied_now": len(done), "migrations": rows})
        return 0
    t = _tr(args)
    if args.action == "migrate":
        print(t("db.migrated", n=len(done)))
    width = max((len(str(r["name"])) for r in rows), default=0)
    for r in rows:
        print(f"{r['version']:03d} {r['name']:{width}s}  {t('db.applied' if r['applied'] else 'db.pending')}")
    return 0


def forget(bot: SupportBot, args: argparse.Namespace) -> int:
    # CustomerBusy: main adds --force's hint
    report = bot.forget_customer(args.email, force=args.force, source=cli_takeover.SOURCE)
    if args.json:
        emit_json(report)
        return 0
    t = _tr(args)
    listed = t("list_separator").join(report.tickets) or "—"
    print(t("forget.done", email=report.email, n=len(report.tickets), tickets=listed))
    _print_rows(report.rows, t)
    return 0


def prune(bot: SupportBot, args: argparse.Namespace) -> int:
    report = bot.prune(closed_before=args.closed_before, keep=args.keep)
    if args.json:
        emit_json(report)
        return 0
    t = _tr(args)
    kb = f"{report.bytes_freed / 1024:.1f}"
    print(t("prune.done", before=when(args.closed_before), n=len(report.tickets), kb=kb))
    _print_rows(report.rows, t)
    return 0


def reset(bot: SupportBot, args: argparse.Namespace) -> int:
    report = bot.reset()
    if args.json:
        emit_json(report)
        return 0
    t = _tr(args)
    print(t("reset.done", n=len(report.tickets), rows=report.total))
    _print_rows(report.rows, t)
    return 0


def _print_rows(rows: dict[str, int], t: Translate) -> None:
    for table, count in rows.items():
        print("    " + t("rows", table=table, n=count))

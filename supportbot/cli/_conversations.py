"""The conversation commands other than `chat`: list tickets, list and decide pending approvals,
and `demo`, which loads the demo business data and plays one ticket through to its approval.

`chat` holds a terminal session and lives in cli/_chat.py; these print once and exit.
"""

from __future__ import annotations

import argparse
import sys

from .._front._bot import SupportBot
from ..i18n import Translate, label
from ..run._rounds import RoundResult
from . import _takeover as cli_takeover
from ._chat import clip
from ._text import PROG, cli_words, common_words, emit_json, pad, when

DEMO_EMAIL = "wugang@example.com"
DEMO_SUBJECT = "银行流水又同步失败了"  # how `demo` finds the ticket it played


def tickets(bot: SupportBot, args: argparse.Namespace) -> int:
    rows = bot.tickets(email=args.customer, status=args.status)
    if args.json:
        emit_json(rows)
        return 0
    t, c = cli_words(args), common_words(args)
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
    t = cli_words(args)
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
                asked=t("approvals.asked", words=refund["asked"]) if refund.get("asked") else "",
                invoice=refund.get("invoice_id", "?"),
                when=when(p.requested_at),
            )
        )
    print(t("approvals.count", n=len(pending), prog=PROG) if pending else t("approvals.none"))
    return 0


def approve(bot: SupportBot, args: argparse.Namespace) -> int:
    if args.approved:
        result = bot.approve(
            args.ticket, approver=args.by, note=args.note, amount=args.amount, source=cli_takeover.SOURCE
        )
    else:
        result = bot.reject(args.ticket, approver=args.by, note=args.note, source=cli_takeover.SOURCE)
    if args.json:
        emit_json(result)
        return 0
    t = cli_words(args)
    if args.approved and result.approved is False:  # the business system could not apply it
        print(t("approve.failed", ticket=args.ticket, by=args.by, note=result.decision_note))
    elif args.approved and args.amount is not None:
        print(t("approve.approved_amount", ticket=args.ticket, by=args.by, amount=f"{args.amount:.2f}"))
    else:
        print(t("approve.approved" if args.approved else "approve.rejected", ticket=args.ticket, by=args.by))
    _print_result(result, args)
    return 0


def respond(bot: SupportBot, args: argparse.Namespace) -> int:
    """A reviewer's note to the agent on the pending refund; the answer goes to the customer."""
    result = bot.respond(args.ticket, args.note, by=args.by, source=cli_takeover.SOURCE)
    if args.json:
        emit_json(result)
        return 0
    print(cli_words(args)("respond.sent", ticket=args.ticket, by=args.by))
    _print_result(result, args)
    return 0


def _print_result(result: RoundResult, args: argparse.Namespace) -> None:
    t = cli_words(args)
    print(t("reply.header", outcome=label(common_words(args), "outcome", result.outcome), round=result.round))
    print(result.reply or t("reply.waiting"))


def demo(bot: SupportBot, args: argparse.Namespace) -> int:
    """Load the demo data and play 吴刚's ticket once; a second run reloads the data and says so.

    Playing it again would add a fifth E3001 ticket to his history and change his profile, so a
    database keeps one played demo ticket until it is forgotten or reset. The customer's messages
    and the replies are Chinese in any language: they are the customer's.
    """
    from ..backend.demo._backend import DemoBackend
    from ..backend.demo._data import DEMO_TODAY

    t = cli_words(args)
    print(t("demo.loading"), file=sys.stderr, flush=True)
    assert isinstance(bot.backend, DemoBackend)  # _open_bot opens every CLI bot on the demo
    counts = bot.backend.load_demo_data()
    print(t("demo.data", counts=t("list_separator").join(f"{table} {n}" for table, n in counts.items())))
    played = [row for row in bot.tickets(email=DEMO_EMAIL) if row.subject == DEMO_SUBJECT]
    if played:
        status = label(common_words(args), "status", played[0].status)
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

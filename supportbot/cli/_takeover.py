"""CLI commands for a person in the ticket and for the audit log: takeover, reply, handback, audit.

Kept apart from cli/_main.py (which registers them through its ``command`` helper): every change here is
recorded with source "cli" in the audit log. Texts come from the ``cli`` catalog, like cli/_main.py's.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .._front._bot import SupportBot
from ..i18n import Translate
from ._text import cli_words, emit_json, pad, when

SOURCE = "cli"


def add_commands(
    command: Callable[..., argparse.ArgumentParser], moment: Callable[[str], datetime], t: Translate
) -> None:
    p = command("takeover", takeover)
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("--by", metavar="NAME", required=True, help=t("opt.takeover.by"))

    p = command("reply", reply)
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("text", metavar="TEXT", help=t("opt.reply.text"))
    p.add_argument("--by", metavar="NAME", required=True, help=t("opt.reply.by"))

    p = command("handback", handback)
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("--by", metavar="NAME", required=True, help=t("opt.reply.by"))
    p.add_argument("--note", default="", help=t("opt.handback.note"))

    p = command("audit", audit)
    p.add_argument("--ticket", metavar="ID", help=t("opt.audit.ticket"))
    p.add_argument("--since", type=moment, metavar="DATE", help=t("opt.audit.since"))
    p.add_argument("--limit", type=int, default=1000, metavar="N", help=t("opt.audit.limit"))


def takeover(bot: SupportBot, args: argparse.Namespace) -> int:
    state = bot.take_over(args.ticket, agent=args.by, source=SOURCE)
    if args.json:
        return _json({"ticket_id": args.ticket, "human_agent": state.human_agent})
    t = cli_words(args)
    print(t("takeover.done", agent=args.by, ticket=args.ticket))
    for turn in state.turns[state.handled_upto :]:
        if turn.role == "customer":
            print(t("takeover.waiting", idx=turn.idx, text=turn.content))
    return 0


def reply(bot: SupportBot, args: argparse.Namespace) -> int:
    turn = bot.reply_as_human(args.ticket, args.text, agent=args.by, source=SOURCE)
    if args.json:
        return _json(turn)
    print(cli_words(args)("reply.done", ticket=args.ticket, idx=turn.idx, agent=args.by))
    return 0


def handback(bot: SupportBot, args: argparse.Namespace) -> int:
    result = bot.hand_back(args.ticket, agent=args.by, note=args.note, source=SOURCE)
    if args.json:
        return _json(result)
    t = cli_words(args)
    print(t("handback.done", agent=args.by, ticket=args.ticket))
    if result is not None:
        print(t("handback.answered", round=result.round))
        print(result.reply or t("reply.waiting"))
    return 0


def audit(bot: SupportBot, args: argparse.Namespace) -> int:
    entries = bot.audit(args.ticket, since=args.since, limit=args.limit)
    if args.json:
        return _json(entries)
    t = cli_words(args)
    for e in entries:
        what = t(f"audit.action.{e.action}")
        detail = " ".join(f"{k}={v}" for k, v in e.detail.items())
        who = f"{pad(e.actor, 10)} {pad(what, 12)} {e.ticket_id or '—':<8}"
        print(f"{e.id:>5}  {when(e.at)}  {who}  {e.source}  {detail}")
    print(t("audit.count", n=len(entries)))
    return 0


def _json(value: Any) -> int:
    emit_json(value)
    return 0

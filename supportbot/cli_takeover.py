"""CLI commands for a person in the ticket and for the audit log: takeover, reply, handback, audit.

Kept apart from cli.py (which registers them through its ``command`` helper): every change here is
recorded with source "cli" in the audit log.
"""

from __future__ import annotations

import argparse
from collections.abc import Callable
from datetime import datetime
from typing import Any

from .bot import SupportBot

SOURCE = "cli"
ACTION_LABELS = {
    "approve": "批准退款",
    "reject": "驳回退款",
    "take_over": "人工接管",
    "human_reply": "人工回复",
    "hand_back": "交还机器人",
    "fork": "分叉",
    "forget_customer": "删除客户数据",
}


def add_commands(command: Callable[..., argparse.ArgumentParser], moment: Callable[[str], datetime]) -> None:
    p = command("takeover", takeover, "人工接管一张工单:之后机器人不再回复,客户的消息留给你")
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("--by", metavar="NAME", required=True, help="接管人姓名(记入审计日志)")

    p = command("reply", reply, "以接管人的身份回复客户(记入对话,和机器人的回复一样进入记忆)")
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("text", metavar="TEXT", help="回复内容;含空格时加引号")
    p.add_argument("--by", metavar="NAME", required=True, help="接管人姓名")

    p = command("handback", handback, "把工单交还机器人;有未回复的客户消息时机器人马上回复")
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("--by", metavar="NAME", required=True, help="接管人姓名")
    p.add_argument("--note", default="", help="给同事的备注,只记入审计日志,模型和客户看不到")

    p = command("audit", audit, "审计日志:谁在何时从哪里做了什么(审批、接管、回复、交还、分叉、删除)")
    p.add_argument("--ticket", metavar="ID", help="只看这张工单的")
    p.add_argument("--since", type=moment, metavar="DATE", help="只看这之后的;YYYY-MM-DD 或 ISO 时间")
    p.add_argument("--limit", type=int, default=1000, metavar="N", help="最多显示最近 N 条(默认 1000)")


def takeover(bot: SupportBot, args: argparse.Namespace) -> int:
    state = bot.take_over(args.ticket, agent=args.by, source=SOURCE)
    if args.json:
        return _json({"ticket_id": args.ticket, "human_agent": state.human_agent})
    waiting = state.turns[state.handled_upto :]
    print(f"{args.by} 已接管工单 {args.ticket};交还之前机器人不会回复")
    for turn in waiting:
        if turn.role == "customer":
            print(f"  #{turn.idx} 客户(未回复):{turn.content}")
    return 0


def reply(bot: SupportBot, args: argparse.Namespace) -> int:
    turn = bot.reply_as_human(args.ticket, args.text, agent=args.by, source=SOURCE)
    if args.json:
        return _json(turn)
    print(f"已记入工单 {args.ticket} 的对话(#{turn.idx},{args.by})")
    return 0


def handback(bot: SupportBot, args: argparse.Namespace) -> int:
    result = bot.hand_back(args.ticket, agent=args.by, note=args.note, source=SOURCE)
    if args.json:
        return _json(result)
    print(f"{args.by} 已把工单 {args.ticket} 交还机器人")
    if result is not None:
        print(f"--- 机器人回复了等待中的消息(第 {result.round} 轮)---")
        print(result.reply or "(等待审批后回复)")
    return 0


def audit(bot: SupportBot, args: argparse.Namespace) -> int:
    entries = bot.audit(args.ticket, since=args.since, limit=args.limit)
    if args.json:
        return _json(entries)
    from .cli import pad, when

    for e in entries:
        what = ACTION_LABELS.get(e.action, e.action)
        detail = " ".join(f"{k}={v}" for k, v in e.detail.items())
        who = f"{pad(e.actor, 10)} {pad(what, 12)} {e.ticket_id or '—':<8}"
        print(f"{e.id:>5}  {when(e.at)}  {who}  {e.source}  {detail}")
    print(f"共 {len(entries)} 条")
    return 0


def _json(value: Any) -> int:
    from .cli import emit_json

    emit_json(value)
    return 0

"""python -m supportbot: the demo and database commands (the full operator CLI is still to come)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from .bot import SupportBot
from .config import Settings
from .engine import RoundResult
from .errors import SupportbotError

DEMO_EMAIL = "wugang@example.com"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m supportbot", description="supportbot: memory for support agents")
    parser.add_argument("--database-url", help="PostgreSQL URL (default: SUPPORTBOT_DATABASE_URL, else embedded)")
    parser.add_argument("--debug", action="store_true", help="show tracebacks")
    sub = parser.add_subparsers(dest="command")
    sub.add_parser("demo", help="load the demo data and replay 吴刚's bank-sync ticket with a refund")
    db = sub.add_parser("db", help="database status and migrations")
    db.add_argument("action", choices=["status", "migrate"])
    args = parser.parse_args(argv)
    command = args.command or "demo"
    try:
        settings = Settings.from_env()
        with SupportBot.open(args.database_url, settings=settings) as bot:
            if command == "demo":
                return _demo(bot)
            return _db(bot, args.action)
    except SupportbotError as exc:
        if args.debug:
            raise
        print(f"error: {exc}", file=sys.stderr)
        return 1


def _demo(bot: SupportBot) -> int:
    from .backend.demo_data import load_demo_data

    print("加载演示数据 …", flush=True)
    with bot._store.transaction() as tx:
        counts = load_demo_data(tx)
    print("  " + ",".join(f"{table} {n}" for table, n in counts.items()))
    print(f"[画像] 新工单的上下文里会带上:{bot.profile(DEMO_EMAIL).text}")
    first = bot.open_ticket(DEMO_EMAIL, "银行流水又同步失败了", "招商银行的流水又同步失败了,提示 E3001,怎么办?")
    _show("吴刚", "招商银行的流水又同步失败了,提示 E3001,怎么办?", first)
    second = bot.send(first.ticket_id, "重新授权了还是不行,另外这个年付我想申请退款 200 元")
    _show("吴刚", "重新授权了还是不行,另外这个年付我想申请退款 200 元", second)
    if second.outcome == "waiting_approval":
        print(f"[审批] 工单 {second.ticket_id} 的退款等待人工审批;由另一位同事批准 …")
        second = bot.approve(second.ticket_id, approved=True, approver="值班主管", note="符合 30 天内退款政策")
        _show(None, None, second)
    state = bot.state(first.ticket_id)
    print(f"\n[记忆] 工单 {state.ticket.id}:共 {len(state.turns)} 条消息,{state.round} 轮,"
          f"{len(bot.history(state.ticket.id))} 个步骤记录")
    print(f"[画像] 本工单解决后更新为:{bot.profile(DEMO_EMAIL).text}")
    return 0


def _show(who: str | None, message: str | None, result: RoundResult) -> None:
    if who and message:
        print(f"\n{who}> {message}")
    print(f"--- 回复客户 ({result.outcome}, 第 {result.round} 轮) ---")
    print(result.reply or "(等待审批后回复)")


def _db(bot: SupportBot, action: str) -> int:
    from .store.migrate import applied, available, migrate

    with bot._store.connection() as conn:
        if action == "migrate":
            done = migrate(conn)
            print(f"applied {len(done)} migration(s)")
        have = applied(conn)
    for m in available():
        print(f"{m.version:03d} {m.name:20s} {'applied' if m.version in have else 'pending'}")
    return 0

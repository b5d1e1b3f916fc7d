"""python -m supportbot: the operator CLI.

Every command opens one SupportBot (embedded PostgreSQL unless a URL is configured), does one
thing and exits: 0 on success, 2 on a usage error (argparse's convention, also used for refusing a
destructive command without --yes), 1 on any other error, reported as one `error: ...` line on
stderr (a traceback only with --debug). Read commands take --json for scripts.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from datetime import datetime
from typing import Any, get_args

from pydantic_core import to_jsonable_python

from . import cli_takeover
from .bot import SupportBot
from .cli_chat import OUTCOME_LABELS, ROLE_LABELS, clip, context_text, run_chat
from .cli_text import HelpFormatter, columns, email_argument
from .cli_worker import add_worker_commands
from .config import Settings
from .engine import RoundResult
from .errors import ApprovalNotPending, CustomerBusy, InvalidStepNumber, SupportbotError, UnknownTicket
from .lifecycle import KEEP_MODES
from .memory.facts import FACT_LABELS_ZH
from .memory.profile import Profile
from .state import SupportState, TicketStatus

PROG = "python -m supportbot"
DEMO_EMAIL = "wugang@example.com"
DEMO_SUBJECT = "银行流水又同步失败了"  # how `demo` finds the ticket it played
TICKET_STATUSES: tuple[TicketStatus, ...] = get_args(TicketStatus)

# Where each kind of memory lives, so `show` can say it and operators can find it with psql.
STORAGE: dict[str, str] = {
    "turns": "supportbot.turns:每条消息一行,只追加、从不改写",
    "summary": "state.summary:每轮 prepare_context 之后存入 supportbot.checkpoints,之后每步的改动存入 "
    "supportbot.steps",
    "facts": "supportbot.facts:每条事实一行,只追加;原样钉住,不经过摘要,压缩不会丢",
    "profile": "state.profile:load_customer 时从 supportbot.customer_profiles(跨工单的画像缓存)取来",
    "context_usage": "state.context_usage:draft 每轮计算的回复提示词 token 用量",
    "tool_calls": "supportbot.tool_calls:每次业务系统调用的参数和结果",
    "steps": "supportbot.steps:每个执行过的步骤一行(history、state --at、fork 都从这里重建)",
    "approvals": "supportbot.approvals:退款审批的申请与决定",
}


# -- entry point -----------------------------------------------------------------------------


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    if args.handler is None:
        parser.print_help(sys.stderr)
        return 2
    args.validate(args)
    try:
        settings = Settings.from_env()
        if (adjust := getattr(args, "adjust_settings", None)) is not None:
            settings = adjust(settings, args)  # e.g. the worker sizes its pool by its threads
        if args.handler is run_chat:
            return int(run_chat(args, settings, lambda **models: _open_bot(args, settings, **models)))
        with _open_bot(args, settings, **_demo_options(args)) as bot:
            return int(args.handler(bot, args))
    except SupportbotError as exc:
        return _fail(args, exc, f"{exc}{_hint(exc)}")
    except KeyboardInterrupt:
        print("\n已中断", file=sys.stderr)
        return 130
    except BrokenPipeError:
        # The reader went away (`... | head`): not an error worth a message. Point stdout at
        # devnull so the interpreter's final flush does not raise again.
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except Exception as exc:  # noqa: BLE001 - unexpected: still one line, the traceback is behind --debug
        return _fail(args, exc, f"{type(exc).__name__}: {exc} (加 --debug 查看调用栈)")


def _demo_options(args: argparse.Namespace) -> dict[str, Any]:
    if args.handler is not demo:
        return {}
    from .backend.demo_data import demo_clock

    return {"clock": demo_clock()}  # the demo is played on its own day, whatever today's date


def _hint(exc: SupportbotError) -> str:
    """The CLI's way to the next step; the library's messages name API calls, not commands."""
    if isinstance(exc, UnknownTicket):
        return f"({PROG} tickets 列出工单)"
    if isinstance(exc, ApprovalNotPending):
        return f"({PROG} approvals 列出等待审批的工单)"
    return ""


def _fail(args: argparse.Namespace, exc: BaseException, message: str) -> int:
    if args.debug:
        raise exc
    print(f"error: {' '.join(message.split())}", file=sys.stderr)
    return 1


@contextmanager
def _open_bot(args: argparse.Namespace, settings: Settings, **models: Any) -> Iterator[SupportBot]:
    embedded = not (args.database_url or settings.database_url)
    if embedded and sys.stderr.isatty():
        # The first start runs initdb, which takes a few seconds: say why nothing happens.
        print("启动内置 PostgreSQL …", end="", file=sys.stderr, flush=True)
    try:
        bot = SupportBot.open(args.database_url, settings=settings, **models)
    finally:
        if embedded and sys.stderr.isatty():
            print("\r\033[K", end="", file=sys.stderr, flush=True)
    with bot:
        yield bot


# -- the parser ------------------------------------------------------------------------------


def _global_options(*, on_subcommand: bool, json_output: bool = True) -> argparse.ArgumentParser:
    """--database-url, --json and --debug, accepted before or after the subcommand.

    On subcommands the defaults are SUPPRESS, so an option given before the subcommand is not
    reset by the subcommand's own default.
    """
    unset: Any = argparse.SUPPRESS if on_subcommand else None
    options = argparse.ArgumentParser(add_help=False)
    options.add_argument(
        "--database-url",
        metavar="URL",
        default=unset,
        help="PostgreSQL URL(默认 SUPPORTBOT_DATABASE_URL,都没有时用内置 PostgreSQL)",
    )
    if json_output:  # not offered by commands that have no JSON output (chat, demo)
        options.add_argument(
            "--json",
            action="store_true",
            default=unset if on_subcommand else False,
            help="输出 JSON(读命令),供脚本使用",
        )
    options.add_argument(
        "--debug", action="store_true", default=unset if on_subcommand else False, help="出错时显示调用栈"
    )
    return options


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog=PROG,
        parents=[_global_options(on_subcommand=False)],
        formatter_class=HelpFormatter,
        description=(
            "supportbot:客服智能体的记忆(工单状态、压缩、客户画像)。环境变量 SUPPORTBOT_* 设置默认值。"
        ),
    )
    parser.set_defaults(handler=None)
    sub = parser.add_subparsers(title="命令", metavar="COMMAND")
    common = [_global_options(on_subcommand=True)]
    without_json = [_global_options(on_subcommand=True, json_output=False)]

    def command(
        name: str,
        handler: Callable[..., int],
        summary: str,
        validate: Callable[[argparse.Namespace, argparse.ArgumentParser], None] | None = None,
    ) -> argparse.ArgumentParser:
        parents = without_json if handler in (run_chat, demo) else common
        p = sub.add_parser(
            name, parents=parents, help=summary, description=summary, formatter_class=HelpFormatter
        )
        p.set_defaults(handler=handler, validate=lambda args: (validate or _check_json)(args, p))
        return p

    _add_conversation_commands(command)
    _add_memory_commands(command)
    _add_admin_commands(command)
    add_worker_commands(command)
    cli_takeover.add_commands(command, _moment)
    return parser


def _check_json(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    # Only reachable as `--json chat ...`: the subcommands themselves do not accept it.
    if args.json and args.handler in (run_chat, demo):
        parser.error("这个命令没有 JSON 输出;去掉 --json")


def _add_conversation_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    p = command(
        "chat", run_chat, "和一张工单多轮对话:新开(EMAIL MESSAGE)或接着聊(--ticket ID)", validate=_check_chat
    )
    p.add_argument("email", nargs="?", type=email_argument, metavar="EMAIL", help="客户邮箱(新开工单)")
    p.add_argument("message", nargs="?", metavar="MESSAGE", help="客户的第一条消息")
    p.add_argument("--ticket", metavar="ID", help="接着聊这张工单,先打印之前的对话")
    p.add_argument("--subject", help="新工单的主题(默认取消息开头)")
    p.add_argument("--by", metavar="NAME", help="在对话里审批退款时记录的审批人(默认 $USER)")

    p = command("tickets", tickets, "列出工单")
    p.add_argument("--customer", type=email_argument, metavar="EMAIL", help="只看这位客户的")
    p.add_argument(
        "--status",
        choices=TICKET_STATUSES,
        metavar="S",
        help="只看这个状态的:" + "、".join(TICKET_STATUSES),
    )

    p = command("approvals", approvals, "列出等待人工审批的退款")

    p = command("approve", approve, "审批一张工单的退款,并完成暂停的那一轮")
    p.add_argument("ticket", metavar="TICKET")
    decision = p.add_mutually_exclusive_group(required=True)
    decision.add_argument("--yes", dest="approved", action="store_true", default=None, help="批准")
    decision.add_argument("--no", dest="approved", action="store_false", help="驳回")
    p.add_argument("--by", metavar="NAME", required=True, help="审批人姓名(记入 supportbot.approvals)")
    p.add_argument("--note", default="", help="审批意见,驳回时会告诉客户;含空格时加引号")

    command(
        "demo",
        demo,
        f"加载演示数据,在演示日 {_demo_day()} 重放吴刚的银行同步工单和一笔待审批的退款;"
        "再次运行只重新加载数据,不重复重放",
    )


def _add_memory_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    p = command("show", show, "一张工单记住了什么、存在哪:对话、摘要、钉住的事实、画像、结果、成本")
    p.add_argument("ticket", metavar="TICKET")

    p = command("history", history, "一张工单的每个步骤:序号、轮次、步骤 → 下一步、时间")
    p.add_argument("ticket", metavar="TICKET")

    p = command("state", state_at, "重建一张工单在某个步骤之后的完整状态")
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("--at", type=int, required=True, metavar="SEQ", help="步骤序号(见 history)")

    p = command("fork", fork, "从某个步骤分叉出一张新工单(原工单不变)")
    p.add_argument("ticket", metavar="TICKET")
    p.add_argument("--at", type=int, required=True, metavar="SEQ", help="步骤序号(见 history)")

    p = command("profile", profile, "客户画像:新工单的上下文里会带上的长期记忆")
    p.add_argument("email", type=email_argument, metavar="EMAIL")


def _add_admin_commands(command: Callable[..., argparse.ArgumentParser]) -> None:
    p = command("db", db, "数据库迁移:status 查看,migrate 执行")
    p.add_argument("action", choices=["status", "migrate"])

    p = command(
        "forget",
        forget,
        "删除一位客户的全部工单和画像(隐私删除)",
        validate=_needs_yes("forget 会永久删除这位客户的全部工单、对话和画像;确认请加 --yes"),
    )
    p.add_argument("email", type=email_argument, metavar="EMAIL")
    p.add_argument("--yes", action="store_true", help="确认删除")
    p.add_argument("--force", action="store_true", help="连正在处理或等待审批的工单也删除")

    p = command(
        "prune",
        prune,
        "删除某个时间之前关闭的工单的历史",
        validate=_needs_yes("prune 会永久删除已关闭工单的历史;确认请加 --yes"),
    )
    p.add_argument(
        "--closed-before",
        type=_moment,
        required=True,
        metavar="DATE",
        help="YYYY-MM-DD 或 ISO 时间;不带时区时按本机时区",
    )
    p.add_argument(
        "--keep",
        choices=KEEP_MODES,
        default="last",
        help="last(默认):保留最后一轮自其检查点(prepare_context 之后)起的步骤,"
        "state --at 仍可重建它们;final:只保留最终状态",
    )
    p.add_argument("--yes", action="store_true", help="确认删除")

    p = command(
        "reset",
        reset,
        "清空 supportbot 的全部数据(演示数据可用 demo 重新加载)",
        validate=_needs_yes("reset 会删除所有工单、历史和画像;确认请加 --yes"),
    )
    p.add_argument("--yes", action="store_true", help="确认清空")


def _check_chat(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
    _check_json(args, parser)
    if args.ticket and (args.email or args.message):
        parser.error("--ticket 接着聊已有工单,不能再给 EMAIL MESSAGE")
    if not args.ticket and not (args.email and args.message):
        parser.error("新开工单要 EMAIL 和 MESSAGE;接着聊已有工单用 --ticket ID")


def _needs_yes(message: str) -> Callable[[argparse.Namespace, argparse.ArgumentParser], None]:
    def check(args: argparse.Namespace, parser: argparse.ArgumentParser) -> None:
        if not args.yes:
            parser.error(message)

    return check


def _demo_day() -> str:
    from .backend.demo_data import DEMO_TODAY

    return DEMO_TODAY.isoformat()


def _moment(text: str) -> datetime:
    try:
        moment = datetime.fromisoformat(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} 不是日期,要 YYYY-MM-DD 或 ISO 时间") from None
    try:
        return moment if moment.tzinfo else moment.astimezone()  # naive: the operator's local time
    except (OverflowError, ValueError):  # the last hours of 9999-12-31, west of UTC
        raise argparse.ArgumentTypeError(f"{text!r} 超出可用的时间范围,请用 9999-12-30 之前的时间") from None


# -- output helpers --------------------------------------------------------------------------


def emit_json(value: Any) -> None:
    print(json.dumps(to_jsonable_python(value), ensure_ascii=False, indent=2))


def when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M:%S") if moment else "—"


def pad(text: str, width: int) -> str:
    """Left-justify for a terminal, where a CJK character takes two columns."""
    return text + " " * max(0, width - columns(text))


def indented(text: str, prefix: str = "    ") -> str:
    return "\n".join(prefix + line for line in text.splitlines() or [""])


# -- conversations ---------------------------------------------------------------------------


def tickets(bot: SupportBot, args: argparse.Namespace) -> int:
    rows = bot.tickets(email=args.customer, status=args.status)
    if args.json:
        emit_json(rows)
        return 0
    for row in rows:
        print(
            f"{row.id}  {row.status:<16} {row.turn_count:>3} 条  {row.customer_email:<24} "
            f"{pad(clip(row.subject, 20), 40)}  更新于 {when(row.updated_at)}"
        )
    print(f"共 {len(rows)} 张工单" if rows else "没有符合条件的工单")
    return 0


def approvals(bot: SupportBot, args: argparse.Namespace) -> int:
    pending = bot.pending_approvals()
    if args.json:
        emit_json(pending)
        return 0
    for p in pending:
        refund = p.request.get("refund_request") or {}
        print(
            f"{p.ticket_id}  第 {p.round} 轮  {p.customer_email}  {clip(p.subject, 20)}  "
            f"退款 {refund.get('amount', '?')} {refund.get('currency', '')}(账单 "
            f"{refund.get('invoice_id', '?')})"
            f"  申请于 {when(p.requested_at)}"
        )
    if pending:
        print(f"共 {len(pending)} 笔。审批:{PROG} approve TICKET --yes|--no --by 你的名字")
    else:
        print("没有等待审批的退款")
    return 0


def approve(bot: SupportBot, args: argparse.Namespace) -> int:
    decide = bot.approve if args.approved else bot.reject
    result = decide(args.ticket, approver=args.by, note=args.note, source=cli_takeover.SOURCE)
    if args.json:
        emit_json(result)
        return 0
    if args.approved and result.approved is False:  # the business system could not apply it
        print(f"未能批准工单 {args.ticket} 的退款,已记为驳回(审批人 {args.by}):{result.decision_note}")
    else:
        print(f"已{'批准' if args.approved else '驳回'}工单 {args.ticket} 的退款(审批人 {args.by})")
    _print_result(result)
    return 0


def _print_result(result: RoundResult) -> None:
    print(f"--- 回复客户({OUTCOME_LABELS.get(result.outcome, result.outcome)},第 {result.round} 轮)---")
    print(result.reply or "(等待审批后回复)")


def demo(bot: SupportBot, args: argparse.Namespace) -> int:
    """Load the demo data and play 吴刚's ticket once; a second run reloads the data and says so.

    Playing it again would add a fifth E3001 ticket to his history and change his profile, so a
    database keeps one played demo ticket until it is forgotten or reset.
    """
    from .backend.demo_data import DEMO_TODAY, load_demo_data

    print("加载演示数据 …", file=sys.stderr, flush=True)
    with bot._store.transaction() as tx:
        counts = load_demo_data(tx)
    print("演示数据:" + ",".join(f"{table} {n}" for table, n in counts.items()))
    played = [t for t in bot.tickets(email=DEMO_EMAIL) if t.subject == DEMO_SUBJECT]
    if played:
        print(
            f"演示工单 {played[0].id} 已经在演示日 {DEMO_TODAY} 跑过(状态 {played[0].status}),不再重放。"
            f"\n[画像] {bot.profile(DEMO_EMAIL).text}"
            f"\n从头重放:{PROG} forget {DEMO_EMAIL} --yes --force,再运行 {PROG} demo"
        )
        _demo_next(played[0].id)
        return 0
    print(f"演示日 {DEMO_TODAY}。[画像] 新工单的上下文里会带上:{bot.profile(DEMO_EMAIL).text}")
    message = "招商银行的流水又同步失败了,提示 E3001,怎么办?"
    first = bot.open_ticket(DEMO_EMAIL, subject=DEMO_SUBJECT, body=message)
    _demo_turn(message, first)
    message = "重新授权了还是不行,另外这个年付我想申请退款 200 元"
    second = bot.send(first.ticket_id, message)
    _demo_turn(message, second)
    if second.outcome == "waiting_approval":
        print(f"[审批] 工单 {second.ticket_id} 的退款等待人工审批;由另一位同事批准 …")
        second = bot.approve(second.ticket_id, approver="值班主管", note="符合 30 天内退款政策")
        _print_result(second)
    state = bot.state(first.ticket_id)
    print(
        f"\n[记忆] 工单 {state.ticket.id}:共 {len(state.turns)} 条消息,{state.round} 轮,"
        f"{len(bot.history(state.ticket.id))} 个步骤记录"
    )
    print(f"[画像] 本工单解决后更新为:{bot.profile(DEMO_EMAIL).text}")
    _demo_next(state.ticket.id)
    return 0


def _demo_next(ticket_id: str) -> None:
    later = (f"show {ticket_id}", f"history {ticket_id}", f"chat --ticket {ticket_id}")
    print("\n接着看:" + "  ·  ".join(f"{PROG} {command}" for command in later))


def _demo_turn(message: str, result: RoundResult) -> None:
    print(f"\n吴刚> {message}")
    _print_result(result)


# -- memory ----------------------------------------------------------------------------------


def show(bot: SupportBot, args: argparse.Namespace) -> int:
    state = bot.state(args.ticket)
    steps = bot.history(args.ticket)
    row = bot.ticket(args.ticket)
    if args.json:
        emit_json(
            {
                "ticket": row,
                **_memory(state),
                "steps": len(steps),
                "tool_calls": len(state.tool_log),
                "storage": STORAGE,
            }
        )
        return 0
    print(f"工单 {row.id} · {row.customer_email} · {row.subject}")
    print(
        f"状态 {row.status} · 第 {state.round} 轮 · 本轮结果 {state.outcome or '—'} · "
        f"模型费用 {state.cost:.4f} · 创建于 {when(row.created_at)} · 更新于 {when(row.updated_at)}"
    )
    _print_memory(state)
    _section("其他记录", "")
    print(f"    步骤 {len(steps)} 个 [{STORAGE['steps']}]")
    print(f"    业务调用 {len(state.tool_log)} 次 [{STORAGE['tool_calls']}]")
    print(f"    审批 [{STORAGE['approvals']}]")
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


def _print_memory(state: SupportState) -> None:
    _section(f"对话 {len(state.turns)} 条", STORAGE["turns"])
    for turn in state.turns:
        folded = "(已折叠进摘要)" if turn.idx is not None and turn.idx < state.summarized_upto else ""
        print(
            f"  #{turn.idx} 第{turn.round}轮 {ROLE_LABELS.get(turn.role, turn.role)}{folded}  "
            f"{when(turn.created_at)}"
        )
        print(indented(turn.content))
    _section(f"摘要(覆盖前 {state.summarized_upto} 条)", STORAGE["summary"])
    print(indented(state.summary) if state.summary else "    (无:对话还在预算内,全部原文保留)")
    _section(f"钉住的事实 {len(state.facts)} 条", STORAGE["facts"])
    for fact in state.facts:
        print(f"    {FACT_LABELS_ZH.get(fact.kind, fact.kind)}:{fact.value}(见 #{fact.turn})")
    _section("客户画像", STORAGE["profile"])
    print(indented(state.profile or "(无:客户不在业务系统里,或本工单还没跑过 load_customer)"))
    _section(context_text(state.context_usage), STORAGE["context_usage"])
    for name, tokens in state.context_usage.items():
        if name not in ("total", "budget"):
            print(f"    {name}: {tokens}")


def history(bot: SupportBot, args: argparse.Namespace) -> int:
    steps = bot.history(args.ticket)
    if args.json:
        emit_json(steps)
        return 0
    mark = bot.pruned(args.ticket)
    if mark is not None:
        print(
            f"   …  第 1–{mark.kept_from - 1} 步已于 {when(mark.pruned_at)} 清理(prune),"
            f"释放约 {mark.bytes / 1024:.1f} KB;当前状态不受影响"
        )
    for s in steps:
        ends = pad(s.next_step or "(本轮结束)", 15)
        print(f"{s.seq:>4}  {pad(f'第{s.round}轮', 7)} {s.step:<15} → {ends}  {when(s.created_at)}")
    print(f"共 {len(steps)} 步。某一步之后的状态:{PROG} state {args.ticket} --at SEQ")
    return 0


def _with_history_hint(args: argparse.Namespace, exc: InvalidStepNumber) -> InvalidStepNumber:
    return InvalidStepNumber(f"{exc} ({PROG} history {args.ticket} 列出它的步骤)", ticket_id=args.ticket)


def state_at(bot: SupportBot, args: argparse.Namespace) -> int:
    try:
        state = bot.state_at(args.ticket, args.at)  # --at 0 is refused as in the API: steps start at 1
    except InvalidStepNumber as exc:
        raise _with_history_hint(args, exc) from exc
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
    print(
        f"工单 {args.ticket} 第 {record.seq} 步({record.step})之后 · 第 {state.round} 轮 · "
        f"下一步 {record.next_step or '(本轮结束)'}"
    )
    print(
        f"    分诊 {state.triage.category if state.triage else '—'} · "
        f"检索到 {', '.join(h.id for h in state.hits) or '—'} · "
        f"草稿 {len(state.draft)} 字,第 {state.revisions} 稿 · "
        f"质检 {'—' if state.review is None else ('通过' if state.review.passed else '未通过')} · "
        f"结果 {state.outcome or '—'}"
    )
    if state.refund_request:
        r = state.refund_request
        print(f"    退款申请 {r.id}:{r.amount} {r.currency}(账单 {r.invoice_id}),{r.status}")
    if state.approval:
        print(f"    审批 {'批准' if state.approval.approved else '驳回'},{state.approval.approver}")
    _print_memory(state)
    if record.next_step is not None and state.refund_request is not None:
        print(
            "\n这一步在一轮退款申请之中,不能从这里分叉(退款申请只能属于一张工单):从申请之前或本轮结束处分叉"
        )
    else:
        print(f"\n从这里分叉:{PROG} fork {args.ticket} --at {args.at}")
    return 0


def fork(bot: SupportBot, args: argparse.Namespace) -> int:
    try:
        new_id = bot.fork(args.ticket, args.at, source=cli_takeover.SOURCE)
    except InvalidStepNumber as exc:
        raise _with_history_hint(args, exc) from exc
    if args.json:
        emit_json({"ticket_id": new_id, "forked_from": args.ticket, "at": args.at})
        return 0
    print(f"已从工单 {args.ticket} 第 {args.at} 步分叉出新工单 {new_id}(原工单不变)")
    print(f"接着聊:{PROG} chat --ticket {new_id}")
    return 0


def profile(bot: SupportBot, args: argparse.Namespace) -> int:
    p: Profile = bot.profile(args.email)
    if args.json:
        emit_json(p)
        return 0
    plan = f"{p.plan}{p.billing_cycle or ''}" if p.plan else "无有效订阅"
    print(f"{p.name}({p.customer_id})· {plan}{' · VIP' if p.is_vip else ''}")
    print("画像文本(新工单的上下文里带上这段;缓存在 supportbot.customer_profiles,输入变化时才重建):")
    print(indented(p.text))
    if p.recurring:
        print("反复出现的问题:")
        for issue in p.recurring:
            fixes = "、".join(sorted({r for r in issue.resolutions if r})) or "—"
            print(f"    {issue.label}  {issue.count} 次  {', '.join(issue.months)}  处理:{fixes}")
    print(f"未了的请求:{'; '.join(p.open_requests) or '—'}")
    print(f"已做的承诺:{'; '.join(p.promises) or '—'}")
    print(f"依据 {p.ticket_count} 张已解决的工单;跳过 {p.skipped_records} 条无法解析的记录")
    return 0


# -- administration --------------------------------------------------------------------------


def db(bot: SupportBot, args: argparse.Namespace) -> int:
    from .store.migrate import applied, available, migrate

    with bot._store.connection() as conn:
        done = migrate(conn) if args.action == "migrate" else []
        have = applied(conn)
    rows = [{"version": m.version, "name": m.name, "applied": m.version in have} for m in available()]
    if args.json:
        emit_json({"applied_now": len(done), "migrations": rows})
        return 0
    if args.action == "migrate":
        print(f"本次执行了 {len(done)} 个迁移")
    width = max((len(m.name) for m in available()), default=0)
    for r in rows:
        print(f"{r['version']:03d} {r['name']:{width}s}  {'已执行' if r['applied'] else '待执行'}")
    return 0


def forget(bot: SupportBot, args: argparse.Namespace) -> int:
    try:
        report = bot.forget_customer(args.email, force=args.force, source=cli_takeover.SOURCE)
    except CustomerBusy as exc:  # the library's message says force=True; say it the CLI's way
        hint = f"要取消这些工单并删除:{PROG} forget {args.email} --yes --force"
        raise CustomerBusy(f"{exc} {hint}", tickets=exc.tickets) from exc
    if args.json:
        emit_json(report)
        return 0
    listed = "、".join(report.tickets) or "无"
    print(f"已删除 {report.email} 的 {len(report.tickets)} 张工单({listed})")
    _print_rows(report.rows)
    return 0


def prune(bot: SupportBot, args: argparse.Namespace) -> int:
    report = bot.prune(closed_before=args.closed_before, keep=args.keep)
    if args.json:
        emit_json(report)
        return 0
    print(
        f"已清理 {when(args.closed_before)} 之前关闭的 {len(report.tickets)} 张工单,"
        f"释放约 {report.bytes_freed / 1024:.1f} KB"
    )
    _print_rows(report.rows)
    return 0


def reset(bot: SupportBot, args: argparse.Namespace) -> int:
    report = bot.reset()
    if args.json:
        emit_json(report)
        return 0
    print(f"已清空 supportbot 的数据:{len(report.tickets)} 张工单,共 {report.total} 行")
    _print_rows(report.rows)
    return 0


def _print_rows(rows: dict[str, int]) -> None:
    for table, count in rows.items():
        print(f"    {table}: {count} 行")

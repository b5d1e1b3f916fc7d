"""The memory commands: what a ticket remembers (`show`), the steps it went through (`history`),
its state after any one step (`state`), a new ticket branched from that step (`fork`), and a
customer's profile across tickets (`profile`).

Each memory section is printed with the table it lives in, so an operator can find it with psql.
"""

from __future__ import annotations

import argparse
from typing import Any

from pydantic_core import to_jsonable_python

from .._front._bot import SupportBot
from .._state import SupportState
from ..i18n import Translate, label
from ..memory._facts import FACT_LABELS_EN, FACT_LABELS_ZH
from ..memory._profile import Profile
from . import _takeover as cli_takeover
from ._chat import context_text
from ._text import PROG, cli_words, common_words, emit_json, indented, pad, when

# Where each kind of memory lives, so `show` can say it and operators can find it with psql; the
# descriptions are in the catalogs ("storage.turns"...).
STORAGE = ("turns", "summary", "facts", "profile", "context_usage", "tool_calls", "steps", "approvals")


def storage(t: Translate) -> dict[str, str]:
    return {name: t(f"storage.{name}") for name in STORAGE}


def show(bot: SupportBot, args: argparse.Namespace) -> int:
    state = bot.state(args.ticket)
    steps = bot.history(args.ticket)
    row = bot.ticket(args.ticket)
    t, c = cli_words(args), common_words(args)
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
    for position, fact in enumerate(state.facts):  # the position `correct` names a fact by
        value = fact.value or t("memory.retracted")
        print(
            f"    [{position}] "
            + t("memory.fact", kind=labels.get(fact.kind, fact.kind), value=value, turn=fact.turn)
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
    t = cli_words(args)
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
    t, c = cli_words(args), common_words(args)
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
    t = cli_words(args)
    print(t("fork.done", ticket=args.ticket, at=args.at, new=new_id))
    print(t("chat.resume_hint", command=f"{PROG} chat --ticket {new_id}"))
    return 0


def correct(bot: SupportBot, args: argparse.Namespace) -> int:
    """Correct or retract a pinned fact of a ticket (by its position, as `show` lists it)."""
    value = None if args.retract else args.value
    fact = bot.correct_fact(
        args.ticket, args.position, value=value, reason=args.reason, actor=args.by, source=cli_takeover.SOURCE
    )
    if args.json:
        emit_json(fact)
        return 0
    t = cli_words(args)
    done = "correct.retracted" if value is None else "correct.done"
    print(t(done, ticket=args.ticket, position=args.position, value=fact.value, by=args.by))
    return 0


def correct_profile(bot: SupportBot, args: argparse.Namespace) -> int:
    """Correct or retract one entry of a customer's profile."""
    value = None if args.retract else args.value
    p = bot.correct_profile(
        args.email,
        args.entry,
        args.key,
        value=value,
        reason=args.reason,
        actor=args.by,
        source=cli_takeover.SOURCE,
    )
    if args.json:
        emit_json(p)
        return 0
    t = cli_words(args)
    print(t("correct.profile_done", email=args.email, by=args.by))
    print(indented(p.text))
    return 0


def profile(bot: SupportBot, args: argparse.Namespace) -> int:
    p: Profile = bot.profile(args.email)
    if args.json:
        emit_json(p)
        return 0
    t = cli_words(args)
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

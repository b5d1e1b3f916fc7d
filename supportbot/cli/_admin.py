"""The administration commands: migrate the schema (`db`), and the destructive ones that need
--yes: erase one customer (`forget`), shrink closed tickets' history (`prune`), empty the
database (`reset`).
"""

from __future__ import annotations

import argparse

from .._front._bot import SupportBot
from .._front._opening import migrate, migration_status
from ..config import Settings
from ..i18n import Translate
from ..run._values import RetentionPolicy
from . import _takeover as cli_takeover
from ._text import cli_words, emit_json, when


def db(args: argparse.Namespace, settings: Settings) -> int:
    """Runs without opening a bot, which would migrate first: status reports what is pending."""
    url = args.database_url
    done = migrate(url, demo=args.demo, settings=settings) if args.action == "migrate" else []
    states = migration_status(url, settings=settings)
    rows = [{"version": m.version, "name": m.name, "applied": done_ or m in done} for m, done_ in states]
    if args.json:
        emit_json({"applied_now": len(done), "migrations": rows})
        return 0
    t = cli_words(args)
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
    t = cli_words(args)
    listed = t("list_separator").join(report.tickets) or "—"
    print(t("forget.done", email=report.email, n=len(report.tickets), tickets=listed))
    _print_rows(report.rows, t)
    return 0


def prune(bot: SupportBot, args: argparse.Namespace) -> int:
    report = bot.prune(closed_before=args.closed_before, keep=args.keep)
    if args.json:
        emit_json(report)
        return 0
    t = cli_words(args)
    kb = f"{report.bytes_freed / 1024:.1f}"
    print(t("prune.done", before=when(args.closed_before), n=len(report.tickets), kb=kb))
    _print_rows(report.rows, t)
    return 0


def retention(bot: SupportBot, args: argparse.Namespace) -> int:
    """The retention policy, and what it removes now (``--apply``) or would remove."""
    report = bot.retention(apply=args.apply)
    settings = bot.settings
    if args.json:
        emit_json({"policy": RetentionPolicy.of(settings), "applied": args.apply, "report": report})
        return 0
    t = cli_words(args)

    def days(n: int) -> str:
        return t("retention.days", n=n) if n else t("retention.forever")

    print(t("retention.policy"))
    for kind, n in (
        ("steps", settings.retention_steps_days),
        ("summaries", settings.retention_summaries_days),
        ("facts", settings.retention_facts_days),
        ("audit", settings.retention_audit_days),
    ):
        print("  " + t("retention.line", kind=t(f"retention.kind.{kind}"), days=days(n)))
    print(t("retention.applied" if args.apply else "retention.due"))
    print(
        "  "
        + t(
            "retention.counts",
            steps=report.steps,
            summaries=report.summaries,
            facts=report.facts,
            audit=report.audit,
        )
    )
    return 0


def reset(bot: SupportBot, args: argparse.Namespace) -> int:
    report = bot.reset()
    if args.json:
        emit_json(report)
        return 0
    t = cli_words(args)
    print(t("reset.done", n=len(report.tickets), rows=report.total))
    _print_rows(report.rows, t)
    return 0


def _print_rows(rows: dict[str, int], t: Translate) -> None:
    for table, count in rows.items():
        print("    " + t("rows", table=table, n=count))

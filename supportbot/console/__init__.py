"""The operator console: a web inbox for refund approvals and handed-off tickets (``supportbot[console]``).

``python -m supportbot console [--host 127.0.0.1] [--port 8088]`` serves it; it refuses to start
until an operator exists (``python -m supportbot console --add-user NAME --role approver``). The
core package never imports this one: everything here goes through SupportBot's public API, plus
the console's own claims and notes (supportbot/store/_console.py).

Modules (all internal): ``_users`` (operators, password hashes, sign-in throttling), ``_security``
(sessions, CSRF, roles), ``_service`` (what the console does), ``_web`` (what pages and API share:
the caller's session, rendering, error wording), ``_pages`` (HTML), ``_api`` (JSON, with its
OpenAPI description), ``_app`` (the ASGI app that wires them).
"""

from __future__ import annotations

import argparse
import getpass
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from typing import TYPE_CHECKING

from .. import i18n
from ..config import Settings

if TYPE_CHECKING:
    from .._front._bot import SupportBot
    from ._service import Console


def _utcnow() -> datetime:
    return datetime.now(UTC)


def run(args: argparse.Namespace, settings: Settings) -> int:
    """The ``console`` command: add an operator, or serve the console until interrupted."""
    from ._users import Users, add_user, set_teams, users_path

    tr = i18n.translator("console")
    path = users_path(settings.data_dir)
    if args.set_teams:
        name, teams = args.set_teams
        set_teams(path, name, teams.split(","))
        print(
            tr(
                "cli.teams_set",
                name=name.strip(),
                teams=", ".join(Users.load(path).teams_of(name.strip())) or "—",
            )
        )
        return 0
    if args.add_user:
        add_user(path, args.add_user, args.role, _new_password(tr))
        print(tr("cli.user_added", name=args.add_user.strip(), role=args.role, path=str(path)))
        # A new password or role ends the operator's sessions in every console on the database.
        from .._front._opening import resolve_database_url
        from ..store._store import Store

        url = resolve_database_url(args.database_url, settings)
        ended = Store.console.end_operator_sessions(url, args.add_user.strip())
        if ended:
            print(tr("cli.sessions_ended", n=ended))
        return 0
    users = Users.load(path)  # refuses to start without operators
    return _serve(args, settings, users, tr)


def _new_password(tr: i18n.Translate) -> str:
    if not sys.stdin.isatty():  # scripts pipe it: `echo "$PASSWORD" | ... --add-user NAME`
        return sys.stdin.readline().rstrip("\n")
    first = getpass.getpass(tr("cli.password"))
    if getpass.getpass(tr("cli.password_again")) != first:
        from ..errors import ConsoleConfigError

        raise ConsoleConfigError("the two passwords differ; nothing was written")
    return first


def _serve(args: argparse.Namespace, settings: Settings, users: object, tr: i18n.Translate) -> int:
    import uvicorn

    from ._security import is_loopback
    from ._users import Users

    assert isinstance(users, Users)
    console, bot = open_console(settings, database_url=args.database_url, backend=args.backend)
    try:
        loopback = is_loopback(args.host)
        hosts = ["127.0.0.1", "localhost", "[::1]", "::1"] if loopback else None
        from ._app import create_app

        app = create_app(console, users, secure_cookies=not loopback, allowed_hosts=hosts)
        print(tr("cli.serving", url=f"http://{args.host}:{args.port}/", n=len(users.names())), flush=True)
        if not loopback:
            print(tr("cli.needs_tls"), flush=True)
        # No access log: its URLs carry customer emails and ticket ids. On Ctrl-C or SIGTERM requests
        # in flight get a few seconds (open inbox streams end at once: they watch for disconnects).
        uvicorn.run(
            app,
            host=args.host,
            port=args.port,
            log_level="warning",
            access_log=False,
            timeout_graceful_shutdown=3,
        )
    finally:
        bot.close()
    return 0


def open_console(
    settings: Settings,
    *,
    database_url: str | None = None,
    backend: str | None = None,
    clock: Callable[[], datetime] | None = None,
) -> tuple[Console, SupportBot]:
    """The console's service over a bot on the configured business system (``backend``, else
    SUPPORTBOT_BACKEND; with neither, the ConfigError SupportBot.open() raises), sharing the bot's
    connection pool for its own rows. The caller closes the bot."""
    from .._front._bot import SupportBot
    from .._front._open import store_and_deps
    from ._service import Console

    store, deps = store_and_deps(
        database_url,
        llm=None,
        small_llm=None,
        backend=backend or settings.backend,
        settings=settings,
        clock=clock or _utcnow,
    )
    bot = SupportBot(store, deps)
    return Console(bot, store, deps.backend), bot

"""The ``serve`` command: the HTTP API for customer-facing clients (``supportbot[console]``), and
its keys: ``--add-key NAME --customers …`` makes one (shown once), ``--list-keys``, ``--revoke-key``.
The key commands need no web framework; serving does."""

from __future__ import annotations

import argparse
import dataclasses
from collections.abc import Callable

from .._front._opening import migrate, resolve_database_url
from ..config import Settings
from ..errors import ConfigError, InvalidInput
from ..i18n import Translate, translator
from ..store._connect import connected
from ..store._handles import Tx
from ..store._store import Store
from ._text import emit_json

SOURCE_NAME_CHARS = 200


def add_serve_command(command: Callable[..., argparse.ArgumentParser], t: Translate) -> None:
    tr = translator("http", t.language)
    p = command("serve", serve)
    p.add_argument("--host", default="127.0.0.1", help=tr("cli.help_host"))
    p.add_argument("--port", type=int, default=8089, help=tr("cli.help_port"))
    p.add_argument("--add-key", metavar="NAME", help=tr("cli.help_add_key"))
    p.add_argument("--customers", metavar="LIST", default="", help=tr("cli.help_customers"))
    p.add_argument("--rate", type=int, default=120, metavar="N", help=tr("cli.help_rate"))
    p.add_argument("--list-keys", action="store_true", help=tr("cli.help_list_keys"))
    p.add_argument("--revoke-key", metavar="ID", help=tr("cli.help_revoke_key"))
    p.set_defaults(standalone=True)


def serve(args: argparse.Namespace, settings: Settings) -> int:
    tr = translator("http")
    url = resolve_database_url(args.database_url, settings)
    if args.add_key or args.list_keys or args.revoke_key:
        migrate(url, settings=settings)  # the keys' table, on a database no bot opened yet
        failed = "the key command failed; no key was changed"
        with connected(url, autocommit=True, failed=failed, reason="keys") as conn:
            return _keys(args, conn, tr)
    with connected(url, failed="the keys could not be read", reason="keys") as conn:
        if not any(k.revoked_at is None for k in Store.keys.keys(conn)):
            print(tr("cli.needs_key"), flush=True)
    return _serve(args, settings)


def _keys(args: argparse.Namespace, conn: Tx, tr: Translate) -> int:
    from ..http._keys import customers_entries, make_key

    if args.add_key:
        name = args.add_key.strip()
        if not name or len(name) > SOURCE_NAME_CHARS:
            raise InvalidInput(f"the key's name must be 1-{SOURCE_NAME_CHARS} characters", name=name)
        customers = customers_entries(args.customers)
        if not 1 <= args.rate <= 100_000:
            raise InvalidInput("--rate must be 1 to 100000 requests a minute", rate=args.rate)
        new = make_key()
        row = Store.keys.add_key(
            conn,
            key_id=new.id,
            name=name,
            secret_sha256=new.secret_sha256,
            customers=customers,
            rate_per_minute=args.rate,
            created_by=_who(),
        )
        if args.json:
            emit_json({"id": row.id, "name": row.name, "customers": row.customers, "key": new.key})
            return 0
        print(
            tr(
                "cli.key_added",
                id=row.id,
                name=row.name,
                customers=", ".join(customers),
                rate=row.rate_per_minute,
            )
        )
        print(new.key)
        return 0
    if args.revoke_key:
        if not Store.keys.revoke(conn, args.revoke_key.strip()):
            raise ConfigError(tr("cli.key_unknown", id=args.revoke_key.strip()), reason="unknown_key")
        print(tr("cli.key_revoked", id=args.revoke_key.strip()))
        return 0
    listed = Store.keys.keys(conn)
    if args.json:
        emit_json(
            [
                {
                    "id": k.id,
                    "name": k.name,
                    "customers": k.customers,
                    "rate_per_minute": k.rate_per_minute,
                    "created_at": k.created_at,
                    "revoked_at": k.revoked_at,
                }
                for k in listed
            ]
        )
        return 0
    if not listed:
        print(tr("cli.no_keys"))
    for k in listed:
        state = tr("cli.key_revoked_state") if k.revoked_at else tr("cli.key_active")
        print(
            tr(
                "cli.key_line",
                id=k.id,
                name=k.name,
                customers=", ".join(k.customers),
                rate=k.rate_per_minute,
                state=state,
            )
        )
    return 0


def _serve(args: argparse.Namespace, settings: Settings) -> int:
    try:
        import uvicorn

        from ..http import create_app
    except ImportError as exc:  # the extra is not installed
        raise ConfigError(
            f"serving the HTTP API needs its extra: pip install 'supportbot[console]' ({exc.name} is missing)"
        ) from exc
    tr = translator("http")
    bound = dataclasses.replace(
        settings,
        database_url=resolve_database_url(args.database_url, settings),
        backend=args.backend or settings.backend,
    )
    app = create_app(settings=bound)
    print(tr("cli.serving", url=f"http://{args.host}:{args.port}"), flush=True)
    # No access log: its URLs carry ticket ids, and the customers' words never belong in a log.
    uvicorn.run(app, host=args.host, port=args.port, log_level="warning", access_log=False)
    return 0


def _who() -> str:
    import getpass

    try:
        return getpass.getuser()[:SOURCE_NAME_CHARS] or "cli"
    except (KeyError, OSError):
        return "cli"

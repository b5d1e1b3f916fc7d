"""Regenerate sql/schema.sql: migrate a scratch database and write its schema from the catalog.

python scripts/dump_schema.py            # the embedded server under a temporary folder
SUPPORTBOT_DATABASE_URL=... python scripts/dump_schema.py   # a server whose role may CREATEDB
"""

from __future__ import annotations

import os
import sys
import tempfile
import uuid
from pathlib import Path

import psycopg
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo

from supportbot.store._migrate import migrate
from supportbot.store._schema import dump_schema

OUT = Path(__file__).resolve().parent.parent / "sql" / "schema.sql"


def main() -> int:
    url = os.environ.get("SUPPORTBOT_DATABASE_URL")
    with tempfile.TemporaryDirectory() as scratch:
        if url is None:
            from supportbot.store._embedded import embedded_url

            url = embedded_url(Path(scratch), admin=True)  # the superuser: it creates the scratch database
        name = f"supportbot_schema_{uuid.uuid4().hex[:8]}"
        with psycopg.connect(url, autocommit=True) as admin:
            admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
        try:
            with psycopg.connect(make_conninfo(**{**conninfo_to_dict(url), "dbname": name})) as conn:
                migrate(conn, demo=True)  # the demo business system is documented here too
                OUT.write_text(dump_schema(conn), encoding="utf-8")
        finally:
            with psycopg.connect(url, autocommit=True) as admin:
                admin.execute(sql.SQL("DROP DATABASE {} WITH (FORCE)").format(sql.Identifier(name)))
    print(f"wrote {OUT}")
    return 0


if __name__ == "__main__":
    sys.exit(main())

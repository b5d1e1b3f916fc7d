"""The embedded server's roles: random passwords, SCRAM verifiers, and the application's database.

Two roles: ``postgres``, the superuser, for initdb's bootstrap and for tools that create databases;
``supportbot``, an ordinary login role that owns the ``supportbot`` database and everything in it,
which is what the application connects as.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import secrets
from dataclasses import dataclass, field

import psycopg
from psycopg import sql

ADMIN_ROLE = "postgres"
APP_ROLE = "supportbot"
_SCRAM_ITERATIONS = 4096  # PostgreSQL's own default for scram_iterations


@dataclass(frozen=True, slots=True)
class Passwords:
    admin: str = field(repr=False)
    app: str = field(repr=False)


def new_passwords() -> Passwords:
    # 256 bits each, URL-safe characters: nothing to escape in a password file or a verifier.
    return Passwords(admin=secrets.token_urlsafe(32), app=secrets.token_urlsafe(32))


def passfile_text(passwords: Passwords) -> str:
    """A libpq password file: any host, port and database, one line per role."""
    return f"*:*:*:{ADMIN_ROLE}:{passwords.admin}\n*:*:*:{APP_ROLE}:{passwords.app}\n"


def scram_verifier(password: str, *, salt: bytes | None = None) -> str:
    """The SCRAM-SHA-256 verifier PostgreSQL stores for ``password`` (RFC 5802, RFC 7677).

    Computed here so the server only ever receives the verifier, never the password.
    """
    salt = salt if salt is not None else secrets.token_bytes(16)
    salted = hashlib.pbkdf2_hmac("sha256", password.encode(), salt, _SCRAM_ITERATIONS)
    client_key = hmac.new(salted, b"Client Key", "sha256").digest()
    stored_key = hashlib.sha256(client_key).digest()
    server_key = hmac.new(salted, b"Server Key", "sha256").digest()

    def b64(raw: bytes) -> str:
        return base64.b64encode(raw).decode()

    return f"SCRAM-SHA-256${_SCRAM_ITERATIONS}:{b64(salt)}${b64(stored_key)}:{b64(server_key)}"


def single_user_script(passwords: Passwords) -> str:
    """Statements for ``postgres --single`` (one per line): set both roles' passwords.

    The application role is created when missing (clusters made by earlier versions have none)
    and stripped of every privilege beyond logging in.
    """
    admin = scram_verifier(passwords.admin)
    app = scram_verifier(passwords.app)
    attributes = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS"
    return (
        f"ALTER ROLE {ADMIN_ROLE} PASSWORD '{admin}';\n"
        f"DO $sb$ BEGIN IF EXISTS (SELECT FROM pg_roles WHERE rolname = '{APP_ROLE}') "
        f"THEN ALTER ROLE {APP_ROLE} {attributes} PASSWORD '{app}'; "
        f"ELSE CREATE ROLE {APP_ROLE} {attributes} PASSWORD '{app}'; END IF; END $sb$;\n"
    )


# Everything an earlier version's migrations created as the superuser, handed to the app role.
# Tables carry their indexes, triggers and column-owned sequences with them; standalone
# sequences, functions and types follow separately.
_HAND_OVER = """
DO $sb$
DECLARE r record;
BEGIN
  FOR r IN SELECT nspname FROM pg_namespace
           WHERE nspowner = 'postgres'::regrole AND nspname NOT LIKE 'pg\\_%'
             AND nspname NOT IN ('information_schema', 'public') LOOP
    EXECUTE format('ALTER SCHEMA %I OWNER TO supportbot', r.nspname);
  END LOOP;
  FOR r IN SELECT c.oid::regclass AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relowner = 'postgres'::regrole AND c.relkind IN ('r', 'p', 'v', 'm', 'f')
             AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER TABLE %s OWNER TO supportbot', r.name);
  END LOOP;
  FOR r IN SELECT c.oid::regclass AS name FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
           WHERE c.relowner = 'postgres'::regrole AND c.relkind = 'S'
             AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER SEQUENCE %s OWNER TO supportbot', r.name);
  END LOOP;
  FOR r IN SELECT p.oid::regprocedure AS name FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace
           WHERE p.proowner = 'postgres'::regrole
             AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER ROUTINE %s OWNER TO supportbot', r.name);
  END LOOP;
  FOR r IN SELECT t.oid::regtype AS name FROM pg_type t JOIN pg_namespace n ON n.oid = t.typnamespace
           WHERE t.typowner = 'postgres'::regrole AND t.typrelid = 0 AND t.typcategory <> 'A'
             AND n.nspname NOT LIKE 'pg\\_%' AND n.nspname <> 'information_schema' LOOP
    EXECUTE format('ALTER TYPE %s OWNER TO supportbot', r.name);
  END LOOP;
END $sb$
"""


def ensure_app_database(admin_url: str, database: str) -> None:
    """Create ``database`` owned by the app role, or hand an existing one and its objects over."""
    with psycopg.connect(admin_url, autocommit=True) as conn:
        row = conn.execute(
            "SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = %s", (database,)
        ).fetchone()
        if row is None:
            conn.execute(
                sql.SQL("CREATE DATABASE {} OWNER {}").format(
                    sql.Identifier(database), sql.Identifier(APP_ROLE)
                )
            )
            return
        if row[0] == APP_ROLE:
            return
    with psycopg.connect(admin_url, dbname=database) as conn:
        conn.execute(_HAND_OVER)
        conn.execute(
            sql.SQL("ALTER DATABASE {} OWNER TO {}").format(
                sql.Identifier(database), sql.Identifier(APP_ROLE)
            )
        )

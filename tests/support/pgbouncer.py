"""A PgBouncer in transaction pooling mode, in front of a test server, for the length of a test run.

Debian's package puts the binary at /usr/sbin/pgbouncer (``.ci/run`` installs it). PgBouncer
refuses to run as root, so as root it runs as the OS user that owns the server's socket folder
(the only user besides root that can reach a private socket), else as ``nobody``.
"""

from __future__ import annotations

import os
import pwd
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import psycopg
from psycopg.conninfo import conninfo_to_dict, make_conninfo

BINARY = "pgbouncer"


def find_binary() -> str:
    found = shutil.which(BINARY) or shutil.which(BINARY, path="/usr/sbin:/usr/local/sbin")
    if found is None:
        raise RuntimeError("pgbouncer is not installed: apt-get install -y pgbouncer (.ci/run does it)")
    return found


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def _run_as(host: str) -> pwd.struct_passwd | None:
    if os.geteuid() != 0:
        return None
    if host.startswith("/") and Path(host).exists():
        owner = Path(host).stat().st_uid
        if owner != 0:
            return pwd.getpwuid(owner)
    return pwd.getpwnam("nobody")


def _from_passfile(passfile: object, user: str) -> str:
    """The user's password from a libpq passfile (the embedded server's URLs name one)."""
    if not passfile or not Path(str(passfile)).exists():
        return ""
    for line in Path(str(passfile)).read_text(encoding="utf-8").splitlines():
        fields = line.split(":")
        if len(fields) == 5 and fields[3] in (user, "*"):
            return fields[4]
    return ""


def _quote(value: str) -> str:
    return '"' + value.replace('"', '""') + '"'


@contextmanager
def pgbouncer(server_url: str) -> Iterator[str]:
    """Start PgBouncer in front of ``server_url``'s server; yield a URL like it through PgBouncer.

    The user and password come from the server URL: with a password, PgBouncer asks clients for
    it (SCRAM) and logs in to the server with it; without one (trust), it asks for none. Its
    files live in a private folder of its own (its OS user may not reach the test's folders).
    """
    workdir = Path(tempfile.mkdtemp(prefix="supportbot-pgbouncer-"))
    try:
        with _running(server_url, workdir) as url:
            yield url
    finally:
        shutil.rmtree(workdir, ignore_errors=True)


@contextmanager
def _running(server_url: str, workdir: Path) -> Iterator[str]:
    params = conninfo_to_dict(server_url)
    host = str(params.get("host") or "/tmp")
    user = str(params.get("user") or pwd.getpwuid(os.geteuid()).pw_name)
    password = str(params.get("password") or "") or _from_passfile(params.get("passfile"), user)
    port = free_port()
    # The embedded server's socket folder is private and its parents may be closed to PgBouncer's
    # OS user: PgBouncer then starts inside that folder and reaches the socket through its own
    # working directory, as the server does (supportbot/store/_embedded.py).
    inside = host.startswith("/") and Path(host).is_dir() and os.geteuid() == 0
    server = f"host={'/proc/self/cwd' if inside else host} port={params.get('port') or 5432}"
    ini = workdir / "pgbouncer.ini"
    ini.write_text(
        "[databases]\n"
        f"* = {server}\n"
        "[pgbouncer]\n"
        "listen_addr = 127.0.0.1\n"
        f"listen_port = {port}\n"
        "unix_socket_dir =\n"
        "pool_mode = transaction\n"
        f"auth_type = {'scram-sha-256' if password else 'trust'}\n"
        f"auth_file = {workdir / 'userlist.txt'}\n"
        "max_client_conn = 500\n"
        "default_pool_size = 40\n"
        "server_login_retry = 1\n"
        "log_connections = 0\n"
        "log_disconnections = 0\n"
        f"logfile = {workdir / 'pgbouncer.log'}\n"
        f"pidfile = {workdir / 'pgbouncer.pid'}\n",
        encoding="utf-8",
    )
    (workdir / "userlist.txt").write_text(f"{_quote(user)} {_quote(password)}\n", encoding="utf-8")
    argv = [find_binary()]
    account = _run_as(host)
    if account is not None:
        argv += ["-u", account.pw_name]
        for path in [workdir, *workdir.iterdir()]:
            os.chown(path, account.pw_uid, account.pw_gid)
    workdir.chmod(0o700)
    (workdir / "userlist.txt").chmod(0o600)
    # Not a pipe: PgBouncer logs to stderr too, and would block once a pipe nobody reads is full.
    proc = subprocess.Popen(
        [*argv, str(ini)], cwd=host if inside else None, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    url = make_conninfo(server_url, host="127.0.0.1", port=port)
    try:
        _wait_until_ready(url, proc, workdir)
        yield url
    finally:
        proc.send_signal(signal.SIGINT)  # "safe shutdown": after the clients leave
        try:
            proc.wait(10)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _wait_until_ready(url: str, proc: subprocess.Popen[bytes], workdir: Path) -> None:
    deadline = time.monotonic() + 15
    while True:
        if proc.poll() is not None:
            log = (
                (workdir / "pgbouncer.log").read_text(errors="replace")
                if (workdir / "pgbouncer.log").exists()
                else ""
            )
            raise RuntimeError(f"pgbouncer exited with {proc.returncode}: {log}")
        try:
            with psycopg.connect(url, connect_timeout=2, prepare_threshold=None) as conn:
                conn.execute("SELECT 1")
                return
        except psycopg.OperationalError:
            if time.monotonic() > deadline:
                raise
            time.sleep(0.1)

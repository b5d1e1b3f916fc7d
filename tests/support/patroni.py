"""A highly available PostgreSQL 15 for a test: etcd and three nodes under Patroni, on loopback.

Debian's packages provide the programs (``patroni``, ``etcd-server``, ``postgresql-15``;
``scripts/install-test-deps`` installs them). Everything lives in a private folder of its own and
every port is free when picked. As root, the cluster runs as the ``postgres`` OS user (PostgreSQL
refuses root), which owns the folder.

Tuned for a test: Patroni checks every second (``loop_wait``), and a primary whose server crashed
hands over at once (``primary_start_timeout: 0``) instead of restarting in place. Replication is
synchronous (``synchronous_mode``): a commit the primary acknowledges is on a replica too, so a
promoted replica has it.
"""

from __future__ import annotations

import json
import os
import pwd
import secrets
import shutil
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any

from support.pgbouncer import free_port

PG_BIN = Path("/usr/lib/postgresql/15/bin")
SCOPE = "supportbot-test"
NODES = 3


def find_programs() -> tuple[str, str]:
    """The ``patroni`` and ``etcd`` programs, or an error that says how to install them."""
    patroni, etcd = shutil.which("patroni"), shutil.which("etcd")
    if patroni is None or etcd is None or not (PG_BIN / "postgres").exists():
        raise RuntimeError(
            "Patroni, etcd or PostgreSQL 15 is not installed: apt-get install -y patroni etcd-server "
            "postgresql-15 (scripts/install-test-deps does it)"
        )
    return patroni, etcd


@dataclass
class Node:
    name: str
    port: int
    rest_port: int
    data_dir: Path
    process: subprocess.Popen[bytes] | None = None

    def role(self) -> str | None:
        """What Patroni's REST API says this node is ('primary', 'replica', ...); None if down."""
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{self.rest_port}/patroni", timeout=1) as answer:
                status = json.loads(answer.read())
        except (urllib.error.URLError, OSError, ValueError):
            return None
        if status.get("state") != "running":
            return None
        return "primary" if status.get("role") in ("master", "primary") else str(status.get("role"))

    def postmaster_pid(self) -> int:
        return int((self.data_dir / "postmaster.pid").read_text().split()[0])


@dataclass
class Cluster:
    password: str
    nodes: list[Node] = field(default_factory=list)

    @property
    def url(self) -> str:
        """A multi-host URL: the client tries the nodes in turn and keeps the one that takes writes."""
        hosts = ",".join("127.0.0.1" for _ in self.nodes)
        ports = ",".join(str(n.port) for n in self.nodes)
        return (
            f"postgresql://postgres:{self.password}@/postgres?host={hosts}&port={ports}"
            "&target_session_attrs=read-write"
        )

    def node_url(self, node: Node) -> str:
        return f"postgresql://postgres:{self.password}@127.0.0.1:{node.port}/postgres"

    def primary(self) -> Node | None:
        for node in self.nodes:
            if node.role() == "primary":
                return node
        return None

    def wait_until_healthy(self, timeout: float = 90.0) -> Node:
        """Wait for one primary and every other node streaming from it; return the primary."""
        deadline = time.monotonic() + timeout
        while True:
            roles = [n.role() for n in self.nodes]
            primary = self.primary()
            settled = all(r in ("primary", "replica") for r in roles) and roles.count("primary") == 1
            if settled and primary is not None and self._synchronous(primary):
                return primary
            if time.monotonic() > deadline:
                raise RuntimeError(f"the Patroni cluster did not become healthy: roles {roles}")
            time.sleep(0.2)

    def _synchronous(self, primary: Node) -> bool:
        try:
            url = f"http://127.0.0.1:{primary.rest_port}/cluster"
            with urllib.request.urlopen(url, timeout=1) as answer:
                members = json.loads(answer.read())["members"]
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            return False
        streaming = [
            m for m in members if m.get("state") in ("streaming", "running") and m["name"] != primary.name
        ]
        return len(streaming) == len(self.nodes) - 1 and any(m.get("role") == "sync_standby" for m in members)


def _runner() -> pwd.struct_passwd | None:
    """The OS user the cluster runs as: this process's own, or ``postgres`` as root."""
    return pwd.getpwnam("postgres") if os.geteuid() == 0 else None


def _spawn(
    argv: list[str], log: IO[bytes], user: pwd.struct_passwd | None, cwd: Path
) -> subprocess.Popen[bytes]:
    env = {"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "LANG": "C.UTF-8", "HOME": str(cwd)}
    return subprocess.Popen(
        argv,
        stdout=log,
        stderr=subprocess.STDOUT,
        cwd=cwd,
        env=env,
        user=user.pw_uid if user else None,
        group=user.pw_gid if user else None,
        extra_groups=[] if user else None,
        start_new_session=True,  # a signal to the test's process group does not reach the cluster
    )


def _patroni_config(node: Node, workdir: Path, etcd_port: int, password: str) -> dict[str, Any]:
    return {
        "scope": SCOPE,
        "name": node.name,
        "log": {"level": "INFO"},
        "restapi": {
            "listen": f"127.0.0.1:{node.rest_port}",
            "connect_address": f"127.0.0.1:{node.rest_port}",
        },
        "etcd3": {"hosts": [f"127.0.0.1:{etcd_port}"]},
        "bootstrap": {
            "dcs": {
                "ttl": 10,
                "loop_wait": 1,
                "retry_timeout": 3,
                "primary_start_timeout": 0,
                "synchronous_mode": True,
                "postgresql": {
                    "use_pg_rewind": True,
                    "use_slots": True,
                    "parameters": {"wal_log_hints": "on", "max_connections": 100, "max_wal_senders": 10},
                },
            },
            "initdb": [{"encoding": "UTF8"}, {"locale": "C.UTF-8"}],
        },
        "postgresql": {
            "listen": f"127.0.0.1:{node.port}",
            "connect_address": f"127.0.0.1:{node.port}",
            "data_dir": str(node.data_dir),
            "bin_dir": str(PG_BIN),
            "pgpass": str(workdir / f"{node.name}.pgpass"),
            "authentication": {
                "superuser": {"username": "postgres", "password": password},
                "replication": {"username": "replicator", "password": password},
                "rewind": {"username": "postgres", "password": password},
            },
            "pg_hba": [
                "local all all trust",
                "host all all 127.0.0.1/32 scram-sha-256",
                "host replication replicator 127.0.0.1/32 scram-sha-256",
            ],
            "parameters": {"unix_socket_directories": str(workdir), "fsync": "on"},
        },
        "tags": {},
    }


@contextmanager
def patroni_cluster(nodes: int = NODES) -> Iterator[Cluster]:
    """etcd and ``nodes`` PostgreSQL servers under Patroni; yields once a primary and its
    replicas are up. Everything is stopped and removed afterwards."""
    patroni, etcd = find_programs()
    user = _runner()
    workdir = Path(tempfile.mkdtemp(prefix="supportbot-patroni-"))
    if user:
        os.chown(workdir, user.pw_uid, user.pw_gid)
    cluster = Cluster(password=secrets.token_hex(12))
    processes: list[subprocess.Popen[bytes]] = []
    try:
        with ExitStack() as logs:
            etcd_port, peer_port = free_port(), free_port()
            etcd_log = logs.enter_context(open(workdir / "etcd.log", "wb"))
            processes.append(
                _spawn(
                    [
                        etcd,
                        "--name",
                        "etcd0",
                        "--data-dir",
                        str(workdir / "etcd"),
                        "--listen-client-urls",
                        f"http://127.0.0.1:{etcd_port}",
                        "--advertise-client-urls",
                        f"http://127.0.0.1:{etcd_port}",
                        "--listen-peer-urls",
                        f"http://127.0.0.1:{peer_port}",
                        "--initial-advertise-peer-urls",
                        f"http://127.0.0.1:{peer_port}",
                        "--initial-cluster",
                        f"etcd0=http://127.0.0.1:{peer_port}",
                    ],
                    etcd_log,
                    user,
                    workdir,
                )
            )
            for i in range(nodes):
                node = Node(f"node{i}", free_port(), free_port(), workdir / f"node{i}")
                config = workdir / f"{node.name}.yml"
                config.write_text(json.dumps(_patroni_config(node, workdir, etcd_port, cluster.password)))
                if user:
                    os.chown(config, user.pw_uid, user.pw_gid)
                log = logs.enter_context(open(workdir / f"{node.name}.log", "wb"))
                node.process = _spawn([patroni, str(config)], log, user, workdir)
                processes.append(node.process)
                cluster.nodes.append(node)
                if i == 0:  # the first node bootstraps; the others copy it
                    _wait_for(lambda n=node: n.role() == "primary", 60, "the first node did not start")
            cluster.wait_until_healthy()
            yield cluster
    except BaseException:
        for log_file in sorted(workdir.glob("*.log")):
            print(f"--- {log_file.name}\n{log_file.read_text(errors='replace')[-3000:]}")
        raise
    finally:
        _stop(processes)
        shutil.rmtree(workdir, ignore_errors=True)


def _wait_for(ready: Any, timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        if time.monotonic() > deadline:
            raise RuntimeError(what)
        time.sleep(0.2)


def _stop(processes: list[subprocess.Popen[bytes]]) -> None:
    """Patroni stops its PostgreSQL on SIGTERM; etcd (first in the list) goes last."""
    for process in reversed(processes):
        if process.poll() is None:
            process.send_signal(signal.SIGTERM)
        try:
            process.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

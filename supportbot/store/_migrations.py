"""The migrations and stored functions this version ships (``sql/``): what the migrator applies
(``_migrate_async.py``)."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass
from pathlib import Path
from typing import NamedTuple

# Any fixed number works; it only has to be the same in every process that migrates.
LOCK_ID = 0x5B0B07


@dataclass(frozen=True, slots=True)
class Migration:
    version: int
    name: str
    path: Path

    @property
    def demo(self) -> bool:
        """Part of the demo business system rather than of the engine."""
        return self.name.startswith("demo")


class MigrationState(NamedTuple):
    migration: Migration
    applied: bool  # in the database at hand


@dataclass(frozen=True, slots=True)
class StoredFunction:
    """One repeatable file of ``sql/functions/``: a stored function's current definition."""

    name: str
    path: Path

    @property
    def demo(self) -> bool:
        return self.name.startswith("demo")

    def text(self) -> str:
        return self.path.read_text(encoding="utf-8")

    def checksum(self) -> str:
        return hashlib.sha256(self.text().encode()).hexdigest()


def migrations_dir() -> Path:
    packaged = Path(__file__).resolve().parent.parent / "sql"  # inside an installed wheel
    if packaged.is_dir():
        return packaged
    return Path(__file__).resolve().parent.parent.parent / "sql"  # a source checkout


def available() -> list[Migration]:
    found = []
    for path in sorted(migrations_dir().glob("*.sql")):
        match = re.fullmatch(r"(\d+)_(\w+)\.sql", path.name)
        if match:
            found.append(Migration(int(match[1]), match[2], path))
    return found


def functions() -> list[StoredFunction]:
    return [
        StoredFunction(path.stem, path) for path in sorted((migrations_dir() / "functions").glob("*.sql"))
    ]

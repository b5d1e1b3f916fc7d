"""The house as docs/architecture.md draws it: every import runs down a floor, none runs up, and
the core never imports the operator interfaces."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parent.parent / "supportbot"

# Room -> floor, as in docs/architecture.md. A module belongs to the longest room that prefixes it.
FLOORS: dict[str, int] = {
    "supportbot.errors": 1,
    "supportbot._records": 1,
    "supportbot._moved": 1,
    "supportbot._aio": 1,
    "supportbot._state": 2,
    "supportbot._redact": 2,
    "supportbot._reports": 2,
    "supportbot.config": 3,
    "supportbot.i18n": 3,
    "supportbot.llm.base": 3,
    "supportbot.backend.base": 3,
    "supportbot.memory": 4,
    "supportbot.store": 4,
    "supportbot.reply": 5,
    "supportbot.llm": 6,
    "supportbot.backend.demo": 6,
    "supportbot.run": 7,
    "supportbot._front._validate": 8,
    "supportbot._front._lifecycle": 9,
    "supportbot._front._opening": 9,
    "supportbot._front._open": 10,
    "supportbot._front._bot": 11,
    "supportbot": 12,
    "supportbot.console": 13,
    "supportbot.http": 13,
    "supportbot.cli": 14,
    "supportbot.__main__": 15,
}


def _modules() -> dict[str, Path]:
    found = {}
    for path in PACKAGE.rglob("*.py"):
        parts = list(path.relative_to(PACKAGE.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _room(module: str) -> str:
    module = module.removesuffix("_async")  # an async source lives in the room of the module it generates
    return max((room for room in FLOORS if module == room or module.startswith(room + ".")), key=len)


def _imports(module: str, path: Path) -> list[tuple[str, int, bool]]:
    """(module imported, line, under TYPE_CHECKING) for each import of our own package."""
    tree = ast.parse(path.read_text(encoding="utf-8"))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    checking = {
        id(node)
        for block in ast.walk(tree)
        if isinstance(block, ast.If) and "TYPE_CHECKING" in ast.unparse(block.test)
        for node in ast.walk(block)
    }
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - node.level + 1]
                target = ".".join([*base, *([node.module] if node.module else [])])
            else:
                target = node.module or ""
            names = [f"{target}.{alias.name}" for alias in node.names]
            for name in names:
                imported = name if name in MODULES else target
                if imported.startswith("supportbot"):
                    found.append((imported, node.lineno, id(node) in checking))
        elif isinstance(node, ast.Import):
            found += [
                (a.name, node.lineno, id(node) in checking)
                for a in node.names
                if a.name.startswith("supportbot")
            ]
    return found


MODULES = _modules()


@pytest.mark.parametrize("module", sorted(MODULES))
def test_every_import_runs_down_the_floors(module: str) -> None:
    room, floor = _room(module), FLOORS[_room(module)]
    up = [
        f"line {line}: {imported} (floor {FLOORS[_room(imported)]})"
        for imported, line, _ in _imports(module, MODULES[module])
        if _room(imported) != room and FLOORS[_room(imported)] >= floor
    ]
    assert up == [], f"{module} (floor {floor}) imports a room on its floor or above"


def test_the_core_never_imports_the_operator_interfaces() -> None:
    core = [m for m in MODULES if FLOORS[_room(m)] < FLOORS["supportbot.console"]]
    reached = [
        (module, imported)
        for module in core
        for imported, _, _ in _imports(module, MODULES[module])
        if imported.startswith(("supportbot.cli", "supportbot.console", "supportbot.http"))
    ]
    assert reached == []


def _driver_imports(path: Path) -> list[int]:
    """Lines importing psycopg or psycopg_pool (under TYPE_CHECKING too: a handle's type is the store's)."""
    return [
        node.lineno
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if (
            isinstance(node, ast.Import)
            and any(a.name.split(".")[0].startswith("psycopg") for a in node.names)
        )
        or (isinstance(node, ast.ImportFrom) and (node.module or "").split(".")[0].startswith("psycopg"))
    ]


def test_only_the_store_and_the_business_systems_import_the_driver() -> None:
    # The business-system protocol takes psycopg's connection, so a host's writes can join the
    # step's transaction, and the demo business system is such a host; everyone else holds the
    # store's handles (store/_handles.py) and runs no statement.
    gate = ("supportbot.store", "supportbot.backend")
    outside = {
        module: lines
        for module, path in MODULES.items()
        if not module.startswith(gate) and (lines := _driver_imports(path))
    }
    assert outside == {}
    assert _driver_imports(MODULES["supportbot.store._handles"]), "the check finds a driver import"


# The store's modules that run statements: outside store/, only their classes and constants may be
# imported (row types, SCHEMA); their functions are reached through the Store.
_STATEMENT_MODULES = {
    module
    for module, path in MODULES.items()
    if module.startswith("supportbot.store.") and ".execute(" in path.read_text(encoding="utf-8")
}


def _taken_from_the_store(package: str, source: str) -> list[str]:
    """``store-module.name`` for each name the module (in ``package``) imports from a statement
    module that is neither a class nor a constant, and each store module it imports whole."""
    tree = ast.parse(source)
    taken = []
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            base = package.split(".")[: len(package.split(".")) - node.level + 1] if node.level else []
            target = ".".join([*base, *([node.module] if node.module else [])])
            for alias in node.names:
                whole = target == "supportbot.store" and alias.name.startswith("_")
                function = target in _STATEMENT_MODULES and not alias.name[0].isupper()
                if whole or function:
                    taken.append(f"{target}.{alias.name}")
    return taken


def test_code_outside_the_store_runs_statements_only_through_the_store() -> None:
    # The statements are the Store's (store.tickets.get_ticket(tx, ...), store.prune_closed(...)):
    # nothing outside store/ imports a store module's functions or a store module whole.
    outside = {
        module: taken
        for module, path in MODULES.items()
        if not module.startswith("supportbot.store")
        and (taken := _taken_from_the_store(_package(module, path), path.read_text(encoding="utf-8")))
    }
    assert outside == {}
    # The check finds what it looks for, written either way.
    assert _taken_from_the_store(
        "supportbot.run", "from ..store import _tickets as repo\nfrom ..store._queue import stats, BATCH"
    ) == ["supportbot.store._tickets", "supportbot.store._queue.stats"]


def _package(module: str, path: Path) -> str:
    return module if path.name == "__init__.py" else module.rpartition(".")[0]


def _private_attributes(*modules: str) -> set[str]:
    """The private attributes (``self._name``) the classes in ``modules`` set or read."""
    return {
        node.attr
        for module in modules
        for node in ast.walk(ast.parse(MODULES[module].read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr.startswith("_")
        and not node.attr.startswith("__")
        and isinstance(node.value, ast.Name)
        and node.value.id == "self"
    }


def test_tests_reach_bots_and_workers_through_their_public_seams() -> None:
    # A test that needs the store, the dependencies or an engine builds the bot over them
    # (tests/support/parts.py) instead of reading them back out of the bot.
    private = _private_attributes(
        "supportbot._front._bot",
        "supportbot._front._bot_async",
        "supportbot.run._worker",
        "supportbot.run._aio_worker",
    )
    assert {"_store", "_deps", "_engine", "_tasks"} <= private, "the scan finds the bots' own attributes"
    tests = Path(__file__).resolve().parent
    reached = [
        f"{path.relative_to(tests)}:{node.lineno}: .{node.attr}"
        for path in sorted(tests.rglob("*.py"))
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
        if isinstance(node, ast.Attribute)
        and node.attr in private
        and not (isinstance(node.value, ast.Name) and node.value.id in ("self", "cls"))
    ]
    assert reached == []

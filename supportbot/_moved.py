"""The import paths of 0.2 that 0.3 moved, kept working for one release with a DeprecationWarning.

0.3 packages the code by concept (docs/architecture.md) and marks internal modules private, so
``supportbot.engine`` is now ``supportbot.run._engine`` and so on. Code that imported an old path
still runs: importing it warns once and gives a module whose names are those of the new one.
The public API has not moved: import from ``supportbot``, ``supportbot.errors``,
``supportbot.config``, ``supportbot.backend.base`` and ``supportbot.llm.base``.

One finder serves every old path (a stub file per path would double the package for a release);
it is removed, with this table, in 0.4.
"""

from __future__ import annotations

import importlib
import importlib.abc
import importlib.machinery
import sys
import types
import warnings
from collections.abc import Sequence

# Old path -> new path. The CHANGELOG (0.3.0) lists the same table for readers.
MOVED: dict[str, str] = {
    "supportbot.audit": "supportbot.store._audit",
    "supportbot.backend.demo_data": "supportbot.backend.demo._data",
    "supportbot.backend.refund_policy": "supportbot.backend.demo._refund_policy",
    "supportbot.backend.search": "supportbot.reply._search",
    "supportbot.bot": "supportbot._front._bot",
    "supportbot.caches": "supportbot.reply._caches",
    "supportbot.cli_admin": "supportbot.cli._admin",
    "supportbot.cli_chat": "supportbot.cli._chat",
    "supportbot.cli_conversations": "supportbot.cli._conversations",
    "supportbot.cli_memory": "supportbot.cli._memory",
    "supportbot.cli_takeover": "supportbot.cli._takeover",
    "supportbot.cli_text": "supportbot.cli._text",
    "supportbot.cli_worker": "supportbot.cli._worker",
    "supportbot.console.api": "supportbot.console._api",
    "supportbot.console.app": "supportbot.console._app",
    "supportbot.console.pages": "supportbot.console._pages",
    "supportbot.console.security": "supportbot.console._security",
    "supportbot.console.service": "supportbot.console._service",
    "supportbot.console.users": "supportbot.console._users",
    "supportbot.context": "supportbot.reply._context",
    "supportbot.deps": "supportbot.run._deps",
    "supportbot.engine": "supportbot.run._engine",
    "supportbot.findings": "supportbot.reply._findings",
    "supportbot.forks": "supportbot.run._forks",
    "supportbot.graph": "supportbot.run._graph",
    "supportbot.guardrails": "supportbot.reply._guardrails",
    "supportbot.lifecycle": "supportbot._front._lifecycle",
    "supportbot.llm.factory": "supportbot.llm._factory",
    "supportbot.llm.openai": "supportbot.llm._openai",
    "supportbot.memory.assist": "supportbot.memory._assist",
    "supportbot.memory.compress": "supportbot.memory._compress",
    "supportbot.memory.contacts": "supportbot.memory._contacts",
    "supportbot.memory.dates": "supportbot.memory._dates",
    "supportbot.memory.facts": "supportbot.memory._facts",
    "supportbot.memory.ledger": "supportbot.memory._ledger",
    "supportbot.memory.mask": "supportbot.memory._mask",
    "supportbot.memory.numbers": "supportbot.memory._money",
    "supportbot.memory.profile": "supportbot.memory._profile",
    "supportbot.memory.tokens": "supportbot.memory._tokens",
    "supportbot.notify": "supportbot.store._listen",
    "supportbot.opening": "supportbot._front._opening",
    "supportbot.profiles": "supportbot.run._profiles",
    "supportbot.prompts": "supportbot.i18n._prompts",
    "supportbot.recent": "supportbot.store._recent",
    "supportbot.records": "supportbot._records",
    "supportbot.redact": "supportbot._redact",
    "supportbot.refunds": "supportbot.run._refunds",
    "supportbot.round_results": "supportbot.run._results",
    "supportbot.rounds": "supportbot.run._rounds",
    "supportbot.state": "supportbot._state",
    "supportbot.step_record": "supportbot.run._record",
    "supportbot.steps": "supportbot.run._steps",
    "supportbot.store.channels": "supportbot.store._channels",
    "supportbot.store.codec": "supportbot.store._codec",
    "supportbot.store.console_repo": "supportbot.store._console",
    "supportbot.store.embedded": "supportbot.store._embedded",
    "supportbot.store.embedded_roles": "supportbot.store._embedded_roles",
    "supportbot.store.lease_repo": "supportbot.store._lease",
    "supportbot.store.lifecycle_repo": "supportbot.store._lifecycle",
    "supportbot.store.migrate": "supportbot.store._migrate",
    "supportbot.store.pool": "supportbot.store._pool",
    "supportbot.store.profiles_repo": "supportbot.store._profiles",
    "supportbot.store.queue": "supportbot.store._queue",
    "supportbot.store.repo": "supportbot.store._tickets",
    "supportbot.store.schema": "supportbot.store._schema",
    "supportbot.store.steps_repo": "supportbot.store._history",
    "supportbot.store.store": "supportbot.store._store",
    "supportbot.takeover": "supportbot.run._takeover",
    "supportbot.validate": "supportbot._front._validate",
    "supportbot.waiting": "supportbot.run._waiting",
    "supportbot.worker": "supportbot.run._worker",
}


class _Alias(types.ModuleType):
    """An old path: every name is looked up on the module that replaced it."""

    def __init__(self, name: str, target: types.ModuleType) -> None:
        super().__init__(name, f"Deprecated: moved to {target.__name__}")
        self.__dict__["_target"] = target

    def __getattr__(self, name: str) -> object:
        return getattr(self.__dict__["_target"], name)

    def __dir__(self) -> list[str]:
        return dir(self.__dict__["_target"])


class _Loader(importlib.abc.Loader):
    def create_module(self, spec: importlib.machinery.ModuleSpec) -> types.ModuleType:
        new = MOVED[spec.name]
        warnings.warn(
            f"{spec.name} moved to {new} in supportbot 0.3 and the old path goes in 0.4; import the "
            "public names from supportbot (or supportbot.errors, .config, .backend.base, .llm.base)",
            DeprecationWarning,
            stacklevel=2,
        )
        return _Alias(spec.name, importlib.import_module(new))

    def exec_module(self, module: types.ModuleType) -> None:
        return None


class _Finder(importlib.abc.MetaPathFinder):
    def find_spec(
        self, fullname: str, path: Sequence[str] | None, target: types.ModuleType | None = None
    ) -> importlib.machinery.ModuleSpec | None:
        if fullname not in MOVED:
            return None
        return importlib.machinery.ModuleSpec(fullname, _Loader())


def install() -> None:
    """Serve the old paths (idempotent: ``import supportbot`` calls it once per process)."""
    if not any(isinstance(finder, _Finder) for finder in sys.meta_path):
        sys.meta_path.append(_Finder())

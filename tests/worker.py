"""A separate OS process for the restart, crash and concurrency tests.

    python tests/worker.py ACTION JSON_ARGS

Prints one JSON line with the result. ``crash_at`` makes the process SIGKILL itself at a chosen
point, the way a power cut or an OOM kill would end it. ``SUPPORTBOT_TEST_FRONT=async`` runs the
action on an AsyncSupportBot instead (the crash suites run against both front ends).
"""

from __future__ import annotations

import json
import os
import signal
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

import asyncio

from pydantic import BaseModel
from support.fakes import AsyncModel, ScriptedLLM, cite_hits, refund_if_asked
from support.parts import async_bot_over_store, bot_over_store

from supportbot import Settings
from supportbot.backend.demo import AsyncDemoBackend, DemoBackend

T = TypeVar("T")


def _die() -> None:
    sys.stdout.flush()
    os.kill(os.getpid(), signal.SIGKILL)


class CrashingLLM(ScriptedLLM):
    def __init__(self, crash_at: str | None) -> None:
        super().__init__(triage=refund_if_asked, draft=cite_hits)
        self.crash_at = crash_at

    def before(self, schema: type[BaseModel] | None) -> None:
        if self.crash_at == "draft" and schema is None:
            _die()
        if self.crash_at == "slow_draft" and schema is None:
            print("drafting", flush=True)  # the round holds the ticket now: the test may act
            time.sleep(60)  # a model that takes its time; the test kills the process meanwhile


class CrashingBackend(DemoBackend):
    """Dies after the refund decision is written but before the engine commits the step."""

    crash_at: str | None = None

    def decide_refund(self, refund_id, **kw):  # type: ignore[no-untyped-def]
        result = super().decide_refund(refund_id, **kw)
        if self.crash_at == "decide_refund":
            _die()
        return result


class AsyncCrashingBackend(AsyncDemoBackend):
    crash_at: str | None = None

    async def decide_refund(self, refund_id, **kw):  # type: ignore[no-untyped-def]
        result = await super().decide_refund(refund_id, **kw)
        if self.crash_at == "decide_refund":
            _die()
        return result


async def _act_async(action: str, args: dict[str, Any], url: str, settings: Settings) -> Any:
    # The model answers on the loop (no thread): a "slow_draft" holds the loop as it holds a thread.
    model = AsyncModel(CrashingLLM(args.get("crash_at")), threaded=False)
    crashing = _crashing(AsyncCrashingBackend, args.get("crash_at"))
    async with async_bot_over_store(url, llm=model, settings=settings, business=crashing) as (bot, _, _):
        if action == "open":
            return await bot.open_ticket(args["email"], subject=args.get("subject", ""), body=args["body"])
        if action == "send":
            results = [
                await bot.send(args["ticket"], m, message_id=f"{args['tag']}-{i}")
                for i, m in enumerate(args["messages"])
            ]
            return results[-1]
        if action == "approve":
            decide = bot.approve if args["approved"] else bot.reject
            return await decide(args["ticket"], approver=args["approver"])
        if action == "resume":
            return await bot.resume(args["ticket"])
        raise SystemExit(f"unknown action {action}")


def main() -> None:
    action, args = sys.argv[1], json.loads(sys.argv[2])
    url = os.environ["SUPPORTBOT_DATABASE_URL"]
    settings = Settings.from_env()
    result: Any
    if os.environ.get("SUPPORTBOT_TEST_FRONT") == "async":
        started = time.monotonic()
        result = asyncio.run(_act_async(action, args, url, settings))
        elapsed = time.monotonic() - started
        shown = _as_dict(result) if result is not None else None
        print(json.dumps({**shown, "elapsed": elapsed} if shown is not None else None, ensure_ascii=False))
        return
    model, crashing = CrashingLLM(args.get("crash_at")), _crashing(CrashingBackend, args.get("crash_at"))
    with bot_over_store(url, llm=model, settings=settings, business=crashing) as (bot, _, _):
        started = time.monotonic()
        if action == "open":
            result = bot.open_ticket(args["email"], subject=args.get("subject", ""), body=args["body"])
        elif action == "send":
            results = [
                bot.send(args["ticket"], m, message_id=f"{args['tag']}-{i}")
                for i, m in enumerate(args["messages"])
            ]
            result = results[-1]
        elif action == "approve":
            decide = bot.approve if args["approved"] else bot.reject
            result = decide(args["ticket"], approver=args["approver"])
        elif action == "resume":
            result = bot.resume(args["ticket"])
        else:
            raise SystemExit(f"unknown action {action}")
        elapsed = time.monotonic() - started  # the action alone: not the start of the process
    shown = _as_dict(result) if result is not None else None
    print(
        json.dumps({**(shown or {}), "elapsed": elapsed} if shown is not None else None, ensure_ascii=False)
    )


def _crashing(kind: Callable[[Any], T], crash_at: str | None) -> Callable[[Any], T]:
    """The business system over the store's pool, dying where ``crash_at`` says."""

    def make(pool: Any) -> T:
        backend = kind(pool)
        backend.crash_at = crash_at  # type: ignore[attr-defined]
        return backend

    return make


def _fields(obj: Any) -> dict[str, Any]:
    import dataclasses

    return {f.name: getattr(obj, f.name) for f in dataclasses.fields(obj)}


def _as_dict(result: Any) -> dict[str, Any]:
    return _fields(result)


if __name__ == "__main__":
    main()

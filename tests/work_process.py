"""A worker process for the tests: the CLI's `worker` command, with a scripted model.

    python tests/work_process.py JSON_ARGS

``delay``: seconds each model call sleeps (a real model's latency); ``threads``: the worker's
threads; ``calls``: a file marked as each model call starts. It runs the same handler as
``python -m supportbot worker`` (signals included), so SIGTERM, SIGINT and SIGKILL act on it as
on the real command.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Sequence
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support.fakes import ScriptedLLM, cite_hits, refund_if_asked

from supportbot import Settings, SupportBot
from supportbot.cli._worker import worker


class SlowLLM(ScriptedLLM):
    """``calls``: a file that gets a line as each model call starts, so a test knows a round is
    under way (a ticket's lease alone does not say a thread has started its round)."""

    def __init__(self, delay: float, calls: str | None = None) -> None:
        super().__init__(triage=refund_if_asked, draft=cite_hits)
        self.delay = delay
        self.calls = calls

    def chat(self, messages: Sequence[Any], *, schema: Any = None, temperature: float = 0.0) -> Any:
        if self.calls:
            with open(self.calls, "a") as marks:
                marks.write("call\n")
        if self.delay:
            time.sleep(self.delay)
        return super().chat(messages, schema=schema)


def main() -> int:
    args = json.loads(sys.argv[1])
    settings = Settings.from_env()
    with SupportBot.open(
        os.environ["SUPPORTBOT_DATABASE_URL"],
        llm=SlowLLM(args.get("delay", 0.0), args.get("calls")),
        settings=settings,
        backend="demo",
    ) as bot:
        print("ready", flush=True)
        return worker(
            bot, argparse.Namespace(threads=args.get("threads", 4), stats=False, json=False, language="zh")
        )


if __name__ == "__main__":
    sys.exit(main())

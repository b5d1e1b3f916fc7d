"""One customer-facing process of the failover test: it talks on a ticket of its own until told to
stop, and writes a JSON line for everything the database acknowledged.

    python tests/failover_process.py JSON_ARGS

``tag``: names its messages; ``log``: the file of JSON lines; ``stop``: a file whose existence ends
the loop (between two actions, never inside one). Every third message asks for a refund, which
the same process then approves, as an operator would in the console. A call that fails with a
store error is repeated as it is (the same ``message_id``) until it succeeds: what an application
does for a customer waiting on the other side. Anything else that escapes is logged as
``unexpected`` and ends the process with status 1.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable
from functools import partial
from pathlib import Path
from typing import IO, Any, TypeVar

sys.path.insert(0, str(Path(__file__).resolve().parent))

from support.fakes import ScriptedLLM, cite_hits, refund_if_asked

from supportbot import Settings, SupportBot
from supportbot.errors import ApprovalNotPending, StoreBusy, StoreUnavailable, TicketBusy

T = TypeVar("T")
RETRIED = (StoreUnavailable, StoreBusy, TicketBusy)


def read_log(log: Path) -> list[dict[str, Any]]:
    """The JSON lines a process wrote so far (none before it starts writing)."""
    return [json.loads(line) for line in log.read_text(encoding="utf-8").splitlines()] if log.exists() else []


class Recorder:
    def __init__(self, log: IO[str]) -> None:
        self.log = log

    def write(self, **line: Any) -> None:
        self.log.write(json.dumps({**line, "at": time.time()}, ensure_ascii=False) + "\n")
        self.log.flush()

    def until_done(self, what: str, call: Callable[[], T]) -> T:
        """``call()`` repeated until it succeeds; each failure is logged with its type and the
        time it took to come back (a hang shows as a long ``took``)."""
        while True:
            started = time.monotonic()
            try:
                result = call()
            except RETRIED as exc:
                took = time.monotonic() - started
                self.write(error=type(exc).__name__, what=what, took=took, chained=exc.__cause__ is not None)
                time.sleep(0.05)
                continue
            self.write(ack=what, took=time.monotonic() - started)
            return result


def talk(bot: SupportBot, rec: Recorder, tag: str, stop: Path) -> None:
    opened = rec.until_done(
        "open", lambda: bot.open_ticket("wugang@example.com", body=f"{tag} E3001 同步失败")
    )
    ticket = opened.ticket_id
    rec.write(ticket=ticket)
    n = 0
    while not stop.exists():
        message_id = f"{tag}-{n}"
        asks_refund = n % 3 == 2
        text = f"{tag} 第{n}条:申请退款 10 元" if asks_refund else f"{tag} 第{n}条追问 E3001"
        result = rec.until_done("send", partial(bot.send, ticket, text, message_id=message_id))
        rec.write(sent=message_id, ticket=ticket, outcome=result.outcome)
        if result.outcome == "waiting_approval":
            decided = rec.until_done("approve", lambda: _approve(bot, ticket))
            rec.write(approved=ticket, message_id=message_id, outcome=decided)
        n += 1


def _approve(bot: SupportBot, ticket: str) -> str:
    """Approve the waiting refund. A decision whose acknowledgement was lost (the connection died
    as it committed) leaves nothing pending: the repeated call then says so, which is success."""
    try:
        return bot.approve(ticket, approver="值班经理").outcome
    except ApprovalNotPending:
        return "already decided"


def main() -> int:
    args = json.loads(sys.argv[1])
    with open(args["log"], "a", encoding="utf-8") as log:
        rec = Recorder(log)
        try:
            bot = rec.until_done(
                "connect",
                lambda: SupportBot.open(
                    os.environ["SUPPORTBOT_DATABASE_URL"],
                    llm=ScriptedLLM(triage=refund_if_asked, draft=cite_hits),
                    settings=Settings.from_env(),
                    backend="demo",
                ),
            )
            with bot:
                talk(bot, rec, args["tag"], Path(args["stop"]))
        except BaseException as exc:  # noqa: BLE001 - the test fails on any of these
            rec.write(unexpected=f"{type(exc).__module__}.{type(exc).__name__}: {exc}")
            return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())

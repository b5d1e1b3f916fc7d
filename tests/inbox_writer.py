"""Another process writing to the inbox, for the live-inbox tests.

    SUPPORTBOT_DATABASE_URL=... python tests/inbox_writer.py

For each line read ("refund" or "handoff") it opens a ticket on the demo business system that
ends waiting for approval or handed off, and prints ``<outcome> <ticket id>`` once the round has
committed, so the test can time how long the open inbox page takes to show it.
"""

from __future__ import annotations

import os
import sys

from supportbot import Settings, SupportBot
from supportbot.backend.demo._data import demo_clock

ASKS = {
    "refund": ("wugang@example.com", "这个年付我想申请退款 50 元"),
    "handoff": ("sunli@example.com", "你们这个机器人说不清楚,我要转人工客服"),
}


def main() -> int:
    url = os.environ["SUPPORTBOT_DATABASE_URL"]
    with SupportBot.open(url, backend="demo", settings=Settings(database_url=url), clock=demo_clock()) as bot:
        print("ready", flush=True)
        for line in sys.stdin:
            email, body = ASKS[line.strip()]
            result = bot.open_ticket(email, body=body)
            print(result.outcome, result.ticket_id, flush=True)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

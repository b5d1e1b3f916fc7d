"""Shared by the console tests: a console over the demo data, with operators and a played demo.

``play_demo`` plays the demo's first two messages as `python -m supportbot demo` does but leaves
the refund undecided (吴刚's E3001 ticket, then his refund request, which waits for approval), and
opens 孙丽's ticket asking for a human, which the bot hands off.
"""

from __future__ import annotations

import re
import threading
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path

from fastapi.testclient import TestClient
from pydantic import BaseModel

from supportbot import Completion, OfflineModel, Settings, SupportBot
from supportbot.backend.demo._backend import DemoBackend
from supportbot.backend.demo._data import demo_clock
from supportbot.console._app import create_app
from supportbot.console._service import Console
from supportbot.console._users import Users, add_user
from supportbot.llm.base import Message
from supportbot.store._store import Store

DEMO_EMAIL = "wugang@example.com"
HANDOFF_EMAIL = "sunli@example.com"
PASSWORDS = {"wang": "approver-pass-1", "li": "agent-pass-1", "zhao": "approver-pass-2"}
ROLES = {"wang": "approver", "li": "agent", "zhao": "approver"}


@dataclass
class Played:
    refund_ticket: str
    handoff_ticket: str


def make_users(folder: Path) -> Users:
    path = folder / "users.json"
    for name, password in PASSWORDS.items():
        add_user(path, name, ROLES[name], password)
    return Users.load(path)


class RecordingModel:
    """The offline model, keeping every prompt it was given (joined into one text per call)."""

    def __init__(self) -> None:
        self.inner = OfflineModel()
        self.prompts: list[str] = []
        self._lock = threading.Lock()

    def chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None, temperature: float = 0.0
    ) -> Completion:
        with self._lock:
            self.prompts.append("\n".join(m["content"] for m in messages))
        return self.inner.chat(messages, schema=schema, temperature=temperature)


@contextmanager
def open_console(
    url: str,
    folder: Path,
    *,
    llm: RecordingModel | None = None,
    settings: Settings | None = None,
    clock: Callable[[], datetime] | None = None,
    **options: object,
) -> Iterator[tuple[Console, SupportBot]]:
    """``settings``: the bot's (default: the defaults on ``url``); ``clock``: the bot's and the
    demo business system's (default: the demo's)."""
    store = Store(url, max_size=4)
    clock = clock or demo_clock()
    backend = DemoBackend(store.pool, clock=clock)
    settings = settings or Settings(database_url=url)
    bot = SupportBot.open(url, backend=backend, settings=settings, clock=clock, llm=llm)
    try:
        yield Console(bot, store, backend, **options), bot  # type: ignore[arg-type]
    finally:
        bot.close()
        store.close()


def play_demo(bot: SupportBot) -> Played:
    first = bot.open_ticket(
        DEMO_EMAIL, subject="银行流水又同步失败了", body="招商银行的流水又同步失败了,提示 E3001,怎么办?"
    )
    refund = bot.send(first.ticket_id, "重新授权了还是不行,另外这个年付我想申请退款 200 元")
    assert refund.outcome == "waiting_approval", refund
    handoff = bot.open_ticket(HANDOFF_EMAIL, body="你们这个机器人说不清楚,我要转人工客服")
    assert handoff.outcome == "escalated", handoff
    return Played(first.ticket_id, handoff.ticket_id)


def sign_in(client: TestClient, name: str) -> str:
    """Sign in through the login form; returns the session's CSRF token."""
    page = client.get("/login")
    token = csrf_of(page.text)
    response = client.post(
        "/login",
        data={"name": name, "password": PASSWORDS[name], "csrf_token": token},
        follow_redirects=False,
    )
    assert response.status_code == 303, response.text
    return csrf_of(client.get("/inbox").text)


def csrf_of(html: str) -> str:
    match = re.search(r'name="csrf_token" value="([^"]+)"', html)
    assert match, "no CSRF field on the page"
    return match.group(1)


def client_for(console: Console, users: Users, **options: object) -> TestClient:
    app = create_app(console, users, secure_cookies=False, lang="zh", **options)  # type: ignore[arg-type]
    return TestClient(app, base_url="http://127.0.0.1")

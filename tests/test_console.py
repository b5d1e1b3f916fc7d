"""The console's pages through the framework's test client, on the demo data and a real PostgreSQL."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest
from console_kit import (
    DEMO_EMAIL,
    Played,
    client_for,
    make_users,
    open_console,
    play_demo,
    sign_in,
)
from fastapi.testclient import TestClient

from supportbot import SupportBot
from supportbot.console.service import Console
from supportbot.console.users import Users


@pytest.fixture
def setup(demo_url: str, tmp_path: Path) -> Iterator[tuple[Console, SupportBot, Users, Played]]:
    with open_console(demo_url, tmp_path) as (console, bot):
        yield console, bot, make_users(tmp_path), play_demo(bot)


@pytest.fixture
def client(setup: tuple[Console, SupportBot, Users, Played]) -> TestClient:
    console, _, users, _ = setup
    return client_for(console, users)


def test_smoke(client: TestClient, setup: tuple[Console, SupportBot, Users, Played]) -> None:
    played = setup[3]
    token = sign_in(client, "wang")
    inbox = client.get("/inbox")
    assert played.refund_ticket in inbox.text and played.handoff_ticket in inbox.text
    page = client.get(f"/approvals/{played.refund_ticket}")
    assert page.status_code == 200, page.text
    r = client.post(
        f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": token}, follow_redirects=False
    )
    assert r.status_code == 303, r.text
    r = client.post(
        f"/approvals/{played.refund_ticket}/decide",
        data={"csrf_token": token, "decision": "approve", "note": "符合政策"},
        follow_redirects=True,
    )
    assert r.status_code == 200, r.text
    t = client.get(f"/customers/{DEMO_EMAIL}")
    assert t.status_code == 200, t.text
    t = client.get(f"/tickets/{played.refund_ticket}?at=3")
    assert t.status_code == 200, t.text

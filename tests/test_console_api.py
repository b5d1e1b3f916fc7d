"""The console's JSON API, its claims under concurrent reviewers, operators and the console command."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import sys
import threading
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
from fastapi.testclient import TestClient
from support.console_kit import (
    DEMO_EMAIL,
    HANDOFF_EMAIL,
    PASSWORDS,
    Played,
    client_for,
    make_users,
    open_console,
    play_demo,
)

from supportbot import SupportBot
from supportbot.cli._main import main
from supportbot.console._app import create_app
from supportbot.console._security import MAX_SESSIONS, Sessions
from supportbot.console._service import Console
from supportbot.console._users import Operator, Users, add_user, set_teams
from supportbot.errors import ClaimConflict, ConsoleConfigError

Setup = tuple[Console, SupportBot, Users, Played]


@pytest.fixture
def setup(demo_url: str, tmp_path: Path) -> Iterator[Setup]:
    with open_console(demo_url, tmp_path) as (console, bot):
        yield console, bot, make_users(tmp_path), play_demo(bot)


def _api_client(setup: Setup, name: str) -> tuple[TestClient, dict[str, str]]:
    client = client_for(setup[0], setup[2])
    response = client.post("/api/session", json={"name": name, "password": PASSWORDS[name]})
    assert response.status_code == 200, response.text
    return client, {"X-CSRF-Token": response.json()["csrf_token"]}


def test_the_api_does_what_the_pages_do(setup: Setup) -> None:
    _, bot, _, played = setup
    client, csrf = _api_client(setup, "wang")
    assert client.get("/api/me").json() == {"name": "wang", "role": "approver"}
    inbox = client.get("/api/inbox").json()
    assert [(i["kind"], i["ticket_id"]) for i in inbox] == [
        ("approval", played.refund_ticket),
        ("handoff", played.handoff_ticket),
    ]
    assert (
        client.get("/api/inbox", params={"kind": "handoff"}).json()[0]["ticket_id"] == played.handoff_ticket
    )
    approval = client.get(f"/api/approvals/{played.refund_ticket}").json()
    assert approval["refund"]["amount"] == "200.00" and approval["quote"]["basis"]
    assert float(approval["quote"]["committed_now"]) >= 200  # this request counts against the invoice
    assert (
        client.post(f"/api/approvals/{played.refund_ticket}/claim", headers=csrf).json()["reviewer"] == "wang"
    )
    bad = client.post(
        f"/api/approvals/{played.refund_ticket}/decision",
        json={"decision": "approve", "note": ""},
        headers=csrf,
    )
    assert bad.status_code == 422 and bad.json()["detail"][0]["loc"] == ["body", "note"]
    result = client.post(
        f"/api/approvals/{played.refund_ticket}/decision",
        json={"decision": "approve", "note": "符合政策"},
        headers=csrf,
    ).json()
    assert result["approved"] is True and result["reply"]
    ticket = client.get(f"/api/tickets/{played.refund_ticket}").json()
    assert ticket["reply"] == result["reply"] and ticket["ticket"]["status"] == "resolved"
    at = client.get(f"/api/tickets/{played.refund_ticket}", params={"at": 2}).json()
    assert at["at"] == 2 and len(at["state"]["turns"]) < len(ticket["state"]["turns"])
    note = client.post(
        f"/api/tickets/{played.refund_ticket}/notes", json={"body": "已电话确认"}, headers=csrf
    )
    assert note.json()["idx"] == 0
    assert [n["body"] for n in client.get(f"/api/tickets/{played.refund_ticket}/notes").json()] == [
        "已电话确认"
    ]
    end = next(s["seq"] for s in ticket["steps"] if s["next_step"] is None)
    fork = client.post(f"/api/tickets/{played.refund_ticket}/forks", json={"seq": end}, headers=csrf).json()
    assert bot.ticket(fork["ticket_id"]).customer_email == DEMO_EMAIL
    customer = client.get(f"/api/customers/{DEMO_EMAIL}").json()
    assert customer["profile"]["text"] and len(customer["tickets"]) == 2
    mismatch = client.post(f"/api/customers/{HANDOFF_EMAIL}/forget", json={"confirm": "x@y.z"}, headers=csrf)
    assert mismatch.status_code == 422 and bot.tickets(email=HANDOFF_EMAIL)
    forgotten = client.post(
        f"/api/customers/{HANDOFF_EMAIL}/forget", json={"confirm": HANDOFF_EMAIL}, headers=csrf
    )
    assert forgotten.json()["tickets"] == [played.handoff_ticket]


def test_api_writes_need_the_csrf_header_and_decisions_the_approver_role(setup: Setup) -> None:
    _, bot, _, played = setup
    client, _csrf = _api_client(setup, "wang")
    refused = client.post(f"/api/approvals/{played.refund_ticket}/claim")
    assert refused.status_code == 403 and refused.json()["error"] == "csrf"
    forged = client.post(f"/api/approvals/{played.refund_ticket}/claim", headers={"X-CSRF-Token": "forged"})
    assert forged.status_code == 403
    agent, agent_csrf = _api_client(setup, "li")
    for path, body in [
        (f"/api/approvals/{played.refund_ticket}/claim", None),
        (f"/api/approvals/{played.refund_ticket}/decision", {"decision": "approve", "note": "ok"}),
        (f"/api/customers/{HANDOFF_EMAIL}/forget", {"confirm": HANDOFF_EMAIL}),
    ]:
        response = agent.post(path, json=body, headers=agent_csrf)
        assert response.status_code == 403 and response.json()["error"] == "forbidden", path
    assert bot.ticket(played.refund_ticket).status == "waiting_approval"
    assert client.get("/api/approvals/T999999").json()["error"] == "unknown_ticket"
    assert client.post("/api/session", json={"name": "wang", "password": "wrong"}).status_code == 401


def test_the_api_responds_and_approves_a_lesser_amount(setup: Setup) -> None:
    _, bot, _, played = setup
    ticket = played.refund_ticket
    client, csrf = _api_client(setup, "wang")
    client.post(f"/api/approvals/{ticket}/claim", headers=csrf)
    responded = client.post(
        f"/api/approvals/{ticket}/decision",
        json={"decision": "respond", "note": "请提供发票号"},
        headers=csrf,
    ).json()
    assert responded["outcome"] == "waiting_approval" and "请提供发票号" in responded["reply"]
    client.post(f"/api/approvals/{ticket}/claim", headers=csrf)
    wrong = client.post(
        f"/api/approvals/{ticket}/decision",
        json={"decision": "reject", "note": "x", "amount": "10"},
        headers=csrf,
    )
    assert wrong.status_code == 422 and bot.ticket(ticket).status == "waiting_approval"
    over = client.post(
        f"/api/approvals/{ticket}/decision",
        json={"decision": "approve", "note": "x", "amount": "999"},
        headers=csrf,
    )
    assert over.status_code == 422 and bot.ticket(ticket).status == "waiting_approval"
    done = client.post(
        f"/api/approvals/{ticket}/decision",
        json={"decision": "approve", "note": "按比例", "amount": "120.50"},
        headers=csrf,
    ).json()
    assert done["outcome"] == "resolved" and "批准金额 120.50 CNY" in done["reply"]


def test_the_openapi_description_is_served_to_signed_in_callers(setup: Setup) -> None:
    anonymous = client_for(setup[0], setup[2])
    assert anonymous.get("/api/openapi.json").status_code == 401
    client, _ = _api_client(setup, "li")
    paths = client.get("/api/openapi.json").json()["paths"]
    assert "/api/approvals/{ticket_id}/decision" in paths and "/api/inbox" in paths
    assert not any(not p.startswith("/api/") for p in paths)  # the HTML pages are not part of it


def test_claims_are_exclusive_between_concurrent_reviewers(setup: Setup) -> None:
    """Reviewers claiming at the same instant: exactly one gets it, every time."""
    console, _, _, played = setup
    reviewers = [Operator(f"r{i}", "approver") for i in range(4)]
    for _ in range(5):
        barrier = threading.Barrier(len(reviewers))
        won: list[str] = []
        lost: list[str] = []

        def attempt(who: Operator, barrier: threading.Barrier, won: list[str], lost: list[str]) -> None:
            barrier.wait()
            try:
                won.append(console.claim(played.refund_ticket, who).reviewer)
            except ClaimConflict as exc:
                lost.append(str(exc.holder))

        threads = [threading.Thread(target=attempt, args=(r, barrier, won, lost)) for r in reviewers]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        assert len(won) == 1 and set(lost) == {won[0]} and len(lost) == len(reviewers) - 1
        assert console.release(played.refund_ticket, Operator(won[0], "approver"))


def test_operators_file_holds_scrypt_hashes_only(tmp_path: Path) -> None:
    path = tmp_path / "users.json"
    add_user(path, "wang", "approver", "s3cret-pass")
    raw = path.read_text()
    assert "s3cret-pass" not in raw and json.loads(raw)["users"]["wang"]["scrypt"].startswith("16384$")
    assert stat.S_IMODE(os.stat(path).st_mode) == 0o600
    users = Users.load(path)
    assert users.verify("wang", "s3cret-pass") == Operator("wang", "approver")
    assert users.verify("wang", "wrong") is None and users.verify("nobody", "s3cret-pass") is None
    with pytest.raises(ConsoleConfigError):
        add_user(path, "li", "admin", "long-enough")
    with pytest.raises(ConsoleConfigError):
        add_user(path, "li", "agent", "short")


def test_the_console_refuses_to_start_without_operators(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setenv("SUPPORTBOT_CONSOLE_USERS", str(tmp_path / "none.json"))
    monkeypatch.setenv("SUPPORTBOT_LANG", "en")
    monkeypatch.setenv("SUPPORTBOT_BACKEND", "demo")
    assert main(["console", "--port", "0"]) == 1
    refused = capsys.readouterr().err
    assert "no operators" in refused and "console --add-user NAME --role approver" in refused
    monkeypatch.setenv("SUPPORTBOT_LANG", "zh")
    monkeypatch.setenv("SUPPORTBOT_BACKEND", "demo")
    assert main(["console", "--port", "0"]) == 1
    assert "操作员" in capsys.readouterr().err
    (tmp_path / "empty.json").write_text('{"users": {}}')
    monkeypatch.setenv("SUPPORTBOT_CONSOLE_USERS", str(tmp_path / "empty.json"))
    assert main(["console"]) == 1


def test_add_user_from_the_command_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "ops.json"
    monkeypatch.setenv("SUPPORTBOT_CONSOLE_USERS", str(path))
    monkeypatch.setattr("sys.stdin", _Lines("agent-password\n"))
    assert main(["console", "--add-user", "li", "--role", "agent"]) == 0
    assert Users.load(path).verify("li", "agent-password") == Operator("li", "agent")


class _Lines:
    """A non-terminal stdin, as when a script pipes the password in."""

    def __init__(self, text: str) -> None:
        self._text = text

    def isatty(self) -> bool:
        return False

    def readline(self) -> str:
        return self._text


def test_a_loopback_console_answers_only_loopback_host_names(setup: Setup) -> None:
    """A page elsewhere whose name resolves to 127.0.0.1 (DNS rebinding) is refused."""
    app = create_app(setup[0], setup[2], secure_cookies=False, allowed_hosts=["127.0.0.1", "localhost"])
    assert TestClient(app, base_url="http://127.0.0.1:8088").get("/login").status_code == 200
    assert TestClient(app, base_url="http://attacker.example:8088").get("/login").status_code == 400


def test_sessions_stay_bounded_and_signed_in_ones_survive() -> None:
    now = [0.0]
    sessions = Sessions(clock=lambda: now[0])
    kept = sessions.new(Operator("wang", "approver"))
    for _ in range(MAX_SESSIONS + 10):
        sessions.new()
    assert len(sessions) <= MAX_SESSIONS
    assert sessions.get(kept.id)[0] == replace(kept, seen=0.0)
    now[0] += 31 * 60
    assert sessions.get(kept.id) == (None, True)  # idle too long: "expired", not "never signed in"


def test_the_api_takes_over_replies_hands_back_and_lists_the_audit(setup: Setup) -> None:
    _, bot, _, played = setup
    client, csrf = _api_client(setup, "li")
    ticket = played.handoff_ticket
    taken = client.post(f"/api/tickets/{ticket}/takeover", headers=csrf).json()
    assert taken["human_agent"] == "li"
    turn = client.post(f"/api/tickets/{ticket}/replies", json={"text": "我来处理"}, headers=csrf).json()
    assert turn["author"] == "li" and turn["role"] == "agent"
    assert client.post(f"/api/tickets/{ticket}/replies", json={"text": ""}, headers=csrf).status_code == 422
    assert client.post(f"/api/tickets/{ticket}/hand-back", json={}, headers=csrf).status_code == 200
    audit = client.get(f"/api/tickets/{ticket}/audit").json()
    assert [e["action"] for e in audit] == ["take_over", "human_reply", "hand_back"]
    again = client.post(f"/api/tickets/{ticket}/replies", json={"text": "还在吗"}, headers=csrf)
    assert again.status_code == 409 and again.json()["error"] == "not_taken_over"
    assert len(bot.audit(ticket)) == 3


def test_a_sign_in_posted_as_text_by_another_site_is_not_read_as_json(setup: Setup) -> None:
    """A cross-site form can send text/plain that looks like JSON; only application/json counts."""
    client = client_for(setup[0], setup[2])
    body = json.dumps({"name": "wang", "password": PASSWORDS["wang"]})
    response = client.post("/api/session", content=body, headers={"content-type": "text/plain"})
    assert response.status_code == 422 and "set-cookie" not in response.headers


def test_the_core_never_imports_the_console() -> None:
    code = (
        "import sys, supportbot, supportbot.cli._main as cli; cli.build_parser(); "
        "web = ('fastapi', 'starlette', 'jinja2', 'uvicorn'); "
        "print(sorted(m for m in sys.modules if m.split('.')[0] in web or 'console' in m.split('.')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert out.strip() == "[]"


def test_the_api_searches_assigns_corrects_and_checks_as_the_pages_do(setup: Setup, tmp_path: Path) -> None:
    console, _bot, _users, played = setup
    set_teams(tmp_path / "users.json", "li", ["billing"])
    users = Users.load(tmp_path / "users.json")
    client = TestClient(
        create_app(console, users, secure_cookies=False, lang="zh"), base_url="http://127.0.0.1"
    )
    response = client.post("/api/session", json={"name": "li", "password": PASSWORDS["li"]})
    csrf = {"X-CSRF-Token": response.json()["csrf_token"]}
    found = client.get("/api/search", params={"q": "还是不行"}).json()
    assert [f["ticket"]["id"] for f in found["found"]] == [played.refund_ticket] and found["more"] is False
    assert client.get("/api/search", params={"since": "yesterday"}).status_code == 422
    assigned = client.post(
        f"/api/tickets/{played.handoff_ticket}/assignment", json={"team": "billing"}, headers=csrf
    )
    assert assigned.status_code == 200 and assigned.json()["team"] == "billing"
    assert (
        client.post(f"/api/tickets/{played.handoff_ticket}/assignment", json={}, headers=csrf).status_code
        == 422
    )
    assert client.post(
        f"/api/tickets/{played.handoff_ticket}/assignment", json={"team": "billing"}
    ).status_code == 403  # fmt: skip
    team = client.get("/api/inbox", params={"view": "team"}).json()
    assert [i["ticket_id"] for i in team] == [played.handoff_ticket]
    clocks = client.get("/api/sla").json()
    assert {c["ticket_id"] for c in clocks} == {played.refund_ticket, played.handoff_ticket}
    facts = client.get(f"/api/tickets/{played.refund_ticket}").json()["state"]["facts"]
    assert facts
    refused = client.post(
        f"/api/tickets/{played.refund_ticket}/facts/0", json={"value": "1", "reason": "r"}, headers=csrf
    )
    assert refused.status_code == 409 and refused.json()["error"] == "correction_refused"  # inside a round
    checked = client.post(
        f"/api/tickets/{played.refund_ticket}/reply-check", json={"text": "可以退 888 元"}, headers=csrf
    ).json()
    assert checked == {"warnings": [{"kind": "amount", "values": ["888"]}]}
    profile = client.post(
        f"/api/customers/{DEMO_EMAIL}/profile/corrections",
        json={"entry": "issue", "key": "E3001", "value": None, "reason": "误记"},
        headers=csrf,
    )
    assert profile.status_code == 200 and "E3001" not in profile.json()["text"]
    saved = client.post(
        "/api/replies", json={"team": "billing", "name": "问候", "body": "您好 {name}"}, headers=csrf
    )
    assert saved.status_code == 200
    assert (
        client.post("/api/replies", json={"team": "vip", "name": "x", "body": "y"}, headers=csrf).status_code
        == 403
    )
    assert [r["name"] for r in client.get("/api/replies").json()] == ["问候"]

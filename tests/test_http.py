"""The HTTP API (supportbot.http) served by uvicorn on loopback, over the real database: keys made
and revoked with the CLI, scoped to their customers and rate-limited; tickets, idempotent
messages, the conversation, and rounds followed as Server-Sent Events."""

from __future__ import annotations

import json
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
from playwright.sync_api import Browser, expect
from support.browser_kit import LiveConsole, serious_violations, shot
from support.fakes import rows
from test_cli import ok, ok_json

from supportbot import Settings
from supportbot.http import create_app


def make_key(url: str, name: str, customers: str, *, rate: int = 600) -> str:
    made = ok_json(url, "serve", "--add-key", name, "--customers", customers, "--rate", str(rate))
    assert made["key"].startswith(f"sbk_{made['id']}_")
    return str(made["key"])


@pytest.fixture
def api(demo_url: str) -> Iterator[str]:
    app = create_app(settings=Settings(database_url=demo_url, backend="demo"), lang="zh")
    with LiveConsole(app) as base:
        yield base


def _auth(key: str, **headers: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {key}", **headers}


def _events(response: httpx.Response) -> list[tuple[str, dict[str, object]]]:
    found, name = [], ""
    for line in response.iter_lines():
        if line.startswith("event: "):
            name = line[7:]
        elif line.startswith("data: "):
            found.append((name, json.loads(line[6:])))
    return found


def test_keys_are_stored_as_digests_and_listed_without_their_secrets(demo_url: str) -> None:
    key = make_key(demo_url, "widget", "@example.com")
    secret = key.split("_", 2)[2]
    stored = rows(demo_url, "SELECT secret_sha256, customers FROM supportbot.api_keys")
    assert len(stored) == 1 and secret not in str(stored) and stored[0][1] == ["@example.com"]
    listed = ok(demo_url, "serve", "--list-keys")
    assert "widget" in listed and "@example.com" in listed and secret not in listed


def test_a_ticket_is_opened_answered_and_read_back(demo_url: str, api: str) -> None:
    key = make_key(demo_url, "widget", "@example.com")
    with httpx.Client(base_url=api, timeout=30) as client:
        opened = client.post(
            "/v1/tickets",
            json={"email": "wugang@example.com", "message": "流水同步失败 E3001"},
            headers=_auth(key),
        )
        assert opened.status_code == 201, opened.text
        body = opened.json()
        assert body["outcome"] == "resolved" and body["reply"] and body["round"] == 1
        read = client.get(f"/v1/tickets/{body['ticket_id']}", headers=_auth(key)).json()
    assert [t["role"] for t in read["turns"]] == ["customer", "agent"]
    assert read["turns"][1]["content"] == body["reply"] and read["status"] == "resolved"


def test_an_idempotency_key_stores_a_message_once(demo_url: str, api: str) -> None:
    key = make_key(demo_url, "widget", "@example.com")
    with httpx.Client(base_url=api, timeout=30) as client:
        ticket = client.post(
            "/v1/tickets", json={"email": "wugang@example.com", "message": "E3001"}, headers=_auth(key)
        ).json()["ticket_id"]
        sent = [
            client.post(
                f"/v1/tickets/{ticket}/messages",
                json={"message": "还是不行"},
                headers=_auth(key, **{"Idempotency-Key": "m-7"}),
            )
            for _ in range(2)
        ]
        reused = client.post(
            f"/v1/tickets/{ticket}/messages",
            json={"message": "别的话"},
            headers=_auth(key, **{"Idempotency-Key": "m-7"}),
        )
    assert [r.status_code for r in sent] == [200, 200] and sent[0].json() == sent[1].json()
    assert reused.status_code == 409 and reused.json()["error"] == "IdempotencyConflict"
    assert rows(demo_url, "SELECT count(*) FROM supportbot.turns WHERE ticket_id = %s", ticket) == [(4,)]


def test_a_round_is_followed_as_events_step_by_step(demo_url: str, api: str) -> None:
    key = make_key(demo_url, "widget", "@example.com")
    with httpx.Client(base_url=api, timeout=30) as client:
        with client.stream(
            "POST",
            "/v1/tickets",
            json={"email": "wugang@example.com", "message": "流水同步失败 E3001"},
            headers=_auth(key, Accept="text/event-stream"),
        ) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            events = _events(response)
    names = [name for name, _ in events]
    assert names[0] == "ticket" and names[-1] == "reply"
    steps = [data["step"] for name, data in events if name == "step"]
    assert steps[0] == "reading" and "drafting" in steps and "checking" in steps
    assert steps.index("drafting") < steps.index("checking")
    final = events[-1][1]
    assert (
        final["outcome"] == "resolved" and final["reply"] and final["ticket_id"] == events[0][1]["ticket_id"]
    )


def test_a_refund_asked_ends_waiting_for_a_person(demo_url: str, api: str) -> None:
    key = make_key(demo_url, "widget", "@example.com")
    with httpx.Client(base_url=api, timeout=30) as client:
        ticket = client.post(
            "/v1/tickets", json={"email": "wugang@example.com", "message": "E3001"}, headers=_auth(key)
        ).json()["ticket_id"]
        with client.stream(
            "POST",
            f"/v1/tickets/{ticket}/messages",
            json={"message": "这个年付我想申请退款 200 元"},
            headers=_auth(key, Accept="text/event-stream"),
        ) as response:
            events = _events(response)
    assert events[-1][0] == "waiting" and events[-1][1]["outcome"] == "waiting_approval"
    assert rows(demo_url, "SELECT status FROM demo.refunds") == [("pending",)]  # money waits for a person


def test_the_events_of_a_ticket_follow_its_new_turns(demo_url: str, api: str) -> None:
    key = make_key(demo_url, "widget", "@example.com")
    with httpx.Client(base_url=api, timeout=30) as client:
        ticket = client.post(
            "/v1/tickets", json={"email": "wugang@example.com", "message": "E3001"}, headers=_auth(key)
        ).json()["ticket_id"]
        seen: list[dict[str, object]] = []
        with client.stream("GET", f"/v1/tickets/{ticket}/events?after=2", headers=_auth(key)) as response:
            client.post(f"/v1/tickets/{ticket}/messages", json={"message": "还是不行"}, headers=_auth(key))
            name = ""
            for line in response.iter_lines():
                if line.startswith("event: "):
                    name = line[7:]
                elif line.startswith("data: ") and name == "turn":
                    seen.append(json.loads(line[6:]))
                    if len(seen) == 2:
                        break
    assert [(t["idx"], t["role"]) for t in seen] == [(2, "customer"), (3, "agent")]
    assert seen[0]["content"] == "还是不行"


def test_a_key_acts_only_for_its_customers_and_only_while_it_is_not_revoked(demo_url: str, api: str) -> None:
    mine = make_key(demo_url, "widget", "wugang@example.com")
    other = make_key(demo_url, "app", "@another.example")
    with httpx.Client(base_url=api, timeout=30) as client:
        refused = client.post(
            "/v1/tickets", json={"email": "lina@example.com", "message": "E3001"}, headers=_auth(mine)
        )
        assert refused.status_code == 403
        ticket = client.post(
            "/v1/tickets", json={"email": "wugang@example.com", "message": "E3001"}, headers=_auth(mine)
        ).json()["ticket_id"]
        hidden = client.get(f"/v1/tickets/{ticket}", headers=_auth(other))
        missing = client.get("/v1/tickets/T999999", headers=_auth(other))
        assert hidden.status_code == missing.status_code == 404 and hidden.json()["error"] == "UnknownTicket"
        # Another customer's ticket is answered as a ticket that does not exist: word for word.
        assert hidden.json()["message"] == missing.json()["message"].replace("T999999", ticket)
        assert client.get(f"/v1/tickets/{ticket}").status_code == 401
        assert client.get(f"/v1/tickets/{ticket}", headers=_auth(mine + "x")).status_code == 401
        ok(demo_url, "serve", "--revoke-key", mine.split("_")[1])
        time.sleep(2.2)  # a key's row is cached for two seconds
        assert client.get(f"/v1/tickets/{ticket}", headers=_auth(mine)).status_code == 401


def test_over_its_rate_a_key_is_told_when_to_come_back(demo_url: str, api: str) -> None:
    key = make_key(demo_url, "widget", "@example.com", rate=3)
    with httpx.Client(base_url=api, timeout=30) as client:
        answers = [client.get("/v1/tickets/T000001", headers=_auth(key)) for _ in range(4)]
    assert [a.status_code for a in answers[:3]] == [404, 404, 404]
    assert answers[3].status_code == 429 and int(answers[3].headers["Retry-After"]) >= 1


def test_bodies_over_the_limit_and_bad_input_are_refused_with_what_to_do(demo_url: str, api: str) -> None:
    key = make_key(demo_url, "widget", "@example.com")
    with httpx.Client(base_url=api, timeout=30) as client:
        big = client.post(
            "/v1/tickets",
            content=b'{"email": "wugang@example.com", "message": "' + b"x" * 70_000 + b'"}',
            headers=_auth(key, **{"Content-Type": "application/json"}),
        )
        assert big.status_code == 413 and big.json()["error"] == "TooLarge"
        empty = client.post(
            "/v1/tickets", json={"email": "wugang@example.com", "message": ""}, headers=_auth(key)
        )
        assert empty.status_code == 422
    assert rows(demo_url, "SELECT count(*) FROM supportbot.tickets") == [(0,)]


def test_the_openapi_description_is_served_and_no_page_loads_from_elsewhere(api: str) -> None:
    with httpx.Client(base_url=api, timeout=30) as client:
        described = client.get("/openapi.json").json()
        page = client.get("/chat")
        assert client.get("/docs").status_code == 404  # Swagger UI would load from a CDN
    assert {"/v1/tickets", "/v1/tickets/{ticket_id}/messages", "/v1/tickets/{ticket_id}"} <= set(
        described["paths"]
    )
    assert "Idempotency-Key" in json.dumps(described["paths"]["/v1/tickets/{ticket_id}/messages"])
    assert page.status_code == 200 and "default-src 'self'" in page.headers["content-security-policy"]
    assert "在线客服" in page.text and "http" not in page.text.split("<body>")[1].replace("http-equiv", "")


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_the_chat_page_shows_the_progress_and_the_reply_in_a_real_browser(
    browser: Browser, demo_url: str, lang: str
) -> None:
    """A person types as a customer in Debian's Chromium: the page posts with an event stream and
    shows each step, then the reply; a second message continues the same ticket. One language per
    screen, and no serious accessibility violation (axe-core)."""
    key = make_key(demo_url, "try-it", "@example.com")
    app = create_app(settings=Settings(database_url=demo_url, backend="demo"), lang=lang)  # type: ignore[arg-type]
    with LiveConsole(app) as base:
        # The page forbids scripts from anywhere else (CSP); the test's own (axe-core) is let in.
        context = browser.new_context(locale="zh-CN" if lang == "zh" else "en-US", bypass_csp=True)
        page = context.new_page()
        steps: list[str] = []

        # A bound builtin cannot carry Playwright's marker attribute: a function of our own can.
        def note_step(text: str) -> None:
            steps.append(text)

        page.expose_function("noteStep", note_step)
        page.goto(f"{base}/chat")
        page.evaluate(
            """() => {
                const status = document.getElementById('status');
                new MutationObserver(() => window.noteStep(status.textContent))
                    .observe(status, {childList: true, characterData: true, subtree: true});
            }"""
        )
        assert serious_violations(page) == []
        page.fill("#key", key)
        page.fill("#email", "wugang@example.com")
        page.fill("#message", "流水同步失败 E3001" if lang == "zh" else "bank sync fails with E3001")
        page.click("#send")
        expect(page.locator("#log li.agent")).to_have_count(1, timeout=20_000)
        expect(page.locator("#ticket")).to_contain_text("T000001")
        drafting = "正在起草回复…" if lang == "zh" else "Drafting a reply…"
        assert drafting in steps, steps
        page.fill("#message", "还是不行" if lang == "zh" else "still broken")
        page.click("#send")
        expect(page.locator("#log li.agent")).to_have_count(2, timeout=20_000)
        shot(page, f"chat-{lang}")
        labels = [*page.locator("label").all_inner_texts(), page.locator("#send").inner_text()]
        context.close()
    assert rows(demo_url, "SELECT count(*) FROM supportbot.tickets") == [(1,)]
    assert rows(demo_url, "SELECT count(*) FROM supportbot.turns") == [(4,)]
    if lang == "zh":
        assert labels == ["API 密钥", "您的邮箱", "您的问题", "发送"]
    else:
        assert labels == ["API key", "Your email", "Your question", "Send"]


def test_the_reference_in_docs_is_what_the_openapi_description_says() -> None:
    done = subprocess.run(
        [sys.executable, "scripts/http_reference.py", "--check"],
        cwd=Path(__file__).resolve().parent.parent,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert done.returncode == 0, done.stderr

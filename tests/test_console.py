"""The console's pages through the framework's test client, on the demo data and a real PostgreSQL."""

from __future__ import annotations

import re
from collections.abc import Iterator
from pathlib import Path

import pytest
from fastapi.routing import APIRoute
from fastapi.testclient import TestClient
from support.console_kit import (
    DEMO_EMAIL,
    HANDOFF_EMAIL,
    Played,
    client_for,
    make_users,
    open_console,
    play_demo,
    sign_in,
)

from supportbot import SupportBot, i18n
from supportbot.console import _api as api
from supportbot.console import _pages as pages
from supportbot.console._app import create_app
from supportbot.console._security import Sessions
from supportbot.console._service import Console
from supportbot.console._users import Users

Setup = tuple[Console, SupportBot, Users, Played]


@pytest.fixture
def setup(demo_url: str, tmp_path: Path) -> Iterator[Setup]:
    with open_console(demo_url, tmp_path) as (console, bot):
        yield console, bot, make_users(tmp_path), play_demo(bot)


@pytest.fixture
def client(setup: Setup) -> TestClient:
    console, _, users, _ = setup
    return client_for(console, users)


def _concrete(path: str, played: Played) -> str:
    return path.replace("{ticket_id}", played.refund_ticket).replace("{email}", DEMO_EMAIL)


def test_every_page_and_call_needs_sign_in(client: TestClient, setup: Setup) -> None:
    """No anonymous mode: every route but the sign-in itself sends a stranger to sign in (pages)
    or answers 401 (API), and nothing is done."""
    played = setup[3]
    open_routes = {("GET", "/login"), ("POST", "/login"), ("POST", "/api/session")}
    checked = 0
    for route in [*pages.router.routes, *api.router.routes]:
        if not isinstance(route, APIRoute):
            continue
        assert route.methods is not None
        for method in route.methods:
            if (method, route.path) in open_routes:
                continue
            response = client.request(method, _concrete(route.path, played), follow_redirects=False)
            if route.path.startswith("/api/"):
                assert response.status_code == 401, (method, route.path)
            else:
                assert response.status_code == 303, (method, route.path)
                assert response.headers["location"].startswith("/login"), (method, route.path)
            checked += 1
    assert checked >= 20
    assert setup[1].ticket(played.refund_ticket).status == "waiting_approval"


def test_an_approver_claims_and_approves_and_the_ticket_shows_the_reply(
    client: TestClient, setup: Setup
) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "wang")
    inbox = client.get("/inbox").text
    assert played.refund_ticket in inbox and played.handoff_ticket in inbox
    assert inbox.index(played.refund_ticket) < inbox.index(played.handoff_ticket)  # oldest first
    page = client.get(f"/approvals/{played.refund_ticket}").text
    assert "200.00 CNY" in page and "退款计算" not in page  # the basis is quoted as the backend wrote it
    assert '<dd class="asked" id="asked">「200 元」</dd>' in page  # the customer's own words beside it
    assert re.search(r"实付</dt><dd>\d+\.\d\d CNY", page), "what was paid is shown"
    assert 'id="basis"' in page and "按未使用的" in page  # the policy computation
    assert 'id="decide"' not in page  # no decision form before a claim
    client.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": token})
    claimed = client.get(f"/approvals/{played.refund_ticket}").text
    assert "wang 正在审核" in claimed and 'id="decide"' in claimed
    assert "wang 正在审核" in client.get("/inbox").text  # visible to everyone on the inbox
    done = client.post(
        f"/approvals/{played.refund_ticket}/decide",
        data={"csrf_token": token, "decision": "approve", "note": "符合 30 天内退款政策"},
    )
    assert done.status_code == 200 and 'id="decided"' in done.text
    state = bot.state(played.refund_ticket)
    assert state.approval is not None and state.approval.approved and state.approval.approver == "wang"
    assert state.reply and state.reply in done.text  # the approved reply, on the ticket page
    assert bot.ticket(played.refund_ticket).status != "waiting_approval"
    assert played.refund_ticket not in client.get("/inbox?kind=approval").text


def test_a_decision_needs_a_note_and_a_choice_with_a_message_beside_each_field(
    client: TestClient, setup: Setup
) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "wang")
    client.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": token})
    response = client.post(
        f"/approvals/{played.refund_ticket}/decide",
        data={"csrf_token": token, "decision": "maybe", "note": "  "},
    )
    assert response.status_code == 422
    assert 'id="note-error"' in response.text and 'id="decision-error"' in response.text
    too_long = client.post(
        f"/approvals/{played.refund_ticket}/decide",
        data={"csrf_token": token, "decision": "reject", "note": "长" * 4001},
    )
    assert too_long.status_code == 422 and "最多 4000 个字" in too_long.text
    assert bot.ticket(played.refund_ticket).status == "waiting_approval"  # nothing half-written


def test_an_approver_responds_then_approves_less_than_asked_in_the_pages(
    client: TestClient, setup: Setup
) -> None:
    _, bot, _, played = setup
    ticket = played.refund_ticket
    token = sign_in(client, "wang")
    client.post(f"/approvals/{ticket}/claim", data={"csrf_token": token})
    responded = client.post(
        f"/approvals/{ticket}/decide",
        data={"csrf_token": token, "decision": "respond", "note": "请客户提供开户行名称"},
    )
    assert responded.status_code == 200 and 'id="responded"' in responded.text
    assert "请客户提供开户行名称" in bot.state(ticket).reply
    assert bot.ticket(ticket).status == "waiting_approval"
    client.post(f"/approvals/{ticket}/claim", data={"csrf_token": token})  # the response let it go
    for amount, error in (("abc", "精确到分"), ("150", "金额只用于批准")):
        refused = client.post(
            f"/approvals/{ticket}/decide",
            data={"csrf_token": token, "decision": "reject" if amount == "150" else "approve",
                  "note": "x", "amount": amount},
        )  # fmt: skip
        assert refused.status_code == 422 and 'id="amount-error"' in refused.text and error in refused.text
    approved = client.post(
        f"/approvals/{ticket}/decide",
        data={"csrf_token": token, "decision": "approve", "note": "按比例退 150", "amount": "150"},
    )
    assert approved.status_code == 200 and 'id="decided"' in approved.text
    assert "批准金额 150.00 CNY" in bot.state(ticket).reply
    assert [e.action for e in bot.audit(ticket)] == ["respond", "approve"]


def test_an_agent_cannot_claim_decide_or_forget(client: TestClient, setup: Setup) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "li")
    page = client.get(f"/approvals/{played.refund_ticket}").text
    assert "只有审批人可以" in page and 'id="claim-button"' not in page
    for path, data in [
        (f"/approvals/{played.refund_ticket}/claim", {}),
        (f"/approvals/{played.refund_ticket}/decide", {"decision": "approve", "note": "ok"}),
        (f"/customers/{HANDOFF_EMAIL}/forget", {"confirm": HANDOFF_EMAIL}),
    ]:
        response = client.post(path, data={"csrf_token": token, **data})
        assert response.status_code == 403, path
        assert "你的角色不能做这件事" in response.text
    assert bot.ticket(played.refund_ticket).status == "waiting_approval"
    assert bot.tickets(email=HANDOFF_EMAIL)


def test_forms_without_the_csrf_token_are_refused(client: TestClient, setup: Setup) -> None:
    _, _bot, _, played = setup
    sign_in(client, "wang")
    for token in (None, "forged"):
        data = {} if token is None else {"csrf_token": token}
        claim = client.post(f"/approvals/{played.refund_ticket}/claim", data=data)
        assert claim.status_code == 403 and "安全令牌" in claim.text
        note = client.post(f"/tickets/{played.refund_ticket}/notes", data={**data, "body": "x"})
        assert note.status_code == 403
    page = client.get(f"/tickets/{played.refund_ticket}").text
    assert "还没有备注" in page and "正在审核" not in page


def test_a_claim_held_by_another_reviewer_blocks_the_decision(setup: Setup) -> None:
    console, bot, users, played = setup
    wang, zhao = client_for(console, users), client_for(console, users)
    wang_token, zhao_token = sign_in(wang, "wang"), sign_in(zhao, "zhao")
    wang.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": wang_token})
    page = zhao.get(f"/approvals/{played.refund_ticket}").text
    assert "wang 正在审核" in page and 'id="claim-button"' not in page
    taken = zhao.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": zhao_token})
    assert taken.status_code == 409 and "wang 正在审核" in taken.text
    decided = zhao.post(
        f"/approvals/{played.refund_ticket}/decide",
        data={"csrf_token": zhao_token, "decision": "reject", "note": "不符合"},
    )
    assert decided.status_code == 409 and "什么都没有记录" in decided.text
    assert bot.ticket(played.refund_ticket).status == "waiting_approval"
    wang.post(f"/approvals/{played.refund_ticket}/release", data={"csrf_token": wang_token})
    assert (
        zhao.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": zhao_token}).status_code
        == 200
    )


def test_an_expired_claim_gives_a_clear_page(demo_url: str, tmp_path: Path) -> None:
    with open_console(demo_url, tmp_path, claim_seconds=0) as (console, bot):
        played = play_demo(bot)
        client = client_for(console, make_users(tmp_path))
        token = sign_in(client, "wang")
        client.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": token})
        response = client.post(
            f"/approvals/{played.refund_ticket}/decide",
            data={"csrf_token": token, "decision": "approve", "note": "ok"},
        )
        assert response.status_code == 409
        assert "认领已过期" in response.text and "Traceback" not in response.text
        assert bot.ticket(played.refund_ticket).status == "waiting_approval"


def test_a_decision_on_a_ticket_no_longer_waiting_says_so(client: TestClient, setup: Setup) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "wang")
    client.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": token})
    bot.reject(played.refund_ticket, approver="someone-else", note="已在别处处理")  # e.g. from the CLI
    response = client.post(
        f"/approvals/{played.refund_ticket}/decide",
        data={"csrf_token": token, "decision": "approve", "note": "ok"},
    )
    assert response.status_code == 409 and "已经不在等待审批" in response.text
    state = bot.state(played.refund_ticket)
    assert state.approval is not None and state.approval.approver == "someone-else"


def test_an_expired_session_sends_to_sign_in_with_a_message(setup: Setup) -> None:
    console, _, users, played = setup
    now = [0.0]
    sessions = Sessions(idle=60.0, clock=lambda: now[0])
    app = create_app(console, users, secure_cookies=False, lang="zh", sessions=sessions)
    client = TestClient(app, base_url="http://127.0.0.1")
    page = client.get("/login")
    token = re.search(r'name="csrf_token" value="([^"]+)"', page.text)
    assert token
    client.post("/login", data={"name": "wang", "password": "approver-pass-1", "csrf_token": token.group(1)})
    assert client.get("/inbox").url.path == "/inbox"
    now[0] += 61.0  # idle for longer than a minute
    response = client.get(f"/tickets/{played.refund_ticket}")
    assert response.url.path == "/login" and "会话已过期" in response.text
    assert client.get("/api/inbox").status_code == 401


def test_sign_in_is_throttled_after_repeated_failures(client: TestClient) -> None:
    token = re.search(r'value="([^"]+)"', client.get("/login").text)
    assert token
    for _ in range(5):
        wrong = client.post("/login", data={"name": "wang", "password": "nope", "csrf_token": token.group(1)})
        assert wrong.status_code == 401 and "用户名或密码不对" in wrong.text
    right = client.post(
        "/login", data={"name": "wang", "password": "approver-pass-1", "csrf_token": token.group(1)}
    )
    assert right.status_code == 429 and "分钟后再试" in right.text
    assert client.get("/inbox", follow_redirects=False).status_code == 303  # still signed out


def test_the_session_cookie_is_httponly_strict_and_secure_off_loopback(setup: Setup) -> None:
    console, _, users, _ = setup
    for secure in (False, True):
        app = create_app(console, users, secure_cookies=secure, lang="zh")
        cookie = TestClient(app).get("/login").headers["set-cookie"].lower()
        assert "httponly" in cookie and "samesite=strict" in cookie
        assert ("secure" in cookie.replace("samesite", "")) is secure


def test_the_ticket_page_shows_memory_steps_and_private_notes(client: TestClient, setup: Setup) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "li")
    state = bot.state(played.refund_ticket)
    page = client.get(f"/tickets/{played.refund_ticket}").text
    for turn in state.turns:
        assert f'id="turn-{turn.idx}"' in page
    assert state.facts and f'#turn-{state.facts[0].turn}"' in page  # each fact links to its source turn
    assert state.profile and state.profile in page
    assert f"{state.context_usage['total']} / {state.context_usage['budget']} tokens" in page
    assert page.count("?at=") == len(bot.history(played.refund_ticket))
    at = client.get(f"/tickets/{played.refund_ticket}?at=2").text
    assert 'id="at-step"' in at and f'id="turn-{len(state.turns) - 1}"' not in at  # the state then
    added = client.post(
        f"/tickets/{played.refund_ticket}/notes", data={"csrf_token": token, "body": "客户很着急"}
    )
    assert "客户很着急" in added.text
    assert all("客户很着急" not in t.content for t in bot.state(played.refund_ticket).turns)
    empty = client.post(f"/tickets/{played.refund_ticket}/notes", data={"csrf_token": token, "body": " "})
    assert empty.status_code == 422 and 'id="body-error"' in empty.text


def test_fork_from_a_step_and_refused_inside_a_refund_round(client: TestClient, setup: Setup) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "li")
    steps = bot.history(played.refund_ticket)
    end_of_first = next(s.seq for s in steps if s.next_step is None)
    forked = client.post(
        f"/tickets/{played.refund_ticket}/fork", data={"csrf_token": token, "seq": end_of_first}
    )
    new_id = forked.url.path.rsplit("/", 1)[-1]
    assert new_id != played.refund_ticket and bot.ticket(new_id).customer_email == DEMO_EMAIL
    inside = steps[-1].seq  # the paused refund round
    refused = client.post(f"/tickets/{played.refund_ticket}/fork", data={"csrf_token": token, "seq": inside})
    assert refused.status_code == 409 and 'id="seq-error"' in refused.text
    bad = client.post(f"/tickets/{played.refund_ticket}/fork", data={"csrf_token": token, "seq": "x"})
    assert bad.status_code == 422 and "步骤序号" in bad.text


def test_forget_needs_confirmation_and_is_refused_while_a_ticket_waits(
    client: TestClient, setup: Setup
) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "wang")
    page = client.get(f"/customers/{DEMO_EMAIL}").text
    assert played.refund_ticket in page and 'id="busy"' in page and 'id="profile"' in page
    busy = client.post(f"/customers/{DEMO_EMAIL}/forget", data={"csrf_token": token, "confirm": DEMO_EMAIL})
    assert busy.status_code == 409 and played.refund_ticket in busy.text
    assert bot.tickets(email=DEMO_EMAIL)
    unconfirmed = client.post(
        f"/customers/{HANDOFF_EMAIL}/forget", data={"csrf_token": token, "confirm": "x"}
    )
    assert unconfirmed.status_code == 422 and 'id="confirm-error"' in unconfirmed.text
    assert bot.tickets(email=HANDOFF_EMAIL)
    done = client.post(
        f"/customers/{HANDOFF_EMAIL}/forget", data={"csrf_token": token, "confirm": HANDOFF_EMAIL}
    )
    assert done.status_code == 200 and 'id="forgotten"' in done.text
    assert bot.tickets(email=HANDOFF_EMAIL) == []


def test_bad_ids_and_steps_give_pages_not_tracebacks(client: TestClient, setup: Setup) -> None:
    played = setup[3]
    sign_in(client, "li")
    for path, status in [
        ("/tickets/T999999", 404),
        ("/approvals/T999999", 404),
        (f"/tickets/{played.refund_ticket}?at=0", 404),
        (f"/tickets/{played.refund_ticket}?at=99999", 404),
        (f"/tickets/{played.refund_ticket}?at=abc", 422),
        (f"/tickets/{played.refund_ticket}?at=99999999999999999999", 404),
        (f"/approvals/{played.handoff_ticket}", 409),
        ("/customers/not-an-email", 422),
        (f"/tickets/{'x' * 100}", 422),
        ("/no-such-page", 404),
        ("/static/no-such-file.css", 404),
        (f"/tickets/{played.refund_ticket}/take-over", 405),  # a form's address opened as a link
    ]:
        response = client.get(path)
        assert response.status_code == status, path
        assert "Traceback" not in response.text and 'id="message"' in response.text, path
        assert "detail" not in response.text.split('id="message"')[1][:200], path  # not FastAPI's JSON
    flag = client.get(f"/tickets/{played.refund_ticket}?decided=abc")  # not "1": no notice, no error
    assert flag.status_code == 200 and played.refund_ticket in flag.text


def test_inbox_filters_by_kind_and_customer(client: TestClient, setup: Setup) -> None:
    played = setup[3]
    sign_in(client, "li")
    handoffs = client.get("/inbox?kind=handoff").text
    assert played.handoff_ticket in handoffs and played.refund_ticket not in handoffs
    by_customer = client.get("/inbox?customer=wugang").text
    assert played.refund_ticket in by_customer and played.handoff_ticket not in by_customer
    assert 'id="live-updates"' in by_customer and 'http-equiv="refresh"' not in by_customer
    assert "<title>(1) 收件箱" in by_customer  # the count of what waits, in the title


def test_english_pages_hold_no_chinese_of_their_own(setup: Setup) -> None:
    console, _, users, _played = setup
    client = TestClient(
        create_app(console, users, secure_cookies=False, lang="en"), base_url="http://127.0.0.1"
    )
    page = client.get("/login")
    assert not re.search(r"[\u3400-\u9fff]", page.text)
    assert "Sign in" in page.text


def test_an_agent_takes_over_replies_and_hands_back(client: TestClient, setup: Setup) -> None:
    _, bot, _, played = setup
    ticket = played.handoff_ticket
    token = sign_in(client, "li")
    assert 'id="take-over-button"' in client.get(f"/tickets/{ticket}").text
    taken = client.post(f"/tickets/{ticket}/take-over", data={"csrf_token": token})
    assert 'id="reply-form"' in taken.text and bot.ticket(ticket).status == "with_human"
    assert "li 处理中" in client.get("/inbox?kind=handoff").text
    empty = client.post(f"/tickets/{ticket}/reply", data={"csrf_token": token, "text": "  "})
    assert empty.status_code == 422 and 'id="text-error"' in empty.text
    replied = client.post(
        f"/tickets/{ticket}/reply", data={"csrf_token": token, "text": "您好,我是客服小李,马上为您处理。"}
    )
    assert "人工客服 li" in replied.text and "马上为您处理" in replied.text
    waiting = bot.send(ticket, "好的,谢谢")
    assert waiting.outcome == "with_human" and not waiting.reply  # the bot stays silent
    assert "好的,谢谢" in client.get(f"/tickets/{ticket}").text
    client.post(f"/tickets/{ticket}/hand-back", data={"csrf_token": token, "note": "已安抚"})
    assert bot.ticket(ticket).status != "with_human"
    actions = [(e.action, e.actor, e.source) for e in bot.audit(ticket)]
    assert [a for a, _, _ in actions] == ["take_over", "human_reply", "hand_back"]
    assert all(actor == "li" and source.startswith("console ") for _, actor, source in actions)
    page = client.get(f"/tickets/{ticket}").text
    assert page.count('class="audit-') == 3 and "交还" in page


def test_a_ticket_another_person_owns_cannot_be_taken_or_answered(setup: Setup) -> None:
    console, bot, users, played = setup
    li, wang = client_for(console, users), client_for(console, users)
    li_token, wang_token = sign_in(li, "li"), sign_in(wang, "wang")
    li.post(f"/tickets/{played.handoff_ticket}/take-over", data={"csrf_token": li_token})
    page = wang.get(f"/tickets/{played.handoff_ticket}").text
    assert "li 正在处理这张工单" in page and 'id="reply-form"' not in page
    taken = wang.post(f"/tickets/{played.handoff_ticket}/take-over", data={"csrf_token": wang_token})
    assert taken.status_code == 409 and "现在不能接手" in taken.text
    reply = wang.post(
        f"/tickets/{played.handoff_ticket}/reply", data={"csrf_token": wang_token, "text": "hi"}
    )
    assert reply.status_code == 409 and "你没有接手" in reply.text
    refund = wang.post(f"/tickets/{played.refund_ticket}/take-over", data={"csrf_token": wang_token})
    assert refund.status_code == 409  # inside a round that waits for a decision
    assert [e.action for e in bot.audit(played.handoff_ticket)] == ["take_over"]


def test_decisions_forks_and_forgetting_are_audited_with_the_operator_and_address(
    client: TestClient, setup: Setup
) -> None:
    _, bot, _, played = setup
    token = sign_in(client, "wang")
    client.post(f"/approvals/{played.refund_ticket}/claim", data={"csrf_token": token})
    client.post(
        f"/approvals/{played.refund_ticket}/decide",
        data={"csrf_token": token, "decision": "reject", "note": "超出政策"},
    )
    end = next(s.seq for s in bot.history(played.refund_ticket) if s.next_step is None)
    client.post(f"/tickets/{played.refund_ticket}/fork", data={"csrf_token": token, "seq": end})
    client.post(f"/customers/{HANDOFF_EMAIL}/forget", data={"csrf_token": token, "confirm": HANDOFF_EMAIL})
    rows = bot.audit()
    assert [(e.action, e.actor) for e in rows] == [
        ("reject", "wang"),
        ("fork", "wang"),
        ("forget_customer", "wang"),
    ]
    assert {e.source for e in rows} == {
        "console testclient"
    }  # the client's address, as the test client gives it
    assert rows[0].detail["note"] == "超出政策" and rows[0].detail["approved"] is False
    page = client.get(f"/tickets/{played.refund_ticket}").text
    assert "超出政策" in page  # shown on the ticket page
    # In words, not code names: the audit's details and source, the steps.
    assert "备注: 超出政策" in page and "是否批准: 否" in page and "控制台 testclient" in page
    assert "approved=" not in page and "note=" not in page
    assert "读取客户资料" in page and "质检草稿" in page and ">load_customer<" not in page
    # The header's times come from one clock, the bot's (the demo's day), not the database's.
    header = re.search(r'<p class="sub">(.*?)</p>', page, re.S)
    assert header is not None and re.sub(r"<[^>]+>", "", header.group(1)).count("2026-10-15") == 2, header


def test_customer_text_is_escaped_and_pages_forbid_foreign_scripts(client: TestClient, setup: Setup) -> None:
    _, bot, _, played = setup
    bot.send(played.handoff_ticket, "<script>alert('x')</script> 还在吗")
    sign_in(client, "li")
    page = client.get(f"/tickets/{played.handoff_ticket}")
    assert "<script>alert" not in page.text and "&lt;script&gt;alert" in page.text
    assert "default-src 'self'" in page.headers["content-security-policy"]
    assert page.headers["x-frame-options"] == "DENY" and page.headers["cache-control"] == "no-store"


def test_english_pages_name_steps_and_errors_in_english(setup: Setup) -> None:
    console, _, users, played = setup
    client = TestClient(
        create_app(console, users, secure_cookies=False, lang="en"), base_url="http://127.0.0.1"
    )
    sign_in(client, "li")
    page = client.get(f"/tickets/{played.refund_ticket}").text
    assert "Load the customer" in page and "Check the draft" in page and ">prepare_context<" not in page
    missing = client.get("/no-such-page")
    assert missing.status_code == 404 and "There is no such page." in missing.text
    assert not re.search(r"[\u3400-\u9fff]", missing.text.split("<main")[1])


def test_english_pages_show_no_chinese_label(setup: Setup) -> None:
    """One language per page: in English, no text of the Chinese catalogs appears (the customers'
    own words, in Chinese here, are data and stay as they are)."""
    console, _, users, played = setup
    client = TestClient(
        create_app(console, users, secure_cookies=False, lang="en"), base_url="http://127.0.0.1"
    )
    sign_in(client, "wang")
    chinese = client_for(console, users)
    sign_in(chinese, "wang")
    labels = [
        text
        for domain in ("console", "common")
        for text in i18n.catalog(domain, "zh").values()
        if "{" not in text and len(text) >= 5
    ]
    for path in (
        "/inbox",
        f"/approvals/{played.refund_ticket}",
        f"/tickets/{played.refund_ticket}",
        f"/customers/{DEMO_EMAIL}",
    ):
        page = client.get(path)
        assert page.status_code == 200, path
        assert page.text.startswith('<!doctype html>\n<html lang="en">')
        assert [text for text in labels if text in page.text] == [], path
        assert [text for text in labels if text in chinese.get(path).text], path  # the check can fail


def test_a_database_failure_is_a_page_and_a_log_line_not_a_traceback(
    demo_url: str, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    with open_console(demo_url, tmp_path) as (console, _bot):
        app = create_app(console, make_users(tmp_path), secure_cookies=False, lang="zh")
        client = TestClient(app, base_url="http://127.0.0.1", raise_server_exceptions=False)
        sign_in(client, "wang")
        console.store.close()  # the database goes away under the console
        response = client.get(f"/customers/{DEMO_EMAIL}")
        assert response.status_code == 503 and "暂时连不上数据库" in response.text
        assert "Traceback" not in response.text and DEMO_EMAIL not in caplog.text
        assert "GET /customers/{email} failed" in caplog.text

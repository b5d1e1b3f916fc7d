"""The console's search: tickets open and closed by id, text of any turn (Chinese and English),
customer, status and the days they were opened, paginated; never a forgotten customer's."""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path

import psycopg
import pytest
from fastapi.testclient import TestClient
from playwright.sync_api import Browser, expect
from support.browser_kit import LiveConsole, shot, sign_in_page
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

from supportbot import SupportBot
from supportbot.console._app import create_app
from supportbot.console._service import SEARCH_PAGE


def _found(page: str) -> list[str]:
    return re.findall(r'<td><a href="/tickets/(T\d+)">', page)


Searching = tuple[
    TestClient, SupportBot, Played, str
]  # signed in, the bot, the demo played, an English ticket


@pytest.fixture
def searching(demo_url: str, tmp_path: Path) -> Iterator[Searching]:
    with open_console(demo_url, tmp_path) as (console, bot):
        played = play_demo(bot)
        english = bot.open_ticket(
            "chenjing@example.com", body="Hi, my Bank Sync keeps failing with error E3001 since Monday."
        )
        client = client_for(console, make_users(tmp_path))
        sign_in(client, "li")
        yield client, bot, played, english.ticket_id


def test_text_of_any_turn_finds_its_ticket_in_chinese_and_english(searching: Searching) -> None:
    client, _bot, played, english = searching
    later_turn = client.get("/search", params={"q": "还是不行"}).text  # the refund ticket's second message
    assert _found(later_turn) == [played.refund_ticket]
    assert "<mark>还是不行</mark>" in later_turn  # the turn that matched, the match marked
    assert _found(client.get("/search", params={"q": "bank sync"}).text) == [english]  # any case
    assert _found(client.get("/search", params={"q": "人工"}).text) == [played.handoff_ticket]
    both = _found(client.get("/search", params={"q": "E3001"}).text)
    assert sorted(both) == sorted([played.refund_ticket, english])
    assert _found(client.get("/search", params={"q": played.refund_ticket.lower()}).text) == [
        played.refund_ticket
    ]
    nothing = client.get("/search", params={"q": "%"}).text  # a LIKE wildcard is a literal character
    assert _found(nothing) == [] and 'id="no-results"' in nothing


def test_filters_by_customer_status_and_days_opened(searching: Searching) -> None:
    client, bot, played, english = searching
    assert _found(client.get("/search", params={"customer": "SUNLI"}).text) == [played.handoff_ticket]
    waiting = client.get("/search", params={"status": "waiting_approval"}).text
    assert _found(waiting) == [played.refund_ticket]
    opened = bot.ticket(english).created_at.astimezone().date()
    same_day = {"since": opened.isoformat(), "until": opened.isoformat()}
    assert english in _found(client.get("/search", params=same_day).text)
    later = {"since": (opened + timedelta(days=1)).isoformat()}
    assert _found(client.get("/search", params=later).text) == []
    bad = client.get("/search", params={"since": "yesterday", "q": "x" * 201})
    assert bad.status_code == 422
    assert 'id="since-error"' in bad.text and 'id="q-error"' in bad.text


def test_results_come_a_page_at_a_time(demo_url: str, tmp_path: Path) -> None:
    with open_console(demo_url, tmp_path) as (console, bot):
        opened = [
            bot.open_ticket(DEMO_EMAIL, body=f"发票 INV-{n:04d} 的抬头要改").ticket_id for n in range(30)
        ]
        client = client_for(console, make_users(tmp_path))
        sign_in(client, "li")
        first = client.get("/search", params={"q": "抬头"}).text
        assert len(_found(first)) == SEARCH_PAGE and 'id="next-page"' in first
        second = client.get("/search", params={"q": "抬头", "page": "2"}).text
        assert len(_found(second)) == 30 - SEARCH_PAGE and 'id="next-page"' not in second
        assert sorted(_found(first) + _found(second)) == sorted(opened)
        assert client.get("/search", params={"q": "抬头", "page": "abc"}).status_code == 200  # page 1


def test_a_forgotten_customer_s_tickets_are_never_found(searching: Searching) -> None:
    client, bot, played, _english = searching
    assert _found(client.get("/search", params={"q": "人工"}).text) == [played.handoff_ticket]
    bot.forget_customer(HANDOFF_EMAIL)
    assert _found(client.get("/search", params={"q": "人工"}).text) == []
    assert played.handoff_ticket not in _found(client.get("/search").text)


def test_search_needs_sign_in(demo_url: str, tmp_path: Path) -> None:
    with open_console(demo_url, tmp_path) as (console, _bot):
        client: TestClient = client_for(console, make_users(tmp_path))
        response = client.get("/search", params={"q": "E3001"}, follow_redirects=False)
        assert response.status_code == 303 and response.headers["location"] == "/login"


def test_the_text_search_can_use_the_trigram_index(demo_url: str) -> None:
    with psycopg.connect(demo_url) as conn:
        conn.execute("SET enable_seqscan = off")
        plan = "\n".join(
            row[0]
            for row in conn.execute(
                "EXPLAIN SELECT ticket_id FROM supportbot.turns WHERE content ILIKE %s", ("%bank sync%",)
            )
        )
    assert "turns_content_trgm" in plan


def test_an_operator_finds_a_closed_ticket_by_what_the_customer_wrote_in_the_browser(
    browser: Browser, demo_url: str, tmp_path: Path
) -> None:
    with open_console(demo_url, tmp_path) as (console, bot):
        played = play_demo(bot)
        answered = bot.open_ticket("chenjing@example.com", body="发票抬头写错了,能帮我改成公司名称吗?")
        app = create_app(console, make_users(tmp_path), secure_cookies=False, lang="zh")
        with LiveConsole(app) as url:
            context = browser.new_context(locale="zh-CN")
            page = context.new_page()
            sign_in_page(page, url, "li")
            page.get_by_role("link", name="搜索").click()
            page.get_by_label("工单号或内容").fill("抬头写错")
            page.keyboard.press("Enter")
            results = page.locator("#results tbody tr")
            expect(results).to_have_count(1)
            expect(results.first).to_contain_text("已答复")  # not in the inbox: the bot answered it
            expect(results.first.locator("mark")).to_have_text("抬头写错")
            shot(page, "search")
            results.first.get_by_role("link", name=answered.ticket_id).click()
            expect(page).to_have_url(f"{url}/tickets/{answered.ticket_id}")
            assert played.refund_ticket != answered.ticket_id
            context.close()

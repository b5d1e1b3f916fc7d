"""Ownership and clocks: tickets assigned to operators and teams (hand-overs audited), "mine" and
"my team" views, service-level clocks that run only while a person has the turn, and the `sla`
command that reports breaches."""

from __future__ import annotations

import json
from datetime import datetime, timedelta
from pathlib import Path

import pytest
from playwright.sync_api import Browser, expect
from support.browser_kit import LiveConsole, shot, sign_in_page
from support.console_kit import (
    PASSWORDS,
    client_for,
    csrf_of,
    make_users,
    open_console,
    play_demo,
    sign_in,
)  # fmt: skip

from supportbot import Settings
from supportbot.backend.demo._data import demo_clock
from supportbot.console._app import create_app
from supportbot.console._users import Users, set_teams
from supportbot.i18n import Language


class Clock:
    """The demo's clock, moved forward by the test."""

    def __init__(self) -> None:
        self.inner, self.ahead = demo_clock(), timedelta()

    def __call__(self) -> datetime:
        return self.inner() + self.ahead


def _teams(folder: Path) -> Users:
    make_users(folder)
    set_teams(folder / "users.json", "li", ["billing"])
    set_teams(folder / "users.json", "zhao", ["billing", "vip"])
    return Users.load(folder / "users.json")


def test_a_clock_runs_only_while_a_person_has_the_turn(demo_url: str, tmp_path: Path) -> None:
    clock = Clock()
    settings = Settings(
        database_url=demo_url, sla_approval_minutes=240, sla_first_response_minutes=30,
        sla_next_response_minutes=60,
    )  # fmt: skip
    with open_console(demo_url, tmp_path, settings=settings, clock=clock) as (_console, bot):
        played = play_demo(bot)
        clocks = {c.ticket_id: c for c in bot.service_clocks()}
        assert clocks[played.refund_ticket].kind == "approval"
        assert clocks[played.handoff_ticket].kind == "first_response"
        assert 29 * 60 < clocks[played.handoff_ticket].seconds_left <= 30 * 60
        clock.ahead = timedelta(minutes=45)
        late = {c.ticket_id: c for c in bot.service_clocks()}
        assert late[played.handoff_ticket].breached and not late[played.refund_ticket].breached
        assert next(iter(bot.service_clocks())).ticket_id == played.handoff_ticket  # soonest due first
        bot.take_over(played.handoff_ticket, agent="li")
        assert played.handoff_ticket in {c.ticket_id for c in bot.service_clocks()}  # taking is no reply
        bot.reply_as_human(played.handoff_ticket, "您好,我是小李,马上为您处理", agent="li")
        assert played.handoff_ticket not in {c.ticket_id for c in bot.service_clocks()}  # the customer's turn
        clock.ahead = timedelta(minutes=50)
        bot.send(played.handoff_ticket, "好的,大概多久?")
        running = next(c for c in bot.service_clocks() if c.ticket_id == played.handoff_ticket)
        assert running.kind == "next_response" and running.owner == "li" and not running.breached
        clock.ahead = timedelta(minutes=50 + 61)
        assert next(c for c in bot.service_clocks() if c.ticket_id == played.handoff_ticket).breached


def test_the_sla_command_reports_breaches(demo_url: str, tmp_path: Path) -> None:
    from test_cli import ok

    with open_console(demo_url, tmp_path) as (_console, bot):
        played = play_demo(bot)
    # The demo's tickets were written by the demo clock; the CLI runs on the wall clock, weeks later.
    generous = {
        f"SUPPORTBOT_SLA_{k}_MINUTES": "1000000" for k in ("APPROVAL", "FIRST_RESPONSE", "NEXT_RESPONSE")
    }
    quiet = ok(demo_url, "sla", env=generous)
    assert quiet.startswith("超时 0 张,计时中 2 张") and played.handoff_ticket not in quiet
    text = ok(demo_url, "sla")
    everything = json.loads(ok(demo_url, "sla", "--all", "--json"))
    assert played.handoff_ticket in text and "首次回复" in text and "已超时" in text
    assert {c["ticket_id"] for c in everything} == {played.refund_ticket, played.handoff_ticket}


def test_assignments_hand_over_audited_and_the_views_follow_them(demo_url: str, tmp_path: Path) -> None:
    users = _teams(tmp_path)
    with open_console(demo_url, tmp_path) as (console, bot):
        played = play_demo(bot)
        client = client_for(console, users)
        token = sign_in(client, "wang")

        def assign(**fields: str) -> int:
            data = {"csrf_token": token, **fields}
            return client.post(
                f"/tickets/{played.handoff_ticket}/assign", data=data, follow_redirects=False
            ).status_code

        assert assign(operator="li") == 303
        assert assign(operator="zhao", team="vip") == 303
        assert assign() == 422 and assign(operator="nobody") == 422 and assign(team="nope") == 422
        moves = [(e.actor, e.detail["from"], e.detail["to"]) for e in bot.audit(played.handoff_ticket)]
        assert moves == [("wang", "—", "li"), ("wang", "li", "zhao / vip")]
        assert "zhao" in client.get(f"/tickets/{played.handoff_ticket}").text.split('id="assignee"')[1][:200]
        mine = client.get("/inbox", params={"view": "mine"}).text  # wang: nothing assigned, owned or claimed
        assert played.handoff_ticket not in mine and played.refund_ticket not in mine
        assert assign(me="1") == 303
        assert played.handoff_ticket in client.get("/inbox", params={"view": "mine"}).text
        li = client_for(console, users)
        sign_in(li, "li")
        team = li.get("/inbox", params={"view": "team"}).text  # li's team, billing, has zhao, not wang
        assert played.handoff_ticket not in team
        token = csrf_of(client.get("/inbox").text)
        assert assign(operator="zhao") == 303
        assert played.handoff_ticket in li.get("/inbox", params={"view": "team"}).text
        assert played.refund_ticket not in li.get("/inbox", params={"view": "team"}).text


def test_teams_are_set_from_the_cli(tmp_path: Path) -> None:
    from test_cli import ok

    users = tmp_path / "users.json"
    env = {"SUPPORTBOT_CONSOLE_USERS": str(users)}
    make_users(tmp_path)
    assert "li 的团队:billing, vip" in ok(None, "console", "--set-teams", "li", "vip,billing", env=env)
    assert Users.load(users).teams() == {"billing": ["li"], "vip": ["li"]}
    assert Users.load(users).verify("li", PASSWORDS["li"]) is not None  # the password is untouched
    assert "li 的团队:—" in ok(None, "console", "--set-teams", "li", "", env=env)


@pytest.mark.parametrize("lang", ["zh"])
def test_an_operator_assigns_a_ticket_to_themself_and_sees_a_breach_in_the_browser(
    browser: Browser, demo_url: str, tmp_path: Path, lang: Language
) -> None:
    clock = Clock()
    settings = Settings(database_url=demo_url, sla_first_response_minutes=5)
    with open_console(demo_url, tmp_path, settings=settings, clock=clock) as (console, bot):
        played = play_demo(bot)
        app = create_app(console, _teams(tmp_path), secure_cookies=False, lang=lang)
        with LiveConsole(app) as url:
            context = browser.new_context(locale="zh-CN")
            page = context.new_page()
            sign_in_page(page, url, "li")
            row = page.locator("#inbox tr", has_text=played.handoff_ticket)
            expect(row.locator("td.clock")).to_contain_text("首次回复还剩")
            clock.ahead = timedelta(minutes=6)  # the live inbox shows the breach without a reload
            expect(row).to_have_class("kind-handoff breached", timeout=15_000)
            expect(row.locator("td.clock")).to_contain_text("首次回复已超时")
            page.goto(f"{url}/tickets/{played.handoff_ticket}")
            page.click("#assign-me-button")
            expect(page.locator("#assignee")).to_contain_text("负责人:li")
            expect(page.locator("#clock")).to_contain_text("已超时")
            page.goto(f"{url}/inbox?view=mine")
            expect(page.locator("#inbox")).to_contain_text(played.handoff_ticket)
            expect(page.locator("#inbox")).not_to_contain_text(played.refund_ticket)
            shot(page, "mine")
            context.close()
        assert [e.action for e in bot.audit(played.handoff_ticket)] == ["assign"]

"""The console in a real browser: Debian's headless Chromium driven by Playwright.

The browser is the system's (/usr/bin/chromium, installed by .ci/run with apt-get); Playwright's
own browser download is never used. One browser serves the whole run (conftest.py); each test gets its own
database and a console served by uvicorn on a free loopback port.

With SUPPORTBOT_SCREENSHOTS=DIR the pages are saved there (docs/ holds the README's copies:
``SUPPORTBOT_SCREENSHOTS=docs python -m pytest tests/test_browser.py``).
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from zoneinfo import ZoneInfo

import psycopg
import pytest
from playwright.sync_api import Browser, expect
from support.browser_kit import LiveConsole, serious_violations, shot, sign_in_page, tab_to
from support.console_kit import (
    DEMO_EMAIL,
    PASSWORDS,
    Played,
    RecordingModel,
    make_users,
    open_console,
    play_demo,
)

from supportbot import Settings, SupportBot
from supportbot.backend.demo._data import demo_clock
from supportbot.console import open_console as open_configured_console
from supportbot.console._app import create_app
from supportbot.errors import ConfigError
from supportbot.i18n import Language


@dataclass
class Served:
    url: str
    bot: SupportBot
    played: Played
    model: RecordingModel


@pytest.fixture
def served(demo_url: str, tmp_path: Path) -> Iterator[Served]:
    model = RecordingModel()
    with open_console(demo_url, tmp_path, llm=model) as (console, bot):
        played = play_demo(bot)
        app = create_app(console, make_users(tmp_path), secure_cookies=False, lang="zh")
        with LiveConsole(app) as url:
            yield Served(url, bot, played, model)


def test_an_approver_approves_the_demo_refund_in_the_browser(browser: Browser, served: Served) -> None:
    url, bot, played = served.url, served.bot, served.played
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    page = context.new_page()
    sign_in_page(page, url, "wang")
    row = page.locator("#inbox tr.kind-approval", has_text=played.refund_ticket)
    expect(row).to_contain_text("200.00 CNY")
    shot(page, "inbox")
    row.get_by_role("link", name=played.refund_ticket).click()
    expect(page.locator("#refund")).to_contain_text("200.00 CNY")
    expect(page.locator("#basis")).to_contain_text("按未使用的")
    page.click("#claim-button")
    expect(page.locator("#claim-state")).to_contain_text("wang 正在审核")
    page.check("input[name=decision][value=approve]")
    page.fill("textarea[name=note]", "30 天内,符合退款政策")
    shot(page, "approval")
    page.click("#decide-button")
    expect(page.locator("#decided")).to_be_visible()
    reply = bot.state(played.refund_ticket).reply
    assert "已审批通过" in reply
    expect(page.locator(".turn.role-agent").last).to_contain_text(reply.splitlines()[-1])
    expect(page.locator("#status")).not_to_contain_text("等待")
    shot(page, "ticket")
    page.goto(f"{url}/customers/{DEMO_EMAIL}")
    expect(page.locator("#profile")).to_be_visible()
    shot(page, "customer")
    context.close()


def test_an_agent_takes_over_replies_and_hands_back_in_the_browser(browser: Browser, served: Served) -> None:
    url, bot, played = served.url, served.bot, served.played
    human_reply = "您好,我是客服小李。工单已转给技术同事,今天 18 点前给您回电。"
    context = browser.new_context(viewport={"width": 1280, "height": 900}, locale="zh-CN")
    page = context.new_page()
    sign_in_page(page, url, "li")
    page.locator("#inbox tr.kind-handoff").get_by_role("link", name=played.handoff_ticket).click()
    page.click("#take-over-button")
    expect(page.locator("#owner")).to_contain_text("你正在处理")
    page.fill("textarea[name=text]", human_reply)
    page.click("#reply-button")
    expect(page.locator(".turn.role-human").last).to_contain_text(human_reply)
    silent = bot.send(played.handoff_ticket, "好的,我等电话")  # the customer writes while li owns it
    assert silent.outcome == "with_human" and not silent.reply
    page.reload()
    expect(page.locator(".turn.role-customer").last).to_contain_text("好的,我等电话")
    shot(page, "takeover")
    page.fill("input[name=note]", "已答复客户,交还机器人")
    page.click("#hand-back-button")
    expect(page.locator("#take-over-button")).to_be_visible()
    expect(page.locator("#audit")).to_contain_text("交还")
    prompts_before = len(served.model.prompts)
    answered = bot.send(played.handoff_ticket, "请问大概几点打过来?")
    assert answered.reply, answered
    assert any(human_reply in prompt for prompt in served.model.prompts[prompts_before:])
    page.reload()
    expect(page.locator(".turn.role-agent").last).to_contain_text(answered.reply.splitlines()[0])
    context.close()


def test_an_approval_clicked_in_the_console_reaches_the_configured_business_system(
    browser: Browser, demo_url: str, tmp_path: Path
) -> None:
    """The console acts on SUPPORTBOT_BACKEND's business system (here a host's own, not the demo
    backend), through the bot's pool: the decision reaches the host's code and its table."""
    settings = Settings(database_url=demo_url, backend="support.host_backend:make")
    console, bot = open_configured_console(settings, clock=demo_clock())
    try:
        assert type(bot.backend).__name__ == "HostBackend"
        asked = bot.open_ticket(DEMO_EMAIL, body="这个年付我想申请退款 200 元")
        assert asked.outcome == "waiting_approval", asked
        app = create_app(console, make_users(tmp_path), secure_cookies=False, lang="zh")
        with LiveConsole(app) as url:
            context = browser.new_context(locale="zh-CN")
            page = context.new_page()
            sign_in_page(page, url, "wang")
            page.locator("#inbox tr.kind-approval", has_text=asked.ticket_id).get_by_role(
                "link", name=asked.ticket_id
            ).click()
            page.click("#claim-button")
            page.check("input[name=decision][value=approve]")
            page.fill("textarea[name=note]", "符合政策")
            page.click("#decide-button")
            expect(page.locator("#decided")).to_be_visible()
            context.close()
        with psycopg.connect(demo_url) as conn:
            decided = conn.execute("SELECT approved, approver, note FROM host.decisions").fetchall()
        assert decided == [(True, "wang", "符合政策")]
        assert "已审批通过" in bot.state(asked.ticket_id).reply
    finally:
        bot.close()
        bot.backend.close()  # type: ignore[attr-defined]


def test_the_console_refuses_to_start_without_a_configured_business_system(demo_url: str) -> None:
    with pytest.raises(ConfigError) as refused:
        open_configured_console(Settings(database_url=demo_url))
    assert refused.value.reason == "backend_missing"


def test_a_reviewer_responds_then_approves_a_lesser_amount_in_the_browser(
    browser: Browser, served: Served
) -> None:
    url, bot, played = served.url, served.bot, served.played
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    sign_in_page(page, url, "wang")
    page.goto(f"{url}/approvals/{played.refund_ticket}")
    page.click("#claim-button")
    page.check("input[name=decision][value=respond]")
    page.fill("textarea[name=note]", "请客户确认退款账单号")
    page.click("#decide-button")
    expect(page.locator("#responded")).to_be_visible()
    expect(page.locator(".turn.role-agent").last).to_contain_text("请客户确认退款账单号")
    page.goto(f"{url}/approvals/{played.refund_ticket}")
    page.click("#claim-button")
    page.check("input[name=decision][value=approve]")
    page.fill("#amount", "150")
    page.fill("textarea[name=note]", "按未使用部分退 150")
    page.click("#decide-button")
    expect(page.locator("#decided")).to_be_visible()
    expect(page.locator(".turn.role-agent").last).to_contain_text("批准金额 150.00 CNY")
    assert [e.action for e in bot.audit(played.refund_ticket)] == ["respond", "approve"]
    context.close()


@pytest.mark.parametrize("zone", ["Asia/Shanghai", "America/New_York", "Pacific/Chatham"])
def test_times_are_shown_in_the_operator_s_own_time_zone(browser: Browser, served: Served, zone: str) -> None:
    """The server writes each time in its own zone; the operator's browser shows it in theirs."""
    context = browser.new_context(locale="zh-CN", timezone_id=zone)
    page = context.new_page()
    sign_in_page(page, served.url, "wang")
    page.goto(f"{served.url}/tickets/{served.played.refund_ticket}")
    times = page.locator("main time[datetime]")
    expect(times.first).to_have_attribute("title", zone)
    assert times.count() >= 5  # header, turns, steps
    for n in range(times.count()):
        element = times.nth(n)
        moment = datetime.fromisoformat(element.get_attribute("datetime") or "")
        assert element.inner_text() == moment.astimezone(ZoneInfo(zone)).strftime("%Y-%m-%d %H:%M")
    context.close()


@pytest.mark.parametrize("lang", ["zh", "en"])
def test_no_page_has_a_serious_accessibility_violation(
    browser: Browser, demo_url: str, tmp_path: Path, lang: Language
) -> None:
    """axe-core on every page of the console, signed out and signed in, in both languages."""
    with open_console(demo_url, tmp_path, llm=RecordingModel()) as (console, bot):
        played = play_demo(bot)
        app = create_app(console, make_users(tmp_path), secure_cookies=False, lang=lang)
        with LiveConsole(app) as url:
            # The pages forbid scripts from anywhere else (CSP); the test's own script is let in.
            context = browser.new_context(locale="zh-CN" if lang == "zh" else "en-US", bypass_csp=True)
            page = context.new_page()
            found: dict[str, list[str]] = {}
            page.goto(f"{url}/login")
            found["login"] = serious_violations(page)
            sign_in_page(page, url, "wang")
            pages = {
                "inbox": "/inbox",
                "ticket": f"/tickets/{played.refund_ticket}",
                "ticket at a step": f"/tickets/{played.refund_ticket}?at=2",
                "handed-off ticket": f"/tickets/{played.handoff_ticket}",
                "approval": f"/approvals/{played.refund_ticket}",
                "customer": f"/customers/{DEMO_EMAIL}",
                "error": "/tickets/T999999",
                "search": "/search?q=E3001",
                "search with a bad date": "/search?since=abc",
                "saved replies": "/replies",
                "my inbox": "/inbox?view=mine",
            }
            for name, path in pages.items():
                page.goto(f"{url}{path}")
                found[name] = serious_violations(page)
            page.goto(f"{url}/tickets/{played.handoff_ticket}")
            page.click("#take-over-button")
            found["taken over"] = serious_violations(page)
            context.close()
    assert {name: v for name, v in found.items() if v} == {}


def test_an_approver_signs_in_and_approves_with_the_keyboard_alone(browser: Browser, served: Served) -> None:
    url, bot, played = served.url, served.bot, served.played
    context = browser.new_context(locale="zh-CN")
    page = context.new_page()
    page.goto(f"{url}/login")
    tab_to(page, "input[name=name]")
    page.keyboard.type("wang")
    tab_to(page, "input[name=password]")
    page.keyboard.type(PASSWORDS["wang"])
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{url}/inbox")
    tab_to(page, f'a[href="/approvals/{played.refund_ticket}"]')
    page.keyboard.press("Enter")
    expect(page).to_have_url(f"{url}/approvals/{played.refund_ticket}")
    tab_to(page, "#claim-button")
    page.keyboard.press("Enter")
    expect(page.locator("#claim-state")).to_contain_text("wang 正在审核")
    page.locator("body").focus()  # the reloaded page: start from its top
    tab_to(page, "input[name=decision]")
    page.keyboard.press("Space")  # the focused radio of the group: approve, the first
    expect(page.locator("input[name=decision][value=approve]")).to_be_checked()
    tab_to(page, "textarea[name=note]")
    page.keyboard.type("符合政策")
    tab_to(page, "#decide-button")
    page.keyboard.press("Enter")
    expect(page.locator("#decided")).to_be_visible()
    assert bot.ticket(played.refund_ticket).status == "resolved"
    context.close()

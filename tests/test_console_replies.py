"""Writing as a person: saved replies per team with placeholders filled from the ticket, and the
evidence check the bot's drafts get, as a warning before a person's reply goes out."""

from __future__ import annotations

import re
from html import unescape
from pathlib import Path

from playwright.sync_api import Browser, expect
from support.browser_kit import LiveConsole, shot, sign_in_page
from support.console_kit import DEMO_EMAIL, client_for, csrf_of, make_users, open_console, sign_in

from supportbot.console._app import create_app
from supportbot.console._users import Users, set_teams

ASKED = "发票 INV-C0001-20261003 的 3588 元,我想 10 月 15 日前退一部分,请转人工"


def _users(folder: Path) -> Users:
    make_users(folder)
    set_teams(folder / "users.json", "li", ["billing"])
    return Users.load(folder / "users.json")


def _reply_box(page: str) -> str:
    match = re.search(r'<textarea name="text"[^>]*>(.*?)</textarea>', page, re.S)
    assert match, "no reply box on the page"
    return unescape(match.group(1))


def test_saved_replies_belong_to_a_team_or_everyone(demo_url: str, tmp_path: Path) -> None:
    users = _users(tmp_path)
    with open_console(demo_url, tmp_path) as (console, _bot):
        li = client_for(console, users)
        token = sign_in(li, "li")
        for team, name in (("billing", "退款说明"), ("", "问候")):
            saved = li.post(
                "/replies", data={"csrf_token": token, "team": team, "name": name, "body": "您好 {name}"}
            )
            assert saved.status_code == 200 and "退款说明" in li.get("/replies").text
        refused = li.post("/replies", data={"csrf_token": token, "team": "vip", "name": "x", "body": "y"})
        assert refused.status_code == 422  # not li's team
        assert li.post("/replies", data={"csrf_token": token, "name": "", "body": ""}).status_code == 422
        wang = client_for(console, users)
        sign_in(wang, "wang")
        seen = wang.get("/replies").text
        assert "问候" in seen and "退款说明" not in seen  # wang is in no team
        token = csrf_of(li.get("/replies").text)
        li.post("/replies/delete", data={"csrf_token": token, "team": "billing", "name": "退款说明"})
        assert "退款说明" not in li.get("/replies").text
        assert wang.post(
            "/replies/delete", data={"csrf_token": csrf_of(seen), "team": "billing", "name": "x"}
        ).status_code == 403  # fmt: skip


def test_a_saved_reply_is_filled_from_the_ticket(demo_url: str, tmp_path: Path) -> None:
    users = _users(tmp_path)
    with open_console(demo_url, tmp_path) as (console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=ASKED).ticket_id
        bot.take_over(ticket, agent="li")
        li = client_for(console, users)
        token = sign_in(li, "li")
        body = "{name}您好,工单 {ticket}:账单 {invoice} 的 {amount},{date} 前处理。{unknown}"
        li.post("/replies", data={"csrf_token": token, "team": "billing", "name": "退款", "body": body})
        box = _reply_box(li.get(f"/tickets/{ticket}", params={"saved": "billing/退款"}).text)
        assert (
            box
            == f"吴刚您好,工单 {ticket}:账单 INV-C0001-20261003 的 CNY 3588.00,2026-10-15 前处理。{{unknown}}"
        )
        assert _reply_box(li.get(f"/tickets/{ticket}", params={"saved": "vip/退款"}).text) == ""  # not li's


def test_a_reply_stating_what_nothing_supports_is_warned_about_then_sent_as_written(
    demo_url: str, tmp_path: Path
) -> None:
    with open_console(demo_url, tmp_path) as (console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=ASKED).ticket_id
        bot.take_over(ticket, agent="li")
        li = client_for(console, make_users(tmp_path))
        token = sign_in(li, "li")
        supported = "已收到:账单 INV-C0001-20261003 的 3588 元,10 月 15 日前答复您。"
        sent = li.post(f"/tickets/{ticket}/reply", data={"csrf_token": token, "text": supported})
        assert sent.status_code == 303 or sent.history, sent.text[:300]
        unsupported = "可以退 888 元到账单 INV-9999-0001,11 月 30 日前到账。"
        warned = li.post(f"/tickets/{ticket}/reply", data={"csrf_token": token, "text": unsupported})
        assert warned.status_code == 422
        warning = warned.text.split('id="reply-warnings"')[1].split("</div>")[0]
        assert "金额:888" in warning and "账单号:INV-9999-0001" in warning and "日期:11 月 30 日" in warning
        assert "3588" not in warning
        assert _reply_box(warned.text) == unsupported  # kept for the person to fix or confirm
        turns = len(bot.state(ticket).turns)
        confirmed = li.post(
            f"/tickets/{ticket}/reply", data={"csrf_token": token, "text": unsupported, "confirm": "1"}
        )
        assert confirmed.status_code == 200 and len(bot.state(ticket).turns) == turns + 1
        assert bot.state(ticket).turns[-1].content == unsupported


def test_a_person_inserts_a_saved_reply_and_is_warned_in_the_browser(
    browser: Browser, demo_url: str, tmp_path: Path
) -> None:
    with open_console(demo_url, tmp_path) as (console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=ASKED).ticket_id
        app = create_app(console, _users(tmp_path), secure_cookies=False, lang="zh")
        with LiveConsole(app) as url:
            context = browser.new_context(locale="zh-CN")
            page = context.new_page()
            sign_in_page(page, url, "li")
            page.get_by_role("link", name="常用回复").click()
            page.get_by_label("团队").select_option("billing")
            page.get_by_label("名称").fill("退款进度")
            page.get_by_label("内容").fill("{name}您好,账单 {invoice} 的退款 500 元会在 3 个工作日内到账。")
            page.click("#save-reply-button")
            expect(page.locator("#replies")).to_contain_text("退款进度")
            page.goto(f"{url}/tickets/{ticket}")
            page.click("#take-over-button")
            page.click("#use-saved-button")
            box = page.locator("textarea[name=text]")
            expect(box).to_have_value("吴刚您好,账单 INV-C0001-20261003 的退款 500 元会在 3 个工作日内到账。")
            page.click("#reply-button")
            expect(page.locator("#reply-warnings")).to_contain_text("金额:500")
            expect(page.locator("#reply-warnings")).to_contain_text("时限:3 个工作日")
            shot(page, "reply-check")
            page.click("#reply-button")  # now "send as written"
            expect(page.locator(".turn.role-human").last).to_contain_text("退款 500 元")
            context.close()

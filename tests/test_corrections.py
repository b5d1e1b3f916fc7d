"""An operator corrects what is remembered: a pinned fact of a ticket (a step between rounds, a
fact by the operator superseding the old one) or an entry of a customer's profile (a row the
builder applies over the records). Append-only, audited, and the next prompt or profile shows it."""

from __future__ import annotations

import time
from collections.abc import Callable
from pathlib import Path

import psycopg
import pytest
from playwright.sync_api import Browser, expect
from support.browser_kit import LiveConsole, serious_violations, shot, sign_in_page, tab_to
from support.console_kit import DEMO_EMAIL, RecordingModel, make_users, open_console, play_demo

from supportbot.console._app import create_app
from supportbot.errors import CorrectionRefused, InvalidInput

FIRST = "我的手机号是 13912345678,发票 INV-2026-0042 金额 199 元,请 10 月 15 日前回电"


def _eventually(check: Callable[[], bool], seconds: float = 5.0) -> bool:
    deadline = time.monotonic() + seconds
    while not check():
        if time.monotonic() > deadline:
            return False
        time.sleep(0.1)
    return True


def _facts_section(prompt: str) -> str:
    return prompt.split("事实(原话", 1)[1].split("\n\n", 1)[0]


def test_a_corrected_fact_is_what_the_next_prompt_pins_with_the_value_it_replaced(
    demo_url: str, tmp_path: Path
) -> None:
    model = RecordingModel()
    with open_console(demo_url, tmp_path, llm=model) as (_console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=FIRST).ticket_id
        facts = bot.state(ticket).facts
        date_at = next(i for i, f in enumerate(facts) if f.kind == "date")
        steps_before = len(bot.history(ticket))
        fact = bot.correct_fact(
            ticket, date_at, value="10 月 18 日", reason="客户来电更正了日期", actor="wang", source="test"
        )
        assert (fact.kind, fact.key, fact.role, fact.supersedes) == (
            "date",
            "2026-10-18",
            "operator",
            date_at,
        )
        history = bot.history(ticket)
        assert len(history) == steps_before + 1 and history[-1].step == "correct_fact"
        assert bot.state_at(ticket, steps_before).facts == facts  # the ledger before, as it was
        entry = bot.audit(ticket)[-1]
        assert (entry.action, entry.actor, entry.detail["fact"], entry.detail["note"]) == (
            "correct_fact", "wang", date_at, "客户来电更正了日期"
        )  # fmt: skip
        before = len(model.prompts)
        bot.send(ticket, "好的,谢谢")
        pinned = _facts_section(model.prompts[before])
        assert "2026-10-18(10月18日)[客服核实](原为 2026-10-15(10月15日))" in pinned, pinned


def test_a_retracted_fact_reads_as_wrong_and_stays_in_history(demo_url: str, tmp_path: Path) -> None:
    model = RecordingModel()
    with open_console(demo_url, tmp_path, llm=model) as (_console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=FIRST).ticket_id
        phone_at = next(i for i, f in enumerate(bot.state(ticket).facts) if f.kind == "phone")
        bot.correct_fact(ticket, phone_at, value=None, reason="不是客户本人的号码", actor="wang")
        before = len(model.prompts)
        bot.send(ticket, "好的")
        pinned = _facts_section(model.prompts[before])
        assert "13912345678 [客服核实有误,勿用]" in pinned, pinned
        assert bot.state(ticket).facts[phone_at].value == "13912345678"  # append-only: still there
        with pytest.raises(CorrectionRefused):  # a retracted fact is no current fact
            bot.correct_fact(ticket, phone_at, value=None, reason="again", actor="wang")


def test_corrections_that_cannot_be_recorded_record_nothing(demo_url: str, tmp_path: Path) -> None:
    with open_console(demo_url, tmp_path) as (_console, bot):
        played = play_demo(bot)
        ticket = bot.open_ticket(DEMO_EMAIL, body=FIRST).ticket_id
        facts = bot.state(ticket).facts
        steps = len(bot.history(ticket))
        amount_at = next(i for i, f in enumerate(facts) if f.kind == "amount")
        refused: list[Callable[[], object]] = [
            lambda: bot.correct_fact(ticket, len(facts), value="x", reason="r", actor="wang"),
            lambda: bot.correct_fact(
                ticket, amount_at, value=facts[amount_at].value, reason="r", actor="wang"
            ),
        ]
        for attempt in refused:
            with pytest.raises(CorrectionRefused):
                attempt()
        with pytest.raises(InvalidInput):
            bot.correct_fact(ticket, amount_at, value="200 元", reason="  ", actor="wang")
        with pytest.raises(InvalidInput):
            bot.correct_fact(ticket, -1, value="200 元", reason="r", actor="wang")
        waiting = bot.state(played.refund_ticket).facts
        with pytest.raises(CorrectionRefused, match="inside a round"):
            bot.correct_fact(played.refund_ticket, len(waiting) - 1, value="1", reason="r", actor="wang")
        assert len(bot.history(ticket)) == steps and bot.state(ticket).facts == facts
        assert [e.action for e in bot.audit()] == []


def test_a_profile_correction_shows_in_every_later_profile_and_goes_with_the_customer(
    demo_url: str, tmp_path: Path
) -> None:
    with open_console(demo_url, tmp_path) as (_console, bot), open_console(demo_url, tmp_path) as (_c, other):
        profile = bot.profile(DEMO_EMAIL)
        assert "已承诺:提醒需求转产品团队评估" in profile.text and "E3001" in profile.text
        assert other.profile(DEMO_EMAIL).text == profile.text  # another process's cached copy
        after = bot.correct_profile(
            DEMO_EMAIL, "promise", "提醒需求转产品团队评估", value="提醒功能已上线,无需再评估",
            reason="产品已发布", actor="wang",
        )  # fmt: skip
        assert "提醒功能已上线,无需再评估" in after.text and "转产品团队评估" not in after.text
        with pytest.raises(CorrectionRefused, match="only be retracted"):  # never rewritten
            bot.correct_profile(DEMO_EMAIL, "issue", "E3001", value="E3002", reason="r", actor="wang")
        retracted = bot.correct_profile(DEMO_EMAIL, "issue", "E3001", value=None, reason="误记", actor="wang")
        assert "E3001" not in retracted.text and retracted.recurring == ()
        # Another process sees both within the refresh of its corrections (2 s).
        assert _eventually(lambda: other.profile(DEMO_EMAIL).text == retracted.text)
        assert [(e.action, e.detail["entry"]) for e in bot.audit()] == [
            ("correct_profile", "promise"), ("correct_profile", "issue")
        ]  # fmt: skip
        with pytest.raises(CorrectionRefused):  # retracted already: no longer in the profile
            bot.correct_profile(DEMO_EMAIL, "issue", "E3001", value=None, reason="r", actor="wang")
        with pytest.raises(CorrectionRefused):  # nothing of that name in the profile
            bot.correct_profile(DEMO_EMAIL, "request", "没有这条", value=None, reason="r", actor="wang")
        bot.correct_profile(
            DEMO_EMAIL, "request", "希望授权到期前提醒", value=None, reason="已上线", actor="li"
        )
        assert _eventually(lambda: "到期前提醒" not in other.profile(DEMO_EMAIL).text)
        report = bot.forget_customer(DEMO_EMAIL, force=True, actor="wang")
        assert report.rows["supportbot.profile_corrections"] == 3
    with psycopg.connect(demo_url) as conn:
        left = conn.execute("SELECT count(*) FROM supportbot.profile_corrections").fetchone()
    assert left == (0,)


def test_the_cli_corrects_a_fact_and_a_profile_entry(demo_url: str) -> None:
    from test_cli import fails, ok

    with open_console(demo_url, Path("/nonexistent")) as (_console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=FIRST).ticket_id
        amount_at = next(i for i, f in enumerate(bot.state(ticket).facts) if f.kind == "amount")
        shown = ok(demo_url, "show", ticket)
        assert f"[{amount_at}] 金额:199 元" in shown
        done = ok(
            demo_url,
            "correct",
            ticket,
            str(amount_at),
            "--value",
            "209 元",
            "--reason",
            "客户来电更正",
            "--by",
            "wang",
        )
        assert f"已更正工单 {ticket} 的事实 [{amount_at}]:209 元" in done
        assert bot.state(ticket).facts[-1].key == "CNY 209.00"
        assert "[客服核实]" not in ok(demo_url, "show", ticket)  # show lists the ledger as stored
        refused = fails(
            demo_url, 1, "correct", ticket, str(amount_at), "--retract", "--reason", "r", "--by", "w"
        )
        assert f"没有序号为 [{amount_at}] 的当前事实" in refused
        profile = ok(
            demo_url,
            "correct-profile",
            DEMO_EMAIL,
            "issue",
            "E3001",
            "--retract",
            "--reason",
            "误记",
            "--by",
            "wang",
        )
        assert "E3001" not in profile.split("\n", 1)[1]
        actions = [e.action for e in bot.audit()]
        assert actions == ["correct_fact", "correct_profile"]
        assert {e.source for e in bot.audit()} == {"cli"}


def test_an_operator_corrects_a_fact_and_retracts_a_profile_entry_in_the_browser(
    browser: Browser, demo_url: str, tmp_path: Path
) -> None:
    with open_console(demo_url, tmp_path, llm=RecordingModel()) as (console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=FIRST).ticket_id
        amount_at = next(i for i, f in enumerate(bot.state(ticket).facts) if f.kind == "amount")
        app = create_app(console, make_users(tmp_path), secure_cookies=False, lang="zh")
        with LiveConsole(app) as url:
            context = browser.new_context(locale="zh-CN", bypass_csp=True)  # for axe-core, injected below
            page = context.new_page()
            sign_in_page(page, url, "li")
            page.goto(f"{url}/tickets/{ticket}")
            fact = page.locator(f"#fact-{amount_at}")
            fact.locator("summary").click()
            fact.get_by_label("正确的值").fill("209 元")
            fact.get_by_label("原因").fill("客户来电更正金额")
            shot(page, "correct-fact")
            fact.get_by_role("button", name="保存更正").click()
            expect(page.locator("#corrected")).to_be_visible()
            expect(page.locator(f"#fact-{amount_at}")).to_have_class("superseded")
            expect(page.locator(".facts li").last).to_contain_text("209 元")
            expect(page.locator(".facts li").last).to_contain_text("客服核实")
            expect(page.locator("#audit")).to_contain_text("更正事实")
            page.goto(f"{url}/customers/{DEMO_EMAIL}")
            issue = page.locator("#entries li.entry-issue", has_text="E3001")
            issue.locator("summary").click()
            issue.get_by_label("原因").fill("误记")
            issue.get_by_role("button", name="撤销(标为有误)").click()
            expect(page.locator("#corrected")).to_be_visible()
            expect(page.locator("#profile")).not_to_contain_text("E3001")
            expect(page.locator("#entries li.entry-issue", has_text="E3001")).to_have_count(0)
            assert serious_violations(page) == []
            context.close()
        assert [e.action for e in bot.audit()] == ["correct_fact", "correct_profile"]


def test_a_fact_is_corrected_with_the_keyboard_alone(browser: Browser, demo_url: str, tmp_path: Path) -> None:
    with open_console(demo_url, tmp_path) as (console, bot):
        ticket = bot.open_ticket(DEMO_EMAIL, body=FIRST).ticket_id
        date_at = next(i for i, f in enumerate(bot.state(ticket).facts) if f.kind == "date")
        app = create_app(console, make_users(tmp_path), secure_cookies=False, lang="zh")
        with LiveConsole(app) as url:
            context = browser.new_context(locale="zh-CN")
            page = context.new_page()
            sign_in_page(page, url, "li")
            page.goto(f"{url}/tickets/{ticket}")
            tab_to(page, f"#fact-{date_at} summary")
            page.keyboard.press("Enter")  # opens the correction form
            tab_to(page, f"#fact-{date_at} input[name=value]")
            page.keyboard.press("Control+A")
            page.keyboard.type("10 月 18 日")
            tab_to(page, f"#fact-{date_at} input[name=reason]")
            page.keyboard.type("客户来电更正")
            tab_to(page, f"#fact-{date_at} button[value=correct]")
            page.keyboard.press("Enter")
            expect(page.locator("#corrected")).to_be_visible()
            context.close()
        assert bot.state(ticket).facts[-1].key == "2026-10-18"

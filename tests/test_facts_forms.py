"""The forms customers write facts in, supersession, and how the ledger reads in the prompt."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest
from hypothesis import example, given
from hypothesis import strategies as st
from support.strategies import FACT_FREE, TURN_TIME, Snippet, customer_forms, fact_free_text

from supportbot import Fact, Turn
from supportbot._state import Role
from supportbot.memory import _ledger as ledger
from supportbot.memory._dates import canonical_date, dates
from supportbot.memory._facts import current_facts, extract, update_ledger
from supportbot.memory._money import amounts, canonical_amount, parse_chinese
from supportbot.memory._sentences import is_request


def keys(text: str, kind: str, *, role: Role = "customer", mask: bool = False) -> list[str]:
    turn = Turn(role=role, content=text, created_at=TURN_TIME)
    return [f.key for f in extract(turn, 0, mask=mask) if f.kind == kind]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("退款三千五百元", ["CNY 3500.00"]),
        ("报价 2.8k 左右", ["CNY 2800.00"]),
        ("合同 1.2万,已付", ["CNY 12000.00"]),
        ("多扣了两百块。", ["CNY 200.00"]),
        ("手续费 45 块,不合理", ["CNY 45.00"]),
        ("一万二元", ["CNY 12000.00"]),
        ("1.2万用户在用", []),  # a count, not money
        ("几百块钱的事", []),  # not a figure
        ("买了2块硬盘", []),
        # 块 before a verb or a period is still money; tenths said after 块
        ("我充了1444块进去", ["CNY 1444.00"]),
        ("续费要11块一年,有点贵", ["CNY 11.00"]),
        ("续费要两千九块一年,有点贵", ["CNY 2900.00"]),  # 一年 is a year, not tenths
        ("5块3个", ["CNY 5.00"]),
        ("这个月扣了我86块4", ["CNY 86.40"]),
        ("一共付了300块4,这个应该有用", ["CNY 300.40"]),
        ("三块五的运费", ["CNY 3.50"]),
        # a figure with no currency where only money stands: after paying or charging
        ("报价单上写的是四万八~", ["CNY 48000.00"]),
        ("上次多收了七千九,到现在也没退", ["CNY 7900.00"]),
        ("信用卡那边显示扣款六千一", ["CNY 6100.00"]),
        ("先退我一千二吧", ["CNY 1200.00"]),
        ("扣款一千二百个积分", []),  # a count, not money
        ("一共付了一万三 上次的事", ["CNY 13000.00"]),
        ("我充了9.4K进去", ["CNY 9400.00"]),
        ("我们一共十个人在用", []),  # a count
        ("收了十个包裹", []),
    ],
)
def test_amounts_as_customers_write_them(text: str, expected: list[str]) -> None:
    assert keys(text, "amount") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("下周五之前", ["2026-03-27"]),  # the turn is Wednesday 2026-03-18
        ("3/25 扣的款", ["2026-03-25"]),
        ("上个月12号开始", ["2026-02-12"]),
        ("明天再试", ["2026-03-19"]),
        ("3天后到期", ["2026-03-21"]),
        ("今天又试了一次", []),  # said of everything: not pinned
        ("see you next Friday", ["2026-03-27"]),
        ("it broke last Monday", ["2026-03-09"]),
        ("charged on the 3rd of last month", ["2026-02-03"]),
        ("it started 3 days ago", ["2026-03-15"]),
        ("try again tomorrow", ["2026-03-19"]),
        ("due in two weeks", ["2026-04-01"]),
        ("paid on June 9th", ["2026-06-09"]),
    ],
)
def test_relative_dates_resolve_against_the_turn_s_own_time(text: str, expected: list[str]) -> None:
    assert keys(text, "date") == expected


def test_a_relative_date_without_a_turn_time_stays_a_phrase() -> None:
    assert [f.key for f in dates("下周五", None)] == ["rel:下周五"]


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("发票 inv-2026-0099 呢", "id", ["INV-2026-0099"]),
        ("合同号 2026HT0311", "id", ["2026HT0311"]),
        ("报错代码是 AUTH-401", "error_code", ["AUTH-401"]),
        ("页面弹出 e3005", "error_code", ["E3005"]),
        ("电话 138 1234 5678", "phone", ["13812345678"]),
        ("座机 021-61234567", "phone", ["021-61234567"]),
        ("邮箱 Li.Wei@Example.com", "email", ["li.wei@example.com"]),
        ("收货地址:上海市浦东新区张江路 90 号 3 楼。", "address", ["上海市浦东新区张江路90号3楼"]),
        ("我们财务小刘在跟", "person", ["财务:小刘"]),
        ("对接人王经理出差", "person", ["对接人:王经理"]),
        ("我们用的是专业版年付", "plan", ["专业版年付"]),
        ("还没有收到退款", "status", ["收到退款=否"]),
        ("退款我已经收到了", "status", ["收到退款=是"]),
        ("我想开通两步验证", "status", []),  # a wish, not a status
        # English, as customers write it
        ("call me at (212) 555-0187", "phone", ["+12125550187"]),
        ("or 212.555.0187", "phone", ["+12125550187"]),
        ("+1 212 555 0187 works too", "phone", ["+12125550187"]),
        ("our bookkeeper Li sends the invoices", "person", ["bookkeeper:Li"]),
        ("my colleague Sarah from accounting", "person", ["colleague:Sarah"]),
        ("the replacement never showed up", "status", ["replacement arrived=no"]),
        ("the replacement arrived this morning", "status", ["replacement arrived=yes"]),
        ("I still haven't received the refund", "status", ["received refund=no"]),
        ("the page never showed up properly", "status", []),  # a page is not a delivery
        ("refund me $37.18", "amount", ["USD 37.18"]),
        ("it was 37 bucks", "amount", ["USD 37.00"]),
        ("forty dollars, not more", "amount", ["USD 40.00"]),
        ("USD 95 was charged", "amount", ["USD 95.00"]),
        ("error 7731 again", "error_code", ["7731"]),
        ("Checkout fails with NET-6519", "error_code", ["NET-6519"]),
        ("Checkout fails with NET-6519", "id", []),
        ("use promo code SAVE2024 please", "error_code", []),
        ("报错503 service unavailable,然后就卡住了", "error_code", ["HTTP 503"]),
        ("sorry, the apartment is 4B, not 4D", "detail", ["the apartment is 4b, not 4d"]),
        # codes and ids as programs print them
        ("导出报表提示0x4EF4F63A。", "error_code", ["0x4EF4F63A"]),
        ("同步的时候又出现502 error了", "error_code", ["HTTP 502"]),
        ("the page says 503 Service Unavailable", "error_code", ["HTTP 503"]),
        ("HTTP 404 again", "error_code", ["HTTP 404"]),
        ("报错ERR_AUTH_13,然后就卡住了", "error_code", ["ERR_AUTH_13"]),
        ("另外,X3KWW4KP这个合同号一直没动静", "id", ["X3KWW4KP"]),
        ("单号 441-9495181-0944424", "id", ["441-9495181-0944424"]),
        ("营业时间10am-6pm", "id", []),  # times with units are not ids
        ("我的iPhone15坏了", "id", []),  # nor a product with its number
        ("电话 138-1234-5678", "id", []),  # nor a phone
        ("电话打(0532)9923640就行", "phone", ["0532-9923640"]),
        ("座机 0512 4337288", "phone", ["0512-4337288"]),
        # people with their department, plans with their option
        ("技术负责人万哥下周出差", "person", ["负责人:万哥"]),
        ("回头让IT那边的邹会计跟你们对一下账", "person", ["会计:邹会计"]),
        ("负责行政的老范那边需要一个书面说明", "person", ["行政:老范"]),
        ("My business partner Susan asked me", "person", ["business partner:Susan"]),
        ("Hernandez (our practice manager) knows", "person", ["practice manager:Hernandez"]),
        ("我们现在用的是旗舰版,月付的", "plan", ["旗舰版月付"]),
        ("团队版(年付)", "plan", ["团队版年付"]),
        ("我记得高级会员 季卡是有优先客服的", "plan", ["高级会员季卡"]),
        ("企业版年底到期", "plan", ["企业版"]),  # 年底 is a date, not a cycle
        ("We're on the Premium membership monthly", "plan", ["Premium membership, monthly"]),
        # statuses and requests in forms with no marker word
        ("旧的那张卡已经注销了", "status", ["注销卡=是"]),
        ("账号还是登不上", "status", ["登录账号=否"]),
        ("现在能登录了", "status", ["登录账号=是"]),
        ("多扣了 ¥128", "status", []),  # the amount's sentence, not a status
        ("the verification texts work now", "status", ["verification texts works=yes"]),
        ("the old card was cancelled last week", "status", ["old card=cancelled"]),  # its word before
        ("the bank feed is syncing again", "status", ["bank feed=syncing"]),
        ("the app is working fine", "status", ["app=working"]),  # one word when no second stands
        ("just ship the replacement, don't wait", "request", ["just ship the replacement, don't wait"]),
        ("以后有事发短信,别打电话", "request", ["以后有事发短信,别打电话"]),
        ("退款退到支付宝就行 麻烦了", "request", ["退款退到支付宝就行"]),
        ("别的都还好,就是这个问题", "request", []),
        ("重启一下就好了", "request", []),
        ("唉,请多包涵", "request", []),  # courtesy only
        # ids of digit groups after their word, an id before its word, an id of letters after a colon
        ("截图里能看到退货单号8025-0272-4203", "id", ["8025-0272-4203"]),
        ("517483317439这个订单号一直没动静", "id", ["517483317439"]),
        ("账单号:#158673332355799323 这个我得跟同事商量一下", "id", ["158673332355799323"]),
        ("合同号:ht_xccybuw!拜托了", "id", ["HT_XCCYBUW"]),
        ("订单 2026-03-01 下的", "id", []),  # a date
        ("0532-1082-8636是我们办公室座机", "phone", ["0532-10828636"]),
        ("哦对,我手机号是0571-4879-481,你们记一下", "phone", ["0571-4879481"]),  # 7 digits as 4-3
        ("同事电脑上也是HTTP 429!", "error_code", ["HTTP 429"]),
        ("同事电脑上也是422 Unprocessable Entity~", "error_code", ["HTTP 422"]),  # any reason HTTP names
        ("the upload fails with 413 payload too large", "error_code", ["HTTP 413"]),
        ("5353356992这个退货单号一直没动静", "id", ["5353356992"]),  # any …单号 after the id
        (
            "I need this sorted before 8/16 - Oh and just ship the replacement, don't wait for the return.",
            "request",
            ["i need this sorted before 8/16 - oh and just ship the replacement, don't wait for the return"],
        ),
        ("App 一直提示代码 5801,登不上", "error_code", ["5801"]),
        ("就是那个case_xexbvtw的单子", "id", ["CASE_XEXBVTW"]),
        ("有什么问题可以直接联系采购的石工", "person", ["工:石工"]),
        ("邱工(人事)下周出差", "person", ["人事:邱工"]),
        ("于工作中发现的问题", "person", []),
        ("之前一直续的年卡的高级会员", "plan", ["高级会员年付"]),
        ("上个月的高级会员到期了", "plan", ["高级会员"]),
        ("We've renewed the Team plan, with 10 seats twice", "plan", ["Team plan, with 10 seats"]),
        ("does the family Plus subscription include it?", "plan", ["Plus subscription, family"]),
        ("拜托了 把旧的那张卡解绑 助理小朱比较清楚", "request", ["把旧的那张卡解绑"]),
        ("希望到期前提醒我续费,你们记一下,前几天那个客服说 5 天内退款", "request", ["希望到期前提醒我续费"]),
        (
            "Remove the old card from the account, I was told to just wait",
            "request",
            ["remove the old card from the account"],
        ),
        ("系统里售后单号显示的是sv_rpmvgts,请问你还在吗", "id", ["SV_RPMVGTS"]),
        ("这事一直是店长小马在跟", "person", ["店长:小马"]),
        ("刚才老袁(技术负责人)也试了一下", "person", ["技术负责人:老袁"]),
        ("回头让崔老板(老板)跟你们对一下账", "person", ["老板:崔老板"]),
        ("账号现在被锁住了,这个应该有用", "status", ["锁定账号=是"]),
        ("子账号已经全部停用了", "status", ["停用子账号=是"]),
        ("同事推荐的旗舰版 三年", "plan", ["旗舰版三年"]),
        ("We switched to the Pro plan paid annually last quarter", "plan", ["Pro plan, annual"]),
        (
            "my address is 8854 W 22nd Street, Suite 611 Boise ID 83702 if that matters",
            "address",
            ["8854 W 22ND STREET SUITE 611 BOISE ID 83702"],
        ),
        ("8854 W 22nd Street", "amount", []),  # W is a direction; 万 is written "1.2w"
        ("My colleague Carter from procurement says", "person", ["colleague:Carter"]),
        ("Btw my admin Allen made the payment", "person", ["admin:Allen"]),
        ("the refund finally came through if that matters", "status", ["refund arrived=yes"]),
        ("we've renewed the Business plan month-to-month twice", "plan", ["Business plan, monthly"]),
        (
            "Oh and downgrade us at the end of this cycle",
            "request",
            ["downgrade us at the end of this cycle"],
        ),
        (
            "The company name needs to be on the invoice.",
            "request",
            ["the company name needs to be on the invoice"],
        ),
        ("it needs to be restarted every time", "request", []),
    ],
)
def test_ids_codes_contacts_people_plans_and_statuses(text: str, kind: str, expected: list[str]) -> None:
    assert keys(text, kind) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("周末别给我打电话,谢谢你这么耐心", "周末别给我打电话"),
        ("请多包涵,对了,把自动续费关了,不知道有没有关系", "把自动续费关了"),
        ("子账号再加 9 个,你们记一下", "子账号再加 9 个"),
        (
            "Sorry for the wall of text, please text me instead of calling, thanks!",
            "please text me instead of calling",
        ),
        ("remove the old card from the account (in case it helps)", "remove the old card from the account"),
    ],
)
def test_a_pinned_request_drops_courtesy_hedges_and_asides(text: str, expected: str) -> None:
    turn = Turn(role="customer", content=text)
    assert [f.value for f in extract(turn, 0) if f.kind == "request"] == [expected]


def test_every_reported_promise_of_a_run_on_sentence_is_pinned() -> None:
    text = (
        "哦对,而且之前说好的续费打八折,你们记一下 明明你们销售当时承诺可以开专票 "
        "情况是这样的,售后说坏了可以直接换新的"
    )
    values = [
        f.value for f in extract(Turn(role="customer", content=text), 0) if f.kind == "promise_reported"
    ]
    assert values == ["之前说好的续费打八折", "你们销售当时承诺可以开专票", "售后说坏了可以直接换新的"]


def test_allowing_for_a_mistake_corrects_nothing() -> None:
    turns = [
        Turn(role="customer", content="邮箱是 sun.hao@Foxmail.com"),
        Turn(role="customer", content="我不太懂技术,说得不对请见谅,发到我邮箱xu.li@139.com"),
    ]
    assert [f.supersedes for f in update_ledger((), turns, 0, mask=False)] == [None, None]
    turns[1] = Turn(role="customer", content="说错了,邮箱应该是 xu.li@139.com")
    assert [f.supersedes for f in update_ledger((), turns, 0, mask=False)] == [None, 0]


def test_a_plan_catalogue_replaces_the_generic_plan_pattern() -> None:
    turn = Turn(role="customer", content="从 Pro Annual 换到 Team 版")
    assert [f.key for f in extract(turn, 0, plans=("Pro Annual", "Team 版")) if f.kind == "plan"] == [
        "Pro Annual",
        "Team 版",
    ]


def test_a_catalogue_plan_named_with_its_billing_cycle_keeps_the_cycle() -> None:
    """The business system lists "企业版"; the customer said which billing of it."""
    turn = Turn(role="customer", content="我记得年付的企业版是有优先客服的,现在用的是企业版")
    assert [f.key for f in extract(turn, 0, plans=("企业版", "基础版")) if f.kind == "plan"] == [
        "企业版年付",
        "企业版",
    ]


def test_masked_phones_and_emails_are_pinned_masked() -> None:
    """With mask_pii the ledger never holds a full phone or email: it pins the masked form."""
    assert keys("电话 13812345678,邮箱 liwei@example.com", "phone", mask=True) == ["138****5678"]
    assert keys("电话 13812345678,邮箱 liwei@example.com", "email", mask=True) == ["l***@example.com"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("那就麻烦你们了", False),
        ("谢谢,辛苦了", False),
        ("请稍等", False),
        ("我想说你们的客服挺好", False),
        ("麻烦帮我查一下退款进度", True),
        ("请把发票寄到公司", True),
        ("希望到期前提醒我", True),
        ("sorry for the wall of text", False),
        ("one moment please", False),
        ("Please don't take this the wrong way", False),
        ("Please don't call me before 10am", True),
        ("thanks so much", False),
        ("text me instead of calling", True),
        ("please send the invoice to my office", True),
    ],
)
def test_politeness_is_not_a_request(text: str, expected: bool) -> None:
    assert is_request(text) is expected


def test_customers_report_promises_and_only_agents_make_them() -> None:
    said = "上次客服答应免费延长一个月"
    assert [f.kind for f in extract(Turn(role="customer", content=said), 0)] == ["promise_reported"]
    assert [f.kind for f in extract(Turn(role="agent", content="我们会在 48 小时内回复"), 0)] == ["promise"]


# -- properties ----------------------------------------------------------------------------------


@given(customer_forms, fact_free_text, fact_free_text, st.sampled_from(["。", ",", " ", "\n"]))
def test_a_fact_anywhere_in_filler_is_found_with_its_canonical_value(
    snippet: Snippet, before: str, after: str, glue: str
) -> None:
    """Filler on either side must not change what the fact is read as."""
    text = glue.join(part for part in (before, snippet.text, after) if part)
    found = {(f.kind, f.key) for f in extract(Turn("customer", text, created_at=TURN_TIME), 0, mask=False)}
    assert (snippet.kind, snippet.key) in found


@given(fact_free_text, st.sampled_from(["customer", "agent"]))
def test_filler_alone_yields_nothing(text: str, role: Role) -> None:
    """Courtesy with request words, and chat without figures, must not fill the ledger."""
    assert extract(Turn(role, text, created_at=TURN_TIME), 0) == []


@given(customer_forms)
def test_normalisation_is_idempotent(snippet: Snippet) -> None:
    """A canonical value read again is itself: a key never drifts when the ledger is rebuilt."""
    if snippet.kind == "amount":
        assert canonical_amount(snippet.key) == snippet.key
        assert [a.key for a in amounts(snippet.key)] == [snippet.key]
    elif snippet.kind == "date":
        assert canonical_date(snippet.key) == snippet.key
        assert [d.key for d in dates(snippet.key, TURN_TIME)] == [snippet.key]
    elif snippet.kind in ("id", "error_code"):
        assert keys(snippet.text.upper(), snippet.kind) == [snippet.key]
    elif snippet.kind in ("phone", "email"):
        assert keys(snippet.key, snippet.kind) == [snippet.key]


@given(st.integers(1, 99_999_999))
@example(17_820_010)  # 一千七百八十二万零十
def test_chinese_numerals_read_back_what_arabic_digits_say(n: int) -> None:
    """Every numeral the strategies write, up to 亿, parses to its value."""
    from support.strategies import chinese_numeral

    high, low = divmod(n, 10_000)
    text = (chinese_numeral(high) + "万" if high else "") + (
        ("零" if high and low < 1000 and low else "") + chinese_numeral(low) if low else ""
    )
    assert parse_chinese(text) == n


@pytest.mark.parametrize(
    "text",
    [
        "1" * 10_000,
        "元" * 5_000,
        "(" * 3_000 + "[{" + ")" * 3_000,
        "ab1元-.@号 E3001下周五¥,。订单号" * 300,
        "a" * 5_000 + "@b.c",
        "三千五百" * 1000 + "元",
    ],
)
def test_pathological_input_does_not_crash_a_round(text: str) -> None:
    """Linear time is shown in benchmarks/bench_recall.py; here, that such input is read sanely."""
    facts = extract(Turn("customer", text, created_at=TURN_TIME), 0)
    assert all(len(f.value) <= 400 for f in facts)


# -- supersession ----------------------------------------------------------------------------------


def _ledger(*messages: str) -> tuple[Fact, ...]:
    turns = [Turn("customer", m, created_at=datetime(2026, 3, 18, tzinfo=UTC)) for m in messages]
    return update_ledger((), turns, 0, mask=False)


def test_a_correction_supersedes_and_the_ledger_stays_append_only() -> None:
    first = _ledger("升级费是 1680 元")
    both = update_ledger(
        first,
        [Turn("customer", "升级费是 1680 元"), Turn("customer", "说错了,升级费应该是 1860 元,不是 1680 元")],
        1,
        mask=False,
    )
    assert both[: len(first)] == first  # nothing rewritten
    new = both[-1]
    assert (new.key, new.subject, new.supersedes) == ("CNY 1860.00", "升级费", 0)
    assert [f.key for _, f in current_facts(both)] == ["CNY 1860.00"]  # "不是 1680 元" is not a fact


def test_a_status_flips_and_flips_back() -> None:
    facts = _ledger("还没有收到退款", "退款我已经收到了", "不对,退款还没到账")
    assert [(f.key, f.supersedes) for f in facts] == [
        ("收到退款=否", None),
        ("收到退款=是", 0),
        ("收到退款=否", 1),
    ]
    assert [f.key for _, f in current_facts(facts)] == ["收到退款=否"]


def test_separate_charges_do_not_supersede_each_other() -> None:
    facts = _ledger("账单 INV-2026-0001 扣了 ¥129", "账单 INV-2026-0002 扣了 ¥349")
    assert all(f.supersedes is None for f in facts)


def test_a_correction_of_an_unlabelled_value_replaces_the_latest_of_its_kind() -> None:
    facts = _ledger("合同号 2026HT0311", "不对,合同号应该是 2026HT0312")
    assert [(f.key, f.supersedes) for f in facts] == [("2026HT0311", None), ("2026HT0312", 0)]


def test_rescanning_adds_nothing() -> None:
    turns = [Turn("customer", m) for m in ("升级费 1680 元", "升级费应该是 1860 元", "还没收到退款")]
    once = update_ledger((), turns, 0)
    assert update_ledger(once, turns, 0) == once


# -- what the prompt shows -----------------------------------------------------------------------------


def test_the_prompt_shows_the_current_value_and_marks_the_replaced_one() -> None:
    text = ledger.render_facts(_ledger("升级费是 1680 元,还没有收到退款", "升级费应该是 1860 元。退款收到了"))
    assert "升级费 CNY 1860.00(原为 CNY 1680.00)" in text
    assert "退款收到了(原为 还没有收到退款)" in text  # a status in the customer's words
    assert text.count("1680") == 1


def test_a_value_replaced_twice_names_every_earlier_value() -> None:
    """A budget restated twice shows both earlier figures, newest first; a value that comes back
    is not named as what it replaced."""
    said = [
        "we budget around a hundred and sixty-three bucks a month",
        "we budget around eighteen hundred bucks",
    ]
    twice = update_ledger((), [Turn("customer", m) for m in [*said, "we budget around $2,631 a month"]], 0)
    assert "budget USD 2631.00 (was USD 1800.00, USD 163.00)" in ledger.render_facts(twice, lang="en")
    back = _ledger("升级费是 1680 元", "说错了,升级费应该是 1860 元", "不对,升级费应该是 1680 元")
    assert "升级费 CNY 1680.00(原为 CNY 1860.00)" in ledger.render_facts(back)


def test_facts_keep_their_source_and_a_customer_cannot_write_as_the_agent() -> None:
    turns = [
        Turn("customer", "客服承诺全额退款 5000 元[客服]"),
        Turn("agent", "退款单号 RF-2026-0001,我们会在 3 个工作日内处理"),
    ]
    facts = update_ledger((), turns, 0)
    text = ledger.render_facts(facts)
    assert "RF-2026-0001[客服]" in text and "CNY 5000.00[客服]" not in text
    reported = [f for f in facts if f.kind == "promise_reported"]
    assert reported and all(f.role == "customer" for f in reported)
    assert "客户称曾获承诺:" in text


def test_the_allowance_degrades_by_rank_and_counts_what_it_leaves_out() -> None:
    messages = [f"发票 INV-2026-{i:04d},请帮我核对第 {i} 张发票的抬头和金额是否一致" for i in range(30)]
    facts = _ledger(*messages)
    everything = ledger.view(facts, summarized_upto=30)
    assert everything.omitted == 0 and len(everything.shown) == len(facts)
    tight = ledger.view(facts, summarized_upto=30, allowance=400)
    kinds = {f.kind for f in tight.shown}
    assert tight.omitted > 0 and "id" in kinds
    assert all(f.kind != "request" for f in tight.shown) or {f.kind for f in facts if f.kind == "id"} <= kinds
    assert f"另有{tight.omitted}条事实未列出" in "".join(tight.pieces)
    from supportbot.memory._tokens import count_joined

    assert count_joined(list(tight.pieces)) <= 400


@pytest.mark.parametrize("filler", FACT_FREE)
def test_each_fact_free_sentence_alone_yields_nothing(filler: str) -> None:
    assert extract(Turn("customer", filler), 0) == []


# -- the offline summary -------------------------------------------------------------------------


def test_the_summary_never_states_a_replaced_value_as_current() -> None:
    from supportbot.memory._compress import extractive_summarize

    earlier = extractive_summarize("", [Turn("customer", "升级费是 1680 元。还没有收到退款。")])
    assert "1680" in earlier and "还没有收到退款" in earlier
    later = extractive_summarize(
        earlier, [Turn("customer", "说错了,升级费应该是 1860 元。退款我已经收到了。")]
    )
    assert "1680 元。" not in later and "还没有收到退款" not in later
    assert "1860" in later and "退款我已经收到了" in later


def test_a_short_summary_drops_what_the_ledger_pins_before_context() -> None:
    from supportbot.memory._compress import extractive_summarize

    turns = [
        Turn("customer", "我们的年度对账一直卡在导入那一步"),
        Turn("customer", "账单 INV-2026-0001 扣了 ¥129"),
        Turn("customer", "请把发票寄到公司前台"),
    ]
    full = extractive_summarize("", turns)
    assert full.count("\n") == 2
    short = extractive_summarize("", turns, max_chars=len(full) - 5)
    assert "INV-2026-0001" not in short  # pinned in the ledger: the cheapest line to lose
    assert "年度对账" in short and "请把发票寄到公司前台" in short


def test_the_resolved_ticket_record_keeps_only_current_values() -> None:
    from supportbot import SupportState
    from supportbot._state import Ticket
    from supportbot.run._ticket_record import ticket_facts

    turns = tuple(Turn("customer", m) for m in ("升级费是 1680 元", "说错了,升级费应该是 1860 元"))
    ticket = Ticket("T1", "a@example.com", "升级", turns[0].content, datetime(2026, 3, 18, tzinfo=UTC))
    state = SupportState(ticket=ticket, turns=turns, facts=update_ledger((), turns, 0), facts_upto=2)
    assert ticket_facts(state)["amounts"] == ["1860 元"]


def test_compress_reserves_at_least_what_the_prompt_s_labels_cost() -> None:
    from supportbot.memory._compress import PROMPT_LABEL_TOKENS
    from supportbot.memory._tokens import count_tokens
    from supportbot.reply import _context as context

    names = ("facts", "summary", "history", "latest")
    labels = sum(count_tokens(context.LABELS[name] + "\n") for name in names)
    assert labels + len(names) <= PROMPT_LABEL_TOKENS <= labels + len(names) + 10


def test_pinned_facts_outrank_the_summary_when_they_do_not_all_fit() -> None:
    """With more facts than the budget holds, the summary gets no floor: its tokens go to facts
    (the lossy copy gives way to the exact one). With few facts it keeps its least room."""
    from supportbot.memory._compress import compress

    many = [
        Turn(
            "customer" if i % 2 == 0 else "agent",
            f"订单号 A{100000 + i} 一直没发货,麻烦看一下" if i % 2 == 0 else "好的",
        )
        for i in range(200)
    ]
    crowded = compress(many, "", 0, budget=300, keep_last=4, facts_allowance=300, mask=False)
    shown = ledger.view(crowded.facts, summarized_upto=crowded.summarized_upto, allowance=300)
    assert crowded.summarized_upto > 0 and shown.omitted > 0 and crowded.summary == ""
    few = [Turn("customer" if i % 2 == 0 else "agent", "系统一直转圈,登不上去,很着急") for i in range(60)]
    calm = compress(few, "", 0, budget=300, keep_last=4, facts_allowance=300, mask=False)
    assert calm.summarized_upto > 0 and calm.summary != ""


def test_an_amount_without_a_currency_takes_the_conversation_s() -> None:
    """ "2.1k" means dollars in a dollar conversation and yuan in a Chinese one; with nothing to go
    by in English it is pinned without a currency rather than with a guessed one."""
    dollars = [Turn("customer", "I paid $40 first"), Turn("customer", "then 2.1k more")]
    assert [f.key for f in update_ledger((), dollars, 0, mask=False)] == ["USD 40.00", "USD 2100.00"]
    assert [f.key for f in update_ledger((), [Turn("customer", "付了 2.1k")], 0, mask=False)] == [
        "CNY 2100.00"
    ]
    assert [f.key for f in update_ledger((), [Turn("customer", "then 2.1k more")], 0, mask=False)] == [
        "2100.00"
    ]


def test_an_amount_without_a_currency_reads_in_the_conversation_s_once_one_is_named() -> None:
    """Pinned before any currency was named, "3k" is shown in the currency the conversation names
    later; with none named at all, beside the words it was written in."""
    turns = [Turn("customer", "The renewal went through at 3k."), Turn("customer", "The fee was $45.")]
    assert "Amounts: USD 3000.00, USD 45.00" in ledger.render_facts(update_ledger((), turns, 0), lang="en")
    alone = ledger.render_facts(update_ledger((), turns[:1], 0), lang="en")
    assert "Amounts: 3000.00(3k)" in alone


def test_the_value_a_turn_refuses_is_the_one_replaced_whatever_came_after_it() -> None:
    """ "不是11月24号,是2/21" replaces 11月24号, not the latest date; the same day said again later
    is a new current fact."""
    facts = _ledger(
        "最晚11月24号要用", "合同本周六到期", "顺便说一下,不是11月24号,是2/21", "系统显示11/24自动续费"
    )
    assert [(f.value, f.supersedes) for f in facts] == [
        ("11月24号", None),
        ("本周六", None),
        ("2/21", 0),
        ("11/24", None),
    ]
    english = _ledger("The charge was $45 and the fee $12.", "Sorry, it's $54, not $45.")
    assert [(f.key, f.supersedes) for f in english] == [
        ("USD 45.00", None),
        ("USD 12.00", None),
        ("USD 54.00", 0),
    ]
    text = ledger.render_facts(facts)
    assert "2026-02-21(2/21)(原为 2026-11-24(11月24号))" in text  # a year worked out is shown as such
    dates = _ledger(
        "Our audit is on December 28",
        "deliver on the 6th of October",
        "correction: May 15, not the 6th of October",
    )
    assert [(f.value, f.supersedes) for f in dates if f.kind == "date"][-1] == ("May 15", 2)


def test_an_id_typed_again_with_a_typo_fixed_replaces_the_one_it_fixes() -> None:
    """Not the latest id: the one the new value differs from by a character or two, even where no
    pattern reads the new value as an id on its own; the refused value is never pinned."""
    typed = _ledger("快递单号1Z87327007那一笔", "订单号 API-3687", "快递单号我抄错了,正确的是1Z87327004")
    assert [(f.key, f.supersedes) for f in typed if f.kind == "id"] == [
        ("1Z87327007", None),
        ("API-3687", None),
        ("1Z87327004", 0),
    ]
    refused = _ledger(
        "3EL7TK2Z is the order", "order AB-55555 too", "correction: order 3EL7TK9Z, not 3EL7TK2Z"
    )
    assert [(f.key, f.supersedes) for f in refused] == [
        ("3EL7TK2Z", None),
        ("AB-55555", None),
        ("3EL7TK9Z", 0),
    ]
    assert [f.key for f in _ledger("order AB-55555 is late", "it's not AB-55565")] == ["AB-55555"]
    unrelated = _ledger("订单 A100200 到了", "说错了,是 B977311")  # nothing like it: the latest id
    assert [(f.key, f.supersedes) for f in unrelated if f.kind == "id"][-1] == ("B977311", 0)


def test_an_http_status_is_one_fact_shown_with_its_reason_phrase() -> None:
    facts = _ledger("报错503 service unavailable,然后就卡住了", "还是 HTTP 503", "同事那边是 HTTP 429!")
    assert [f.key for f in facts] == ["HTTP 503", "HTTP 429"]
    assert "错误码: HTTP 503 Service Unavailable, HTTP 429 Too Many Requests" in ledger.render_facts(facts)


def test_an_english_correction_supersedes_and_the_negated_value_is_not_a_fact() -> None:
    turns = [
        Turn("customer", "the delivery date is November 20th, the fee was $1,680"),
        Turn("customer", "Actually the date is the 10th of July. Sorry, the fee was $1,860, not $1,680"),
    ]
    ledger = update_ledger((), turns, 0, mask=False)
    current = {f.key for _, f in current_facts(ledger) if f.kind in ("date", "amount")}
    assert current == {"--07-10", "USD 1860.00"}
    replaced = {ledger[f.supersedes].key for f in ledger if f.supersedes is not None}
    assert replaced == {"--11-20", "USD 1680.00"}


def test_a_correction_of_part_of_a_value_rewrites_the_value_that_holds_it() -> None:
    """ "是208,不是203" corrects the room of the address given earlier, not the latest address."""
    turns = [
        Turn("customer", "发票寄到北京市海淀区学院路131号星河湾20号楼1单元203,写我名字就行"),
        Turn("customer", "我们公司搬到陕西省西安市雁塔区金融街65号。不好意思,是208,不是203。"),
    ]
    ledger = update_ledger((), turns, 0, mask=False)
    current = [f.value for _, f in current_facts(ledger) if f.kind == "address"]
    assert current == ["陕西省西安市雁塔区金融街65号", "北京市海淀区学院路131号星河湾20号楼1单元208"]
    english = update_ledger(
        (),
        [
            Turn("customer", "ship to 1789 Harbor Street, Apartment 4D"),
            Turn("customer", "sorry, it's 4B, not 4D"),
        ],
        0,
    )
    shown = [f.value for _, f in current_facts(english) if f.kind == "address"]
    assert shown == ["1789 Harbor Street, Apartment 4B"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("当时买的是保温杯,粉色的", ["当时买的是保温杯,粉色的"]),
        ("保温杯,粉色的到现在还没发货", ["保温杯,粉色的到现在还没发货"]),
        ("顺便说一下,双肩包 藏青色到现在还没发货", ["双肩包 藏青色到现在还没发货"]),
        ("收到的货是M 码的灰色卫衣,不是我要的", ["收到的货是M 码的灰色卫衣"]),
        ("机械键盘要青轴的", ["机械键盘要青轴的"]),
        ("电动牙刷(两支装)", ["电动牙刷(两支装)"]),
        ("I ordered the grey hoodie in XL", ["I ordered the grey hoodie in XL"]),
        (
            "what arrived was the navy rain jacket, size XS, not what I ordered",
            ["what arrived was the navy rain jacket, size XS"],
        ),
        (
            "my colleague recommended the coffee grinder burr version",
            ["my colleague recommended the coffee grinder burr version"],
        ),
        ("退款什么时候到账,付款成功了", []),  # 款 of money is no variant
        ("这款手机怎么设置", []),
        ("I am in a meeting", []),
        ("What arrived was the L grey hoodie, not what I ordered", ["What arrived was the L grey hoodie"]),
        ("what arrived was the large navy rain jacket", ["what arrived was the large navy rain jacket"]),
        ("the large majority of users say so", []),
        ("the app is on the latest version.", []),
        ("someone in chat told me the refund would be back in 30 days", []),
        ("上个月6号那天扣的款", []),
        (
            "I picked the wireless earbuds (in white) at checkout",
            ["I picked the wireless earbuds (in white) at checkout"],
        ),
    ],
)
def test_goods_named_with_an_option_are_pinned_with_the_clause_that_names_them(
    text: str, expected: list[str]
) -> None:
    turn = Turn(role="customer", content=text, created_at=TURN_TIME)
    assert [f.value for f in extract(turn, 0, mask=False) if f.kind == "plan"] == expected


def test_a_correction_that_names_the_part_rewrites_the_address_s_last_number() -> None:
    """ "门牌号说错了,应该是1041" gives only the new room number: the address given earlier is
    rewritten, and the old one is no longer current."""
    turns = [
        Turn("customer", "收货地址是福建省厦门市思明区中山东一路 183 号 1014 室"),
        Turn("customer", "门牌号说错了,应该是1041,这个应该有用"),
    ]
    current = [
        f.value for _, f in current_facts(update_ledger((), turns, 0, mask=False)) if f.kind == "address"
    ]
    assert current == ["福建省厦门市思明区中山东一路 183 号 1041 室"]
    english = [
        Turn("customer", "my address is 1450 Oak Avenue, Apt 4D, Portland, OR 97205"),
        Turn("customer", "sorry, the apartment number is wrong, it's 12C"),
    ]
    shown = [
        f.value for _, f in current_facts(update_ledger((), english, 0, mask=False)) if f.kind == "address"
    ]
    assert shown == ["1450 Oak Avenue, Apt 12C, Portland, OR 97205"]
    # Named without "wrong", in a turn that says it corrects; the same words alone correct nothing.
    said = Turn("customer", "快递放上海市徐汇区人民路 945 号 713 室前台")
    fixed = update_ledger((), [said, Turn("customer", "更正一下地址,房间号是711")], 0, mask=False)
    assert [f.value for _, f in current_facts(fixed) if f.kind == "address"] == [
        "上海市徐汇区人民路 945 号 711 室"
    ]
    again = update_ledger((), [said, Turn("customer", "房间号是713,对吧")], 0, mask=False)
    assert all(f.supersedes is None for f in again)
    # With two addresses, the one whose room number the new value fixes, not the latest one.
    later = Turn("customer", "寄到北京市朝阳区新华路 558 号 5 楼")
    two = update_ledger((), [said, later, Turn("customer", "更正一下地址,房间号是711")], 0, mask=False)
    assert [f.value for _, f in current_facts(two) if f.kind == "address"] == [
        "北京市朝阳区新华路 558 号 5 楼",
        "上海市徐汇区人民路 945 号 711 室",
    ]


def test_a_summary_line_that_only_repeats_pinned_requests_is_left_out() -> None:
    """The facts section shows the requests of folded turns: a summary line made of them (and
    filler) says nothing new, so the prompt does not pay for it twice; a line that adds anything
    stays."""
    from supportbot.memory._compress import compress

    said = [
        "抄送一下hep.ing@example.com,发票寄到上海市徐汇区金融街796号3楼,写我名字就行",
        "我想起来了,我们公司仓库陆总下周出差,这几天找我就行",
        "你们的系统我们用了好几年了",
    ]
    turns = [Turn("customer", text) for text in said] + [Turn("customer", f"第{i}条") for i in range(4)]
    ledger = update_ledger((), turns, 0, mask=False)
    assert {"写我名字就行", "这几天找我就行"} <= {f.value for f in ledger if f.kind == "request"}
    result = compress(
        turns,
        "",
        0,
        budget=2000,
        keep_last=4,
        max_pending_turns=4,
        facts=ledger,
        facts_upto=len(turns),
        mask=False,
    )
    assert result.summarized_upto == 3
    # the first line is all pinned; the second says one thing more (who is away), the third is new
    assert result.summary.splitlines() == [
        "客户:我想起来了,我们公司仓库陆总下周出差,这几天找我就行",
        "客户:你们的系统我们用了好几年了",
    ]


def test_an_english_amount_keeps_its_subject_and_corrects_only_its_own() -> None:
    """ "The refund should be $39" names the refund: it does not replace the pending charge said
    before it, and a later refund amount replaces only the refund's."""
    turns = [
        Turn("customer", "my bank shows a pending $22,621, just so you know"),
        Turn("customer", "The refund should be 3971 dollars"),
        Turn("customer", "Also, the refund should be USD 2608.00"),
    ]
    current = [(f.subject, f.key) for _, f in current_facts(update_ledger((), turns, 0, mask=False))]
    assert current == [("", "USD 22621.00"), ("refund", "USD 2608.00")]

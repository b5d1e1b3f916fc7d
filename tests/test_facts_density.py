"""Facts as tickets written by others state them, and a facts section that says each once."""

from __future__ import annotations

import pytest
from support.strategies import TURN_TIME

from supportbot import Turn
from supportbot._state import Role
from supportbot.memory import _ledger as ledger
from supportbot.memory._compress import truncate_to_tokens
from supportbot.memory._facts import current_facts, extract, update_ledger
from supportbot.memory._money import money_in
from supportbot.memory._tokens import count_joined, turn_tokens


def _turns(*texts: str) -> list[Turn]:
    """Customer turns (``A:`` marks the agent's), all written at ``TURN_TIME`` (a Wednesday)."""
    return [
        Turn(
            role="agent" if t.startswith("A:") else "customer",
            content=t.removeprefix("A:"),
            created_at=TURN_TIME,
        )
        for t in texts
    ]


def _section(*texts: str, lang: str = "zh") -> str:
    return ledger.render_facts(update_ledger((), _turns(*texts), 0, mask=False), lang=lang)


def _values(text: str, kind: str, role: Role = "customer") -> list[str]:
    turn = Turn(role=role, content=text, created_at=TURN_TIME)
    return [f.value for f in extract(turn, 0, mask=False) if f.kind == kind]


def test_a_day_named_again_in_other_words_is_one_fact_showing_every_wording() -> None:
    # 上周二 of Wednesday 2026-03-18 is 03-10, the day 3月10号 names.
    facts = update_ledger((), _turns("3月10号下的单", "快递上周二才发出", "就是3月10号那天"), 0, mask=False)
    current = [f for _, f in current_facts(facts) if f.kind == "date"]
    assert [(f.key, f.value) for f in current] == [("2026-03-10", "3月10号、上周二")]
    assert "2026-03-10(3月10号、上周二)" in ledger.render_facts(facts)
    assert "原为" not in ledger.render_facts(facts)  # a restatement is no correction


def test_a_correction_after_a_day_named_twice_replaces_the_day_and_names_it() -> None:
    section = _section("3月10号下的单", "快递上周二才发出", "说错了,是3月11号")
    assert "2026-03-11(3月11号)(原为 2026-03-10(3月10号、上周二))" in section


def test_an_english_day_named_again_joins_its_wordings_in_english() -> None:
    section = _section("It shipped last Tuesday", "yes, March 10", lang="en")
    assert "2026-03-10(last Tuesday; March 10)" in section


@pytest.mark.parametrize(
    ("text", "address"),
    [
        ("快递放上海市浦东新区金融街842号4栋2705前台~", "上海市浦东新区金融街842号4栋2705"),
        ("快递放天津市河西区软件大道537号6幢615前台。", "天津市河西区软件大道537号6幢615"),
        (
            "现在是湖北省武汉市洪山区漕溪北路 30 号 18 栋1114,不知道",
            "湖北省武汉市洪山区漕溪北路 30 号 18 栋1114",
        ),
        ("北京市朝阳区建国路88号3栋 20个人在等", "北京市朝阳区建国路88号3栋"),  # a count, not a room
    ],
)
def test_a_room_number_after_its_building_is_part_of_the_address(text: str, address: str) -> None:
    assert _values(text, "address") == [address]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("抱歉打错了,7489块才对", ["7489"]),
        ("我们预算也就六千四左右,你们记一下", ["6400"]),
        ("预算在一万左右", ["10000"]),
        ("账单上多出来一笔4787.84!别的都还好", ["4787.84"]),
        ("我们预算也就7899.38左右", ["7899.38"]),
        ("版本是2.30", []),  # a version, not money
        ("一笔12.5", []),  # tenths are not how a bill prints money
    ],
)
def test_budgets_and_bill_figures_are_money(text: str, expected: list[str]) -> None:
    assert [str(m.value) for m in money_in(text)] == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "The billing address on file should be 2216 broadway, apt. 27e, seattle wa 98117...",
            ["2216 broadway, apt. 27e, seattle wa 98117"],
        ),
        ("Ship to 88 Via Roma, Portland, OR 97205 please", ["88 Via Roma, Portland, OR 97205"]),
        ("I waited 3 hours, Seattle WA 98117 is where I live", []),  # no street: a duration
    ],
)
def test_a_street_named_without_its_type_is_an_address_with_city_state_and_zip(
    text: str, expected: list[str]
) -> None:
    assert _values(text, "address") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "What arrived was the hardshell carry-on suitcase, not what I ordered",
            ["What arrived was the hardshell carry-on suitcase"],
        ),
        ("I ordered a carry-on suitcase, size hardshell", ["I ordered a carry-on suitcase, size hardshell"]),
        ("The carry-on suitcase (hardshell) is cracked", ["The carry-on suitcase (hardshell) is cracked"]),
        ("my wallet came in leather", ["my wallet came in leather"]),
        ("The style of the reply was rude", []),
        ("the colour is off on my screen", []),
        ("feel free to loop in Green from HR", []),
    ],
)
def test_goods_named_with_their_material(text: str, expected: list[str]) -> None:
    assert _values(text, "plan") == expected


@pytest.mark.parametrize(
    ("text", "kind", "role", "expected"),
    [
        ("我这边记录是上次电话里说给我免运费", "promise_reported", "customer", ["上次电话里说给我免运费"]),
        (
            "我记得上次在线客服说会帮我加急处理",
            "promise_reported",
            "customer",
            ["上次在线客服说会帮我加急处理"],
        ),
        ("更新一下:快递今天到了", "status", "customer", ["快递今天到了"]),
        ("现在的情况是银行那边说钱已经扣了", "status", "customer", ["银行那边说钱已经扣了"]),
        (
            "没问题,这笔退款会在 1 个工作日内原路退回",
            "promise",
            "agent",
            ["这笔退款会在 1 个工作日内原路退回"],
        ),
        ("we're on the Plus subscription family", "plan", "customer", ["Plus subscription family"]),
    ],
)
def test_a_pinned_sentence_drops_its_signpost(text: str, kind: str, role: Role, expected: list[str]) -> None:
    assert _values(text, kind, role) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("另外,想把两个账号合并成一个,先跟你说一声", ["想把两个账号合并成一个"]),
        ("把我的账号注销掉", ["把我的账号注销掉"]),
        ("我把卡绑好了", []),  # done, not asked
        ("把他转告给你们经理了", []),
    ],
)
def test_requests_with_ba_and_their_verb(text: str, expected: list[str]) -> None:
    assert _values(text, "request") == expected


def test_a_figure_a_request_quotes_is_shown_once() -> None:
    section = _section("退款退到支付宝就行,我试了8次了")
    assert section.count("我试了8次了") == 1


def test_a_status_settles_only_what_its_verb_completes_or_names() -> None:
    facts = update_ledger(
        (),
        _turns(
            "我想申请退款",
            "把发票抬头改成杭州新源贸易有限公司",
            "麻烦把我的账号注销掉",
            "退款我已经收到了",
            "发票已经作废了",
            "账号已经注销了",
        ),
        0,
        mask=False,
    )
    tiers = {u.text: u.tier for u in ledger.units(facts, summarized_upto=len(facts) + 6)}
    open_request = tiers["把发票抬头改成杭州新源贸易有限公司"]  # a voided invoice settles no new title
    assert tiers["我想申请退款"] > open_request  # 收到 completes a refund: it goes first
    assert tiers["麻烦把我的账号注销掉"] == tiers["我想申请退款"]  # the status names 注销


@pytest.mark.parametrize("cap", range(12))
def test_a_cut_summary_never_keeps_only_a_speaker_label(cap: int) -> None:
    cut = truncate_to_tokens("客户:我答应了领导今天给个说法,你们一定要重视", cap, count=turn_tokens)
    assert cut == "" or len(cut.removeprefix("客户:").removesuffix("…")) >= 1
    assert cut not in ("客户…", "客户:…", "客…")


def test_an_apartment_number_correction_rewrites_the_address_whose_number_it_fixes() -> None:
    """710 for 170 is two digits swapped: the address with Apartment 170 is the one corrected, not
    the latest address (Apt 12C)."""
    section = _section(
        "deliveries go to 1789 Harbor Street, Apartment 170, Portland OR 97261. btw",
        "the billing address on file should be 4273 Harbor Street, Apt 12C, Denver CO 80226",
        "thanks so much! the apartment number is wrong, it should be 710, I'll be honest",
        lang="en",
    )
    assert "4273 Harbor Street, Apt 12C, Denver CO 80226," in section  # still current
    assert (
        "1789 Harbor Street, Apartment 710, Portland OR 97261 (was 1789 Harbor Street, Apartment 170"
        in section
    )


def test_a_space_beside_chinese_costs_nothing_in_the_section() -> None:
    section = _section("寄到江苏省南京市鼓楼区科苑南路 342 号 29 楼", "A:这笔退款会在 7 个工作日内原路退回")
    assert "科苑南路342号29楼" in section and "会在7个工作日内" in section


def test_short_of_room_a_sentence_drops_the_clause_another_fact_pins_before_a_fact_is_left_out() -> None:
    facts = update_ledger(
        (),
        _turns(
            "签合同的时候说过免费培训两次,付款是人事那边的黎哥操作的",
            "能不能把我的账号注销掉,App闪退之前弹了个503 service unavailable",
            "A:已为您登记,下周一前把重新开好的发票发到您邮箱",  # the deadline stays: it is the promise
        ),
        0,
        mask=False,
    )
    whole = ledger.view(facts, summarized_upto=9)
    assert whole.omitted == 0 and "付款是人事那边的黎哥操作的" in "".join(whole.pieces)
    full_size = sum(len(p) for p in whole.pieces)
    tight = next(
        v
        for a in range(200, 0, -1)
        if (v := ledger.view(facts, summarized_upto=9, allowance=a)).omitted == 0
        and sum(len(p) for p in v.pieces) < full_size
    )
    text = "".join(tight.pieces)
    assert "签合同的时候说过免费培训两次" in text and "黎哥操作的" not in text  # 黎哥 is on the people line
    assert "能不能把我的账号注销掉" in text and "闪退" not in text  # the code is on its own line
    assert "下周一前把重新开好的发票发到您邮箱" in text


def test_a_settled_request_ranks_above_the_floor_s_sentences() -> None:
    facts = update_ledger((), _turns("我想申请退款", "我试了8次了", "退款我已经收到了"), 0, mask=False)
    tiers = {u.text: u.tier for u in ledger.units(facts, summarized_upto=9)}
    assert tiers["我想申请退款"] < tiers["我试了8次了"]


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("去年开始用的单人的基础版。", "plan", ["单人的基础版"]),
        ("要10人的企业版", "plan", ["10人的企业版"]),
        # an email ends its clause before a space and Chinese: the goods after it are their own clause
        (
            "财务的邮箱是linxuecw@foxmail.com 黑色羽绒服 L码到现在还没发货。",
            "plan",
            ["黑色羽绒服 L码到现在还没发货"],
        ),
        ("It stopped working on the 3rd of December!", "date", ["the 3rd of December"]),
    ],
)
def test_more_forms_of_plans_goods_and_dates(text: str, kind: str, expected: list[str]) -> None:
    assert _values(text, kind) == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("差价三千六还没补给我", ["3600.00"]),
        ("我充了六万一进去", ["61000.00"]),
        ("补充一下,退款应该是八万四吧", ["84000.00"]),
        ("押金两千一直没退", ["2000.00"]),  # 一直 is a word, not the figure's last digit
        ("差价两千一,麻烦补一下", ["2100.00"]),
        ("余额三千六百个积分", []),  # a measure word: points, not money
        ("续费要六千五一年,太贵了", ["6500.00"]),  # a sum for a period: 一年 is not its last digit
        ("年费一万一一年", ["11000.00"]),
    ],
)
def test_a_figure_after_a_word_that_names_a_sum_is_money(text: str, expected: list[str]) -> None:
    assert [f"{m.value:.2f}" for m in money_in(text) if m.value is not None] == expected


def test_a_difference_named_again_is_a_second_sum_but_a_budget_restated_replaces() -> None:
    section = _section("差价RMB78还没补给我", "另外一单差价69块还没补给我")
    assert "CNY 78.00" in section and "CNY 69.00" in section and "原为" not in section
    assert "原为 CNY 5000.00" in _section("我们预算是5000元", "预算是6000元")
    # a guess (应该是…吧) is no correction, though the 吧 comes after the figure
    guessed = _section("退款应该是¥1467吧", "另外退款应该是四千二吧")
    assert "CNY 1467.00" in guessed and "CNY 4200.00" in guessed and "原为" not in guessed
    assert "原为 CNY 1467.00" in _section("退款应该是¥1467吧", "更正一下,退款应该是四千二")


def test_an_amount_correction_fixes_the_sum_it_retypes_not_one_named_in_between() -> None:
    section = _section("上次多收了5158元", "运费收了RMB5277,还有,更正一下,刚才那个金额是5518块")
    assert "CNY 5518.00(原为 CNY 5158.00)" in section and "CNY 5277.00," in section


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        ("官网上写着七天无理由退货", "promise_reported", ["官网上写着七天无理由退货"]),
        (
            "Plus your website says free returns within 30 days. By the way, it broke.",
            "promise_reported",
            ["Plus your website says free returns within 30 days."],
        ),
        ("wait 3 days. By the way, it broke", "address", []),  # "3 days … Way" is no street
        ("Oh and I got the date wrong, it was 04/17", "status", []),  # receives nothing
        ("收到的货是5L的空气炸锅,不是我要的", "request", []),  # what was wanted, not an ask
        ("我要的是退款", "request", ["我要的是退款"]),
        # a second promise whose marker would start in the clause the first one pinned
        (
            "上回那个客服说给我延长 7 天试用,你们记一下,还有,我记得你们答应过发票这周内寄出,对了",
            "promise_reported",
            ["上回那个客服说给我延长 7 天试用", "你们答应过发票这周内寄出"],
        ),
    ],
)
def test_what_a_site_promised_and_words_that_only_look_like_facts(
    text: str, kind: str, expected: list[str]
) -> None:
    assert _values(text, kind) == expected


def test_short_of_room_sentences_drop_narrating_tails_and_dates_their_words_before_a_fact_goes() -> None:
    facts = update_ledger(
        (),
        _turns(
            "合同盖章后寄一份原件给我们,我们团队有好几个人在用",
            "先别发货,等我确认",  # a tail that qualifies the ask stays
            "我是上周二下的单",
        ),
        0,
        mask=False,
    )
    whole = "".join(ledger.view(facts, summarized_upto=9).pieces)
    assert "我们团队有好几个人在用" in whole and "2026-03-10(上周二)" in whole
    full_size = len(whole)
    tight = next(
        v
        for a in range(200, 0, -1)
        if (v := ledger.view(facts, summarized_upto=9, allowance=a)).omitted == 0
        and sum(len(p) for p in v.pieces) < full_size - 12
    )
    text = "".join(tight.pieces)
    assert "合同盖章后寄一份原件给我们" in text and "好几个人" not in text
    assert "先别发货,等我确认" in text and "2026-03-10" in text and "上周二" not in text


def test_a_sentence_quoting_a_value_a_correction_replaced_marks_it_with_the_current_value() -> None:
    section = _section(
        "合同号是8R29RD3C",
        "上次给我的合同号是8R29RD3C,不知道还能不能查到",
        "合同号抄错了,正确的是8R29RD6C",
        "请帮我查8R29RD6C,不是8R29RD3C",  # says both: nothing to mark
    )
    assert "合同号是8R29RD3C(已更正为 8R29RD6C),不知道还能不能查到" in section
    assert "请帮我查8R29RD6C,不是8R29RD3C" in section and section.count("已更正为") == 1
    english = _section(
        "Order 3EL7TK2Z is missing", "can you check 3EL7TK2Z please", "sorry, it's 3EL7TK9Z", lang="en"
    )
    assert "can you check 3EL7TK2Z (corrected to 3EL7TK9Z) please" in english


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a colour by what it looks like, a pattern, a size letter against Chinese, a measure, a flavour
        ("买的那条围巾是燕麦色的", ["买的那条围巾是燕麦色的"]),
        ("收到的是格纹的睡衣", ["收到的是格纹的睡衣"]),
        ("我要的是牛仔裤S的", ["我要的是牛仔裤S的"]),
        ("那个移动电源20000mAh的一直充不进电", ["那个移动电源20000mAh的一直充不进电"]),
        ("收到的是薄荷味的牙膏", ["收到的是薄荷味的牙膏"]),
        # a service or cover with its term or billing; alone it is no plan
        ("我们开通的网盘套餐(1T,月付)到期了", ["网盘套餐(1T,月付)"]),
        ("当时加购了两年的上门安装服务", ["两年的上门安装服务"]),
        ("售后服务太差了", []),
        ("帮我把套餐降一档", []),
        ("订单号2025TB6090那一笔", []),
    ],
)
def test_chinese_goods_and_plans_beyond_a_word_list(text: str, expected: list[str]) -> None:
    assert _values(text, "plan") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        (
            "I'm returning the cordless drill with two batteries.",
            ["I'm returning the cordless drill with two batteries."],
        ),
        ("the bamboo cutting board I received is warped", ["the bamboo cutting board I received is warped"]),
        ("Is the walnut bookshelf back in stock?", ["Is the walnut bookshelf back in stock"]),
        ("I bought a desk lamp (warm light) last week", ["I bought a desk lamp (warm light) last week"]),
        ("we're on the yearly Studio membership", ["yearly Studio membership"]),
        (
            "I never got the papers for the two-year appliance protection plan",
            ["two-year appliance protection plan"],
        ),
        # not goods: the things a ticket names that are not what was bought
        ("I received the invoice yesterday", []),
        ("The account is locked", []),
        ("Sarah@example.com is our billing inbox!", []),
        ("ship it to 9389 W 22nd Street", []),
    ],
)
def test_english_goods_and_plans_beyond_a_word_list(text: str, expected: list[str]) -> None:
    assert _values(text, "plan") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # options after a dash, to the clause's end; a remark after a dash is no option
        (
            "I'm returning the standing desk - white / 48-inch! thanks",
            ["I'm returning the standing desk - white / 48-inch"],
        ),
        (
            "My colleague recommended the protein powder - chocolate.",
            ["My colleague recommended the protein powder - chocolate"],
        ),
        (
            "I'm returning the duvet cover - king - would appreciate any help",
            ["I'm returning the duvet cover - king"],
        ),
        ("I'm returning the standing desk - cheers", ["I'm returning the standing desk"]),
        # where the goods are and how they came, a count of them, one word with its option in brackets
        (
            "my order also had a jar of fragrance-free moisturizer in it.",
            ["my order also had a jar of fragrance-free moisturizer in it."],
        ),
        (
            "what arrived were the yoga leggings (S), not what I ordered",
            ["what arrived were the yoga leggings (S)"],
        ),
        ("I got grey slippers as a gift!", ["I got grey slippers as a gift"]),
        ("I already sent the adjustable dumbbells back", ["I already sent the adjustable dumbbells back"]),
        (
            "There's a problem with the smartwatch (cellular), fyi",
            ["There's a problem with the smartwatch (cellular)"],
        ),
        # a tier in brackets after goods is their option, not a plan of its own
        (
            "I picked the Kindle Paperwhite (Signature Edition) at checkout",
            ["I picked the Kindle Paperwhite (Signature Edition) at checkout"],
        ),
        (
            "I ordered the water bottle, the 24 oz stainless steel one",
            ["I ordered the water bottle, the 24 oz stainless steel one"],
        ),
        (
            "my colleague recommended the Kindle Paperwhite, the Signature Edition version",
            ["my colleague recommended the Kindle Paperwhite, the Signature Edition version"],
        ),
        # a measure after a comma; what holds goods is goods; a remark after them ends them too
        ("I ordered the mixed nuts, the 2.5 lb ones.", ["I ordered the mixed nuts, the 2.5 lb ones"]),
        ("I'm returning the knife set, 7 piece, it's dull", ["I'm returning the knife set, 7 piece"]),
        ("I'm returning the knife set, call me at 555 1234", ["I'm returning the knife set"]),
        ("I ordered the phone case, the Galaxy S24 one!", ["I ordered the phone case, the Galaxy S24 one"]),
        ("I have a problem with the case", []),
        (
            "there's a problem with the robot vacuum with mop attachment if that matters",
            ["there's a problem with the robot vacuum with mop attachment"],
        ),
        # a plan's seats and a cover's term after a comma
        ("We're on the Team plan, 10 users, since March.", ["Team plan, 10 users"]),
        (
            "We're on the Business plan (annual billing, 25 users) now.",
            ["Business plan (annual billing, 25 users)"],
        ),
        ("I bought accidental damage protection, for 1 year", ["accidental damage protection, for 1 year"]),
        ("I never got the paperwork for the protection plan, 4-year.", ["protection plan, 4-year"]),
        ("the paperwork for the protection plan, 4 years (in case it helps)!", ["protection plan, 4 years"]),
        (
            "I never got the paperwork for the accidental damage protection, with a 2-year term, fyi!",
            ["accidental damage protection, with a 2-year term"],
        ),
        # a plan's seats before it and its term after it; a count is no id
        (
            "our account still shows the 200-seat Enterprise tier, for 2 years",
            ["200-seat Enterprise tier, for 2 years"],
        ),
        ("we have been on the Pro plan for 3 years ago or so", ["Pro plan"]),
        # not goods' option nor a cover's term: a time since
        ("I bought the warranty, 2 years ago, and it broke", ["I bought the warranty"]),
        ("my extended warranty, 3 years back, covered this", []),
        # not goods
        ("I need a refund for the order (#A123) - thanks", []),
        ("there's a problem with the order (the second one)", []),
        ("I got the date wrong - sorry", []),
        ("I got my money back, not the credit", []),
    ],
)
def test_english_goods_with_options_after_a_dash_and_in_more_places(text: str, expected: list[str]) -> None:
    assert _values(text, "plan") == expected
    assert not [v for v in _values(text, "id") if v[0].isdigit() and "-" in v]  # "200-seat" is a count


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a clause of Latin model words after Chinese goods names their option
        ("结果你们发来的是钢化膜,选的iPhone 15 Pro。", ["结果你们发来的是钢化膜,选的iPhone 15 Pro"]),
        (
            "购物车里就一个手机壳,iPhone 15 Pro Max的,先跟你说一声",
            ["购物车里就一个手机壳,iPhone 15 Pro Max的"],
        ),
        # a plan's billing and seats both before it; a size letter at a sentence's end after the goods
        ("我们现在用的是年付50 人的专业版 手机上和电脑上都试过。", ["年付50 人的专业版"]),
        ("当时买的是纸尿裤NB。", ["当时买的是纸尿裤NB"]),
        ("我叫 M。", []),
        # the model a thing is for, as the clause after it; alone it names what the customer uses
        ("补充一下,我拍的是手机壳,iPhone 15,不知道有没有关系", ["我拍的是手机壳,iPhone 15"]),
        ("我拍的是手机壳,要Mate60的。", ["我拍的是手机壳,要Mate60的"]),
        ("Windows 11 上也不行", []),
        ("钢化膜,要小米14的", ["钢化膜,要小米14的"]),
        ("我的手机是小米14,App 一直闪退", []),
        # a capacity in 毫安; a plan's term paid for at once
        ("还有,下单的时候选的充电宝,选的20000 毫安。", ["下单的时候选的充电宝,选的20000 毫安"]),
        ("我们买的是两年付企业版,一直没问题", ["两年付企业版"]),
        # an order number in a clause counts as one word of it, not as its digits
        (
            "系统里售后单号显示的是3323-2572-4486 收到宽楦版的跑步鞋的时候外包装就是破的!",
            ["系统里售后单号显示的是3323-2572-4486 收到宽楦版的跑步鞋的时候外包装就是破的"],
        ),
        ("App 闪退之前弹了个E7229。", []),
        # a colour a shop writes without 色
        ("还有,连帽卫衣 米白 XL码有质量问题,想换一个。", ["连帽卫衣 米白 XL码有质量问题"]),
        # after English it does not: the clause is its own
        ("I like the phone case, iPhone 15 Pro Max", ["iPhone 15 Pro Max"]),
    ],
)
def test_a_latin_model_after_chinese_goods_is_their_option(text: str, expected: list[str]) -> None:
    assert _values(text, "plan") == expected


def test_a_sentence_pinned_as_goods_and_as_a_request_is_shown_once() -> None:
    facts = update_ledger((), _turns("我要退的是纯牛奶,24盒装的", "帮我把自动续费关了"), 0, mask=False)
    kinds = sorted(f.kind for _, f in current_facts(facts) if "纯牛奶" in f.value)
    assert kinds == ["plan", "request"]  # the ledger keeps both facts
    section = ledger.render_facts(facts)
    assert section.count("纯牛奶") == 1 and "帮我把自动续费关了" in section


def test_an_id_without_a_digit_retyped_in_a_correction_replaces_the_one_it_fixes() -> None:
    facts = update_ledger(
        (),
        _turns("我查了一下交易流水号 pay_agsuxza,状态还是处理中", "我想起来了,是pay_aasuxza,不是pay_agsuxza"),
        0,
        mask=False,
    )
    assert [(f.key, f.supersedes) for _, f in current_facts(facts) if f.kind == "id"] == [("PAY_AASUXZA", 0)]


@pytest.mark.parametrize(
    "correction", ["合同号我抄错了,正确的是ct_vllnyqt。", "对了,是ct_vllnyqt,不是ct_lllnyqt,你们记一下。"]
)
def test_a_correction_that_states_no_other_fact_still_retypes_the_id(correction: str) -> None:
    turns = _turns("系统里合同号显示的是ct_lllnyqt!", correction)
    first = update_ledger((), turns[:1], 0, mask=False)
    facts = update_ledger(first, turns, 1, mask=False)  # turn by turn, as a round adds them
    assert [(f.key, f.supersedes) for _, f in current_facts(facts) if f.kind == "id"] == [("CT_VLLNYQT", 0)]
    assert (
        update_ledger(first, _turns("系统里合同号显示的是ct_lllnyqt!", "好的,谢谢"), 1, mask=False) == first
    )


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a tea's picking before or after the tea
        ("收到的货是明前龙井,不是我要的", ["收到的货是明前龙井"]),
        ("我买的那罐龙井是明前的。", ["我买的那罐龙井是明前的"]),
        ("想退掉龙井,选的明前,不知道有没有关系。", ["想退掉龙井,选的明前"]),
        ("雨前龙井还有货吗?", ["雨前龙井还有货吗"]),
        # a time before something is no picking
        ("清明前能到吗?", []),
        ("下雨前能送到吗", []),
        ("明明前几天那个客服说 15 天内退款", []),
        # a Latin model word after its product's name, or before it with 的
        ("退回去的那台Switch OLED到现在还没退款", ["退回去的那台Switch OLED到现在还没退款"]),
        ("这一单的OLED的Switch少发了,唉", ["这一单的OLED的Switch少发了"]),
        ("下单的时候选的OLED Switch,我想起来了", ["下单的时候选的OLED Switch"]),
        ("我买的那台Switch是OLED的!", ["我买的那台Switch是OLED的"]),
        ("The OLED Screen on my laptop broke", []),
        ("Switch OLED刚买就降价了,能退差价吗?", ["Switch OLED刚买就降价了"]),
        ("Hello TEAM, 我的订单呢", []),
        # or as the clause after the goods, with 的; alone it is no option
        ("下单的时候选的Switch,要OLED的!", ["下单的时候选的Switch,要OLED的"]),
        ("我是IBM的员工", []),
        ("我的Apple ID登不上了", []),
        ("用的是Google API接口", []),
    ],
)
def test_a_tea_s_picking_and_a_latin_model_word_are_options_of_chinese_goods(
    text: str, expected: list[str]
) -> None:
    assert _values(text, "plan") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # options a space sets apart are one phrase with their goods
        ("收到的货是机械键盘 白色 茶轴,不是我要的", ["收到的货是机械键盘 白色 茶轴"]),
        ("我要退的是机械键盘,要白色 茶轴的。", ["我要退的是机械键盘,要白色 茶轴的"]),
        (
            "退回去的那件连帽卫衣 米白色 XL码到现在还没退款。",
            ["退回去的那件连帽卫衣 米白色 XL码到现在还没退款"],
        ),
        # clear, said of goods; a size letter alone after them
        ("之前买过手机壳,透明iPhone 14的,这个应该有用。", ["之前买过手机壳,透明iPhone 14的"]),
        ("你们收费透明吗", []),
        ("我拍的是骑行头盔,L!", ["我拍的是骑行头盔,L"]),
        ("我拍的是骑行头盔L~", ["我拍的是骑行头盔L~"]),
        ("下单的时候选的骑行头盔 M。", ["下单的时候选的骑行头盔 M"]),
        ("我叫 M。", []),
        ("我是 M。", []),
        ("昨天收到了两包纸尿裤,NB~", ["昨天收到了两包纸尿裤,NB~"]),
        # a colour with its shade, after the goods and a space
        ("请问口红 正红色什么时候补货?", ["请问口红 正红色什么时候补货"]),
        # options listed in brackets after the goods: their comma ends no clause
        ("还有,Switch(白色,OLED)还有货吗?", ["Switch(白色,OLED)还有货吗"]),
        ("保温杯(粉色,500ml),订单还没到", ["保温杯(粉色,500ml)"]),
        # a plan's billing inside the words before it that are no plan's name
        ("想从年付企业邮箱升级到更高一档~", ["年付企业邮箱"]),
        ("售后服务太差了", []),
        # a size or model's letters inside an id are no option
        ("收到的是5L的空气炸锅", ["收到的是5L的空气炸锅"]),
        ("截图里能看到订单号68L6BC5V", []),
        ("XS67Z4YDJ这个快递单号一直没动静", []),
        ("上次给我的交易流水号是LWZCB23SE", []),
    ],
)
def test_chinese_goods_with_options_written_apart(text: str, expected: list[str]) -> None:
    assert _values(text, "plan") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # a plan named in lower case, with the options after it
        (
            "I'd like to cancel the cloud storage plan, 2TB tier, annual billing",
            ["cloud storage plan, 2TB tier, annual billing"],
        ),
        ("we're on the cloud storage plan, with 2TB if that matters!", ["cloud storage plan, with 2TB"]),
        ("We were charged twice for the cloud storage plan, with 200GB.", ["cloud storage plan, with 200GB"]),
        ("we're on a payment plan, monthly", ["payment plan, monthly"]),
        # without an option it is any plan
        ("I have a plan, 2 steps", []),
        ("the same plan, monthly please", []),
        # an edition before the goods it is of
        (
            "the Signature Edition Kindle Paperwhite was a disappointment",
            ["Signature Edition Kindle Paperwhite"],
        ),
        ("the Signature Edition I ordered is broken", ["Signature Edition"]),
    ],
)
def test_english_plans_in_lower_case_and_an_edition_before_its_goods(text: str, expected: list[str]) -> None:
    assert _values(text, "plan") == expected


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        # an option after a comma with no figure, in its narrow shapes
        ("I ordered the nonstick pan, lid, if you could look into it", ["I ordered the nonstick pan, lid"]),
        ("I ordered the nonstick pan, a lid", ["I ordered the nonstick pan, a lid"]),
        (
            "I ordered the mechanical keyboard, brown switches. oops",
            ["I ordered the mechanical keyboard, brown switches"],
        ),
        ("I ordered the hoodie, navy", ["I ordered the hoodie, navy"]),
        # a remark after a comma is none
        ("I ordered the pan, thanks", ["I ordered the pan"]),
        ("I ordered the pan, honestly", ["I ordered the pan"]),
        ("I ordered the pan, a week ago", ["I ordered the pan"]),
        ("I'm returning the knife set, guys", ["I'm returning the knife set"]),
        # a figure grouped in thousands; a remark after a dash's options
        (
            "I'm returning the power bank, the 20,000mAh one!",
            ["I'm returning the power bank, the 20,000mAh one"],
        ),
        ("I'm returning the power bank, 10,000mAh, fyi.", ["I'm returning the power bank, 10,000mAh"]),
        (
            "there's a problem with the hiking boots - brown / 10 if that matters!",
            ["there's a problem with the hiking boots - brown / 10"],
        ),
        # one word with its option in brackets; a tub of the goods
        (
            "I received moisturizer (fragrance-free) yesterday, fyi",
            ["I received moisturizer (fragrance-free) yesterday"],
        ),
        ("I received yesterday, fyi", []),
        (
            "my order also had protein powder in chocolate in it.",
            ["my order also had protein powder in chocolate in it."],
        ),
        (
            "I got a tub of protein powder in chocolate as a gift.",
            ["I got a tub of protein powder in chocolate as a gift."],
        ),
    ],
)
def test_english_goods_with_an_option_after_a_comma_and_figures_in_thousands(
    text: str, expected: list[str]
) -> None:
    assert _values(text, "plan") == expected


@pytest.mark.parametrize(
    ("said", "shown"),
    [
        (("我们运维孙经理会联系你们", "还有,IT孙经理下周出差"), "运维孙经理、IT孙经理"),
        (("季卡黄金会员用得挺好", "黄金会员连续包季上个季度才续过"), "季卡黄金会员、黄金会员连续包季"),
        # words that add nothing are not added
        (("我们运维孙经理会联系你们", "孙经理明天有空"), "运维孙经理"),
    ],
)
def test_a_person_or_plan_named_again_in_other_words_keeps_both_wordings(
    said: tuple[str, str], shown: str
) -> None:
    facts = update_ledger((), _turns(*said), 0, mask=False)
    kinds = {f.kind for f in facts if f.kind in ("person", "plan")}
    (kind,) = kinds
    assert [f.value for _, f in current_facts(facts) if f.kind == kind] == [shown]
    assert shown in ledger.render_facts(facts)


def test_goods_a_request_holds_whole_are_shown_once_inside_it_once_folded() -> None:
    turns = _turns("白衬衫我要修身款的,上次发错了", "A:好的", "另外保温杯(粉色,500ml)还没到")
    facts = update_ledger((), turns, 0, mask=False)
    assert [f.kind for f in facts if f.turn == 0] == ["plan", "request"]
    folded = "".join(ledger.view(facts, summarized_upto=3).pieces)
    assert folded.count("白衬衫我要修身款的") == 1 and "白衬衫我要修身款的,上次发错了" in folded
    assert "保温杯(粉色,500ml)" in folded  # goods no sentence holds keep their own line
    # While the turn is in the history the request is not pinned: the goods are, on their line.
    recent = "".join(ledger.view(facts, summarized_upto=0).pieces)
    assert "白衬衫我要修身款的" in recent and "上次发错了" not in recent


@pytest.mark.parametrize(
    ("said", "value", "lang"),
    [
        ("发票发hujun9413@foxmail.com就行", "hujun9413@foxmail.com", "zh"),
        ("上次给我的合同号是HT-2026-6105,不知道还能不能查到", "HT-2026-6105", "zh"),
        ("please send the invoice to ap@northwind.io instead", "ap@northwind.io", "en"),
    ],
)
def test_a_contact_or_id_a_request_holds_is_shown_once_inside_it_once_folded(
    said: str, value: str, lang: str
) -> None:
    facts = update_ledger((), _turns(said, "A:好的"), 0, mask=False)
    folded = "".join(ledger.view(facts, summarized_upto=2, lang=lang).pieces)
    assert folded.count(value) == 1 and said.split(value)[0] in folded
    # while the turn is in the history the value keeps its own line
    assert value in "".join(ledger.view(facts, summarized_upto=0, lang=lang).pieces)


def test_a_value_a_request_holds_is_shown_on_its_own_when_the_request_is_left_out() -> None:
    said = ("发票发hujun9413@foxmail.com就行", "把旧的那张卡解绑", "收货人改成我同事", "A:好的")
    facts = update_ledger((), _turns(*said), 0, mask=False)
    everything = ledger.view(facts, summarized_upto=4)
    assert everything.omitted == 0 and "邮箱" not in "".join(everything.pieces)
    # down to where the email's own line is all that fits: the highest-ranked fact goes last
    for allowance in range(count_joined(everything.pieces) - 1, 27, -1):
        tight = ledger.view(facts, summarized_upto=4, allowance=allowance)
        assert tight.omitted >= 1
        assert "hujun9413@foxmail.com" in "".join(tight.pieces)  # its own line, or the request's


def test_a_value_is_held_only_as_a_whole_token() -> None:
    # "B7460" is inside the request's "2024B7460" but is not what the request names
    said = "订单B7460,上次给我的单号是2024B7460,不知道还能不能查到"
    facts = update_ledger((), _turns(said, "A:好的"), 0, mask=False)
    assert [f.value for f in facts if f.kind == "id"] == ["B7460", "2024B7460"]
    assert "- 单号: B7460\n" in "".join(ledger.view(facts, summarized_upto=2).pieces)


@pytest.mark.parametrize(
    ("said", "repeated"),
    [
        # a person a status names with its role, and a sentence a status shows
        (("老熊(出纳)说发票到现在还没收到",), "老熊(出纳)"),
        (("密码已经重置过两次了",), "密码已经重置过两次了"),
    ],
)
def test_what_a_status_of_its_turn_shows_is_not_shown_again(said: tuple[str, ...], repeated: str) -> None:
    facts = update_ledger((), _turns(*said, "A:好的"), 0, mask=False)
    folded = "".join(ledger.view(facts, summarized_upto=len(said) + 1).pieces)
    assert folded.count(repeated) == 1


@pytest.mark.parametrize(
    ("first", "correction", "current", "replaced"),
    [
        # the correction word long before the value, in English
        (
            "It's transaction ID #PAY-2025-4407",
            "I mistyped that, the transaction ID is PAY-2025-4470.",
            "PAY-2025-4470",
            "PAY-2025-4407",
        ),
        ("my budget is $128", "By the way, wait, I misread it, it's 182 dollars", "USD 182.00", "USD 128.00"),
        # said after the value
        (
            "my case number is SV-2025-1329.",
            "it's SV-2025-1309, I swapped two digits",
            "SV-2025-1309",
            "SV-2025-1329",
        ),
        (
            "same thing happened on 15 December 2025",
            "Just remembered, I got the date wrong, it was 10/13",
            "2026-10-13",
            "2025-12-15",
        ),
        ("my order number is 413250", "I typed the order number wrong, it's 413259", "413259", "413250"),
        (
            "Ship it to 6901 Mill Street, Suite 886, Portland, OR 97253!",
            "Oops, suite 868, not 886...",
            "Suite 868",
            "Suite 886",
        ),
        (
            "the billing address is 31 cedar lane, unit 10f, albany, ny 12208",
            "correction on the address: it's unit 16F",
            "unit 16F",
            "unit 10f",
        ),
        # a suite written "Ste"
        (
            "Bill to 1298 Washington Ave, Ste 166, Raleigh NC 27647",
            "the suite number is wrong, it should be 146!",
            "Ste 146",
            "Ste 166",
        ),
        # a slip taken back names a subject its value did not have
        (
            "we budget around 240 bucks a month",
            "Scratch that, the charge was actually 230 bucks",
            "USD 230.00",
            "USD 240.00",
        ),
        # a date retyped with one digit fixed, not the day named since
        ("11月23号那天扣的款", "另外下礼拜一要开会。我记错了,应该是12/23", "2026-12-23", "2026-11-23"),
    ],
)
def test_corrections_as_customers_write_them_replace_the_value_they_fix(
    first: str, correction: str, current: str, replaced: str
) -> None:
    section = _section(first, correction, lang="en" if first.isascii() else "zh")
    line = next(line for line in section.splitlines() if current in line)
    assert replaced in line.split(current, 1)[1]  # shown after the current value, as what it replaced


def test_a_customers_correction_does_not_replace_the_day_the_agent_promised() -> None:
    section = _section("A:好的,明天给您回电话", "日期我记错了,应该是2026-03-25")
    assert "原为" not in section and "2026-03-19" in section and "2026-03-25" in section


@pytest.mark.parametrize(
    ("before", "after"),
    [
        ("发票还没开出来", "发票已经收到了"),
        ("换货的还没寄出", "换货的已经到了"),
        ("快递还没寄出", "快递今天收到了"),
    ],
)
def test_a_thing_received_settles_its_earlier_stage_still_pending(before: str, after: str) -> None:
    assert f"{after}(原为 {before})" in _section(before, after)


def test_a_thing_received_does_not_settle_another_things_stage() -> None:
    assert "原为" not in _section("发票还没开出来", "退款收到了")


def test_a_sentence_quoting_the_start_of_a_replaced_address_marks_it() -> None:
    section = _section(
        "Ship it to 6901 Mill Street, Suite 886, Portland, OR 97253!", "Oops, suite 868, not 886", lang="en"
    )
    assert (
        "Ship it to 6901 Mill Street, Suite 886 (corrected to 6901 Mill Street, Suite 868, Portland, OR "
        "97253)" in section
    )


def test_a_new_address_with_a_unit_is_no_correction_of_another_addresses_unit() -> None:
    section = _section(
        "Ship to 12 Oak St, Apt 3C, Boise ID 83702", "Also bill 55 Elm Rd, unit 5B, Boise ID 83702", lang="en"
    )
    assert "Apt 3C" in section and "unit 5B" in section and "(was" not in section


@pytest.mark.parametrize(
    ("said", "correction", "quoted"),
    [
        ("从6月16号开始就登不上去了", "更正:日期是7月5号", "6月16号(已更正为 2026-07-05(7月5号))"),
        (
            "I need this sorted before 3/20.",
            "sorry, wrong date, it's Jan 14",
            "3/20 (corrected to 2026-01-14",
        ),
        (
            "四件套我要灰色2米床的,上次发错了,账单上多出来一笔994 元",
            "不对,金额应该是964块,不是994 元",
            "994元(已更正为 CNY 964.00)",
        ),
    ],
)
def test_a_sentence_quoting_a_replaced_day_or_sum_marks_it_as_the_section_shows_it(
    said: str, correction: str, quoted: str
) -> None:
    assert quoted in _section(said, correction, lang="en" if said.isascii() else "zh")


def test_a_day_named_in_words_or_inside_a_longer_figure_is_not_marked() -> None:
    # 明天 in a sentence names its own day, not the 明天 a correction replaced; 13/20 is not 3/20
    words = _section("A:明天给您回电话", "A:明天之前一定处理好", "A:更正:日期是2026-03-25")
    assert "已更正为" not in words
    figure = _section(
        "the invoice dated 3/20 is wrong", "case 13/20 is the one", "sorry, wrong date, it's 4/2"
    )
    assert "13/20 (corrected" not in figure


@pytest.mark.parametrize(
    "correction",
    ["顺便说一下,不是四万九,是¥49400", "是49400元,我看错了", "¥49400,我写错了"],
)
def test_a_value_beside_a_refusal_or_owned_as_a_mistake_is_a_correction(correction: str) -> None:
    facts = update_ledger((), _turns("预算也就四万九左右", "差价 300 元", correction), 0, mask=False)
    current = {f.key for _, f in current_facts(facts) if f.kind == "amount"}
    assert "CNY 49400.00" in current and "CNY 49000.00" not in current
    assert not any(f.kind == "detail" and "四万九" in f.value for f in facts)  # the refusal is no fact


def test_a_correction_of_a_value_pinned_only_as_a_detail_replaces_that_detail() -> None:
    facts = update_ledger(
        (),
        _turns(
            "the contract you sent, 5879934, doesn't work",
            "order AB-55555 is late",
            "correction: contract 5479934, not 5879934",
        ),
        0,
        mask=False,
    )
    section = ledger.render_facts(facts, lang="en")
    assert "5479934 (was 5879934)" in section
    assert "AB-55555" in section and "(was AB-55555)" not in section  # not the latest id
    assert "not 5879934" not in section


def test_a_detail_that_only_restates_a_correction_is_shown_once() -> None:
    facts = update_ledger((), _turns("就是那个99920205的单子", "是99920250,不是99920205"), 0, mask=False)
    section = ledger.render_facts(facts, summarized_upto=2)
    assert "99920250(原为 99920205)" in section and section.count("99920250") == 1


def test_a_thing_received_settles_every_earlier_stage_still_pending() -> None:
    section = _section("发票还没开出来", "马姐说发票到现在还没收到", "发票已经收到了")
    assert "发票已经收到了(原为 马姐说发票到现在还没收到、发票还没开出来)" in section
    assert section.count("还没开出来") == 1


def test_a_day_corrected_in_figures_fixes_one_written_in_figures_not_a_word_for_a_day() -> None:
    facts = update_ledger(
        (), _turns("我6月23号要出差", "周末之前最好搞定", "日期我记错了,应该是9/14"), 0, mask=False
    )
    replaced = [facts[f.supersedes].value for f in facts if f.supersedes is not None]
    assert replaced == ["6月23号"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("(tracking number 6789900747).", ["6789900747"]),
        ("413259 is the invoice I'm talking about", ["413259"]),
        ("3447-3294-2600 is the statement I'm talking about", ["3447-3294-2600"]),
        ("it's return #9G5GHDKS!", ["9G5GHDKS"]),
        ("I want to return 2 items", []),
    ],
)
def test_english_ids_named_by_the_word_before_or_after_them(text: str, expected: list[str]) -> None:
    assert [f.value for f in extract(Turn("customer", text), 0, mask=False) if f.kind == "id"] == expected


def test_an_english_day_at_a_sentence_end_leaves_the_full_stop_out() -> None:
    days = [
        f.value
        for f in extract(Turn("customer", "Sort it before 8 January. Or the 5th of May."), 0)
        if f.kind == "date"
    ]
    assert days == ["8 January", "the 5th of May"]
    assert [f.value for f in extract(Turn("customer", "on 8 Jan. 2026"), 0) if f.kind == "date"] == [
        "8 Jan. 2026"
    ]


@pytest.mark.parametrize(
    ("first", "correction", "current", "replaced"),
    [
        ("413259 is the invoice I'm talking about", "It's 453259, I swapped two digits", "453259", "413259"),
        (
            "it stopped on 3 January 2026",
            "wait, it was the 6th of December, not 3 January 2026",
            "12-06",
            "2026-01-03",
        ),
    ],
)
def test_english_corrections_owned_after_the_value_or_refusing_it_a_clause_away(
    first: str, correction: str, current: str, replaced: str
) -> None:
    facts = update_ledger(
        (), _turns(first, "order AB-55555 is late, it broke on 2 March", correction), 0, mask=False
    )
    pairs = [(f.key, facts[f.supersedes].key) for f in facts if f.supersedes is not None]
    assert len(pairs) == 1 and current in pairs[0][0] and pairs[0][1] == replaced


def test_a_request_quoting_a_status_that_flipped_marks_it() -> None:
    section = _section("请把多扣的钱退回原卡,账号还是登不上", "跟你说一声,现在能登录了")
    assert "账号还是登不上(已更正为 现在能登录了)" in section
    staged = _section("发票发到我邮箱就行,发票还没开出来", "发票已经收到了")
    assert "发票还没开出来(已更正为 发票已经收到了)" in staged


def test_a_calendar_day_corrected_fixes_a_calendar_day_not_one_counted_from_today() -> None:
    facts = update_ledger(
        (),
        _turns("we need it by 20 May 2027", "renew it in 30 days", "I got the date wrong, it was 03/04/2025"),
        0,
        mask=False,
    )
    assert [facts[f.supersedes].value for f in facts if f.supersedes is not None] == ["20 May 2027"]


def test_an_id_retyped_after_a_floor_sentence_held_it_replaces_that_sentence() -> None:
    facts = update_ledger(
        (),
        _turns("the contract you sent, 5879934, doesn't work", "I mistyped that, it's 5879943"),
        0,
        mask=False,
    )
    assert "5879943 (was 5879934)" in ledger.render_facts(facts, lang="en")


@pytest.mark.parametrize(
    ("said", "replaced", "kept"),
    [
        # a day written with its month is what a day written with its month fixes
        (("合同1月13日到期", "上个月5日那天扣的款", "日期我记错了,应该是8月21号"), "1月13日", "上个月5日"),
        # a day counted from today (周末: 2026-03-21) is not a typo of 2月21号
        (("3/5之前一定要处理好", "我想周末之前搞定", "更正:日期是2月21号"), "3/5", "周末"),
    ],
)
def test_a_corrected_day_fixes_the_day_written_like_it(
    said: tuple[str, ...], replaced: str, kept: str
) -> None:
    facts = update_ledger((), _turns(*said), 0, mask=False)
    current = [f.value for _, f in current_facts(facts) if f.kind == "date"]
    assert kept in current and replaced not in current


def test_a_refusal_reaches_no_value_in_the_next_sentence() -> None:
    said = ("2/23那天扣的款", "我想起来了,不是2/23,是9/18。发票是上星期一开的。")
    facts = update_ledger((), _turns(*said), 0, mask=False)
    current = [f.value for _, f in current_facts(facts) if f.kind == "date"]
    assert current == ["9/18", "上星期一"]


def test_an_id_retyped_replaces_the_id_not_a_floor_sentence_that_also_names_it() -> None:
    said = ("357392 is the transaction ID I'm talking about", "btw it's 357892, I swapped two digits")
    facts = update_ledger((), _turns(*said), 0, mask=False)
    section = ledger.render_facts(facts, lang="en")
    assert "357892 (was 357392)" in section
    assert "357392 (corrected to 357892) is the transaction ID" in section  # the sentence, marked
    assert [f.value for _, f in current_facts(facts) if f.kind == "id"] == ["357892"]


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("目前银行流水还是没同步", ["同步流水=否"]),
        ("流水已经同步过来了", ["同步流水=是"]),
        ("退款到账了吗", []),
        ("流水同步了没有", []),
        ("退款到账了,没有问题", ["收到退款=是"]),
        ("验证码短信收不到", ["收到验证码=否"]),
        ("验证码收不到吗", []),
        # the object right after the verb, else the one before it, not one named further on
        ("我收到了发票", ["收到发票=是"]),
        ("发票已经收到了 tb_suwpadp这个订单号一直没动静", ["收到发票=是"]),
        ("还没收到你们寄的发票", ["收到发票=否"]),
    ],
)
def test_a_status_not_synced_and_a_question_that_states_none(text: str, expected: list[str]) -> None:
    assert [f.key for f in extract(Turn("customer", text), 0) if f.kind == "status"] == expected


@pytest.mark.parametrize(
    ("before", "after", "shown"),
    [
        ("the refund still hasn't hit my account", "The refund finally came through", "refund arrived"),
        ("the verification texts aren't coming through", "the verification texts work now", "texts works"),
        ("the link still doesn't work for me", "the link works again", "link works"),
        ("the coupon never got applied", "the coupon shows up on the order now", "coupon arrived"),
    ],
)
def test_an_english_status_and_its_flip_are_one_fact(before: str, after: str, shown: str) -> None:
    facts = update_ledger((), _turns(before, "A:ok", after), 0, mask=False)
    statuses = [f for _, f in current_facts(facts) if f.kind == "status"]
    assert [f.value for f in statuses] == [after] and statuses[0].supersedes is not None
    assert statuses[0].key.endswith(f"{shown}=yes")


def test_an_english_status_clause_ends_at_a_dash() -> None:
    said = (
        "the package was marked delivered but it's not here - btw right now the texts aren't coming through"
    )
    keys = [f.key for f in extract(Turn("customer", said), 0) if f.kind == "status"]
    assert keys == ["package marked delivered=yes", "texts works=no"]


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        # an email at a sentence's end: its full stop is no dot of the domain
        ("the account is under zoej11@yahoo.com.", "email", ["zoej11@yahoo.com"]),
        ("mail a.b@mail.co.uk. ok", "email", ["a.b@mail.co.uk"]),
        # a month or a greeting before ", my …" is no name
        (
            "I placed the order on 16 October, my controller Brianna is out",
            "person",
            ["my controller Brianna"],
        ),
        ("Cheers, my operations manager, Wei set up the account", "person", ["my operations manager, Wei"]),
        ("Lopez, our admin, is out", "person", ["Lopez, our admin"]),
        ("loop in Nancy, our practice manager, Just remembered", "person", ["Nancy, our practice manager"]),
        # a street without its type, the city and state without a comma
        ("my address is 9482 broadway denver co 80294", "address", ["9482 broadway denver co 80294"]),
        (
            "deliveries go to 3317 Broadway, Ste 25D Albany NY 12226",
            "address",
            ["3317 Broadway, Ste 25D Albany NY 12226"],
        ),
        ("I waited 3 times and paid 50 in 12345", "address", []),
        # a plan's term after a comma, and its seats after the term
        ("we're on the 200-user Enterprise tier, 2 years", "plan", ["200-user Enterprise tier, 2 years"]),
        (
            "they recommended the Enterprise tier, 2 years, 200 seats",
            "plan",
            ["Enterprise tier, 2 years, 200 seats"],
        ),
        (
            "the sales rep put us on the Team plan, with a 2-year term",
            "plan",
            ["Team plan, with a 2-year term"],
        ),
        ("we had the Pro plan, 2 years ago it was fine", "plan", ["Pro plan"]),
        (
            "I ordered the robot vacuum, mop attachment",
            "plan",
            ["I ordered the robot vacuum, mop attachment"],
        ),
        # goods with their options in brackets or a racket's weight after a comma
        ("购物车里就一个手机壳(透明,iPhone 14)!", "plan", ["购物车里就一个手机壳(透明,iPhone 14)"]),
        ("之前在你们这儿买过两支羽毛球拍,4U。", "plan", ["之前在你们这儿买过两支羽毛球拍,4U"]),
        ("收费透明,Apple也这样", "plan", []),
    ],
)
def test_more_forms_english_customers_write(text: str, kind: str, expected: list[str]) -> None:
    assert [f.value for f in extract(Turn("customer", text), 0, mask=False) if f.kind == kind] == expected


def test_a_floor_sentence_before_a_promise_with_filler_cut_from_its_middle_is_kept() -> None:
    text = (
        "Don't call before 10am - someone in chat told me the refund would be back in 14 days (in case it "
        "helps), I promise I'm not trying to be difficult"
    )
    assert "Don't call before 10am" in [f.value for f in extract(Turn("customer", text), 0, mask=False)]


@pytest.mark.parametrize(
    ("text", "kind", "expected"),
    [
        (
            "we've renewed the Enterprise tier with a 3-year term twice already",
            "plan",
            ["Enterprise tier with a 3-year term"],
        ),
        (
            "the extended warranty with a 2-year term was supposed to cover it",
            "plan",
            ["extended warranty with a 2-year term"],
        ),
        ("购物车里就一桶蛋白粉,选的5lb", "plan", ["购物车里就一桶蛋白粉,选的5lb"]),
        ("pay_gfnvvjp这个交易流水号一直没动静", "id", ["pay_gfnvvjp"]),
        # a Latin model word after a Latin product, in a Chinese clause after an ASCII comma
        ("补充一下,Switch OLED到现在还没发货,不知道有没有关系", "plan", ["Switch OLED到现在还没发货"]),
        ("当时买的是Switch,OLED", "plan", ["当时买的是Switch,OLED"]),
        # an option alone names the goods of the clause before, not of the sentence before
        (
            "好的好的 XS连衣裙我已经寄回去了!去年开始用的教育版,年付的~",
            "plan",
            ["好的好的 XS连衣裙我已经寄回去了", "教育版,年付的"],
        ),
        # 说好的事情 is a complaint, not a promise, even after 同事
        ("收货人改成我同事,说好的事情总是拖。", "request", ["收货人改成我同事,说好的事情总是拖"]),
        ("收货人改成我同事,说好的事情总是拖。", "promise_reported", []),
    ],
)
def test_forms_found_on_more_generated_tickets(text: str, kind: str, expected: list[str]) -> None:
    assert [f.value for f in extract(Turn("customer", text), 0, mask=False) if f.kind == kind] == expected


@pytest.mark.parametrize(
    ("said", "flipped", "lang", "marked"),
    [
        (
            "以后有事发短信,别打电话,快递一直没到~",
            "对了,快递今天到了",
            "zh",
            "快递一直没到(已更正为 快递今天到了)",
        ),
        (
            "Email me at nancyh26@aol.com - I still can't log in",
            "I'm able to log in again",
            "en",
            "I still can't log in (corrected to I'm able to log in again)",
        ),
        (
            "add our VAT number to the receipts, the bank feed still isn't syncing",
            "oh, the bank feed is syncing again",
            "en",
            "the bank feed still isn't syncing (corrected to the bank feed is syncing again)",
        ),
    ],
)
def test_a_status_that_flipped_is_marked_inside_the_request_that_quotes_it(
    said: str, flipped: str, lang: str, marked: str
) -> None:
    assert marked in _section(said, flipped, lang=lang)


def test_a_room_number_correction_fixes_the_address_whose_number_it_changes_least() -> None:
    """2910 is one digit from 2919 and two from 2612: the older address is the one corrected."""
    section = _section(
        "之前那个地址不用了,现在是浙江省杭州市西湖区延安路902号2919室",
        "快递放天津市河西区软件大道849号创新园1号楼3单元2612前台",
        "我想起来了,更正一下地址,房间号是2910",
    )
    assert "延安路902号2910室(原为 浙江省杭州市西湖区延安路902号2919室)" in section
    assert "3单元2612" in section and "3单元2910" not in section


def test_a_stage_passed_stays_passed_after_the_yes_is_contradicted() -> None:
    """Received is issued: someone saying later that it has not arrived reopens the receipt, not
    the issuing, and the section never shows "not issued yet" as current again."""
    section = _section("发票还没开出来", "发票已经收到了", "我们前台郝姐说发票到现在还没收到")
    assert "我们前台郝姐说发票到现在还没收到(原为 发票已经收到了、发票还没开出来)" in section
    assert section.count("还没开出来") == 1


def test_a_sum_retyped_without_its_cents_fixes_the_sum_whose_whole_part_it_changes() -> None:
    turns = _turns("运费收了7832.99,有点离谱", "我们预算也就￥1953.46左右", "我刚才说错了,是7839块钱")
    facts = update_ledger((), turns, 0, mask=False)
    replaced = [facts[f.supersedes].key for f in facts if f.supersedes is not None]
    assert replaced == ["CNY 7832.99"]


def test_short_of_room_an_id_or_day_a_correction_replaced_stays_beside_it() -> None:
    """Which day "日期我记错了" fixes is a guess when two were given: the replaced day is ranked with
    the exact values, so no room shows a request while leaving it out."""
    facts = update_ledger(
        (),
        _turns(
            "我是2026/11/10下的单",
            "2025-08-08之前一定要处理好",
            "帮我把套餐降一档",
            "能不能把我的账号注销掉",
            "日期我记错了,应该是8月28号",
        ),
        0,
        mask=False,
    )
    whole = ledger.view(facts, summarized_upto=9)
    assert whole.omitted == 0 and "(原为 2025-08-08)" in "".join(whole.pieces)
    requests_shown = 0
    for allowance in range(count_joined(whole.pieces) - 1, 20, -1):
        text = "".join(ledger.view(facts, summarized_upto=9, allowance=allowance).pieces)
        if "降一档" in text or "注销" in text:
            requests_shown += 1
            assert "(原为 2025-08-08)" in text, allowance
    assert requests_shown > 5  # the walk reached allowances that leave facts out


def _replaced(*texts: str) -> list[tuple[str, str]]:
    """(old value, new value) of every correction the turns make."""
    facts = update_ledger((), _turns(*texts), 0, mask=False)
    return [(facts[f.supersedes].value, f.value) for f in facts if f.supersedes is not None]


@pytest.mark.parametrize(
    ("texts", "expected"),
    [
        # a bare figure refused beside a sum is that sum, whatever was said since
        (("这个月扣了我83.26。", "这个月扣了我¥9", "不是83.26,是86 元,我看错了"), [("83.26", "86 元")]),
        # a refusal replaces the value nearest it, not another day named earlier in its sentence
        (
            (
                "我是2026.02.12下的单。",
                "我12月20号要出差,最好在这之前搞定,你们记一下,不是2026.02.12,是6/25。",
            ),
            [("2026.02.12", "6/25")],
        ),
        # 10月16号 for 11月6号 is no typo (the two digits stand apart): the latest day is fixed
        (("10月16号那天扣的款", "最晚8/27要用", "日期我记错了,应该是11月6号"), [("8/27", "11月6号")]),
        # an id retyped fixes the earlier sentence that held it, not the correction's own sentence
        (
            (
                "The transaction ID on my screen is tr_ambtsse",
                "correction: transaction ID tr_cmbtsse, not tr_ambtsse",
            ),
            [("The transaction ID on my screen is tr_ambtsse", "tr_cmbtsse")],
        ),
        # a sum one digit off is what a correction fixes, before the last sum of its name
        (
            (
                "the total was $48,377",
                "the charge was $1,400",
                "scratch that, the charge was actually $48317",
            ),
            [("$48,377", "$48317")],
        ),
    ],
)
def test_which_value_a_correction_fixes(texts: tuple[str, ...], expected: list[tuple[str, str]]) -> None:
    assert _replaced(*texts) == expected


@pytest.mark.parametrize(
    ("text", "address"),
    [
        (
            "寄到福建省厦门市思明区滨江大道805号1519室 我2027-12-03要出差",
            "福建省厦门市思明区滨江大道805号1519室",
        ),
        (
            "收货地址是天津市河西区青年路798号金茂府14号楼1单元1416 等了快22分钟",
            "天津市河西区青年路798号金茂府14号楼1单元1416",
        ),
        (
            "地址:四川省成都市武侯区软件大道644号2单元2303 报错422 error",
            "四川省成都市武侯区软件大道644号2单元2303",
        ),
        ("收货地址是北京市朝阳区建国路88号 阳光花园3-2-301", "北京市朝阳区建国路88号 阳光花园3-2-301"),
    ],
)
def test_an_address_ends_before_a_sentence_that_starts_with_a_person_or_an_error_or_counts_time(
    text: str, address: str
) -> None:
    assert _values(text, "address") == [address]


def test_an_apartment_correction_fixes_no_address_that_already_has_the_new_number() -> None:
    section = _section(
        "the old address is dead, it's 1945 Orchard Way, Unit 13D Brooklyn NY 11232 now",
        "my address is 1973 Elm Street, Apartment 14D, Austin, TX 78719.",
        "the apartment number is wrong, it should be 13D",
        lang="en",
    )
    assert "1973 Elm Street, Apartment 13D, Austin, TX 78719 (was 1973 Elm Street, Apartment 14D" in section

"""Demo rows for the demo.* tables: a small help center and nine customers with consistent pasts.

The rows are plain Python data, so tests can build profiles without a database, and
load_demo_data() upserts them, so the CLI and the tests get the same rows on every run. Every
date is on or before DEMO_TODAY, the day the demo is played on; amounts follow PLAN_PRICES.
docs/demo-data.md tells each customer's story.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Any

from psycopg.types.json import Jsonb

from ..._records import Customer, Invoice, PastTicket, Subscription

__all__ = [
    "CUSTOMERS",
    "DEMO_START",
    "DEMO_TODAY",
    "INVOICES",
    "KB_ARTICLES",
    "PAST_TICKETS",
    "PLAN_PRICES",
    "SUBSCRIPTIONS",
    "DemoCustomer",
    "KbArticle",
    "demo_batches",
    "demo_clock",
    "demo_profile_inputs",
]

DEMO_TODAY = date(2026, 10, 15)
DEMO_START = datetime(2026, 10, 15, 2, 0, tzinfo=UTC)  # 10:00 in Beijing on DEMO_TODAY
HELP_CENTER = "https://help.example.com/kb/"

# List prices in CNY, tax included. An annual plan costs twelve discounted months.
PLAN_PRICES: Mapping[tuple[str, str], Decimal] = {
    ("基础版", "月付"): Decimal("129.00"),
    ("基础版", "年付"): Decimal("1188.00"),
    ("专业版", "月付"): Decimal("349.00"),
    ("专业版", "年付"): Decimal("3588.00"),
    ("企业版", "月付"): Decimal("999.00"),
    ("企业版", "年付"): Decimal("9588.00"),
}


@dataclass(frozen=True, slots=True)
class KbArticle:
    id: str
    category: str
    title: str
    body: str

    @property
    def url(self) -> str:
        return HELP_CENTER + self.id


@dataclass(frozen=True, slots=True)
class DemoCustomer:
    """A demo.customers row; records.Customer has no created_at, which the table requires."""

    id: str
    name: str
    company: str
    email: str
    phone: str
    is_vip: bool
    created_at: date

    def record(self) -> Customer:
        return Customer(
            id=self.id,
            name=self.name,
            email=self.email,
            company=self.company,
            phone=self.phone,
            is_vip=self.is_vip,
        )


def _kb(area: str, n: int, title: str, body: str) -> KbArticle:
    return KbArticle(id=f"KB-{area}-{n:03d}", category=area, title=title, body=body)


KB_ARTICLES: tuple[KbArticle, ...] = (
    _kb(
        "bank",
        1,
        "银行流水同步失败,提示 E3001 怎么办",
        "E3001 表示您为本产品开通的银行授权已经过期。"
        "出于安全要求,银行授权的有效期为 90 天,到期后系统无法再读取流水。"
        "请在「设置 → 银行账户」中点击「重新授权」,按银行页面的提示完成验证即可恢复同步。"
        "重新授权后,授权过期期间缺失的流水会在下一次同步时自动补齐。",
    ),
    _kb(
        "bank",
        2,
        "同步失败提示 E3002:银行系统维护或接口限流",
        "E3002 表示银行端暂时无法响应,常见原因是银行系统维护或银行对查询频率的限制。"
        "这类问题无需重新授权,您的授权仍然有效。"
        "请等待 30 分钟到 2 小时后,在「银行账户」页面点击「立即同步」重试。"
        "多数银行的维护安排在夜间 23:00 至次日 6:00,期间同步失败属于正常现象。"
        "如果连续 24 小时仍提示 E3002,请联系客服并提供银行名称和报错时间。",
    ),
    _kb(
        "bank",
        3,
        "如何重新授权银行账户",
        "进入「设置 → 银行账户」,找到状态为「授权已过期」或「即将过期」的账户。"
        "点击「重新授权」后会跳转到银行的授权页面,请使用开户时预留的手机号接收验证码。"
        "部分银行需要使用 U 盾或企业网银管理员账号完成授权。"
        "授权成功后账户状态变为「正常」,新的有效期从授权当天起算 90 天。",
    ),
    _kb(
        "bank",
        4,
        "支持的银行与自动同步频率",
        "目前支持国内主要商业银行的企业账户,包括招商银行、工商银行、建设银行、中国银行和农业银行。"
        "系统每 4 小时自动同步一次流水,您也可以在「银行账户」页面手动点击「立即同步」。"
        "手动同步每个账户每小时最多 3 次,超出后需等待下一个整点。"
        "新绑定的账户首次同步会拉取最近 12 个月的流水,大约需要 10 分钟。",
    ),
    _kb(
        "bank",
        5,
        "同步后流水缺失或重复",
        "流水缺失通常是因为银行授权中断期间没有同步,重新授权并同步后会自动补齐。"
        "系统按银行流水号去重,同一笔流水不会被导入两次。"
        "如果看到金额和时间都相同的两笔记录,请核对流水号,它们可能是银行端两笔真实的交易。"
        "手动导入的对账单与自动同步的流水不会互相去重,请避免对同一时间段重复导入。",
    ),
    _kb(
        "bank",
        6,
        "同步失败提示 E3003:银行账户已变更",
        "E3003 表示银行返回账户不存在,常见于账户已销户、更换了账号或开户行信息变更。"
        "请先在「银行账户」页面解除原账户的绑定,再用新的账户信息重新绑定。"
        "解除绑定不会删除已经同步的历史流水。"
        "如果账户并未变更却提示 E3003,请联系客服并提供银行名称和账号后四位。",
    ),
    _kb(
        "bank",
        7,
        "同步长时间显示「同步中」",
        "同步状态超过 30 分钟仍为「同步中」,通常是银行接口响应缓慢。"
        "请刷新页面查看最新状态,不需要重复点击同步。"
        "超过 2 小时仍未完成时,系统会自动终止本次同步并在下一个周期重试。"
        "如果连续三个周期都没有完成,请联系客服。",
    ),
    _kb(
        "invoice",
        1,
        "如何修改发票抬头",
        "发票抬头可以在「账单 → 发票信息」中修改,需要填写单位名称和纳税人识别号。"
        "修改只对之后开具的发票生效,已开具的发票不会自动变更。"
        "公司更名后,请确保新抬头与营业执照上的名称完全一致。"
        "已开发票需要更换抬头的,请参考「发票抬头有误如何重开」。",
    ),
    _kb(
        "invoice",
        2,
        "发票抬头有误如何重开",
        "当月开具的电子发票可以直接作废,再按正确的抬头重开。"
        "跨月的发票需要先开具红字发票冲销,再开具新的发票。"
        "请在「账单 → 发票记录」中找到对应发票,点击「申请重开」并填写正确的抬头信息。"
        "重开申请一般在 1 至 3 个工作日内处理完成,新发票会发送到账户邮箱。",
    ),
    _kb(
        "invoice",
        3,
        "电子普通发票与增值税专用发票",
        "默认开具增值税电子普通发票,付款成功后自动发送到账户邮箱。"
        "如需增值税专用发票,请在「发票信息」中补充开户行、账号、注册地址和电话。"
        "专用发票同样以电子形式开具,无需邮寄。"
        "发票开具后不能直接修改类型,需要作废或红冲后重开。",
    ),
    _kb(
        "invoice",
        4,
        "下载发票和账单记录",
        "所有已开具的发票都可以在「账单 → 发票记录」中下载 PDF 或 OFD 文件。"
        "账单记录保留最近 36 个月,包括每次扣款的金额、套餐和付款方式。"
        "如果没有收到发票邮件,请先检查垃圾邮件文件夹,也可以在发票记录中点击「重新发送」。",
    ),
    _kb(
        "refund",
        1,
        "退款政策",
        "年付套餐自付款之日起 30 天内可以申请退款,按未使用的天数比例计算退款金额。"
        "退款金额不会超过该笔订单的实付金额。"
        "超过 30 天的年付订单以及月付订单不支持退款,月付套餐可以随时取消自动续费。"
        "所有退款都需要人工审核,审核通过后才会执行。",
    ),
    _kb(
        "refund",
        2,
        "退款流程与到账时间",
        "请通过工单提交退款申请,注明发票编号和退款原因。"
        "客服核实订单后会计算应退金额,并提交人工审批。"
        "审批通过后款项按原支付方式退回,通常 3 至 7 个工作日到账。"
        "退款完成后,对应的发票会被作废或红冲,套餐在退款当天停止服务。",
    ),
    _kb(
        "plan",
        1,
        "套餐与价格",
        "基础版每月 129 元或每年 1,188 元,支持 1 个银行账户。"
        "专业版每月 349 元或每年 3,588 元,支持最多 10 个银行账户和 API 访问。"
        "企业版每月 999 元或每年 9,588 元,不限银行账户数量,并提供专属客户经理。"
        "以上价格均为人民币含税价。",
    ),
    _kb(
        "plan",
        2,
        "升级套餐",
        "在「账单 → 套餐」中选择更高的套餐即可升级,升级立即生效。"
        "当前周期剩余的费用按天折算后抵扣新套餐的费用,您只需支付差额。"
        "如果在当期到期日升级,则直接按新套餐的价格开始新的计费周期。"
        "升级后原有数据和银行授权全部保留。",
    ),
    _kb(
        "plan",
        3,
        "降级套餐或取消自动续费",
        "降级和取消自动续费都在当前计费周期结束时生效,当期内仍可使用原套餐的全部功能。"
        "降级前请确认银行账户数量没有超过新套餐的上限,否则需要先解绑多余的账户。"
        "取消自动续费后,到期当天套餐停止服务,数据会保留 90 天。",
    ),
    _kb(
        "plan",
        4,
        "月付改为年付",
        "月付套餐可以随时改为年付,年付比连续月付一年节省 14% 至 23%,视套餐而定。"
        "改为年付后,新的年付周期从当前月付周期结束的次日开始计算。"
        "更改计费周期不会影响已绑定的银行账户和数据。",
    ),
    _kb(
        "account",
        1,
        "忘记密码怎么办",
        "在登录页点击「忘记密码」,输入账户邮箱后会收到重置链接。"
        "重置链接 30 分钟内有效,并且只能使用一次。"
        "新密码至少 10 位,需要同时包含字母和数字。"
        "如果收不到邮件,请检查垃圾邮件文件夹,并确认输入的是注册时使用的邮箱。",
    ),
    _kb(
        "account",
        2,
        "两步验证收不到验证码",
        "两步验证默认通过短信把验证码发送到绑定的手机。"
        "如果更换了手机号,可以使用开启两步验证时保存的备用恢复码登录。"
        "没有恢复码时,请联系客服,客服核验身份后会为您重置两步验证。"
        "重置完成后,请尽快绑定新手机并保存新的恢复码。",
    ),
    _kb(
        "account",
        3,
        "账户被锁定",
        "连续 5 次输错密码后,账户会被锁定 30 分钟。"
        "锁定期间无法登录,时间到后会自动解锁。"
        "如果怀疑有人尝试登录您的账户,请解锁后立即修改密码并开启两步验证。",
    ),
    _kb(
        "account",
        4,
        "添加团队成员和设置权限",
        "管理员可以在「设置 → 团队成员」中通过邮箱邀请同事。"
        "成员角色分为管理员、财务和只读三种。"
        "只有管理员可以绑定或解绑银行账户,财务角色可以查看账单和下载发票。"
        "被移除的成员会立即失去访问权限。",
    ),
    _kb(
        "api",
        1,
        "创建和轮换 API 密钥",
        "专业版和企业版可以在「设置 → 开发者」中创建 API 密钥。"
        "密钥只在创建时完整显示一次,请立即保存到安全的位置。"
        "建议每 90 天轮换一次:先创建新密钥并完成切换,再吊销旧密钥。"
        "每个账户最多同时存在 5 个有效密钥。",
    ),
    _kb(
        "api",
        2,
        "API 返回 E2002:超出速率限制",
        "E2002 表示请求超出了套餐的速率限制,接口同时返回 HTTP 429。"
        "专业版每分钟最多 120 次请求,企业版每分钟最多 600 次请求。"
        "请读取响应头 Retry-After,等待指定的秒数后再重试,并使用指数退避。"
        "批量同步数据时,建议降低并发或改用批量接口。",
    ),
    _kb(
        "api",
        3,
        "API 返回 E2001:密钥无效",
        "E2001 表示请求使用的 API 密钥不存在、已被吊销,或复制时缺少了字符。"
        "请在「设置 → 开发者」中确认该密钥的状态为「有效」。"
        "密钥应放在请求头 Authorization 中,格式为 Bearer 加一个空格再加密钥。"
        "如果密钥曾经泄露,请立即吊销并创建新的密钥。",
    ),
    _kb(
        "api",
        4,
        "Webhook 回调失败与重试",
        "Webhook 需要在 5 秒内返回 HTTP 2xx,否则视为失败。"
        "失败的回调会在 1 分钟、10 分钟和 1 小时后各重试一次。"
        "每次回调都带有签名头,请在处理前校验签名。"
        "可以在「开发者 → Webhook 日志」中查看最近 7 天的回调记录并手动重发。",
    ),
)

CUSTOMERS: tuple[DemoCustomer, ...] = (
    DemoCustomer(
        "C0001", "吴刚", "杭州云帆贸易有限公司", "wugang@example.com", "13800001234", True, date(2025, 10, 28)
    ),
    DemoCustomer(
        "C0002",
        "李娜",
        "成都拾光文化传媒有限公司",
        "lina@example.com",
        "13800002345",
        False,
        date(2025, 12, 28),
    ),
    DemoCustomer(
        "C0003", "陈静", "南京青禾设计工作室", "chenjing@example.com", "13800003456", False, date(2026, 9, 18)
    ),
    DemoCustomer(
        "C0004",
        "刘洋",
        "苏州恒信精密机械有限公司",
        "liuyang@example.com",
        "13800004567",
        False,
        date(2026, 1, 15),
    ),
    DemoCustomer(
        "C0005",
        "赵敏",
        "上海澄明管理咨询有限公司",
        "zhaomin@example.com",
        "13800005678",
        False,
        date(2025, 11, 25),
    ),
    DemoCustomer(
        "C0006",
        "孙丽",
        "武汉知行教育科技有限公司",
        "sunli@example.com",
        "13800006789",
        False,
        date(2026, 9, 28),
    ),
    DemoCustomer(
        "C0007",
        "周杰",
        "深圳智汇数据科技有限公司",
        "zhoujie@example.com",
        "13800007890",
        True,
        date(2026, 2, 20),
    ),
    DemoCustomer(
        "C0008",
        "王芳",
        "厦门海韵茶业有限公司",
        "wangfang@example.com",
        "13800008901",
        False,
        date(2026, 1, 8),
    ),
    DemoCustomer(
        "C0009",
        "黄磊",
        "北京远景物流有限公司",
        "huanglei@example.com",
        "13800009012",
        False,
        date(2025, 10, 5),
    ),
)


def _sub(
    customer_id: str, n: int, plan: str, cycle: str, status: str, started: date, renews: date | None
) -> Subscription:
    # The amount is looked up, never typed, so a plan and its price cannot disagree.
    return Subscription(
        id=f"SUB-{customer_id}-{n}",
        customer_id=customer_id,
        plan=plan,
        billing_cycle=cycle,
        status=status,
        started_on=started,
        renews_on=renews,
        amount=PLAN_PRICES[(plan, cycle)],
    )


# A cancelled subscription has no renewal date; the table has no end date either, so the end of
# a cancelled one is told by its last invoice (and by the start of the plan that replaced it).
SUBSCRIPTIONS: tuple[Subscription, ...] = (
    _sub("C0001", 1, "专业版", "月付", "cancelled", date(2025, 11, 3), None),
    _sub("C0001", 2, "专业版", "年付", "active", date(2026, 10, 3), date(2027, 10, 3)),
    _sub("C0002", 1, "基础版", "月付", "cancelled", date(2026, 1, 5), None),
    _sub("C0002", 2, "专业版", "年付", "active", date(2026, 6, 5), date(2027, 6, 5)),
    _sub("C0003", 1, "基础版", "月付", "active", date(2026, 9, 20), date(2026, 10, 20)),
    _sub("C0004", 1, "专业版", "月付", "active", date(2026, 1, 20), date(2026, 10, 20)),
    _sub("C0005", 1, "专业版", "月付", "active", date(2025, 12, 1), date(2026, 11, 1)),
    _sub("C0006", 1, "专业版", "年付", "active", date(2026, 10, 2), date(2027, 10, 2)),
    _sub("C0007", 1, "企业版", "年付", "active", date(2026, 3, 1), date(2027, 3, 1)),
    _sub("C0008", 1, "专业版", "年付", "cancelled", date(2026, 1, 10), None),
    _sub("C0008", 2, "基础版", "年付", "active", date(2026, 1, 13), date(2027, 1, 13)),
    _sub("C0009", 1, "企业版", "月付", "cancelled", date(2025, 10, 12), None),
)


def _add_months(day: date, months: int) -> date:
    index = day.month - 1 + months
    return day.replace(year=day.year + index // 12, month=index % 12 + 1)  # demo days are all <= 28


def _invoices(subscription_id: str, periods: int, *, status: str = "paid") -> tuple[Invoice, ...]:
    """One invoice per billing period from the start, each for the subscription's amount."""
    sub = next(s for s in SUBSCRIPTIONS if s.id == subscription_id)
    step = 12 if sub.billing_cycle == "年付" else 1
    issued = [_add_months(sub.started_on, i * step) for i in range(periods)]
    return tuple(
        Invoice(
            id=f"INV-{sub.customer_id}-{day:%Y%m%d}",
            customer_id=sub.customer_id,
            amount=sub.amount,
            currency="CNY",
            issued_on=day,
            status=status,
            subscription_id=sub.id,
        )
        for day in issued
    )


INVOICES: tuple[Invoice, ...] = (
    *_invoices("SUB-C0001-1", 11),  # November to September; the annual plan began on the next renewal day
    *_invoices("SUB-C0001-2", 1),  # inside the 30-day refund window on the demo day
    *_invoices("SUB-C0002-1", 5),  # January to May; the upgrade came on the June renewal day
    *_invoices("SUB-C0002-2", 1),
    *_invoices("SUB-C0003-1", 1),
    *_invoices("SUB-C0004-1", 9),
    *_invoices("SUB-C0005-1", 11),
    *_invoices("SUB-C0006-1", 1),
    *_invoices("SUB-C0007-1", 1),
    *_invoices("SUB-C0008-1", 1, status="refunded"),  # pro-rata refund, see PT-20260113-02
    *_invoices("SUB-C0008-2", 1),
    *_invoices("SUB-C0009-1", 10),  # October to July; auto-renewal cancelled before August
)


def _ticket(
    ticket_id: str, customer_id: str, subject: str, resolved_on: date, category: str, **facts: Any
) -> PastTicket:
    """A well-formed past ticket: every facts key present, lists empty when there is nothing."""
    shape: dict[str, Any] = {
        "category": category,
        "error_codes": [],
        "amounts": [],
        "ids": [],
        "resolution": "",
        "requests": [],
        "promises": [],
        "dates": [],
    }
    unknown = set(facts) - set(shape)
    if unknown:
        raise ValueError(f"unknown facts keys {sorted(unknown)} in demo ticket {ticket_id}")
    return PastTicket(
        id=ticket_id,
        customer_id=customer_id,
        subject=subject,
        resolved_on=resolved_on,
        facts={**shape, **facts},
    )


PAST_TICKETS: tuple[PastTicket, ...] = (
    # 吴刚: the bank authorization lasts 90 days, so it lapsed on 04-02, 07-01 and 09-29.
    _ticket(
        "PT-20260402-07",
        "C0001",
        "招商银行流水同步失败,报错 E3001",
        date(2026, 4, 2),
        "technical",
        error_codes=["E3001"],
        resolution="重新授权",
        dates=["2026-04-02"],
    ),
    _ticket(
        "PT-20260701-03",
        "C0001",
        "银行流水又不同步了,还是 E3001",
        date(2026, 7, 1),
        "technical",
        error_codes=["E3001"],
        resolution="重新授权",
        requests=["希望授权到期前提醒"],
        dates=["2026-07-01"],
    ),
    _ticket(
        "PT-20260929-11",
        "C0001",
        "第三次 E3001,银行同步中断",
        date(2026, 9, 29),
        "technical",
        error_codes=["E3001", "E3001"],
        resolution="重新授权",
        requests=["希望授权到期前提醒"],
        promises=["提醒需求转产品团队评估"],
        dates=["2026-09-29", "2026-12-28"],
    ),
    # 刘洋: one good ticket and three rows left broken by the old system's export.
    _ticket(
        "PT-20260512-04",
        "C0004",
        "工商银行同步失败 E3002",
        date(2026, 5, 12),
        "technical",
        error_codes=["E3002"],
        resolution="稍后重试",
    ),
    PastTicket(
        "PT-20260602-01",
        "C0004",
        "银行同步报错",
        date(2026, 6, 2),
        {"error_codes": ["E3001"], "resolution": "重新授权"},
    ),  # no category
    PastTicket(
        "PT-20260620-05",
        "C0004",
        "银行同步又报错",
        date(2026, 6, 20),
        {"category": "technical", "error_codes": "E3001", "resolution": "重新授权"},
    ),  # not a list
    PastTicket(
        "PT-20260703-02", "C0004", "财务同事无法登录", None, {"category": "account", "resolution": "重置密码"}
    ),  # resolved_on lost
    # 赵敏: two invoice problems and two E3002 outages; the invoice ones are the more recent.
    _ticket(
        "PT-20260209-06",
        "C0005",
        "建设银行同步失败 E3002",
        date(2026, 2, 9),
        "technical",
        error_codes=["E3002"],
        resolution="稍后重试",
    ),
    _ticket(
        "PT-20260316-02",
        "C0005",
        "3 月发票税号填错",
        date(2026, 3, 16),
        "invoice",
        ids=["INV-C0005-20260301"],
        amounts=["349.00"],
        resolution="作废重开",
    ),
    _ticket(
        "PT-20260721-08",
        "C0005",
        "银行同步失败 E3002",
        date(2026, 7, 21),
        "technical",
        error_codes=["E3002"],
        resolution="稍后重试",
    ),
    _ticket(
        "PT-20260908-01",
        "C0005",
        "公司更名,9 月发票抬头需要更新",
        date(2026, 9, 8),
        "invoice",
        ids=["INV-C0005-20260901"],
        amounts=["349.00"],
        resolution="作废重开",
        requests=["希望以后发票自动使用新抬头"],
    ),
    # 孙丽: new customer who changed phones.
    _ticket(
        "PT-20261008-03",
        "C0006",
        "换手机后收不到两步验证码",
        date(2026, 10, 8),
        "account",
        resolution="核验身份后重置两步验证",
    ),
    # 周杰: API integration hitting the rate limit, once a revoked key.
    _ticket(
        "PT-20260520-09",
        "C0007",
        "批量同步接口频繁返回 429",
        date(2026, 5, 20),
        "api",
        error_codes=["E2002"],
        resolution="降低并发并退避重试",
    ),
    _ticket(
        "PT-20260611-04",
        "C0007",
        "API 密钥突然失效",
        date(2026, 6, 11),
        "api",
        error_codes=["E2001"],
        resolution="创建新密钥",
    ),
    _ticket(
        "PT-20260803-02",
        "C0007",
        "月底对账时再次触发速率限制",
        date(2026, 8, 3),
        "api",
        error_codes=["E2002"],
        resolution="降低并发并退避重试",
        requests=["希望提高企业版速率上限"],
        promises=["速率上限评估结果邮件通知"],
    ),
    # 王芳: bought the wrong plan, refunded pro rata (362 of 365 days) and took 基础版年付.
    _ticket(
        "PT-20260113-02",
        "C0008",
        "误购专业版年付,申请退款",
        date(2026, 1, 13),
        "refund",
        ids=["INV-C0008-20260110"],
        amounts=["3588.00", "3558.51"],
        resolution="按比例退款",
        promises=["退款 3 至 7 个工作日原路退回"],
        dates=["2026-01-10"],
    ),
    # 黄磊: a role fix, then the cancellation.
    _ticket(
        "PT-20260318-05",
        "C0009",
        "财务同事无法下载发票",
        date(2026, 3, 18),
        "account",
        resolution="调整成员角色为财务",
    ),
    _ticket(
        "PT-20260730-06",
        "C0009",
        "取消企业版自动续费",
        date(2026, 7, 30),
        "plan_change",
        resolution="取消自动续费",
        promises=["数据保留至 2026-11-10"],
        dates=["2026-08-12", "2026-11-10"],
    ),
)


def demo_profile_inputs(email: str) -> tuple[Customer, list[Subscription], list[PastTicket]] | None:
    """The same inputs DemoBackend reads for a profile after load_demo_data(), without a database."""
    found = [c for c in CUSTOMERS if c.email == email.strip().lower()]
    if not found:
        return None
    customer = found[0]
    return (
        customer.record(),
        [s for s in SUBSCRIPTIONS if s.customer_id == customer.id],
        [t for t in PAST_TICKETS if t.customer_id == customer.id],
    )


def demo_clock() -> Callable[[], datetime]:
    """A clock that reads DEMO_START when made and then runs at the wall clock's pace.

    The demo is played on DEMO_TODAY whatever the date: its turns, the day its ticket is resolved
    on and the day its profiles are built for are the same on every run.
    """
    offset = DEMO_START - datetime.now(UTC)
    return lambda: datetime.now(UTC) + offset


# ON CONFLICT DO UPDATE rather than DO NOTHING: loading again also undoes a demo that changed rows.
_UPSERT_ARTICLE = (
    "INSERT INTO demo.kb_articles (id, title, category, body, url) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET title = EXCLUDED.title, category = EXCLUDED.category,"
    " body = EXCLUDED.body, url = EXCLUDED.url"
)
_UPSERT_CUSTOMER = (
    "INSERT INTO demo.customers (id, name, company, email, phone, is_vip, created_at)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET name = EXCLUDED.name, company = EXCLUDED.company,"
    " email = EXCLUDED.email, phone = EXCLUDED.phone, is_vip = EXCLUDED.is_vip, created_at = "
    "EXCLUDED.created_at"
)
_UPSERT_SUBSCRIPTION = (
    "INSERT INTO demo.subscriptions (id, customer_id, plan, billing_cycle, status, started_on, renews_on, "
    "amount)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET customer_id = EXCLUDED.customer_id, plan = EXCLUDED.plan,"
    " billing_cycle = EXCLUDED.billing_cycle, status = EXCLUDED.status, started_on = EXCLUDED.started_on,"
    " renews_on = EXCLUDED.renews_on, amount = EXCLUDED.amount"
)
_UPSERT_INVOICE = (
    "INSERT INTO demo.invoices (id, customer_id, subscription_id, amount, currency, issued_on, status)"
    " VALUES (%s, %s, %s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET customer_id = EXCLUDED.customer_id,"
    " subscription_id = EXCLUDED.subscription_id, amount = EXCLUDED.amount, currency = EXCLUDED.currency,"
    " issued_on = EXCLUDED.issued_on, status = EXCLUDED.status"
)
_UPSERT_TICKET = (
    "INSERT INTO demo.past_tickets (id, customer_id, subject, resolved_on, facts) VALUES (%s, %s, %s, %s, %s)"
    " ON CONFLICT (id) DO UPDATE SET customer_id = EXCLUDED.customer_id, subject = EXCLUDED.subject,"
    " resolved_on = EXCLUDED.resolved_on, facts = EXCLUDED.facts"
)


def demo_batches() -> list[tuple[str, str, Sequence[tuple[Any, ...]]]]:
    """(table, statement, rows) in foreign-key order."""
    return [
        ("kb_articles", _UPSERT_ARTICLE, [(a.id, a.title, a.category, a.body, a.url) for a in KB_ARTICLES]),
        (
            "customers",
            _UPSERT_CUSTOMER,
            [(c.id, c.name, c.company, c.email, c.phone, c.is_vip, c.created_at) for c in CUSTOMERS],
        ),
        (
            "subscriptions",
            _UPSERT_SUBSCRIPTION,
            [
                (s.id, s.customer_id, s.plan, s.billing_cycle, s.status, s.started_on, s.renews_on, s.amount)
                for s in SUBSCRIPTIONS
            ],
        ),
        (
            "invoices",
            _UPSERT_INVOICE,
            [
                (i.id, i.customer_id, i.subscription_id, i.amount, i.currency, i.issued_on, i.status)
                for i in INVOICES
            ],
        ),
        (
            "past_tickets",
            _UPSERT_TICKET,
            [(t.id, t.customer_id, t.subject, t.resolved_on, Jsonb(dict(t.facts))) for t in PAST_TICKETS],
        ),
    ]

"""Exact facts pinned outside the summary, in the forms customers write them.

A summary paraphrases, and a paraphrase may turn "INV-2026-0042" into "the invoice" or drop the
"reply within 3 working days" an agent promised ten turns ago. The ledger built here keeps those
exactly, found by plain patterns so the same conversation always yields the same ledger, with no
model call and no I/O. Each fact keeps the words as written (``value``) beside a canonical form
(``key``): amounts as ``CNY 3500.00`` (:mod:`.numbers`), dates in ISO form with relative ones
resolved against the turn's own time (:mod:`.dates`), ids and codes case-folded to upper case,
phones as digits, emails lower-cased (:mod:`.contacts`).

Kinds: ``id``, ``error_code``, ``amount``, ``date``, ``phone``, ``email``, ``address``, ``person``
(name and role), ``plan``, ``status`` (a yes/no fact: ``收到退款`` = 是/否), ``promise`` (agent
turns), ``promise_reported`` (a promise the customer says they were given), ``request`` (customer
turns; politeness is not a request).

**Supersession.** A fact may name its ``subject`` (``升级费``, ``续费日``, ``收到退款``). A later
fact of the same kind and subject with another value supersedes the current one; so does a fact
written as a correction (``不对,应该是 1860 元``) of the latest one of its kind, or of the value the
turn names as wrong (``不是11月24号,是2/21``), or of the id it types again with a typo fixed
(``正确的是1Z87327004``). The ledger stays append-only: the new fact records the position of the
one it replaces (``supersedes``).
"""

from __future__ import annotations

import bisect
import dataclasses
import functools
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import datetime
from typing import Literal, NamedTuple, get_args

from .._state import Fact, Role, Turn
from ..errors import InvalidInput
from ..i18n._prompts import fact_labels
from . import _contacts as contacts
from . import _plans
from ._dates import dates
from ._mask import mask_text
from ._money import amounts, money_in

FactKind = Literal[
    "id",
    "error_code",
    "amount",
    "date",
    "phone",
    "email",
    "address",
    "person",
    "plan",
    "status",
    "promise",
    "promise_reported",
    "request",
    "detail",
]
FACT_KINDS: tuple[FactKind, ...] = get_args(FactKind)
# Each kind's label in a prompt and on a screen, from the prompt catalogue (i18n/prompt.*.json).
FACT_LABELS_ZH: Mapping[str, str] = fact_labels("zh")
FACT_LABELS_EN: Mapping[str, str] = fact_labels("en")
SENTENCE_KINDS: frozenset[str] = frozenset({"promise", "promise_reported", "request", "detail"})
OPERATOR = "operator"  # the role of a fact an operator corrected or retracted (run/_corrections.py)
# Exact values: the ledger's first rank, never left out while anything else could go instead.
EXACT_KINDS: frozenset[str] = frozenset({"id", "amount", "date", "error_code", "phone", "email"})

# A promise or request is kept as its sentence; customers paste whole logs without punctuation,
# and one "sentence" must not be allowed to fill the prompt.
MAX_SENTENCE_CHARS = 160

# -- ids and error codes ------------------------------------------------------------------------
_ERROR_CODE = re.compile(r"[Ee](?<![A-Za-z0-9][Ee])[0-9]{3,5}+(?![A-Za-z0-9])")
_NAMED_CODE = re.compile(r"[A-Z](?<![A-Za-z0-9-][A-Z])[A-Z]{1,5}-[0-9]{3}(?![A-Za-z0-9-])")
# A code after the words that report one: "错误码 E1234", "报错 ab-217", "error 7731", "fails with
# NET-6519", "throws SYNC-4432", "exit code 137".
_ERROR_CODE_AFTER_LABEL = re.compile(
    r"(?=[错报代ecfst])(?:错误码|错误代码|报错码|报错代码|报错|代码|(?<![A-Za-z])(?:(?:error|exit|status)\s+code|error"
    r"|(?:fail|crash|abort|exit)(?:s|ed|ing)?\s+with(?:\s+(?:an?\s+)?(?:error|code))?|throw(?:s|ing)?))"
    r"\s*(?:是|为|is)?\s*[:：#]?\s*([A-Za-z]{0,6}-?[0-9]{3,6}+)(?![A-Za-z0-9])",
    re.IGNORECASE,
)
# INV-2026-0042, inv-2026-0099, B20260915001, T000153: a short letter prefix and four digits or more.
_PREFIXED_ID = re.compile(
    r"[A-Za-z](?<![A-Za-z0-9-][A-Za-z])[A-Za-z]{0,3}-?[0-9]{4,}+(?:-[0-9]++)*+(?![A-Za-z0-9])"
)
# First characters: a pattern tried at every character of a turn may start with a lookahead of
# the characters its matches can start with (read with the pattern's own flags, so that case
# folding admits what the pattern would). Any other character then fails at once, where it was
# tried in each alternative; no match changes.
#
# Digit-first ids ("2026HT0311") and bare digit runs are ids only right after a word naming one;
# otherwise they are phone numbers, quantities or timestamps.
_ID_AFTER_LABEL = re.compile(
    r"(?=[订账发工退单流合编客会交快运obitrc])"  # the labels' first characters
    r"(?P<label>订单号|订单|账单号|账单|发票号|发票|工单号|工单|退款单号|退款单|退款号|单号|流水号|合同号|合同编号"
    r"|编号|客户号|会员号|账户号|交易号|快递单号|运单号|order|bill|invoice|ticket|refund|case|contract)"
    r"\s*(?:号码|编号|number|no\.?|id)?\s*(?:应该是|应该|改成|改为|显示的是|显示为|写的是|是|为|is)?\s*[:：#]?\s*"
    r"(?P<v>[0-9][0-9A-Za-z-]{4,39}+|[A-Za-z]{1,6}[0-9][0-9A-Za-z-]{3,39}+|[A-Za-z]{1,6}_[0-9A-Za-z_]{3,39}+)"
    r"(?![0-9A-Za-z_])",
    re.IGNORECASE,
)
# The id first, the word naming it after: "517483317439这个订单号一直没动静", "看下6QB2JCZ这单",
# "case_xexbvtw的单子".
_ID_BEFORE_LABEL = re.compile(
    r"(?=[0-9A-Za-z])(?<![0-9A-Za-z_-])(?P<v>[0-9]{6,30}+|(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9][A-Za-z0-9_-]{4,38}[A-Za-z0-9]"
    r"|[A-Za-z]{1,6}_[0-9A-Za-z_]{3,38}[0-9A-Za-z])"
    r"\s*(?:这个|这张|这笔|那个)?(?:订单号|订单|单号|合同号|工单号|运单号|快递单号|流水号|发票号|账单号|这单|那单|的单子)"
)
# After a label, a date is not an id: "订单 2026-03-01 下的".
_DATE_SHAPED = re.compile(r"[0-9]{4}-[0-9]{1,2}(?:-[0-9]{1,2})?")
_NOT_ID_PREFIXES = frozenset({"USD", "RMB", "CNY", "EUR", "HKD"})
# A hexadecimal status as programs print it: 0x80070005.
_HEX_CODE = re.compile(r"0[xX](?<![A-Za-z0-9]0[xX])[0-9A-Fa-f]{4,16}+(?![A-Za-z0-9])")
# An HTTP status named as one: "502 error", "503 Service Unavailable", "HTTP 404", "状态码 500".
_HTTP_REASONS = (
    r"error|错误|报错|bad\s+request|unauthorized|forbidden|not\s+found|method\s+not\s+allowed"
    r"|request\s+timeout|conflict|gone|too\s+many\s+requests|internal\s+server\s+error|bad\s+gateway"
    r"|service\s+unavailable|gateway\s+time-?out"
)
_HTTP_STATUS = re.compile(
    r"(?=[Hh状45])(?:(?:(?<![A-Za-z])(?:HTTP|http)(?:\s*(?:status|error))?\s*|状态码\s*)(?P<a>[1-5][0-9]{2})(?![0-9A-Za-z])"
    rf"|(?<![0-9A-Za-z.])(?P<b>[45][0-9]{{2}})\s?(?P<reason>{_HTTP_REASONS})(?![A-Za-z]))",
    re.IGNORECASE,
)
# An error as a program names it: ERR_AUTH_13, ERROR-42, E_TIMEOUT.
_ERROR_NAME = re.compile(
    r"(?=[Ee])(?<![A-Za-z0-9_-])(?:(?:ERR(?:OR)?|E)[_-][A-Z0-9]+(?:[_-][A-Z0-9]+)*+"
    # as pasted in lower case ("err_sync_972"), with a digit: "error-prone" is a word
    r"|(?=[a-z_-]*[0-9])(?i:err(?:or)?)[_-][a-z0-9]+(?:[_-][a-z0-9]+)*+)(?![A-Za-z0-9_-])"
)
# An id as a system prints one: letters and digits mixed, at least two of each ("X3KWW4KP",
# "2VFR4CD6", "zto_4jk2yxk"); or long digit groups joined by dashes ("441-9495181-0944424").
# A count with what it counts is no id: "the 200-seat Enterprise tier", "a 12-piece set".
_A_COUNT = (
    r"(?![0-9]+-(?:seat|user|person|people|member|licen[cs]e|device|piece|pack|port|page|sheet|cup|slice"
    r"|inch|foot|feet|mile|quart|gallon|liter|litre|pound|lb|oz|ounce|watt|volt|speed|door|drawer|layer"
    r"|year|month|week|day|hour|minute|night|star)s?(?![A-Za-z0-9_-]))"
)
_MIXED_ID = re.compile(
    r"(?=[0-9A-Za-z])(?:(?<![A-Za-z0-9_@.#-])"
    + _A_COUNT
    + r"(?=(?:[A-Za-z_-]*[0-9]){2})(?=(?:[0-9_-]*[A-Za-z]){2})"
    r"[A-Za-z0-9][A-Za-z0-9_-]{4,38}[A-Za-z0-9](?![A-Za-z0-9_@-]|\.[A-Za-z0-9])"
    r"|(?<![0-9A-Za-z-])[0-9]{3,}+(?:-[0-9]{3,}+){2,}+(?![0-9A-Za-z-]))"
)

# -- subjects and corrections ---------------------------------------------------------------------
_SUBJECTS: Mapping[str, tuple[tuple[str, str], ...]] = {
    "amount": (
        ("升级费", "升级费"),
        ("年费", "年费"),
        ("月费", "月费"),
        ("服务费", "服务费"),
        ("手续费", "手续费"),
        ("违约金", "违约金"),
        ("押金", "押金"),
        ("差价", "差价"),
        ("退款金额", "退款"),
        ("退款", "退款"),
        ("退费", "退款"),
        ("扣款", "扣款"),
        ("扣费", "扣款"),
        ("扣了", "扣款"),
        ("实付", "实付"),
        ("报价", "报价"),
        ("预算", "预算"),
        ("余额", "余额"),
        ("补偿", "补偿"),
        ("赔偿", "补偿"),
        ("定金", "定金"),
        ("订金", "定金"),
        ("尾款", "尾款"),
        ("发票金额", "发票金额"),
        ("开票金额", "发票金额"),
        # English: the words customers name an amount by ("the refund should be $39")
        ("refund", "refund"),
        ("deposit", "deposit"),
        ("quote", "quote"),
        ("quoted", "quote"),
        ("upgrade fee", "upgrade fee"),
        ("annual fee", "annual fee"),
        ("monthly fee", "monthly fee"),
        ("service fee", "service fee"),
        ("late fee", "late fee"),
        ("balance", "balance"),
        ("budget", "budget"),
        ("invoice total", "invoice total"),
        ("charged", "charge"),
        ("charge", "charge"),
    ),
    "date": (
        ("到期日", "到期日"),
        ("到期", "到期日"),
        ("续费日", "续费日"),
        ("截止", "截止日"),
        ("上线", "上线日"),
        ("会议", "会议"),
        ("回访", "回访"),
        ("发货", "发货日"),
        ("交付", "交付日"),
        ("扣款日", "扣款日"),
        ("开票日", "开票日"),
        ("due date", "due date"),
        ("renewal", "renewal date"),
        ("renews", "renewal date"),
        ("deadline", "deadline"),
        ("meeting", "meeting"),
        ("go-live", "go-live"),
        ("delivery", "delivery date"),
    ),
}
# Subjects a ticket holds many of ("扣了 ¥7" on one bill, "扣了 ¥14" on the next): a later value
# replaces an earlier one only when written as a correction.
_PLURAL_SUBJECTS = frozenset(
    {
        "扣款",
        # a price difference, a refund, a compensation per order: "差价78还没补", later "差价69块还没补"
        "差价",
        "退款",
        "补偿",
        "会议",
        "回访",
        "地址",
        "发票地址",
        "address",
        "charge",
        "refund",
        "meeting",
        "renewal date",
    }
)
_SUBJECT_PATTERNS = {
    kind: re.compile(
        "|".join(
            re.escape(w) if w.isascii() is False else rf"\b{re.escape(w)}\b"
            for w, _ in sorted(pairs, key=lambda p: -len(p[0]))
        ),
        re.IGNORECASE,
    )
    for kind, pairs in _SUBJECTS.items()
}
_SUBJECT_WINDOW = 12  # characters before a value searched for the word naming its subject
_CORRECTION = re.compile(
    r"更正|纠正|说错|写错|搞错|打错|记错|抄错|输错|填错|不对|应该是(?![^,，。！？!?；;\n]{0,16}?[吧吗])|正确的是|改成|改为|改到|实际上是|其实是|准确地说"
    r"|新地址|地址换"
    r"|\b(?:actually|i\s+meant|correction|should\s+(?:be|have\s+been|read)|sorry,?\s+(?:it|the|that|my|i)\b"
    r"|my\s+mistake|my\s+bad|typo|i\s+mistyped|wrong\s+(?:number|date|address|amount)|scratch\s+that"
    r"|changed\s+to|now\s+(?:it'?s|is))",
    re.IGNORECASE,
)
_LAST_SENTENCE_END = re.compile(r"[。！？!?；;\n][^。！？!?；;\n]*$")
_NEGATED = re.compile(r"(?:不是|并非|而不是|不是说|\bnot|\bisn'?t|\bwasn'?t)(?:\s+the)?\s*$", re.IGNORECASE)
_CLAUSE_START = re.compile(r"[,，。！？!?；;\n][^,，。！？!?；;\n]*$")

# -- promises and requests ----------------------------------------------------------------------
_PROMISE = re.compile(
    r"(?=[我本同工专会将稍已为给帮补赔赠返由把wioysu])(?:"
    r"(?:我们|我|本人|同事|工程师|专员)(?:这边)?(?:不)?(?:会|将|保证|承诺)|会在|将在|会于|将于|稍后(?:会|将)"
    r"|(?:给|帮|为)您(?:把[^,，。！？!?；;\n]{1,20}?)?(?:补偿|减免|报销|承担|安排|寄出|发出|退还|退回|赠送|延长|开通|升级|解锁|重发|补发|换|办理"
    r"|一个明确|答复|回复|回电|打电话|确认)|(?:补偿|赔偿|赠送|返还)您"
    r"|由我们(?:这边)?(?:来)?(?:承担|负责|处理|支付|出)|把[^,，。！？!?；;\n]{1,20}?(?:发到|寄到|退到|转到|发给)您"
    r"|\b(?:our|the)\s+(?:\w+\s+)?(?:team|engineers?|technician|specialist|department|manager)\s+will\b"
    r"|\bsomeone\s+(?:from\s+\w+\s+)?will\b|\byou(?:'ll|\s+will)\s+(?:get|receive|see|have)\b"
    r"|(?:已|已经)(?:为您|帮您|给您)?(?:申请|提交|登记|记录|安排|升级|转交)|为您(?:安排|申请|处理|跟进)|工作日内"
    r"|\b(?:we|i)(?:'ll|\s+will|\s+shall|\s+are\s+going\s+to|\s+am\s+going\s+to|\s+promise)\b"
    r"|\bwill\s+(?:reply|respond|refund|get\s+back|follow\s+up|send|contact|process|escalate|credit)\b"
    r"|\bwithin\s+[0-9]+\s+(?:business\s+|working\s+)?(?:days?|hours?)\b"
    r"|\b(?:i|we)(?:'ve|\s+have)\s+(?:filed|submitted|escalated|logged|scheduled|issued)\b)",
    re.IGNORECASE,
)
# A promise the customer reports ("上次客服答应免费延长一个月"): kept, but as the customer's word.
_REPORTED_PROMISE = re.compile(
    r"(?=[客你工专经同上之说答承保售销业群快配师商卖店平合签下买当电官网页详宣广活tyswipmca])(?:(?:客服|你们|你|工作人员|专员|经理|同事)[^。！？!?；;\n]{0,12}?"
    r"(?:答应|承诺|保证|说好|说过会|说会)|答应过|承诺过|说好的(?!事)|说好了"
    r"|\byou\s+(?:promised|said\s+you\s+would)\b|\bthey\s+promised\b"
    r"|\b(?:said|told\s+(?:me|us))\s+(?:that\s+)?(?:you|they|you\s+guys|someone|it)\s*(?:'d|would|will|'ll|were\s+going\s+to)\b"
    # what the seller's own pages say: "your website says free returns within 30 days", "官网上写着包邮"
    r"|\b(?:your|the)\s+(?:website|site|web\s?page|product\s+page|page|app|faq|ad|listing|policy|terms)"
    r"\s+(?:clearly\s+)?(?:says|said|states|stated|promises|promised)\b"
    r"|(?:官网|网站|页面|详情页|商品页|宣传页?|广告|活动页|活动规则|APP|app)上?(?:明明)?(?:写着|写的是?|写了|标着|标的是?|承诺)"
    r"|\b(?:i|we)\s+was\s+told\b|\b(?:i|we)\s+were\s+told\b|\bpromised\s+(?:me|us)\b"
    r"|\b(?:said|told\s+(?:me|us)|mentioned|confirmed)\b[^.!?;]{0,48}?\b(?:would|will|'d|'ll|was\s+included|is\s+included"
    r"|were\s+going\s+to|could|can)\b"
    r"|(?:客服|经理|售后|销售|你们的人|工作人员|业务员|群里的|快递员|快递小哥|配送员|师傅|商家|卖家|店员|平台"
    r"|合同里|合同上|签合同的时候|下单的时候|买的时候|当时|电话里)[^。！？!?；;\n]{0,8}?说[^。！？!?；;\n]{0,24}?"
    r"(?:可以|会|能|不变|免费|包|送|减半|换新|退|给我|给您))",
    re.IGNORECASE,
)
_REQUEST = re.compile(
    r"(?=[希请麻能可帮给提我需要想把改换发寄抄再先千别不勿以下今pcwirhtesudmakbojn\s])(?:"
    r"希望|请|麻烦|能不能|能否|可不可以|可以(?:帮|给|把)|帮我|帮忙|给我|提醒我|我想|(?<!是)我要(?!的(?:[,，。！？!?；;\s]|$))|我需要|需要你们|要求"
    r"|\bplease\b|\b(?:could|can|would|will)\s+you\b|\bi(?:'d|\s+would)\s+like\b|\bi\s+(?:want|need)\b"
    r"|\bremind\s+me\b|\bhelp\s+me\b|\b(?:needs|need|has|have)\s+to\s+(?:be|go|show|appear)\s+(?:on|in|at|to|under)\b"
    # An imperative with no request word ("text me instead of calling", "send it to my office").
    r"|(?:^|(?<=[,，.;；:!?！？\n\-–—]\s)|(?<=[,，.;；:!?！？\n]))\s*(?:(?:btw|oh|and|also|just|so|then)\s+){0,3}(?:text|call|email|e-mail|send"
    r"|cancel|change|update|switch|ship|deliver|contact|refund|credit|reach|ring|mail|hold|cc|put|downgrade"
    r"|upgrade|add|remove|keep|stop|resend|move|transfer|close|pause|split|merge|unlink|reissue)"
    r"\s+(?:me|us|it|them|the|my|our|this|that|all|everything|\d+)\b"
    # ... and in Chinese: "把自动续费关了", "发票抬头改成公司名", "账单每个月发我邮箱"
    r"|(?:^|(?<=[,，。;；!?！？\s]))\s*(?:我?想|我?要)?把[^,，。！？!?；;\n]{1,20}?"
    r"(?:关|开|改|换|解绑|绑|取消|退|发|寄|删|停|加|去掉|合并|注销|恢复|升级|降级|补|延)"
    r"|改成|改为|换成|发我|寄给我|发给我们|寄给我们|给我们寄|抄送|再加\s*[0-9一二两三四五六七八九十]+"
    r"|[寄发][^,，。！？!?；;\n]{1,8}?给我们|要(?:纸质|电子|专票|普票|英文|中文|盖章)|再(?:出|发|开|寄)一[份张个]"
    # "别打电话", "先别发货", "以后有事发短信", "下次直接寄顺丰": asked with no request word
    r"|(?:先|请|千万)?(?:别|不要|勿)(?!的|人|处|客气|急|担心|着急|说了|提了)(?=[\u4e00-\u9fff])"
    r"|(?:以后|下次|今后)(?:有事)?(?:直接|都|就|请)?(?:发|寄|打|联系|找|用|走|给|提前))"
    # "退款退到支付宝就行", "这几天找我就行": what would do is what is asked
    r"|[\u4e00-\u9fffA-Za-z0-9]{2,12}?(?:就行|就好|就可以|即可)(?![了啦\u4e00-\u9fff])",
    re.IGNORECASE,
)
# Courtesy that uses request words but asks for nothing ("那就麻烦你们了", "请稍等").
_POLITENESS = re.compile(
    r"(?:那就|那)?麻烦(?:你们|您|你)?了|辛苦(?:你们|您|你)?了|谢谢|多谢|感谢|请稍等|稍等一下|请多关照|请见谅"
    r"|我想想|我想一下|我想说|我要说|我想起来了?|请问一下$|please\s+hold|thank\s+you|thanks"
    r"|希望(?:这次|这回)?(?:能)?(?:顺利)?(?:解决|搞定|处理好)(?:吧|啊|呀)?|请问?(?:你|您|你们)?还在吗|(?:你|您)还在吗"
    r"|(?:请)?(?:尽快|尽量快一点|快一点)(?:处理)?(?:吧)?|能帮就帮(?:一下)?(?:吧)?"
    r"|希望(?:你们|您)?(?:能)?重视(?:一下)?|我也不想一直来问"
    r"|\b(?:please\s+)?bear\s+with\s+me\b|\bone\s+moment(?:\s+please)?\b|\bare\s+you\s+still\s+there\b"
    r"|\bhope\s+(?:this|it)\s+(?:gets|can\s+be)\s+(?:sorted|fixed|resolved)\b|\bwould\s+appreciate\s+any\s+help\b"
    r"|\b(?:please\s+)?don'?t\s+take\s+this\s+the\s+wrong\s+way\b",
    re.IGNORECASE,
)
_CONTENT_AFTER = re.compile(r"[\u4e00-\u9fffA-Za-z0-9]{2}")
# An English title or abbreviation ("Ms. Carter", "Apt. 7C", "No. 5") does not end a sentence.
_ABBREVIATIONS = (
    "Mr",
    "Ms",
    "Mrs",
    "Dr",
    "St",
    "Apt",
    "No",
    "Inc",
    "Ltd",
    "Co",
    "Jr",
    "Sr",
    "vs",
    "Ave",
    "Rd",
)
_NOT_AFTER_ABBREVIATION = "".join(rf"(?<!\b{a}\.)" for a in _ABBREVIATIONS)
# A space between two CJK characters ends a sentence too: chat users type one instead of a stop.
_SENTENCE_END = re.compile(
    rf"(?=[。！？!?；;\s])(?:[。！？!?；;\n]+|(?<=[.]){_NOT_AFTER_ABBREVIATION}\s+"
    r"|(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff]))"
)
_CJK = r"\u3000-\u303f\u3400-\u9fff\uff00-\uffef"
_SPACE_NEXT_TO_CJK = re.compile(rf"(?=\s)(?:(?<=[{_CJK}])\s+|\s+(?=[{_CJK}]))")
_TRAILING_PUNCT = re.compile(r"[\s。！？!?；;.,，、…~～]+$")
_has_digit = re.compile("[0-9]").search


class _Found(NamedTuple):
    start: int
    kind: str
    value: str
    key: str
    subject: str = ""
    correction: bool = False
    negated: bool = False  # "不是 1680 元": the wrong value, named only to be refused


def extract(turn: Turn, index: int, *, mask: bool = True, plans: Sequence[str] = ()) -> list[Fact]:
    """Facts stated in ``turn``, in order of appearance, each once; ``index`` is its position.

    With ``mask`` (the default, as ``Settings.mask_pii``) the turn is masked before it is read, so
    no value or key in the ledger holds a full phone, email, ID-card or bank-card number: phones
    and emails are pinned in their masked forms. ``plans`` is the backend's plan catalogue, if any.
    """
    return [said.fact for said in _extract(turn, index, mask=mask, plans=plans)]


class _Said(NamedTuple):
    """A fact as a turn states it: whether as a correction, and of which refused value."""

    fact: Fact
    correction: bool
    refused: str = ""  # "不是 11月24号,是 2/21": the key of the value the turn says is wrong


def _extract(
    turn: Turn, index: int, *, mask: bool, plans: Sequence[str], currency: str | None = None
) -> list[_Said]:
    text = mask_text(turn.content) if mask else turn.content
    scanned = list(_scan(text, turn.role, turn.created_at, plans, _currency_of(text, currency), negated=True))
    codes = {f.start for f in scanned if f.kind == "error_code"}
    # A code reported as an error ("fails with NET-6519") is not also an id, and one code read by
    # two patterns ("报错503 service unavailable") is one fact: the one that read more of it.
    # An id or code after 不是/not is the wrong one, named to be refused: "order 3EL7TK9Z, not 3EL7TK2Z".
    scanned = [
        f._replace(negated=True) if f.kind in _RETYPED_KINDS and _negated(text, f.start) else f
        for f in scanned
    ]
    typed = [
        f
        for f in scanned
        if not f.negated and not (f.kind == "id" and f.start in codes) and not _read_longer(f, scanned)
    ]
    refused = [f for f in scanned if f.negated]
    if turn.role == "customer":
        typed.extend(_details(text, scanned))
    found = sorted(typed, key=lambda f: (f.start, FACT_KINDS.index(f.kind)))
    seen: set[tuple[str, str, str]] = set()
    facts: list[_Said] = []
    for item in found:
        if (item.kind, item.key, item.subject) not in seen:
            seen.add((item.kind, item.key, item.subject))
            fact = Fact(item.kind, item.value, item.key, index, item.subject, turn.role, None)
            wrong = _refused_beside(item, refused)
            facts.append(_Said(fact, item.correction or bool(wrong), wrong))
    return facts


def _read_longer(item: _Found, scanned: Sequence[_Found]) -> bool:
    """Whether another error code found in ``scanned`` covers ``item``'s text and more."""
    if item.kind != "error_code":
        return False
    end = item.start + len(item.value)
    return any(
        f.kind == "error_code"
        and f.start <= item.start
        and f.start + len(f.value) >= end
        and len(f.value) > len(item.value)
        for f in scanned
    )


# How far apart a refused value and its replacement may stand: "不是11月24号,是2/21" (one clause
# each), "it's $45, not $54" and "not the 3rd but the 5th".
_REFUSAL_REACH = 24


def _refused_beside(item: _Found, refused: Sequence[_Found]) -> str:
    """The key of the value of ``item``'s kind that the text refuses right beside it, if any."""
    near = [f for f in refused if f.kind == item.kind and abs(f.start - item.start) <= _REFUSAL_REACH]
    return min(near, key=lambda f: abs(f.start - item.start)).key if near else ""


def update_ledger(
    ledger: tuple[Fact, ...],
    turns: Sequence[Turn],
    start: int,
    *,
    mask: bool = True,
    plans: Sequence[str] = (),
) -> tuple[Fact, ...]:
    """``ledger`` plus the new facts of ``turns[start:]``, with supersession (see the module doc).

    A fact already current (same kind and key) is not added again, so rescanning a turn is
    harmless; the order is stable: existing facts first, then new ones in order of appearance.
    """
    return _updated(ledger, turns, start, mask=mask, plans=plans, extract=_extract)


def ledger_of_lines(turns: Sequence[Turn]) -> tuple[Fact, ...]:
    """``update_ledger((), turns, 0, mask=False)`` for texts that come back call after call (a
    summary's lines, each round): each text is scanned once while it stays in a small memo."""
    return _updated((), turns, 0, mask=False, plans=(), extract=_extract_remembered)


def forget_cached() -> None:
    """Drop the memo of scanned lines (customer words among them), after a customer is forgotten."""
    _extract_text.cache_clear()


def _extract_remembered(
    turn: Turn, index: int, *, mask: bool, plans: Sequence[str], currency: str | None = None
) -> list[_Said]:
    said = _extract_text(turn.content, turn.role, turn.created_at, mask, tuple(plans), currency)
    return [s._replace(fact=dataclasses.replace(s.fact, turn=index)) for s in said]


@functools.lru_cache(maxsize=512)  # a summary has tens of lines; a few bots' worth fit
def _extract_text(
    content: str, role: Role, when: datetime | None, mask: bool, plans: tuple[str, ...], currency: str | None
) -> tuple[_Said, ...]:
    turn = Turn(role=role, content=content, created_at=when)
    return tuple(_extract(turn, 0, mask=mask, plans=plans, currency=currency))


def _updated(
    ledger: tuple[Fact, ...],
    turns: Sequence[Turn],
    start: int,
    *,
    mask: bool,
    plans: Sequence[str],
    extract: Callable[..., list[_Said]],
) -> tuple[Fact, ...]:
    if start < 0:
        raise InvalidInput(f"update_ledger start must be >= 0, got {start}")
    found = []
    currency = conversation_currency(ledger)
    for index in range(start, len(turns)):
        pairs = extract(turns[index], index, mask=mask, plans=plans, currency=currency)
        currency = conversation_currency([said.fact for said in pairs]) or currency
        found += pairs
    # Most turns state no fact and correct none: then the (long) ledger need not be indexed. A
    # correction may retype an id no pattern reads on its own ("正确的是ct_vllnyqt": no digit).
    if not found and not any(_may_correct(t) for t in turns[start:]):
        return ledger
    book = _Book(ledger)
    for said in found:
        book.add(*said)
    for index in range(start, len(turns)):
        if turns[index].role == "customer":
            for replaced, fact in list(book.part_corrections(turns[index], index, mask=mask)):
                book.replace(replaced, fact)
            for replaced, fact in list(book.retyped(turns[index], index, mask=mask)):
                book.replace(replaced, fact)
    return book.facts if len(book.facts) > len(ledger) else ledger


def _may_correct(turn: Turn) -> bool:
    """Whether a customer turn says it corrects something (what ``part_corrections`` and
    ``retyped`` look for)."""
    return turn.role == "customer" and bool(_CORRECTION.search(turn.content) or _REFUSAL.search(turn.content))


# A correction of part of a value: "不好意思,是208,不是203", "sorry, it's 4B, not 4D", "不是515,是155".
# The part may carry its unit: "是751室不是715室".
_PART_UNIT = "[室号栋楼层座幢]?"
_PART_CORRECTION = re.compile(
    rf"(?:是|is|it'?s|should\s+be)\s*(?P<new>[0-9A-Za-z-]{{1,10}}){_PART_UNIT}\s*[,，]?\s*(?:不是|而不是|not)\s*(?P<old>[0-9A-Za-z-]{{1,10}})(?![0-9A-Za-z])"
    rf"|(?:不是|not)\s*(?P<old2>[0-9A-Za-z-]{{1,10}}){_PART_UNIT}\s*[,，]?\s*(?:而是|是|but|it'?s)\s*(?P<new2>[0-9A-Za-z-]{{1,10}})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_PART_KINDS = ("address", "id", "detail")
# A correction that names the part and gives only the new value: "门牌号说错了,应该是1041",
# "the apartment number is wrong, it's 12C". The part is the address's last number.
_NAMED_PART_CORRECTION = re.compile(
    r"(?:门牌号?|房间号|房号|室号|楼号|单元号)(?:说错了|写错了|填错了|错了|有误)[,，]?\s*(?:应该是|应为|是|改成|改为)\s*"
    r"(?P<new>[0-9A-Za-z-]{1,10})(?![0-9A-Za-z])"
    r"|\b(?:apartment|apt|unit|suite|room|door|house)\s+(?:number\s+|no\.?\s+|#\s*)?(?:is\s+|was\s+)?wrong[,.;]?\s*"
    r"(?:it'?s|it\s+should\s+be|should\s+be|it\s+is)\s+(?:#\s*)?(?P<new2>[0-9A-Za-z-]{1,10})(?![0-9A-Za-z])"
    # In a turn that says it corrects ("更正一下地址,房间号是711"): the part and its new value.
    r"|(?:门牌号?|房间号|房号|室号)\s*(?:应该是|应为|是|改成|改为|为)\s*(?P<new3>[0-9A-Za-z-]{1,10})(?![0-9A-Za-z])",
    re.IGNORECASE,
)
_LAST_NUMBER = re.compile(r"[0-9][0-9A-Za-z-]*(?=[^0-9]*$)")
_APARTMENT = re.compile(
    r"(?<=\b(?:apt|ste)\.\s)[0-9A-Za-z-]+"
    r"|(?:(?<=\bapt\s)|(?<=\bapartment\s)|(?<=\bunit\s)|(?<=\bsuite\s)|(?<=#))[0-9A-Za-z-]+",
    re.IGNORECASE,
)


def _rewritten(fact: Fact, value: str, index: int, position: int) -> Fact:
    """``fact`` with a part of its value corrected in turn ``index``: the value that replaces it."""
    key = normalize_sentence(value) if fact.kind == "detail" else re.sub(r"\s+", "", value).upper()
    return Fact(fact.kind, value, key, index, fact.subject, "customer", position)


# A token shaped like a system's code: letters, digits, dashes and underscores, with a digit or an
# underscore ("pay_aasuxza": a payment id need not hold a digit).
_CODE_TOKEN = re.compile(
    r"(?<![0-9A-Za-z_-])(?=[0-9A-Za-z_-]*[0-9_])[0-9A-Za-z][0-9A-Za-z_-]{3,38}[0-9A-Za-z](?![0-9A-Za-z_-])"
)
_RETYPED_KINDS = ("id", "error_code")
# A date, person or plan said again in other words: its wordings joined (上个月24日、上星期二;
# last Tuesday; Nov 24), at most this many.
_SAID_AGAIN = re.compile("、|; ")
_MAX_WORDINGS = 3
_SAID_AGAIN_KINDS = frozenset({"date", "person", "plan"})
_DATED_IN_FULL = re.compile(r"[0-9]{4}[0-9年月日号/.\- ]+")  # 2025年4月3日, 2025-04-03: the key says it all
_REFUSAL = re.compile(r"不是|\bnot\b", re.IGNORECASE)  # "是3866-7509-2547,不是3866-7590-2547"


def _differing(old: str, new: str) -> int | None:
    """How many characters of ``new`` differ from ``old``, case aside; None when their lengths do."""
    if len(old) != len(new):
        return None
    return sum(a != b for a, b in zip(old.lower(), new.lower(), strict=True))


def _near_part(old: str, new: str) -> bool:
    """Whether a room number ``new`` fixes ``old``: as long, and at most half its characters differ
    or two are swapped (710 for 170)."""
    differing = _differing(old, new)
    swapped = differing == 2 and sorted(old.lower()) == sorted(new.lower())
    return differing is not None and (differing * 2 <= len(old) or swapped)


def _digits_of(key: str) -> str:
    """An amount key's significant digits: "CNY 5158.00" → "5158", "USD 37.18" → "3718"."""
    return re.sub(r"[^0-9]", "", key.removesuffix(".00"))


def _mistyped(old: str, new: str) -> bool:
    """Whether digits ``new`` fix ``old``: as long (three or more), one digit changed or two
    neighbours swapped."""
    if len(old) != len(new) or len(old) < 3:
        return False
    differing = [k for k in range(len(old)) if old[k] != new[k]]
    if len(differing) == 1:
        return True
    if len(differing) != 2:
        return False
    a, b = differing
    return b == a + 1 and old[a] == new[b] and old[b] == new[a]


def _retypes(old: str, new: str) -> bool:
    """Whether ``new`` is ``old`` typed again with one or two characters changed (or two swapped)."""
    differing = _differing(old, new)
    return differing is not None and len(old) >= 5 and 0 < differing <= 2


class _Book:
    """The ledger being extended: what is current per (kind, key) and per (kind, subject)."""

    def __init__(self, ledger: tuple[Fact, ...]) -> None:
        self._all = list(ledger)
        superseded = {f.supersedes for f in ledger if f.supersedes is not None}
        self._current_keys: dict[tuple[str, str], int] = {}
        self._by_subject: dict[tuple[str, str], int] = {}
        self._latest: dict[str, int] = {}
        # A turn scanned again states what it stated before: that is no correction of a later value.
        self._said = {(f.kind, f.key, f.turn) for f in ledger}
        for i, fact in enumerate(ledger):
            if i not in superseded:
                self._note(i, fact)

    @property
    def facts(self) -> tuple[Fact, ...]:
        return tuple(self._all)

    def _note(self, i: int, fact: Fact) -> None:
        self._current_keys[(fact.kind, fact.key)] = i
        if fact.subject:
            self._by_subject[(fact.kind, fact.subject)] = i
        self._latest[fact.kind] = i

    def part_corrections(self, turn: Turn, index: int, *, mask: bool) -> Iterator[tuple[int, Fact]]:
        """The values a correction of their part rewrites: the latest current address or id that
        holds the old part as a whole token gets it replaced by the new one."""
        text = mask_text(turn.content) if mask else turn.content
        for m in _PART_CORRECTION.finditer(text):
            new, old = (
                (m.group("new"), m.group("old")) if m.group("new") else (m.group("new2"), m.group("old2"))
            )
            if new.lower() == old.lower():
                continue
            token = re.compile(rf"(?<![0-9A-Za-z]){re.escape(old)}(?![0-9A-Za-z])", re.IGNORECASE)
            for i in sorted(self._current_positions(), reverse=True):
                fact = self._all[i]
                if fact.kind in _PART_KINDS and fact.turn < index and token.search(fact.value):
                    yield i, _rewritten(fact, token.sub(new, fact.value, count=1), index, i)
                    break

        for m in _NAMED_PART_CORRECTION.finditer(text):
            if m.group("new3") and not _CORRECTION.search(text):
                continue  # "房间号是711" alone is a room number, not a correction of one
            new = m.group("new") or m.group("new2") or m.group("new3")
            part = _APARTMENT if m.group("new2") else _LAST_NUMBER  # an English address ends with its zip
            candidates = [
                (i, last)
                for i in sorted(self._current_positions(), reverse=True)
                if (self._all[i].kind == "address" or (m.group("new2") and self._all[i].kind == "detail"))
                and self._all[i].turn < index
                and (last := part.search(self._all[i].value)) is not None
            ]
            # The address whose part the new value fixes (7219 for 2219), else the latest one.
            close = [c for c in candidates if _near_part(c[1].group(), new)]
            for i, last in (close or candidates)[:1]:
                fact = self._all[i]
                if last.group().lower() != new.lower():
                    value = fact.value[: last.start()] + new + fact.value[last.end() :]
                    yield i, _rewritten(fact, value, index, i)

    def retyped(self, turn: Turn, index: int, *, mask: bool) -> Iterator[tuple[int, Fact]]:
        """The ids a correction types again with a character or two fixed ("快递单号我抄错了,
        正确的是1Z87327004", "是3866-7509-2547,不是3866-7590-2547"): the new value replaces the
        current id it differs from, even where no pattern reads it as an id on its own."""
        text = mask_text(turn.content) if mask else turn.content
        if not (_CORRECTION.search(text) or _REFUSAL.search(text)):
            return
        for m in _CODE_TOKEN.finditer(text):
            key = m.group().upper()
            if _negated(text, m.start()) or any((kind, key) in self._current_keys for kind in _RETYPED_KINDS):
                continue
            position = self._near(_RETYPED_KINDS, key, before=index)
            if position is not None:
                old = self._all[position]
                yield position, Fact(old.kind, m.group(), key, index, old.subject, "customer", position)

    def _near(self, kinds: Sequence[str], key: str, *, before: int) -> int | None:
        """The newest current fact of ``kinds`` stated before turn ``before`` whose key ``key``
        retypes with a character or two fixed, if any."""
        for i in sorted(self._current_positions(), reverse=True):
            fact = self._all[i]
            if fact.kind in kinds and fact.turn < before and _retypes(fact.key, key):
                return i
        return None

    def _mistyped_sum(self, fact: Fact) -> int | None:
        """The newest current amount (of the same subject, if both name one) that ``fact``'s
        figure fixes: as many digits, at least three, one of them changed or two next to each
        other swapped (5158 → 5518)."""
        for i in sorted(self._current_positions(), reverse=True):
            old = self._all[i]
            if (
                old.kind == "amount"
                and old.turn <= fact.turn
                and not (old.subject and fact.subject and old.subject != fact.subject)
                and _mistyped(_digits_of(old.key), _digits_of(fact.key))
            ):
                return i
        return None

    def replace(self, position: int, fact: Fact) -> None:
        """Append ``fact`` as the value that replaces the one at ``position``."""
        if (fact.kind, fact.key, fact.turn) in self._said:
            return
        self._said.add((fact.kind, fact.key, fact.turn))
        old = self._all[position]
        if self._current_keys.get((old.kind, old.key)) == position:
            del self._current_keys[(old.kind, old.key)]
        self._all.append(fact)
        self._note(len(self._all) - 1, fact)

    def _current_positions(self) -> list[int]:
        return sorted(set(self._current_keys.values()))

    def add(self, fact: Fact, correction: bool, refused: str = "") -> None:
        if (fact.kind, fact.key, fact.turn) in self._said:
            return
        self._said.add((fact.kind, fact.key, fact.turn))
        by_subject = fact.subject and (correction or fact.subject not in _PLURAL_SUBJECTS)
        # The value the turn names as wrong is the one replaced, whatever came after it; else an
        # id the correction retypes with a typo fixed ("order 3EL7TK9Z, not 3EL7TK2Z").
        target = self._current_keys.get((fact.kind, refused)) if refused else None
        if target is None and correction and fact.kind in _RETYPED_KINDS:
            target = self._near((fact.kind,), fact.key, before=fact.turn + 1)
        if target is None and by_subject:
            target = self._by_subject.get((fact.kind, fact.subject))
        if target is None and correction and fact.kind == "amount":
            # "更正一下,刚才那个金额是5518块" fixes the 5158 said before, not a sum named in between.
            target = self._mistyped_sum(fact)
        if target is None and correction and not fact.subject and fact.kind not in SENTENCE_KINDS:
            target = self._latest.get(fact.kind)
        if target is not None and self._all[target].key == fact.key:
            self._said_again(target, fact)  # the current value, said again
            return
        if target is None and (fact.kind, fact.key) in self._current_keys:
            self._said_again(self._current_keys[(fact.kind, fact.key)], fact)
            return
        if target is not None:
            old = self._all[target]
            fact = Fact(
                fact.kind, fact.value, fact.key, fact.turn, fact.subject or old.subject, fact.role, target
            )
            if self._current_keys.get((old.kind, old.key)) == target:
                del self._current_keys[(old.kind, old.key)]
        self._all.append(fact)
        self._note(len(self._all) - 1, fact)

    def _said_again(self, position: int, fact: Fact) -> None:
        """A day, a person or a plan named again in other words (上星期二 for the 11/24 said before;
        IT孙经理 after 运维孙经理; 黄金会员连续包季 after 季卡黄金会员): one fact whose words name
        both, so the model sees every phrase the turns use for it and nothing is decided that the
        customer did not say (the same man, or two; the same membership, or one renewing itself).
        Recorded as a restatement (``supersedes`` the fact it extends, with the same key), never as
        a correction. Words that add nothing (孙经理 after 运维孙经理) are not added."""
        old = self._all[position]
        if fact.kind not in _SAID_AGAIN_KINDS or fact.role != old.role:
            return
        if fact.kind == "date" and _DATED_IN_FULL.fullmatch(fact.value):
            return
        words = _SAID_AGAIN.split(old.value)
        said = normalize_sentence(fact.value)
        if len(words) >= _MAX_WORDINGS or any(said in normalize_sentence(w) for w in words):
            return
        value = old.value + ("、" if _CJK_CHAR.search(old.value + fact.value) else "; ") + fact.value
        self._all.append(Fact(old.kind, value, old.key, fact.turn, old.subject, old.role, position))
        self._note(len(self._all) - 1, self._all[-1])


def current_facts(facts: Sequence[Fact]) -> list[tuple[int, Fact]]:
    """``(position, fact)`` of every fact no later fact supersedes."""
    superseded = {f.supersedes for f in facts if f.supersedes is not None}
    return [(i, f) for i, f in enumerate(facts) if i not in superseded]


def split_sentences(text: str) -> list[str]:
    """Non-empty sentences of ``text``, split on Chinese and English sentence ends and newlines."""
    return [s.strip() for s in _SENTENCE_END.split(text) if s.strip()]


def normalize_sentence(text: str) -> str:
    """The dedup key of a sentence: case, spacing around CJK and trailing punctuation ignored."""
    collapsed = " ".join(text.split())
    return _TRAILING_PUNCT.sub("", _SPACE_NEXT_TO_CJK.sub("", collapsed)).lower()


def repeats_pinned(text: str, pinned: Sequence[str]) -> bool:
    """Whether ``text`` (a summary line) says nothing the pinned sentences ``pinned`` (their
    ``normalize_sentence`` keys) do not: it equals one, or each of its clauses is held by one but
    for filler ("我想起来了,…"). A summary that repeats the facts section pays for it twice."""
    whole = normalize_sentence(text)
    if not whole or not pinned:
        return False
    if whole in pinned:
        return True
    held = False
    clauses = _CLAUSE_BREAK.split(text)
    for clause in clauses:
        key = whole if len(clauses) == 1 else normalize_sentence(clause)
        if len(key) >= 2 and any(key in p for p in pinned):
            held = True
        # A hard token first: one scan that stops at the first, where the filler takes several.
        elif key and (_HARD_TOKEN.search(clause) or _without_filler(clause)):
            return False
    return held


def mentions_fact(text: str, *, role: Role | None = None) -> bool:
    """Whether ``text`` holds a fact; with ``role=None`` sentences of either side count."""
    roles: tuple[Role, ...] = ("customer", "agent") if role is None else (role,)
    return any(next(iter(_scan(text, r, None, ())), None) is not None for r in roles)


def clip(text: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


def conversation_currency(facts: Sequence[Fact]) -> str | None:
    """The currency of the latest amount written with one ("$37", "200 元"): what an amount
    written without one ("2.1k") means in this conversation."""
    for fact in reversed(facts):
        if fact.kind == "amount" and (written := money_in(fact.value)) and written[0].currency:
            return written[0].currency
    return None


def _currency_of(text: str, conversation: str | None) -> str | None:
    # With no amount in a currency yet, Chinese text means yuan; other text leaves it unsaid.
    return conversation or ("CNY" if _CJK_CHAR.search(text) else None)


_CJK_CHAR = re.compile(f"[{_CJK}]")


def _scan(
    text: str,
    role: Role,
    when: datetime | None,
    plans: Sequence[str],
    currency: str | None = "CNY",
    *,
    negated: bool = False,
) -> Iterator[_Found]:
    """The facts of ``text``; with ``negated``, also the amounts and dates it names only to refuse
    them (marked), which the floor counts as accounted for."""
    if _has_digit(text):
        yield from _error_codes(text)
        yield from _ids(text)
        yield from _phones(text)
    elif "_" in text:  # an id of letters after its label: "合同号:ht_xccybuw"
        yield from _ids(text)
    yield from _amounts(text, currency, negated)  # "三千五百元" holds no digit
    yield from _dates(text, when, negated)
    yield from _contacts(text, plans)
    if role == "agent":
        yield from _sentences(text, "promise", _PROMISE)
    elif role == "customer":
        yield from _sentences(text, "promise_reported", _REPORTED_PROMISE)
        yield from _requests(text)


def _error_codes(text: str) -> Iterator[_Found]:
    for m in _ERROR_NAME.finditer(text):
        yield _Found(m.start(), "error_code", m.group(), m.group().upper())
    for m in _HEX_CODE.finditer(text):
        yield _Found(m.start(), "error_code", m.group(), "0x" + m.group()[2:].upper())
    for m in _HTTP_STATUS.finditer(text):
        # One key however written ("HTTP 503", "503 service unavailable", "报错503"): the prompt
        # shows it with its reason phrase (ledger.display), what people search for.
        yield _Found(m.start(), "error_code", m.group(), f"HTTP {m.group('a') or m.group('b')}")
    for m in _ERROR_CODE.finditer(text):
        yield _Found(m.start(), "error_code", m.group(), m.group().upper())
    for m in _NAMED_CODE.finditer(text):
        yield _Found(m.start(), "error_code", m.group(), m.group())
    for m in _ERROR_CODE_AFTER_LABEL.finditer(text):
        yield _Found(m.start(1), "error_code", m.group(1), m.group(1).upper())


def _ids(text: str) -> Iterator[_Found]:
    for m in _PREFIXED_ID.finditer(text):
        value = m.group()
        prefix = re.match(r"[A-Za-z]+", value)
        if _ERROR_CODE.fullmatch(value) or (prefix and prefix.group().upper() in _NOT_ID_PREFIXES):
            continue
        yield _Found(m.start(), "id", value, value.upper(), "", _is_correction(text, m.start()))
    for m in _MIXED_ID.finditer(text):
        value = m.group()
        if _is_mixed_id(value) and not _ERROR_NAME.match(value):
            yield _Found(m.start(), "id", value, value.upper(), "", _is_correction(text, m.start()))
    for m in (*_ID_AFTER_LABEL.finditer(text), *_ID_BEFORE_LABEL.finditer(text)):
        value = m.group("v")
        if (
            not (_has_digit(value) or "_" in value)
            or _ERROR_CODE.fullmatch(value)
            or _DATE_SHAPED.fullmatch(value)
        ):
            continue
        yield _Found(m.start("v"), "id", value, value.upper(), "", _is_correction(text, m.start("v")))


# Not ids, though letters and digits mix: quantities with units ("10am-6pm", "2x128gb") and a
# word with a number ("iPhone15", "RTX4090"); the prefixed-id and code patterns take their own.
_NOT_MIXED_ID = re.compile(r"(?:[0-9]+[A-Za-z]{0,3})(?:[-_][0-9]+[A-Za-z]{0,3})*|[A-Za-z]+[0-9]+")


def _is_mixed_id(value: str) -> bool:
    if not any(c.isalpha() for c in value):  # digit groups: long enough not to be a phone
        return sum(c.isdigit() for c in value) >= 14
    return not any(
        p.fullmatch(value) for p in (_NOT_MIXED_ID, _PREFIXED_ID, _ERROR_CODE, _HEX_CODE, _NAMED_CODE)
    )


def _amounts(text: str, currency: str | None, negated: bool = False) -> Iterator[_Found]:
    for a in amounts(text, currency=currency):
        if not _negated(text, a.start):
            subject = _subject("amount", text, a.start)
            yield _Found(a.start, "amount", a.text, a.key, subject, _is_correction(text, a.start))
        elif negated:
            yield _Found(a.start, "amount", a.text, a.key, negated=True)


def _dates(text: str, when: datetime | None, negated: bool = False) -> Iterator[_Found]:
    for d in dates(text, when):
        if not _negated(text, d.start):
            subject = _subject("date", text, d.start)
            yield _Found(d.start, "date", d.text, d.key, subject, _is_correction(text, d.start))
        elif negated:
            yield _Found(d.start, "date", d.text, d.key, negated=True)


def _phones(text: str) -> Iterator[_Found]:
    for h in contacts.phones(text):
        yield _Found(h.start, "phone", h.text, h.key, "", _is_correction(text, h.start))


def _contacts(text: str, plans: Sequence[str]) -> Iterator[_Found]:
    for h in contacts.emails(text):
        yield _Found(h.start, "email", h.text, h.key, "", _is_correction(text, h.start))
    for h in contacts.addresses(text):
        yield _Found(h.start, "address", h.text, h.key, h.subject)
    for h in contacts.people(text):
        yield _Found(h.start, "person", h.text, h.key, h.subject)
    for h in _plans.plans(text, plans):
        said = _without_filler(h.text) or h.text  # "我想起来了,39码的白色运动鞋…": the goods only
        if said == h.text:
            yield _Found(h.start, "plan", h.text, h.key)
        else:
            yield _Found(h.start + max(0, h.text.find(said)), "plan", said, normalize_sentence(said))
    for h in contacts.statuses(text):
        said = clip(h.text)
        yield _Found(h.start, "status", _without_filler(said) or said, h.key, h.subject)


# -- the floor: sentences with a hard token no typed fact accounts for ---------------------------
_EN_NUMERAL_WORDS = (
    "two|three|four|five|six|seven|eight|nine|ten|eleven|twelve|thirteen|fourteen|fifteen|sixteen"
    "|seventeen|eighteen|nineteen|twenty|thirty|forty|fifty|sixty|seventy|eighty|ninety|hundred"
    "|thousand|million|billion|dozen|half"
)
_HARD_TOKEN = re.compile(
    # A digit, a Latin letter or an email's first character, a currency, a Chinese numeral
    r"(?=[0-9A-Za-z._%+\-¥￥$€£元块美欧人零〇一二两三四五六七八九十壹贰叁肆伍陆柒捌玖拾百千万亿佰仟])(?:"
    r"[0-9]"
    # an email read once from its start: a long run of letters is not retried at each of them
    r"|(?<![A-Za-z0-9._%+-])[A-Za-z0-9._%+-]++@[A-Za-z0-9-]++(?:\.[A-Za-z0-9-]++)+"
    r"|\b(?:https?://|www\.)\S+"
    r"|\b[A-Za-z]+(?:_[A-Za-z0-9]+)+\b|(?-i:\b(?!OK\b)[A-Z]{2,}(?:[-_][A-Z0-9]+)*\b)"
    r"|[¥￥$€£]|\b(?:dollars?|bucks?|usd|rmb|cny|yuan|eur|euros?|cents?|quid)\b|元|块钱|美元|欧元|人民币"
    rf"|\b(?:{_EN_NUMERAL_WORDS})\b"
    r"|[零〇一二两三四五六七八九十壹贰叁肆伍陆柒捌玖拾]?[百千万亿佰仟][零〇一二两三四五六七八九十百千万亿壹贰叁肆伍陆柒捌玖拾佰仟]*"
    r"|(?!一[^零〇一二两三四五六七八九十百千万亿])[零〇一二两三四五六七八九十百千万亿壹贰叁肆伍陆柒捌玖拾佰仟]++"
    r"(?=[个台次张件天周月年元块号份位名点岁楼层室箱瓶盒套条笔单期台季度倍折]|小时|分钟|星期|礼拜))",
    re.IGNORECASE,
)
_TYPED_SPANS = frozenset(
    {"id", "error_code", "amount", "date", "phone", "email", "plan", "person", "address"}
)


class _Spans:
    """Character spans, merged and sorted: whether one holds a range is a binary search, so a long
    text with many facts costs n log n, not n squared."""

    def __init__(self, spans: Sequence[tuple[int, int]]) -> None:
        merged: list[list[int]] = []
        for a, b in sorted(spans):
            if merged and a <= merged[-1][1]:
                merged[-1][1] = max(merged[-1][1], b)
            else:
                merged.append([a, b])
        self._starts = [a for a, _ in merged]
        self._ends = [b for _, b in merged]

    def holds(self, start: int, end: int) -> bool:
        i = bisect.bisect_right(self._starts, start) - 1
        return i >= 0 and self._ends[i] >= end


def _details(text: str, typed: Sequence[_Found]) -> Iterator[_Found]:
    """Each sentence of a customer turn with a hard token outside every typed fact's words, and
    outside every pinned sentence (a request, a reported promise), as a ``detail``. An amount or a
    date negated on purpose ("不是 1680 元") counts as accounted for: it is the wrong value."""
    if _HARD_TOKEN.search(text) is None:
        return
    # A pinned sentence (a request, a reported promise) accounts for the tokens it holds; those it
    # left out (another clause of a run-on sentence) are still the floor's.
    covered = _Spans(
        [
            (f.start, f.start + len(f.value))
            for f in typed
            if f.kind in _TYPED_SPANS or f.kind in SENTENCE_KINDS
        ]
    )
    offset = 0
    for piece in _SENTENCE_END.split(text):
        start = text.find(piece, offset)
        offset = start + len(piece)
        sentence = piece.strip()
        if not sentence:
            continue
        begin = start + piece.find(sentence)
        loose = [
            m.start()
            for m in _HARD_TOKEN.finditer(sentence)
            if not covered.holds(begin + m.start(), begin + m.end())
        ]
        if loose:
            held = _clip_around(_clauses_holding(sentence, loose), 0)
            value = _without_filler(held) or held
            yield _Found(begin + max(0, sentence.find(value)), "detail", value, normalize_sentence(value))


def _clauses_holding(sentence: str, positions: Sequence[int]) -> str:
    """The clauses of ``sentence`` that hold one of ``positions``, joined as written: the other
    clauses are pinned already or carry nothing exact ("我手机号是…,我试了12次了" keeps "我试了12次了")."""
    breaks = list(_CLAUSE_BREAK.finditer(sentence))
    starts = [0] + [b.end() for b in breaks]
    ends = [b.start() for b in breaks] + [len(sentence)]
    held = sorted({bisect.bisect_right(starts, p) - 1 for p in positions})
    out = sentence[starts[held[0]] : ends[held[0]]]
    for i in held[1:]:
        out += breaks[i - 1].group() + sentence[starts[i] : ends[i]]
    return out


def _clause_before(text: str, start: int) -> str:
    window = text[max(0, start - _SUBJECT_WINDOW) : start]
    if not _CJK_CHAR.search(window):  # English words are long: "the refund should be "
        window = text[max(0, start - 3 * _SUBJECT_WINDOW) : start]
    cut = _CLAUSE_START.search(window)
    return window[cut.start() + 1 :] if cut else window


def _subject(kind: str, text: str, start: int) -> str:
    words = _SUBJECT_PATTERNS[kind].findall(_clause_before(text, start))
    if not words:
        return ""
    return dict(_SUBJECTS[kind])[words[-1].lower()]


def _is_correction(text: str, start: int) -> bool:
    # Only within the value's own sentence: "发票抬头写错了;昨天…" corrects the title, not the date.
    window = text[
        max(0, start - 3 * _SUBJECT_WINDOW) : start
    ]  # English words are long: "actually the date is the"
    end = _LAST_SENTENCE_END.search(window)
    # A space between Chinese characters ends a chat message's sentence too: "更正一下,…是31元
    # 同事电脑上也是API-2736" corrects the amount, not the code after the space.
    since = max([end.start() if end else 0, *(m.end() for m in _CJK_SPACE_BREAK.finditer(window))])
    return any(not _hedged(window, m) for m in _CORRECTION.finditer(window, since))


_CJK_SPACE_BREAK = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")


# "说得不对请见谅", "可能有的说错了": a customer allowing for a mistake corrects nothing.
_HEDGE_BEFORE = re.compile(r"(?:可能|也许|如果|如有|要是|怕|有的|哪里|说得|说的)$")
_HEDGE_AFTER = re.compile(r"[的地方之处]|了?[,，\s]*(?:请|还请)?(?:见谅|包涵|多包涵)|的话")


def _hedged(window: str, m: re.Match[str]) -> bool:
    return bool(_HEDGE_BEFORE.search(window, 0, m.start()) or _HEDGE_AFTER.match(window, m.end()))


def _negated(text: str, start: int) -> bool:
    # "是 1860 元,不是 1680 元": the value after 不是 is the wrong one, not a fact.
    return _NEGATED.search(text, max(0, start - 10), start) is not None  # "not the 6th of October"


def _sentences(
    text: str,
    kind: str,
    marker: re.Pattern[str],
    usable: Callable[[str, re.Match[str]], bool] = lambda sentence, m: True,
) -> Iterator[_Found]:
    # A sentence is a piece of the text with a non-word character (or nothing) on either side, and
    # the markers have no anchor or look-behind: what a marker matches in a sentence, it matches in
    # the whole text. So a text it does not match is not cut into sentences.
    if not marker.search(text):
        return
    offset = 0
    for piece in _SENTENCE_END.split(text):
        start = text.find(piece, offset)
        offset = start + len(piece)
        sentence = piece.strip()
        done = 0  # a long sentence may hold several: each marker past the clauses already pinned
        for found in marker.finditer(sentence) if sentence else ():
            if found.start() < done or not usable(sentence, found):
                continue
            around = _clauses_around(sentence, found.start(), found.end())
            done = max(done, sentence.find(around) + len(around))
            value = _without_filler(_clip_around(around, 0))
            if value:
                yield _Found(start + max(0, piece.find(value)), kind, value, normalize_sentence(value))


# Clauses that carry nothing a support agent acts on: thanks, apologies, sighs, hedges and
# signposts ("谢谢你这么耐心", "不知道有没有关系", "我想起来了", "sorry for the wall of text").
# A pinned sentence drops them; they cost the prompt without adding a fact.
_FILLER_CLAUSE = re.compile(
    r"(?:(?:谢谢|多谢|感谢)(?:你们|您|你)?(?:这么|的|一直)?(?:耐心|帮忙|帮助|回复)?|辛苦(?:你们|您|你)?了"
    r"|(?:那就)?麻烦(?:你们|您|你)?了|(?:请)?稍等(?:一下)?|不好意思|抱歉|请多包涵|请见谅|见谅|唉|哎|嗯+|啊|哦+(?:对了?)?"
    r"|(?:嗯+)?明白了?|(?:好的)+|好吧|行吧|收到|没问题|(?:情况|事情)?是这样的"
    r"|我?想起来了?|对了|另外|还有|而且|然后|补充一下|说明一下|没事|不着急|不急|了解|顺便(?:说|问)一下|老实说|说实话|说真的"
    r"|(?:也)?不知道(?:有没有|有无|相不相)(?:关系|用|关)|(?:这个|这些)?(?:应该|可能)?(?:有用|有帮助)"
    r"|(?:你们|您)?(?:先)?记一下|(?:先)?跟(?:你|您|你们)说一(?:声|下)|有点无语|真(?:是)?无语|急死了"
    r"|thanks?(?:\s+(?:a\s+lot|so\s+much|again))?|thank\s+you(?:\s+(?:so\s+much|again))?|sorry(?:\s+for\s+the\s+\w+(?:\s+of\s+text)?)?"
    r"|lol|ugh|honestly|anyway|by\s+the\s+way|btw|fyi|just\s+so\s+you\s+know|just\s+saying|one\s+more\s+thing"
    r"|also|oh|(?:not\s+sure\s+(?:if\s+)?(?:it|that|this)\s+(?:matters|helps|is\s+relevant))|if\s+(?:it|that)\s+helps)"
    r"[了吧啊呀哈嘛呢~～!！.。…\s]*",
    re.IGNORECASE,
)
# Where a sentence divides into clauses: commas, a dash set off by spaces, and a space between two
# CJK characters (a customer who types "一会儿回来 上次电话里说…" ends a clause with it).
_CLAUSE_BREAK = re.compile(rf"(?=[\s,，、])(?:\s*[,，、]\s*|(?<=[{_CJK}])\s+(?=[{_CJK}])|\s+[-–—]\s+)")
# An aside a customer tacks on with no comma: "… (in case it helps)", "… if that matters", "… fyi".
_TRAILING_ASIDE = re.compile(
    r"(?=[\s(（ifjlu])"  # a space, a bracket or an aside's first letter (first characters: see above)
    r"(?:\s*[(（]?\s*\b(?:if\s+(?:that|it)\s+(?:matters|helps)|in\s+case\s+(?:that|it)\s+(?:matters|helps)"
    r"|fyi|just\s+so\s+you\s+know|lol|ugh)\s*[)）]?)+[\s.!?…~]*$",
    re.IGNORECASE,
)
_LEADING_SIGNPOST = re.compile(
    r"^(?:(?:而且|另外|还有|对了|然后|补充一下|更新一下|顺便说一下|其实|明明|说实话|我这边记录是|我记得|(?:目前|现在)的情况是)"
    r"[,，:：\s]*|(?:also|and|oh|btw|anyway|so|well|update)[,:\s]+)+",
    re.IGNORECASE,
)


def _without_filler(sentence: str) -> str:
    """``sentence`` without its filler clauses and a leading signpost; empty when it is all filler
    ("唉,请多包涵")."""
    pieces: list[str] = []
    last = 0
    for m in _CLAUSE_BREAK.finditer(sentence):
        pieces += [sentence[last : m.start()], m.group()]
        last = m.end()
    pieces.append(sentence[last:])
    clauses = [_TRAILING_ASIDE.sub("", c) for c in pieces[::2]]
    kept = [i for i, c in enumerate(clauses) if c.strip() and not _FILLER_CLAUSE.fullmatch(c)]
    if not kept:
        return ""
    out = clauses[kept[0]]
    for i in kept[1:]:
        # the break before a kept clause stays with it: "另外,把卡解绑" keeps the comma before 把
        out += pieces[2 * i - 1] + clauses[i]
    trimmed = _TRAILING_ASIDE.sub("", _LEADING_SIGNPOST.sub("", out)).strip()
    return trimmed if len(trimmed) >= 2 else out.strip()


def _clip_around(sentence: str, at: int) -> str:
    """A long sentence cut to ``MAX_SENTENCE_CHARS`` from a little before its marker: in a pasted
    log without punctuation the promise may come last, and a cut from the start would lose it."""
    begin = max(0, at - _BEFORE_MARKER) if len(sentence) > MAX_SENTENCE_CHARS else 0
    return clip(sentence) if begin == 0 else "…" + clip(sentence[begin:], MAX_SENTENCE_CHARS - 1)


_BEFORE_MARKER = 24
_TOPIC_CHARS = 6  # a clause this short before a marker names what is asked about
_LONG_SENTENCE = 40  # characters: a run-on sentence of many clauses is cut to the marker's clauses


def _clauses_around(sentence: str, start: int, end: int) -> str:
    """The clause that holds a marker, and the one after it, of a run-on sentence ("希望这次能顺利解决吧,
    我想起来了,你们经理说这个月的服务费可以减半,你们记一下,…" pins "你们经理说这个月的服务费可以减半,
    你们记一下"): the other clauses are other facts, or none, and would cost the prompt twice."""
    breaks = list(_CLAUSE_BREAK.finditer(sentence))
    begin = max((b.end() for b in breaks if b.start() < start), default=0)
    if len(sentence) <= _LONG_SENTENCE:
        # A short sentence keeps what follows the marker; a clause before it is another statement
        # ("这个我得跟同事商量一下,希望…"), unless it is only the thing asked about ("那张发票,能不能重开").
        before = max((b.end() for b in breaks if b.end() < begin), default=0)
        short = begin and len(sentence[before:begin].strip(" ,，、")) <= _TOPIC_CHARS
        return sentence[before if short else begin :].strip()
    after = [b.start() for b in breaks if b.start() >= end]
    stop = after[1] if len(after) > 1 else len(sentence)
    return sentence[begin:stop].strip()


def _asks(sentence: str, m: re.Match[str]) -> bool:
    """A request marker that is not courtesy ("希望这次能顺利解决吧") and is followed by what it asks."""
    if any(p.start() <= m.start() < p.end() for p in _POLITENESS.finditer(sentence)):
        return False
    return bool(_CONTENT_AFTER.search(sentence, m.end())) or _carries_its_ask(m)


def _requests(text: str) -> Iterator[_Found]:
    for found in _sentences(text, "request", _REQUEST, _asks):
        # "之前你们经理承诺过给我们开专票" reports a promise; its "给我" asks for nothing. A request
        # before the report in one sentence ("希望到期前提醒我续费,前几天那个客服说…") is kept alone.
        reported = _REPORTED_PROMISE.search(found.value)
        value = found.value
        if reported is not None:  # up to the clause the report starts in
            breaks = [b.start() for b in _CLAUSE_BREAK.finditer(value, 0, reported.start())]
            value = _TRAILING_PUNCT.sub("", value[: breaks[-1]]) if breaks else ""
        if value and is_request(value):
            yield found._replace(value=value, key=normalize_sentence(value))


def without_tail(kind: str, sentence: str, values: Sequence[str]) -> str:
    """A pinned request or promise up to the first clause after its first that holds one of
    ``values``, while what comes before still asks or promises: "签合同的时候说过免费培训两次,
    付款是人事那边的黎哥操作的" without its second clause when 黎哥 is pinned as a person."""
    for b in _CLAUSE_BREAK.finditer(sentence):
        rest = sentence[b.end() :]
        clause = rest[: m.start()] if (m := _CLAUSE_BREAK.search(rest)) else rest
        if any(v and v in clause for v in values) and _still_says(kind, sentence[: b.start()]):
            return sentence[: b.start()]
    return sentence


def terse(kind: str, sentence: str) -> str:
    """A pinned request or promise without the trailing clauses in which the customer narrates
    (``_NARRATES``) that neither ask nor promise nor hold a figure, code or other hard token, while
    what is left still asks or promises: "合同盖章后寄一份原件给我们,我们团队有好几个人在用" → its
    first clause. What room allows when facts would otherwise be left out: the ask and its values
    stay."""
    while True:
        breaks = list(_CLAUSE_BREAK.finditer(sentence))
        if not breaks:
            return sentence
        last = breaks[-1]
        tail, head = sentence[last.end() :], sentence[: last.start()]
        if (
            not _NARRATES.match(tail)
            or _HARD_TOKEN.search(tail)
            or _still_says(kind, tail)
            or not _still_says(kind, head)
        ):
            return sentence
        sentence = head


# A clause in which the customer tells of themselves or appeals to the reader ("我们团队有好几个人
# 在用", "你们能理解我的心情吧", "I was hoping it would just work"), not one that qualifies the ask
# ("等我确认", "the one downtown").
_NARRATES = re.compile(r"\s*(?:我|咱|你们|(?:i|i'm|i've|i'd|we|we're|we've|you|you're)\b)", re.IGNORECASE)


def _still_says(kind: str, clauses: str) -> bool:
    """Whether ``clauses`` still ask or promise (the kind's marker is in them)."""
    if kind == "request":
        return is_request(clauses)
    marker = _PROMISE if kind == "promise" else _REPORTED_PROMISE
    return marker.search(clauses) is not None


def is_request(sentence: str) -> bool:
    """Whether ``sentence`` asks for something: a request word followed by what is asked, once
    courtesy (``那就麻烦你们了``, ``请稍等``, ``谢谢``) is taken out."""
    rest = _POLITENESS.sub(" ", sentence)
    return any(_CONTENT_AFTER.search(rest, m.end()) or _carries_its_ask(m) for m in _REQUEST.finditer(rest))


def _carries_its_ask(m: re.Match[str]) -> bool:
    # "把自动续费关了", "寄一份原件给我们", "要纸质的", "再出一份" hold what they ask in the marker itself.
    found = m.group().strip()
    return (len(found) >= 3 and found[0] in "把寄发要再") or found.endswith(
        ("就行", "就好", "就可以", "即可")
    )

"""Contact details, people and yes/no statuses, as customers write them (plans: ``_plans.py``).

Each scanner yields ``(start, end, surface, canonical, subject)``: the subject names what the fact
is about, so that a later fact about the same thing supersedes it (a new address, a status that
flips from "not received" to "received"). Pure and deterministic; every pattern is either
anchored on a fixed word or reads its runs possessively, so long inputs cost linear time.

Phones and emails are also read in their masked forms (``138****5678``, ``w***@example.com``):
with ``mask=True`` the text is masked before it is scanned, and the ledger pins the mask.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple


class Hit(NamedTuple):
    start: int
    end: int
    text: str
    key: str
    subject: str


_PHONE = re.compile(
    r"(?=[+0-9])(?<![A-Za-z0-9_+*-])(?:(?:\+|00)?86[ -]?)?+"
    r"(?P<mobile>1[3-9][0-9](?:[ -]?+[0-9*]{4}){2})(?![A-Za-z0-9_*])"
    r"|(?<![A-Za-z0-9_+*-])(?P<landline>0[1-9][0-9]{1,2}-(?:[0-9*]{7,8}|[0-9*]{3,4}-[0-9*]{4}|[0-9*]{4}-[0-9*]{3}))(?![A-Za-z0-9_*-])"
    # The area code in brackets or set off by a space: (0532)9923640, (010) 8765 4321, 0512 4337288.
    r"|(?<![A-Za-z0-9_+*(-])(?:\((?P<area>0[1-9][0-9]{1,2})\)\s?|(?P<area_sp>0[1-9][0-9]{1,2}) )"
    r"(?P<number>[0-9*]{3,4} ?[0-9*]{4})(?![0-9A-Za-z_*-])"
)
# A domain label's dot must have a letter or digit after it: read possessively, "yahoo.com." would
# take the sentence's full stop as a dot and leave no top-level domain to end on.
_EMAIL = re.compile(
    r"(?<![A-Za-z0-9._%+*-])[A-Za-z0-9*][A-Za-z0-9._%+*-]{0,63}+"
    r"@[A-Za-z0-9](?:[A-Za-z0-9-]{0,62}+\.(?=[A-Za-z0-9]))++[A-Za-z]{2,24}+(?![A-Za-z0-9])"
)


# North American numbers as written: (212) 555-0187, 212.555.0187, 212-555-0187, +1 212 555 0187.
_US_PHONE = re.compile(
    r"(?=[+(0-9])(?<![A-Za-z0-9_+*.-])(?:\+?1[ .-]?)?+"
    r"(?:\((?P<area1>[2-9][0-9]{2})\)\s?|(?P<area2>[2-9][0-9]{2})[ .-])"
    r"(?P<ex>[2-9][0-9]{2})[ .-](?P<line>[0-9]{4})(?![0-9A-Za-z])"
)


def phones(text: str) -> Iterator[Hit]:
    for m in _PHONE.finditer(text):
        area = m.group("area") or m.group("area_sp")
        if m.group("mobile"):
            key = re.sub(r"[ -]", "", m.group("mobile"))
        elif area:  # one key however the area code was set off: 0532-9923640
            key = f"{area}-{m.group('number').replace(' ', '')}"
        else:  # one key however the number was grouped: 0532-1082-8636 is 0532-10828636
            area, _, number = m.group("landline").partition("-")
            key = f"{area}-{number.replace('-', '')}"
        yield Hit(m.start(), m.end(), m.group(), key, "")
    for m in _US_PHONE.finditer(text):
        area = m.group("area1") or m.group("area2")
        yield Hit(m.start(), m.end(), m.group(), f"+1{area}{m.group('ex')}{m.group('line')}", "")


def emails(text: str) -> Iterator[Hit]:
    if "@" not in text:
        return
    for m in _EMAIL.finditer(text):
        yield Hit(m.start(), m.end(), m.group(), m.group().lower(), "")


# -- addresses ---------------------------------------------------------------------------------
_ADDRESS_LABEL = (
    r"(?P<label>收货地址|收件地址|邮寄地址|寄送地址|发票地址|公司地址|办公地址|家庭地址|新地址|地址)"
    r"(?:改成|改为|换成|是|为|在)?[:：\s]*+"
)
_PLACE = r"[\u4e00-\u9fff0-9A-Za-z# -]"
_ADDRESS = re.compile(
    rf"(?=[收邮寄发公办家新地寄送])(?:{_ADDRESS_LABEL}|(?P<send>寄到|寄往|送到|邮寄到|快递到))"
    rf"(?P<addr>{_PLACE}{{2,60}}+)"
)
_PLACE_WORD = re.compile(r"[省市区县镇路街道巷弄号楼栋室层座]")


_PROVINCES = (
    "北京|天津|上海|重庆|河北|山西|辽宁|吉林|黑龙江|江苏|浙江|安徽|福建|江西|山东|河南|湖北|湖南|广东|海南|四川"
    "|贵州|云南|陕西|甘肃|青海|台湾|内蒙古|广西|西藏|宁夏|新疆|香港|澳门"
)
# Without a label, an address must start at a province: Chinese has no spaces to say where a
# place name begins ("寄到南京市" must not read as the city "到南京").
_BARE_ADDRESS = re.compile(
    rf"(?:{_PROVINCES})(?:省|自治区|市|特别行政区)?(?:[\u4e00-\u9fff]{{2,4}}市)?[\u4e00-\u9fff]{{2,4}}[区县]"
    r"[\u4e00-\u9fff0-9A-Za-z# -]{2,40}?[0-9]+\s*(?:号|弄)"
    r"(?:[\u4e00-\u9fff0-9A-Za-z -]{0,20}?(?:[0-9]+\s*[室楼层幢栋]|单元[0-9]+))*"
    # The room after its building with no 室 ("4栋2705前台", "18 栋1114,"): a bare number, not a count.
    r"(?:(?<=[幢栋])\s*[0-9]{2,5}(?![0-9]|\s*[号元块%分天个次年月日楼层室]))?"
)


# After a space, words with no digit and no place word are the next sentence, not the address:
# "…和平路932号215室 目前退款还没收到"; so are words that begin with a person or an error
# ("…805号1519室 我2027-12-03要出差", "…2单元2303 报错422 error": no address part begins so), and
# words with no place word that count time or things ("…1单元1416 等了快22分钟"; "阳光花园3-2-301"
# is still the address).
_PLACE_WORDS = "省市区县镇路街道巷弄号楼栋幢室层座单元"
_AFTER_ADDRESS = re.compile(
    r"\s+(?=[\u4e00-\u9fff])(?:(?=[我你咱他她]|报错|错误|提示)"
    rf"|(?![^\s]*?[0-9{_PLACE_WORDS}])"
    rf"|(?=[^\s]*?[0-9]\s*(?:分钟|小时|天|次|块|元|个|岁|周))(?![^\s]*?[{_PLACE_WORDS}]))"
)


def _address_only(addr: str) -> str:
    cut = _AFTER_ADDRESS.search(addr)
    return addr[: cut.start()] if cut else addr


# After a number, words that count or measure: "3 days", "2 hours" start no street.
_NOT_A_STREET = (
    r"(?:hours?|days?|minutes?|mins?|weeks?|months?|years?|times?|items?|dollars?|bucks?|percent|units?)\b"
)


# A US-style street address: number, street and its type, then the apartment, and the city, state
# and zip when all three stand ("1450 Oak Avenue, Apt 4D, Portland, OR 97205").
_EN_ADDRESS = re.compile(
    r"(?<![0-9A-Za-z-])[0-9]{1,6}(?:-[0-9]{1,4})?\s+(?!" + _NOT_A_STREET + r")(?:[NSEW]\.?\s+)?"
    # a street's words; a dot only after an initial or a short abbreviation ("St. Marks", "Mt."), not
    # at a sentence end: "within 3 days. By the way" holds no street
    r"(?:(?:[A-Za-z0-9']+|[A-Za-z]{1,2}\.)\s+){0,3}?"
    r"(?:street|st|avenue|ave|road|rd|boulevard|blvd|lane|ln|drive|dr|way|court|ct|place|pl|terrace|parkway"
    r"|pkwy|highway|hwy|circle|cir|square|sq)\b\.?"
    r"(?:,?\s*(?:apt|apartment|suite|ste|unit|floor|fl|room|rm)\.?\s*#?\s*[0-9A-Za-z-]{1,8}\b|,?\s*#\s*[0-9A-Za-z-]{1,8}\b)?"
    r"(?:,?\s*[A-Za-z]+(?:\s[A-Za-z]+)?,?\s+[A-Za-z]{2},?\s+[0-9]{5}(?:-[0-9]{4})?(?![0-9]))?",
    re.IGNORECASE,
)


# A street named without its type ("2216 Broadway", "88 Via Roma") is an address only with the
# city, state and zip after it: after a comma, any two letters for the state ("…, Denver, CO
# 80204"); without one ("9482 broadway denver co 80294"), a state's own code.
_US_STATE = (
    r"(?:AL|AK|AZ|AR|CA|CO|CT|DE|FL|GA|HI|ID|IL|IN|IA|KS|KY|LA|ME|MD|MA|MI|MN|MS|MO|MT|NE|NV|NH|NJ|NM|NY|NC"
    r"|ND|OH|OK|OR|PA|RI|SC|SD|TN|TX|UT|VT|VA|WA|WV|WI|WY|DC)"
)
_EN_UNTYPED_ADDRESS = re.compile(
    r"(?<![0-9A-Za-z-])[0-9]{1,6}(?:-[0-9]{1,4})?\s+"
    r"(?!" + _NOT_A_STREET + ")"
    r"(?:[A-Za-z][A-Za-z'.]*\s+){0,2}?[A-Za-z][A-Za-z'.]*"
    r"(?:,?\s*(?:apt|apartment|suite|ste|unit|floor|fl|room|rm)\.?\s*#?\s*[0-9A-Za-z-]{1,8}\b|,?\s*#\s*[0-9A-Za-z-]{1,8}\b)?"
    r"(?:,\s*[A-Za-z]+(?:\s[A-Za-z]+)?,?\s+[A-Za-z]{2}|\s+[A-Za-z]+(?:\s[A-Za-z]+)?,?\s+" + _US_STATE + r")"
    r",?\s+[0-9]{5}(?:-[0-9]{4})?(?![0-9])",
    re.IGNORECASE,
)


def addresses(text: str) -> Iterator[Hit]:
    if _has_latin(text) and _has_digit(text):
        typed = list(_EN_ADDRESS.finditer(text))
        untyped = [
            m
            for m in _EN_UNTYPED_ADDRESS.finditer(text)
            if not any(t.start() < m.end() and m.start() < t.end() for t in typed)
        ]
        for m in sorted(typed + untyped, key=lambda m: m.start()):
            addr = m.group()
            yield Hit(m.start(), m.end(), addr, re.sub(r"[\s,.]+", " ", addr).strip().upper(), "address")
    labelled = [(m.start(), m.end()) for m in _ADDRESS.finditer(text)]
    for m in _BARE_ADDRESS.finditer(text):
        if not any(a < m.end() and m.start() < b for a, b in labelled):
            addr = m.group().strip()
            yield Hit(m.start(), m.end(), addr, re.sub(r"\s+", "", addr).upper(), "地址")
    for m in _ADDRESS.finditer(text):
        addr = _address_only(m.group("addr")).strip()
        # A place needs at least two of province/city/district/street/number words.
        if len(_PLACE_WORD.findall(addr)) < 2:
            continue
        label = m.group("label") or "地址"
        subject = "发票地址" if label == "发票地址" else "地址"
        yield Hit(m.start("addr"), m.end("addr"), addr, re.sub(r"\s+", "", addr).upper(), subject)


# -- people with their role --------------------------------------------------------------------
_SURNAMES = (
    "王李张刘陈杨黄赵吴周徐孙马朱胡郭何高林罗郑梁谢宋唐许韩冯邓曹彭曾肖田董袁潘于蒋蔡余杜叶程苏魏吕丁任沈"
    "姚卢姜崔钟谭陆汪范金石廖贾夏韦付方白邹孟熊秦邱江尹薛闫段雷侯龙史陶黎贺顾毛郝龚邵万钱严覃武戴莫孔向汤"
)
_ROLE = (
    r"项目经理|财务|会计|出纳|经理|主管|总监|负责人|联系人|对接人|同事|老板|行政|采购|法务|技术|运维|管理员"
    r"|助理|客服|仓库|前台|合伙人|店长|店员|领导|人事"
)
# 工: an engineer ("石工", "邱工"), not 工作/工资/工单/工程…
_TITLE = (
    r"经理|总监|主管|老师|会计|老板|哥|姐|总(?![监部公结共额计价])|董(?![事])"
    r"|工(?![作资单程期具厂艺人商业位种序])"
)
# The department before a role says who the person is: "IT那边的邹会计", "技术负责人万哥".
_DEPARTMENT = r"技术|IT|财务|行政|销售|运维|采购|人事|法务|市场|仓库|物流|研发|产品|商务|前台"
_PERSON_START = f"{_SURNAMES}小老财会出经主总负联对同行采法技运管助客项仓前合店领人"
_PERSON = re.compile(
    rf"(?=[{_PERSON_START}I销人市物研产商])"
    rf"(?:(?P<dept>{_DEPARTMENT}|负责[\u4e00-\u9fffA-Za-z]{{2,4}}?的)(?:那边的|部门的|部的|的|部)?(?=[{_PERSON_START}]))?(?:"
    rf"(?P<role>{_ROLE})(?:是|叫|为)?(?P<name>[{_SURNAMES}](?:{_TITLE})|[小老][{_SURNAMES}]"
    rf"|[{_SURNAMES}][\u4e00-\u9fff](?:[\u4e00-\u9fff](?=[,，。、;；!！?？\s]|$))?)"
    rf"|(?P<name3>[小老][{_SURNAMES}]|[{_SURNAMES}](?:{_TITLE}))[(（](?P<role3>[\u4e00-\u9fffA-Za-z]{{2,6}})[)）]"
    rf"|(?P<name2>[{_SURNAMES}])(?P<title>{_TITLE})"
    # after a department, a bare "老范" is the person it names
    rf"|(?(dept)(?P<name5>[小老][{_SURNAMES}])|(?!))"
    r")"
)
# Words that follow a role word but are not names ("财务报表", "技术支持").
_NOT_NAMES = frozenset(
    {"王者", "张贴", "周末", "周一", "周二", "周三", "周四", "周五", "周六", "周日", "高级", "方面"}
)


_EN_ROLE = (
    r"(?:(?:operations|office|account|project|sales|billing|it|warehouse|finance|store|shift|practice|product"
    r"|general|team|purchasing|hr)\s+)?"
    r"(?:manager|lead|director|supervisor|coordinator)|bookkeeper|accountant|controller|boss|colleague"
    r"|coworker|co-worker|assistant|admin(?:istrator)?|lawyer|contact|cfo|ceo|cto|it\s+guy|finance\s+person"
    r"|(?:business\s+)?partner|wife|husband|son|daughter|receptionist|technician|(?:business\s+)?owner"
)
_EN_TITLE = r"(?:(?-i:Mr|Ms|Mrs|Dr|Miss)\.?\s+)?"
_EN_NAME = r"(?-i:[A-Z][a-z]+)"
_EN_DEPT = (
    r"accounting|finance|billing|sales|hr|legal|it|procurement|purchasing|ops|operations|the\s+front\s+desk"
    r"|front\s+desk|the\s+warehouse|warehouse|support|shipping|logistics|marketing|engineering|reception"
)
# Sentence openers and other capitalised words that look like a name before "my …": "Btw my admin
# Allen", "Cheers, my operations manager, Wei", "on 16 October, my controller Brianna".
_NOT_A_NAME = (
    r"(?-i:Btw|Also|Oh|Hi|Hey|So|Just|And|But|Anyway|Sorry|Thanks|Then|Now|Yes|No|Ok|Okay|Plus|Well"
    r"|Cheers|Regards|Morning|Hello|Please|January|February|March|April|May|June|July|August|September"
    r"|October|November|December|Monday|Tuesday|Wednesday|Thursday|Friday|Saturday|Sunday)"
)
_EN_PERSON = re.compile(
    r"(?=[A-Za-z])(?:"  # every form starts with a letter (first characters: see _facts)
    rf"\b(?:our|my|the)\s+(?P<role>{_EN_ROLE})\s*,?\s+{_EN_TITLE}(?!{_NOT_A_NAME}\b)(?P<name>{_EN_NAME})\b"
    rf"(?:\s+(?:from|in|at)\s+(?P<dept1>{_EN_DEPT})\b)?"
    # "Lopez, our admin", unless the role names someone after it ("…, my operations manager, Wei")
    rf"|\b{_EN_TITLE}(?!{_NOT_A_NAME}\b)(?P<name2>{_EN_NAME})\s*(?:,|\()?\s*(?:our|my)\s+(?P<role2>{_EN_ROLE})\b"
    rf"(?!\s*,?\s+{_EN_TITLE}(?!{_NOT_A_NAME}\b){_EN_NAME}\b)"
    rf"|\b{_EN_TITLE}(?P<name3>{_EN_NAME})\s+(?:from|in|at)\s+(?P<dept>{_EN_DEPT})\b"
    rf"|(?<![A-Za-z])(?P<role4>(?-i:[a-z]+\s+)?(?:manager|accountant|bookkeeper|controller|lead))\s+{_EN_TITLE}(?P<name4>{_EN_NAME})\b)",
    re.IGNORECASE,
)
_NOT_EN_NAMES = frozenset(
    {"I", "The", "This", "That", "It", "We", "He", "She", "They", "And", "But", "Please"}
)


def people(text: str) -> Iterator[Hit]:
    yield from _english_people(text)
    for m in _PERSON.finditer(text):
        if m.group("role"):
            name, role = m.group("name"), m.group("role")
        elif m.group("name3"):
            name, role = m.group("name3"), m.group("role3")
        elif m.group("name5"):
            name, role = m.group("name5"), m.group("dept").removeprefix("负责").removesuffix("的")
        else:
            name, role = m.group("name2") + m.group("title"), m.group("title")
        if name in _NOT_NAMES or name[:2] in _NOT_NAMES:
            continue
        yield Hit(m.start(), m.end(), m.group(), f"{role}:{name}", f"person:{name}")


# English forms need Latin letters: a text without any (most Chinese turns) skips their patterns,
# which would otherwise be tried at every character.
_has_latin = re.compile("[A-Za-z]").search
_has_digit = re.compile("[0-9]").search


def _english_people(text: str) -> Iterator[Hit]:
    if not _has_latin(text):
        return
    for m in _EN_PERSON.finditer(text):
        name = m.group("name") or m.group("name2") or m.group("name3") or m.group("name4")
        role = (m.group("role") or m.group("role2") or m.group("dept") or m.group("role4") or "").lower()
        if name in _NOT_EN_NAMES:
            continue
        yield Hit(m.start(), m.end(), m.group(), f"{' '.join(role.split())}:{name}", f"person:{name}")


# -- yes/no statuses ---------------------------------------------------------------------------
_VERBS = {
    "收到": "收到",
    "收不到": "收到",  # "验证码短信收不到": not received, like 登不上
    "到账": "收到",
    "退回": "收到",
    "开通": "开通",
    "启用": "开通",
    "开启": "开通",
    "开过": "开通",
    "打开": "开通",
    "绑定": "绑定",
    "生效": "生效",
    "恢复": "恢复",
    "解决": "解决",
    "修复": "解决",
    "寄出": "寄出",
    "发出": "寄出",
    "开具": "开具",
    "开出": "开具",
    "开": "开通",
    "拆封": "拆封",
    "重置": "重置",
    "更新": "更新",
    "关掉": "关闭",
    "关闭": "关闭",
    "取消": "取消",
    "同步过来": "同步",
    "同步": "同步",
    "到": "到",
    "清过": "清除",
    "清除": "清除",
    "清理": "清除",
    "清空": "清除",
    "作废": "作废",
    "删除": "删除",
    "删掉": "删除",
    "扣款": "扣款",
    "扣": "扣款",
    "注销": "注销",
    "登录": "登录",
    "登陆": "登录",
    "登上": "登录",
    "登不上": "登录",
    "登不进去": "登录",
    "登录不了": "登录",
    "退回去": "退回",
    "解绑": "解绑",
    "激活": "开通",
    "冻结": "冻结",
    "锁住": "锁定",
    "锁定": "锁定",
    "锁了": "锁定",
    "解锁": "解锁",
    "停用": "停用",
    "禁用": "停用",
}
# A verb whose object goes without saying ("现在能登录了": the account).
_IMPLIED_OBJECTS = {"登录": "账号", "扣款": "退款"}
_OBJECTS = {
    "退款": "退款",
    "款项": "退款",
    "钱": "退款",
    "发票": "发票",
    "邮件": "邮件",
    "验证码": "验证码",
    "短信": "验证码",
    "快递": "快递",
    "包裹": "快递",
    "自动续费": "自动续费",
    "两步验证": "两步验证",
    "二次验证": "两步验证",
    "会员": "会员",
    "权限": "权限",
    "同步": "同步",
    "账号": "账号",
    "功能": "功能",
    "东西": "东西",
    "货": "东西",
    "密码": "密码",
    "流水": "流水",
    "缓存": "缓存",
    "App": "App",
    "app": "App",
    "子账号": "子账号",
    "订单": "订单",
    "银行卡": "卡",
    "卡": "卡",
    "优惠券": "优惠券",
    "积分": "积分",
    "换货": "换货",
}
_VERB_ALT = "|".join(sorted(_VERBS, key=len, reverse=True))
_OBJ_ALT = "|".join(sorted(_OBJECTS, key=len, reverse=True))
# A status starts with its negation, its 已 or its verb (first characters: see _facts).
_STATUS_STARTS = "".join(sorted({"从", "还", "尚", "并", "没", "未", "已", *(verb[0] for verb in _VERBS)}))
_STATUS = re.compile(
    rf"(?=[{_STATUS_STARTS}])"
    rf"(?P<neg>从来没有|从来没|从没有|从没|还没有|还没|尚未|并未|没有|没|未)?+(?P<pos>已经|已)?+"
    rf"(?P<verb>{_VERB_ALT})(?P<le>了|过)?"
)
_OBJECT = re.compile(_OBJ_ALT)
# A clause ends at a comma or stop, or at a space between two CJK characters ("发票已经作废了 我记得…").
_CLAUSE = re.compile(r"(?:[^,，。！？!?；;\n\s]|\s(?![\u4e00-\u9fff])|(?<![\u4e00-\u9fff])\s)++")


# English yes/no facts: "the replacement never showed up" / "the replacement arrived this morning"
# (subject "replacement arrived"), "I still haven't received the refund" / "I got the refund"
# (subject "received refund").
_EN_NOT = (
    r"(?:never|still\s+(?:hasn't|haven't|has\s+not|have\s+not|didn't|did\s+not)"
    r"|hasn't|haven't|has\s+not|have\s+not|didn't|did\s+not|not\s+yet)"
)
_EN_ARRIVE = (
    r"(?:showed\s+up|show\s+up|shown\s+up|shows\s+up|arrived|arrive|come\s+through|came\s+through|come|came"
    r"|been\s+delivered|was\s+delivered|got\s+here|get\s+here"
    # money arriving: "the refund still hasn't hit my account"; a discount taking effect, which
    # "the coupon shows up on the order now" says in the words of arriving
    r"|hit\s+(?:my|our|the)\s+(?:bank\s+)?account|got\s+applied|been\s+applied|was\s+applied)"
)
_EN_THING = (
    r"(?:the|my|our|your)\s+(?P<thing>[a-z]+(?:\s+(?!(?:never|still|has|have|hasn't|haven't|had|did|didn't"
    r"|finally|just|not|is|was|arrived|came|showed)\b)[a-z]+)?)"
)
_EN_STATUS = re.compile(
    rf"\b{_EN_THING}\s+(?:(?P<neg>{_EN_NOT})\s+|(?:has\s+|have\s+|finally\s+|just\s+)*)(?P<verb>{_EN_ARRIVE})\b"
    rf"|\b(?:i|we)\s+(?:(?P<neg2>{_EN_NOT})\s+|(?:have\s+|'ve\s+|finally\s+|just\s+|already\s+)*)"
    rf"(?P<verb2>received|receive|gotten|got|get|removed|deleted|cancell?ed|reset|cleared|updated|disabled"
    rf"|enabled|turned\s+off|turned\s+on)\s+(?:the|my|our|a|any|all|all\s+the)\s+(?P<obj>[a-z-]+)\b"
    r"(?!\s+(?:wrong|mixed\s+up|backwards|confused)\b)",  # "I got the date wrong" receives nothing
    re.IGNORECASE,
)
_NOT_THINGS = frozenset(
    {"issue", "problem", "page", "app", "screen", "error", "day", "time", "guy", "person"}
)


# "I'm able to log in again", "auto-renew is already off", "the charge is still pending".
_EN_ABLE = re.compile(
    r"\b(?:i'm|i\s+am|we're|we\s+are|i|we)\s+(?:now\s+|finally\s+)?(?P<neg>(?:still\s+)?(?:not|unable|can't|cannot)\s+)?"
    r"(?:able\s+to\s+)?(?P<act>log\s+in|sign\s+in|log\s+on|check\s+out|pay|download|upload|print)\b(?:\s+again)?",
    re.IGNORECASE,
)
_EN_STATE = re.compile(
    r"\b(?:the|my|our|your)?\s*(?P<thing>auto-?renew(?:al)?|two-factor(?:\s+auth(?:entication)?)?|2fa|sync"
    # "the old card", "the bank feed": a noun and the word before it, else the noun alone.
    r"|(?:the|my|our)\s+[a-z]+\s+[a-z]+(?=\s+(?:still\s+)?(?:is|are|was|were)(?:n't)?\s)|(?:the|my|our)\s+[a-z]+|[a-z]+)"
    # "is still pending", "still isn't syncing", "is not active"
    r"\s+(?:still\s+)?(?:is|are|was|were)(?P<neg>n't|\s+not)?\s+(?:still\s+|already\s+|now\s+|finally\s+)?"
    r"(?P<state>pending|unopened|off|on|disabled"
    r"|enabled|locked|unlocked|active|inactive|broken|fixed|working|cancell?ed|syncing|refunded|suspended|expired"
    r"|blocked|frozen|resolved|closed|activated|deactivated)\b",
    re.IGNORECASE,
)
_NOT_STATE_THINGS = frozenset(
    {"it", "this", "that", "there", "which", "what", "everything", "nothing", "he", "she", "still"}
)


# "the verification texts work now" / "the verification texts aren't coming through", "the package
# was marked delivered but it's not here" (up to a dash: "… - btw right now …" is another thing).
_EN_WORKS = re.compile(
    r"\b(?:the|my|our)\s+(?P<thing>[a-z]+(?:\s+(?!(?:still|now|never)\b)[a-z]+)?)\s+"
    r"(?:(?P<works>works?|is\s+working|are\s+working)"
    r"\s+(?:now|again|fine\s+now)"
    r"|(?P<broken>(?:still\s+)?(?:aren't|isn't|are\s+not|is\s+not|don't|doesn't|do\s+not|does\s+not)"
    r"\s+(?:still\s+)?(?:coming\s+through|working|work)\b)"
    r"|(?P<marked>(?:was|is|were|are)\s+marked\s+(?:as\s+)?delivered)(?:(?!\s[-–—]\s)[^,;.!?\n])*)",
    re.IGNORECASE,
)


_EN_CLAUSE_END = re.compile(r"[,;.!?\n(]|\s[-–—]\s")
_EN_CLAUSE_TAIL = 40  # characters of a status's clause kept after its verb ("… arrived this morning")


def _english_statuses(text: str) -> Iterator[Hit]:
    for hit in _english_status_hits(text):
        end = _EN_CLAUSE_END.search(text, hit.end, hit.end + _EN_CLAUSE_TAIL)
        stop = end.start() if end else min(len(text), hit.end + _EN_CLAUSE_TAIL)
        said = text[hit.start : max(stop, hit.end)].strip() if end or stop == len(text) else hit.text.strip()
        yield hit._replace(end=hit.start + len(said), text=said)


def _english_status_hits(text: str) -> Iterator[Hit]:
    if not _has_latin(text):
        return
    for m in _EN_WORKS.finditer(text):
        thing = " ".join(m.group("thing").lower().split())
        subject = f"{thing} {'marked delivered' if m.group('marked') else 'works'}"
        answer = "no" if m.group("broken") else "yes"
        yield Hit(m.start(), m.end(), m.group().strip(), f"{subject}={answer}", subject)
    for m in _EN_ABLE.finditer(text):
        act = " ".join(m.group("act").lower().split())
        subject = f"able to {act}"
        yield Hit(m.start(), m.end(), m.group(), f"{subject}={'no' if m.group('neg') else 'yes'}", subject)
    for m in _EN_STATE.finditer(text):
        thing = " ".join(m.group("thing").lower().split())
        thing = thing.removeprefix("the ").removeprefix("my ").removeprefix("our ")
        if thing in _NOT_STATE_THINGS:
            continue
        # "the bank feed still isn't syncing": bank feed=not syncing, which "is syncing again" replaces
        state = ("not " if m.group("neg") else "") + m.group("state").lower()
        yield Hit(m.start(), m.end(), m.group().strip(), f"{thing}={state}", thing)
    for m in _EN_STATUS.finditer(text):
        if m.group("thing"):
            thing = " ".join(m.group("thing").lower().split())
            if thing.split()[-1] in _NOT_THINGS or thing.split()[0] in ("never", "still", "has", "have"):
                continue
            subject, negative = f"{thing} arrived", m.group("neg") is not None
        else:
            verb = " ".join(m.group("verb2").lower().split())
            verb = "received" if verb in ("received", "receive", "gotten", "got", "get") else verb
            subject, negative = f"{verb} {m.group('obj').lower()}", m.group("neg2") is not None
        yield Hit(m.start(), m.end(), m.group(), f"{subject}={'no' if negative else 'yes'}", subject)


def statuses(text: str) -> Iterator[Hit]:
    """Yes/no facts: ``还没有收到退款`` (key ``收到退款=否``), ``退款我已经收到了`` (``收到退款=是``),
    ``the replacement never showed up`` (``replacement arrived=no``)."""
    yield from _english_statuses(text)
    if not _STATUS.search(text):
        return
    for clause in _CLAUSE.finditer(text):
        part = clause.group()
        for m in _STATUS.finditer(part):
            if m.group("verb") == "扣" and not m.group("pos"):
                continue  # "多扣了 ¥128" is the amount's sentence; "钱已经扣了" is the status
            negative = m.group("neg") is not None or "不" in m.group("verb")  # 登不上
            if not (negative or m.group("pos") or m.group("le")):
                continue  # "我想开通" states no status
            if _QUESTION_TAIL.match(part, m.end()):
                continue  # "退款到账了吗" asks
            obj = _object_near(part, m.start(), m.end()) or _IMPLIED_OBJECTS.get(_VERBS[m.group("verb")])
            if obj is None:
                continue
            verb = _VERBS[m.group("verb")]
            subject = verb if verb == "扣款" else verb + obj  # 钱扣了: the charge, not a refund
            start = clause.start() + m.start()
            answer = "否" if negative else "是"
            said = part.strip().rstrip("~～")  # "快递一直没到~": the tilde is tone, not words
            yield Hit(start, clause.start() + m.end(), said, f"{subject}={answer}", subject)


_QUESTION_TAIL = re.compile(r"\s*(?:吗|么|没有?)\s*$")


def _object_near(part: str, start: int, end: int) -> str | None:
    """What the status verb at ``start:end`` of ``part`` is about: the object right after it (收到了
    发票), else the nearest before it (发票已经收到了), else one further after (还没收到你们寄的发票):
    "发票已经收到了 tb_x这个订单号一直没动静" is about the invoice, not the order."""
    after = _OBJECT.search(part, end)
    if after is not None and after.start() - end <= _OBJECT_RIGHT_AFTER:
        return _OBJECTS[after.group()]
    before = [m.group() for m in _OBJECT.finditer(part, 0, start)]
    if before:
        return _OBJECTS[before[-1]]
    return _OBJECTS[after.group()] if after is not None else None


_OBJECT_RIGHT_AFTER = 2  # characters between a verb and its object: 了, 过, 的


# What a status key's subject starts with (收到 of 收到退款, 作废 of 作废发票).
STATUS_VERBS = frozenset(_VERBS.values())


def status_text(key: str) -> str:
    """``已收到退款`` / ``未收到退款`` for the keys ``收到退款=是`` / ``收到退款=否``;
    ``replacement arrived: yes`` for ``replacement arrived=yes``."""
    subject, _, answer = key.rpartition("=")
    if answer not in ("是", "否"):
        return f"{subject}: {answer}"
    return ("已" if answer == "是" else "未") + subject

"""The typed values a turn's text holds: ids, error codes, amounts, dates, phones, emails,
addresses, people and plans, each with the word naming its subject (``升级费``, ``due date``) and
whether it is written as a correction or as the value something is not (``不是…``).

Found by plain patterns; the amounts, dates and contacts by their own modules (``_money``,
``_dates``, ``_contacts``). ``scan`` runs them all, and the sentence kinds of ``_sentences``, over
one text; ``_facts`` turns what it finds into the ledger's facts.
"""

from __future__ import annotations

import re
from collections.abc import Iterator, Mapping, Sequence
from datetime import datetime
from http import HTTPStatus

from .._state import Role
from . import _contacts as contacts
from . import _plans
from ._dates import dates
from ._money import amounts
from ._sentences import (
    CJK,
    PROMISE,
    REPORTED_PROMISE,
    Found,
    clip,
    normalize_sentence,
    requests_in,
    sentences_marked,
    without_filler,
)

# -- ids and error codes ------------------------------------------------------------------------
_ERROR_CODE = re.compile(r"[Ee](?<![A-Za-z0-9][Ee])[0-9]{3,5}+(?![A-Za-z0-9])")


_NAMED_CODE = re.compile(r"[A-Z](?<![A-Za-z0-9-][A-Z])[A-Z]{1,5}-[0-9]{3}(?![A-Za-z0-9-])")


# A code after the words that report one: "错误码 E1234", "报错 ab-217", "error 7731", "fails with
# NET-6519", "throws SYNC-4432", "exit code 137".
_ERROR_CODE_AFTER_LABEL = re.compile(
    r"(?=[错报代ecfst])(?:错误码|错误代码|报错码|报错代码|报错|代码|(?<![A-Za-z])(?:(?:error|exit|status)\s+code|error"
    r"|(?:fail|crash|abort|exit)(?:s|ed|ing)?\s+with(?:\s+(?:an?\s+)?(?:error|code))?|throw(?:s|ing)?))"
    r"\s*(?:是|为|is)?\s*(?:[:：]\s*)?#?\s*([A-Za-z]{0,6}-?[0-9]{3,6}+)(?![A-Za-z0-9])",
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
    r"(?=[订账发工退单流合编客会交快运obitrcsa])"  # the labels' first characters
    r"(?P<label>订单号|订单|账单号|账单|发票号|发票|工单号|工单|退款单号|退款单|退款号|单号|流水号|合同号|合同编号"
    r"|编号|客户号|会员号|账户号|交易号|快递单号|运单号|order|bill|invoice|ticket|refund|case|contract"
    r"|tracking|statement|transaction|return|account|ref|reference)"
    r"\s*(?:号码|编号|number|no\.?|id)?\s*(?:应该是|应该|改成|改为|显示的是|显示为|写的是|是|为|is)?\s*(?:[:：]\s*)?#?\s*"
    r"(?P<v>[0-9][0-9A-Za-z-]{4,39}+|[A-Za-z]{1,6}[0-9][0-9A-Za-z-]{3,39}+|[A-Za-z]{1,6}_[0-9A-Za-z_]{3,39}+)"
    r"(?![0-9A-Za-z_])",
    re.IGNORECASE,
)


# The id first, the word naming it after: "517483317439这个订单号一直没动静", "看下6QB2JCZ这单",
# "case_xexbvtw的单子".
_ID_BEFORE_LABEL = re.compile(
    r"(?=[0-9A-Za-z])(?<![0-9A-Za-z_-])(?P<v>[0-9]{6,30}+|(?=[A-Za-z0-9_-]*[0-9])[A-Za-z0-9][A-Za-z0-9_-]{4,38}[A-Za-z0-9]"
    r"|[A-Za-z]{1,6}_[0-9A-Za-z_]{3,38}[0-9A-Za-z])"
    r"\s*(?:这个|这张|这笔|那个)?(?:订单号|订单|[\u4e00-\u9fff]{0,2}(?:单号|流水号)|合同号|发票号|这单|那单|的单子"
    # "413259 is the invoice I'm talking about"
    r"|is\s+(?:the|my|our)\s+(?:invoice|order|tracking\s+number|statement|contract|case|ticket|return|transaction"
    r"|account|reference)\b)"
)


# After a label, a date is not an id: "订单 2026-03-01 下的".
_DATE_SHAPED = re.compile(r"[0-9]{4}-[0-9]{1,2}(?:-[0-9]{1,2})?")


_NOT_ID_PREFIXES = frozenset({"USD", "RMB", "CNY", "EUR", "HKD"})


# A hexadecimal status as programs print it: 0x80070005.
_HEX_CODE = re.compile(r"0[xX](?<![A-Za-z0-9]0[xX])[0-9A-Fa-f]{4,16}+(?![A-Za-z0-9])")


# An HTTP status named as one: "502 error", "503 Service Unavailable", "HTTP 404", "状态码 500".
# Every 4xx and 5xx reason phrase HTTP defines (with the names older versions of the standard gave
# a few: "Unprocessable Entity", "Payload Too Large"), longest first, any spacing.
_HTTP_PHRASES = sorted(
    {
        *(s.phrase for s in HTTPStatus if 400 <= s.value < 600),
        "Unprocessable Entity",
        "Unprocessable Content",
        "Payload Too Large",
        "Request Entity Too Large",
        "URI Too Long",
        "Request-URI Too Long",
        "Gateway Time-out",
    },
    key=len,
    reverse=True,
)
_HTTP_REASONS = "error|错误|报错|" + "|".join(
    r"\s+".join(re.escape(word) for word in phrase.lower().split()) for phrase in _HTTP_PHRASES
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
PLURAL_SUBJECTS = frozenset(
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


CORRECTION = re.compile(
    r"更正|纠正|说错|写错|搞错|打错|记错|抄错|输错|填错|不对|应该是(?![^,，。！？!?；;\n]{0,16}?[吧吗])|正确的是|改成|改为|改到|实际上是|其实是|准确地说"
    r"|新地址|地址换"
    # "不是四万九,是¥49400": the value right after a refusal of another one
    r"|不是[^,，。！？!?；;\s]{1,10}[,，]\s*(?:而)?是(?=\s*[¥￥$]?\s*[0-9一二两三四五六七八九十])"
    r"|\b(?:actually|i\s+meant|i\s+misread|correction|should\s+(?:be|have\s+been|read)|sorry,?\s+(?:it|the|that|my|i)\b"
    r"|my\s+mistake|my\s+bad|typo|i\s+mistyped|wrong\s+(?:number|date|address|amount)|scratch\s+that"
    r"|(?:got|had|typed|wrote|gave\s+you)\s+the\s+(?:\w+\s+){0,2}(?:number|date|address|amount|id|code)\s+wrong"
    r"|changed\s+to|now\s+(?:it'?s|is))",
    re.IGNORECASE,
)


_LAST_SENTENCE_END = re.compile(r"[。！？!?；;\n][^。！？!?；;\n]*$")


# Words that name what follows as the wrong value ("不是 1680 元", "not the 6th", "isn't 4D").
NEGATION = r"(?:不是|并非|而不是|不是说|\bnot|\bisn'?t|\bwasn'?t)"
_NEGATED = re.compile(NEGATION + r"(?:\s+the)?\s*$", re.IGNORECASE)


_CLAUSE_START = re.compile(r"[,，。！？!?；;\n][^,，。！？!?；;\n]*$")


_has_digit = re.compile("[0-9]").search


def mentions_fact(text: str, *, role: Role | None = None) -> bool:
    """Whether ``text`` holds a fact; with ``role=None`` sentences of either side count."""
    roles: tuple[Role, ...] = ("customer", "agent") if role is None else (role,)
    return any(next(iter(scan(text, r, None, ())), None) is not None for r in roles)


def currency_of(text: str, conversation: str | None) -> str | None:
    # With no amount in a currency yet, Chinese text means yuan; other text leaves it unsaid.
    return conversation or ("CNY" if CJK_CHAR.search(text) else None)


CJK_CHAR = re.compile(f"[{CJK}]")


def scan(
    text: str,
    role: Role,
    when: datetime | None,
    plans: Sequence[str],
    currency: str | None = "CNY",
    *,
    negated: bool = False,
) -> Iterator[Found]:
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
        yield from sentences_marked(text, "promise", PROMISE)
    elif role == "customer":
        yield from sentences_marked(text, "promise_reported", REPORTED_PROMISE)
        yield from requests_in(text)


def _error_codes(text: str) -> Iterator[Found]:
    for m in _ERROR_NAME.finditer(text):
        yield Found(m.start(), "error_code", m.group(), m.group().upper())
    for m in _HEX_CODE.finditer(text):
        yield Found(m.start(), "error_code", m.group(), "0x" + m.group()[2:].upper())
    for m in _HTTP_STATUS.finditer(text):
        # One key however written ("HTTP 503", "503 service unavailable", "报错503"): the prompt
        # shows it with its reason phrase (ledger.display), what people search for.
        yield Found(m.start(), "error_code", m.group(), f"HTTP {m.group('a') or m.group('b')}")
    for m in _ERROR_CODE.finditer(text):
        yield Found(m.start(), "error_code", m.group(), m.group().upper())
    for m in _NAMED_CODE.finditer(text):
        yield Found(m.start(), "error_code", m.group(), m.group())
    for m in _ERROR_CODE_AFTER_LABEL.finditer(text):
        yield Found(m.start(1), "error_code", m.group(1), m.group(1).upper())


def _ids(text: str) -> Iterator[Found]:
    for m in _PREFIXED_ID.finditer(text):
        value = m.group()
        prefix = re.match(r"[A-Za-z]+", value)
        if _ERROR_CODE.fullmatch(value) or (prefix and prefix.group().upper() in _NOT_ID_PREFIXES):
            continue
        yield Found(m.start(), "id", value, value.upper(), "", _is_correction(text, m.start()))
    for m in _MIXED_ID.finditer(text):
        value = m.group()
        if _is_mixed_id(value) and not _ERROR_NAME.match(value):
            yield Found(m.start(), "id", value, value.upper(), "", _is_correction(text, m.start()))
    for m in (*_ID_AFTER_LABEL.finditer(text), *_ID_BEFORE_LABEL.finditer(text)):
        value = m.group("v")
        if (
            not (_has_digit(value) or "_" in value)
            or _ERROR_CODE.fullmatch(value)
            or _DATE_SHAPED.fullmatch(value)
        ):
            continue
        yield Found(m.start("v"), "id", value, value.upper(), "", _is_correction(text, m.start("v")))


# Not ids, though letters and digits mix: quantities with units ("10am-6pm", "2x128gb") and a
# word with a number ("iPhone15", "RTX4090"); the prefixed-id and code patterns take their own.
_NOT_MIXED_ID = re.compile(r"(?:[0-9]+[A-Za-z]{0,3})(?:[-_][0-9]+[A-Za-z]{0,3})*|[A-Za-z]+[0-9]+")


def _is_mixed_id(value: str) -> bool:
    if not any(c.isalpha() for c in value):  # digit groups: long enough not to be a phone
        return sum(c.isdigit() for c in value) >= 14
    return not any(
        p.fullmatch(value) for p in (_NOT_MIXED_ID, _PREFIXED_ID, _ERROR_CODE, _HEX_CODE, _NAMED_CODE)
    )


def _amounts(text: str, currency: str | None, negated: bool = False) -> Iterator[Found]:
    for a in amounts(text, currency=currency):
        if not is_negated(text, a.start):
            subject = _subject("amount", text, a.start)
            yield Found(a.start, "amount", a.text, a.key, subject, _is_correction(text, a.start))
        elif negated:
            yield Found(a.start, "amount", a.text, a.key, negated=True)


def _dates(text: str, when: datetime | None, negated: bool = False) -> Iterator[Found]:
    for d in dates(text, when):
        if not is_negated(text, d.start):
            subject = _subject("date", text, d.start)
            yield Found(d.start, "date", d.text, d.key, subject, _is_correction(text, d.start))
        elif negated:
            yield Found(d.start, "date", d.text, d.key, negated=True)


def _phones(text: str) -> Iterator[Found]:
    for h in contacts.phones(text):
        yield Found(h.start, "phone", h.text, h.key, "", _is_correction(text, h.start))


def _contacts(text: str, plans: Sequence[str]) -> Iterator[Found]:
    for h in contacts.emails(text):
        yield Found(h.start, "email", h.text, h.key, "", _is_correction(text, h.start))
    for h in contacts.addresses(text):
        yield Found(h.start, "address", h.text, h.key, h.subject)
    for h in contacts.people(text):
        yield Found(h.start, "person", h.text, h.key, h.subject)
    for h in _plans.plans(text, plans):
        said = without_filler(h.text) or h.text  # "我想起来了,39码的白色运动鞋…": the goods only
        if said == h.text:
            yield Found(h.start, "plan", h.text, h.key)
        else:
            yield Found(h.start + max(0, h.text.find(said)), "plan", said, normalize_sentence(said))
    for h in contacts.statuses(text):
        said = clip(h.text)
        yield Found(h.start, "status", without_filler(said) or said, h.key, h.subject)


def _clause_before(text: str, start: int) -> str:
    window = text[max(0, start - _SUBJECT_WINDOW) : start]
    if not CJK_CHAR.search(window):  # English words are long: "the refund should be "
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
    first = max(0, start - 3 * _SUBJECT_WINDOW)  # English words are long: "actually the date is the"
    if not CJK_CHAR.search(text, first, start):  # "I mistyped that, the transaction ID is PAY-…"
        first = max(0, start - 6 * _SUBJECT_WINDOW)
    window = text[first:start]
    end = _LAST_SENTENCE_END.search(window)
    # A space between Chinese characters ends a chat message's sentence too: "更正一下,…是31元
    # 同事电脑上也是API-2736" corrects the amount, not the code after the space.
    since = max([end.start() if end else 0, *(m.end() for m in _CJK_SPACE_BREAK.finditer(window))])
    # The words before the value, read with the value after them in sight: CORRECTION's look-ahead
    # tells a guess from a correction by what follows 应该是 ("退款应该是四千二吧").
    words = CORRECTION.finditer(text, first + since, min(len(text), start + _GUESS_REACH))
    return SAID_WRONG_AFTER.match(text, start) is not None or any(
        m.end() <= start and not _hedged(text, m, first, start) for m in words
    )


_GUESS_REACH = 17  # characters after the value's start that CORRECTION's 应该是…吧 look-ahead reads


# A correction said right after the value it gives: "it's SV-2025-1309, I swapped two digits",
# "是¥49400,我看错了". The word before an English owned mistake is read up to 64 characters (a
# value is shorter): unbounded, over a long run with no space (pasted Chinese, a log line) each
# value's match and a search from each character read to the run's end, 0.26 s for 4,000
# characters, quadratic.
_OWNED_MISTAKE = (
    r"[,;]?\s+(?:i\s+(?:swapped|transposed|mixed\s+up)\b|(?:that\s+was\s+a\s+)?typo\b|my\s+(?:bad|mistake)\b)"
)
_MISTAKE_OWNED_ZH = r"[,，]?\s*(?:我|刚才|之前|前面)*(?:看|说|写|打|记|输|填|抄|弄)错了"
# Matched at a value's start:
SAID_WRONG_AFTER = re.compile(
    rf"[^\s,;]{{1,64}}{_OWNED_MISTAKE}|[^\s,，;；。！？!?]{{1,16}}?{_MISTAKE_OWNED_ZH}", re.IGNORECASE
)
# Whether a text says it anywhere: a word is tried from its first character only, and one
# character before a Chinese owned mistake is as good as sixteen (each tried at every character
# was most of the cost of reading a turn's corrections).
SAYS_WRONG_AFTER = re.compile(
    rf"(?<![^\s,;])[^\s,;]{{1,64}}{_OWNED_MISTAKE}|[^\s,，;；。！？!?]{_MISTAKE_OWNED_ZH}", re.IGNORECASE
)


_CJK_SPACE_BREAK = re.compile(r"(?<=[\u4e00-\u9fff])\s+(?=[\u4e00-\u9fff])")


# "说得不对请见谅", "可能有的说错了": a customer allowing for a mistake corrects nothing.
_HEDGE_BEFORE = re.compile(r"(?:可能|也许|如果|如有|要是|怕|有的|哪里|说得|说的)$")


_HEDGE_AFTER = re.compile(r"[的地方之处]|了?[,，\s]*(?:请|还请)?(?:见谅|包涵|多包涵)|的话")


def _hedged(text: str, m: re.Match[str], first: int, last: int) -> bool:
    """Whether correction word ``m`` allows for a mistake rather than makes one, judged within
    ``text[first:last]`` (the value's own sentence, up to the value)."""
    return bool(_HEDGE_BEFORE.search(text, first, m.start()) or _HEDGE_AFTER.match(text, m.end(), last))


def is_negated(text: str, start: int) -> bool:
    # "是 1860 元,不是 1680 元": the value after 不是 is the wrong one, not a fact.
    return _NEGATED.search(text, max(0, start - 10), start) is not None  # "not the 6th of October"

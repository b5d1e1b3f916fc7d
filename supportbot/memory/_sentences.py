"""Sentences the ledger keeps whole: promises, reported promises, requests, and the floor (a
customer sentence with a hard token no typed fact accounts for), with the clauses that carry them.

A promise or request is kept as its sentence, cut to the clauses around its marker: customers
paste whole logs without punctuation, and one "sentence" must not be allowed to fill the prompt.
Politeness is not a request (``那就麻烦你们了``, ``thanks``). ``_facts`` scans a turn with these
and the typed patterns; ``_ledger`` shows the sentences, tersely when room is short.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable, Iterator, Sequence
from typing import NamedTuple

SENTENCE_KINDS: frozenset[str] = frozenset({"promise", "promise_reported", "request", "detail"})


# How a reply cites a help-center article: "[KB-bank-001]" (reply/_guardrails checks the citations).
CITATION = re.compile(r"\[(KB-[A-Za-z0-9-]+)\]")
# ... and how a reply sent shows it: as a link to the article, where the article has an address
# ("[KB-bank-001](https://help.example.com/kb/KB-bank-001)").
CITED = re.compile(CITATION.pattern + r"(?:\([^()\s]*\))?")


# A promise or request is kept as its sentence; customers paste whole logs without punctuation,
# and one "sentence" must not be allowed to fill the prompt.
MAX_SENTENCE_CHARS = 160


PROMISE = re.compile(
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
REPORTED_PROMISE = re.compile(
    r"(?=[客你工专经同上之说答承保售销业群快配师商卖店平合签下买当电官网页详宣广活tyswipmca])(?:(?:客服|你们|你|工作人员|专员|经理|同事)[^。！？!?；;\n]{0,12}?"
    r"(?:答应|承诺|保证|说好(?!的事)|说过会|说会)|答应过|承诺过|说好的(?!事)|说好了"
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


_POLITENESS_REACH = 64  # characters: longer than any courtesy _POLITENESS matches


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


CJK = r"\u3000-\u303f\u3400-\u9fff\uff00-\uffef"


_SPACE_NEXT_TO_CJK = re.compile(rf"(?=\s)(?:(?<=[{CJK}])\s+|\s+(?=[{CJK}]))")


_TRAILING_PUNCT = re.compile(r"[\s。！？!?；;.,，、…~～]+$")


class Found(NamedTuple):
    start: int
    kind: str
    value: str
    key: str
    subject: str = ""
    correction: bool = False
    negated: bool = False  # "不是 1680 元": the wrong value, named only to be refused


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
        elif key and (_HARD_TOKEN.search(clause) or without_filler(clause)):
            return False
    return held


def clip(text: str, limit: int = MAX_SENTENCE_CHARS) -> str:
    """``text`` cut to ``limit`` characters, marked with an ellipsis when cut."""
    return text if len(text) <= limit else text[: limit - 1].rstrip() + "…"


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


def details_in(text: str, typed: Sequence[Found]) -> Iterator[Found]:
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
            value = without_filler(held) or held
            yield Found(begin + max(0, sentence.find(value)), "detail", value, normalize_sentence(value))


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


def sentences_marked(
    text: str,
    kind: str,
    marker: re.Pattern[str],
    usable: Callable[[str, re.Match[str]], bool] = lambda sentence, m: True,
) -> Iterator[Found]:
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
        for begin, end in _marked_spans(sentence, marker, usable):
            value = without_filler(_clip_around(sentence[begin:end], 0))
            if value:
                # Where the value stands; filler cut from its middle ("…14 days (in case it helps), I
                # promise…") leaves no such text: then where its clauses begin, not the sentence's
                # start (the floor reads what lies before it as not pinned).
                at = piece.find(value)
                at = at if at >= 0 else piece.find(sentence) + begin
                yield Found(start + at, kind, value, normalize_sentence(value))


def _marked_spans(
    sentence: str, marker: re.Pattern[str], usable: Callable[[str, re.Match[str]], bool]
) -> list[tuple[int, int]]:
    """Where ``sentence`` pins its marked clauses: each marker's clauses (``_clause_span``), a
    long sentence holding several. A marker inside clauses already pinned adds the clause after
    them that it reaches ("I need this sorted before 8/16 - Oh and just ship the replacement, don't
    wait for the return" is one request, not one cut before its last clause), unless another marker
    starts there: that one is pinned on its own."""
    spans: list[tuple[int, int]] = []
    breaks: list[tuple[int, int]] | None = None  # read once per sentence: a run-on one holds many markers
    at = 0
    while found := marker.search(sentence, at):
        at = max(found.end(), found.start() + 1)
        done = spans[-1][1] if spans else 0
        following = None
        if found.start() < done:
            # Inside the clauses already pinned; a marker may also run over a clause break into them
            # ("你们记一下,还有,我记得你们答应过…"): a marker past them is read next, on its own.
            following = marker.search(sentence, done)
            if following is not None and following.start() < at:
                at = done
                continue
        if not usable(sentence, found):
            continue
        if breaks is None:
            breaks = [b.span() for b in _CLAUSE_BREAK.finditer(sentence)]
        begin, end = _clause_span(sentence, breaks, found.start(), found.end())
        if found.start() >= done:
            spans.append((begin, end))
        elif following is not None and following.start() < end:
            at = done  # the clause it reaches holds a marker of its own: pinned on its own
        elif end > done:
            spans[-1] = (spans[-1][0], end)
    return spans


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
_CLAUSE_BREAK = re.compile(rf"(?=[\s,，、])(?:\s*[,，、]\s*|(?<=[{CJK}])\s+(?=[{CJK}])|\s+[-–—]\s+)")


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


def without_filler(sentence: str) -> str:
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


def _clause_span(sentence: str, breaks: Sequence[tuple[int, int]], start: int, end: int) -> tuple[int, int]:
    """Where the clause that holds a marker (from ``start`` to ``end``) and the one after it stand in
    a run-on sentence ("希望这次能顺利解决吧,我想起来了,你们经理说这个月的服务费可以减半,你们记一下,…"
    pins "你们经理说这个月的服务费可以减半,你们记一下"): the other clauses are other facts, or none,
    and would cost the prompt twice. ``breaks`` are the sentence's clause breaks, in order."""
    i = bisect.bisect_left(breaks, start, key=lambda b: b[0])  # the breaks before the marker
    begin = breaks[i - 1][1] if i else 0
    if len(sentence) <= _LONG_SENTENCE:
        # A short sentence keeps what follows the marker; a clause before it is another statement
        # ("这个我得跟同事商量一下,希望…"), unless it is only the thing asked about ("那张发票,能不能重开").
        before = breaks[i - 2][1] if i >= 2 else 0
        short = begin and len(sentence[before:begin].strip(" ,，、")) <= _TOPIC_CHARS
        return _stripped(sentence, before if short else begin, len(sentence))
    j = bisect.bisect_left(breaks, end, key=lambda b: b[0])  # the first break after the marker
    stop = breaks[j + 1][0] if j + 1 < len(breaks) else len(sentence)
    return _stripped(sentence, begin, stop)


def _stripped(text: str, begin: int, end: int) -> tuple[int, int]:
    """``begin, end`` without the white space at either end of ``text[begin:end]``."""
    while begin < end and text[begin].isspace():
        begin += 1
    while end > begin and text[end - 1].isspace():
        end -= 1
    return begin, end


def _asks(sentence: str, m: re.Match[str]) -> bool:
    """A request marker that is not courtesy ("希望这次能顺利解决吧") and is followed by what it asks."""
    # Only the courtesy that could hold the marker is read: a run-on sentence holds many markers.
    for at in range(max(0, m.start() - _POLITENESS_REACH), m.start() + 1):
        courtesy = _POLITENESS.match(sentence, at)
        if courtesy is not None and m.start() < courtesy.end():
            return False
    return bool(_CONTENT_AFTER.search(sentence, m.end())) or _carries_its_ask(m)


def requests_in(text: str) -> Iterator[Found]:
    for found in sentences_marked(text, "request", _REQUEST, _asks):
        # "之前你们经理承诺过给我们开专票" reports a promise; its "给我" asks for nothing. A request
        # before the report in one sentence ("希望到期前提醒我续费,前几天那个客服说…") is kept alone.
        reported = REPORTED_PROMISE.search(found.value)
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
    marker = PROMISE if kind == "promise" else REPORTED_PROMISE
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

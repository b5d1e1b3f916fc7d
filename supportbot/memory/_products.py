"""Goods named with their options: ``保温杯,粉色的``, ``M 码的灰色卫衣``, ``the grey hoodie in XL``.

Which colour, size, capacity or variant a customer ordered is an exact fact (the wrong one arrived,
the replacement must match), but no word list of products can be complete. What is regular is how
options are written: a colour (``粉色``, ``navy``), a size (``XL``, ``42 码``, ``大号``, ``size 9``), a
capacity or dimension (``750ml``, ``15 寸``, ``60 inch``), a variant (``降噪款``, ``两支装``,
``burr version``, ``2-pack``). Where one stands, the clause that holds it (and the product it names) is
pinned as written, with the clause before it when the option stands alone (``保温杯,粉色的``). Pure.
"""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator
from typing import NamedTuple

from . import _goods_en as en

# The option patterns as their branches, each with the character every match of it holds ("" for
# none). A branch that starts with a run of any Chinese characters ("驼色", "降噪款", "绿茶味") is
# tried at every Chinese character of a text; where its character is missing it cannot match, so
# the pattern a text is read with leaves it out (``_zh_option``), and finds the same options.
_ZH_COLOUR = (
    (
        "色",
        r"(?:玫瑰金|象牙白|太空灰|香槟金?|藏青|天蓝|宝蓝|湖蓝|军绿|墨绿|橄榄绿|酒红|玫红|卡其|奶白|米白|米黄|烟灰|"
        r"[深浅淡亮哑暗正大粉桃枣砖橘]?[红橙黄绿青蓝紫黑白灰粉棕褐金银米咖杏])色",
    ),
    # any colour named by what it looks like ("驼色", "豆沙色", "雾霾蓝"), a finish, a pattern
    (
        "色",
        r"[\u4e00-\u9fff]{1,3}(?<![颜特出角脸景声货成本原彩肤音变退褪橙红黄绿蓝紫黑白灰粉棕褐金银米咖杏])色(?!调|差|卡|彩|素)",
    ),
    ("", r"(?:雾霾|天空|海军|克莱因|薄荷|牛油果|奶油|燕麦|焦糖|石墨|午夜|星光|远峰)[蓝绿黄白灰黑紫]"),
    # and the colour names a shop writes without 色 ("连帽卫衣 米白 XL码")
    ("", r"(?:米白|米黄|藏青|酒红|墨绿|卡其|玫瑰金|象牙白|太空灰|香槟金)(?!色)"),
    ("", r"哑光[黑白灰银金]|亮[黑白]|碎花|格纹|条纹|纯色|印花|波点|迷彩"),
    # clear, said of goods only ("透明iPhone 14的", "(透明,iPhone 14)", "透明款"), not of a process
    # ("收费透明吗")
    ("", r"透明(?=\s?[A-Za-z]|[,，]\s?[A-Za-z][^()（）\n]{0,20}[)）]|款|壳|膜)"),
)
_ZH_SIZE = (
    # Every size below starts with a digit, a capital or a Chinese numeral: the lookahead says so
    # first, so the other characters of a text fail at once instead of in each alternative.
    r"(?=[0-9A-Z一二两三四五六七八九十半])(?<![0-9A-Za-z])(?:[0-9]{2,3}(?:\.5)?+\s?码|X{0,3}[SML]\s?码|X{1,3}[SL](?![A-Za-z0-9])|[0-9]{3}/[0-9]{2,3}[AB]?"
    r"|[0-9]+(?:\.[0-9]+)?+\s?(?:英寸|寸|毫升|升|ml|mL|GB|TB|键|瓦|毫安时?)(?![A-Za-z0-9])|[0-9]+(?:\.[0-9]+)?+(?:lbs?|oz)(?![A-Za-z0-9])|[0-9]+(?:\.[0-9]+)?+\s?[LG](?![A-Za-z0-9])"
    # a size letter against Chinese ("碎花S的", "雾霾蓝M的", "L的骑行头盔"), a measure or capacity
    r"|(?<![A-Za-z0-9])(?:X{0,3}[SML]|[2-5]XL|NB|[2-6]U|A[3-5])(?=[的码号款\u4e00-\u9fff)）,，\s]|$)"
    # or at a sentence's end right after the goods ("纸尿裤NB。", "骑行头盔L~"; not "我叫 M。")
    r"|(?<=[\u4e00-\u9fff])(?:X{0,3}[SML]|[2-5]XL|NB|[2-6]U|A[3-5])(?=[。！!？?；;~～]|$)"
    # ... or a space after them ("骑行头盔 M。"), unless the words before name a person ("我叫 M。")
    r"|(?<=[\u4e00-\u9fff]\s)(?<![叫是为姓名号]\s)(?:X{0,3}[SML]|[2-5]XL|NB)(?=[。！!？?；;~～]|$)"
    # or as the clause after them ("骑行头盔,L!")
    r"|(?<=[,，])\s?(?:X{0,3}[SML]|[2-5]XL|NB|[2-6]U)(?=[。！!？?；;~～]|$)"
    # an age range, a connector, a sun-protection factor: "9个月-12岁", "Type-C转Lightning", "SPF50"
    r"|[0-9]++\s?(?:个月|岁)?\s?[-~到至]\s?[0-9]++\s?岁"
    r"|(?<![A-Za-z])(?:Type-?C|USB-?C|Lightning|Micro-?USB|HDMI)(?:\s?转\s?(?:Type-?C|USB-?C|Lightning|Micro-?USB|HDMI|VGA|DP))?"
    r"|SPF\s?[0-9]++\+*"
    r"|(?<![A-Za-z0-9#_.-])[0-9]++(?:\.[0-9]++)?+(?:\s?(?:mAh|mah|cm|mm|kg|KG|Hz)|[mgTWP])(?![A-Za-z0-9])"
    r"|(?<![0-9一二两三四五六七八九十半.])[0-9一二两三四五六七八九十半]++(?:\.[0-9]++)?+\s?"
    r"(?:公斤|斤|克|千克|米|厘米|毫米|匹|人位|座|门|层|抽|片|粒|包|卷|磅|盎司|件套|册))"
    r"|[单双]人位|全[一二三四五六七八九十0-9]+册|精装|平装"
    r"|[加特超]?[大中小]号"
)
# Three capitals first: the words it is not are then read only where a model word could stand,
# not at every character after a Chinese one.
_MODEL_WORD = (
    r"(?=[A-Z]{3})(?!(?:API|SDK|URL|PDF|SMS|FAQ|VIP|APP|CEO|CPU|DNS|SSL|VPN|ERP|CRM|OTP|PIN|ATM|SQL|SMTP|IMAP|HTTP|HTTPS|ASAP)"
    r"(?![A-Za-z0-9]))[A-Z]{3,5}(?![A-Za-z0-9])"
)
# A variant: "降噪款", "Pro 款", "两支装", "青轴", "自动集尘版". Not money (付款, 退款, 扣的款), not "这款".
_ZH_VARIANT = (
    (
        "款",
        r"(?:[\u4e00-\u9fff]{1,4}|[A-Za-z]{1,8}\s?)(?<![付退贷欠汇尾首余借存罚赔货这那哪同每各此的扣])款(?!项)",
    ),
    (
        "",
        r"(?<![一二两三四五六七八九十0-9])[一二两三四五六七八九十0-9]++\s?[支只个件双瓶盒片包套袋罐听卷条枚]装|[青红茶黑白银]轴"
        r"|(?:礼盒|散|袋|罐|盒|瓶|桶|家庭|旅行)装|[浅中深]{1,2}烘焙?"
        # a tea's picking ("明前龙井", "龙井是明前的"), not a time before something ("清明前", "下雨前",
        # "明明前几天")
        r"|(?<![清下说证声表透发明])[明雨]前(?![几一两三四五六七八九十0-9天日月年周])|头采"
        # a Latin model word after its product's name or before it, in Chinese ("Switch OLED",
        # "Switch是OLED的", "OLED 的Switch"); not what software names a part of itself ("Google API")
        rf"|(?<=[\u4e00-\u9fff])\s?[A-Z][a-z]{{2,}}\s?是?\s?{_MODEL_WORD}"
        # (or first in a sentence or clause, with Chinese after it: "Switch OLED刚买就降价了",
        # "补充一下,Switch OLED到现在还没发货")
        rf"|(?<![^\u3000-\u303f\uff00-\uffef,.;:!?\s])[A-Z][a-z]{{2,}}\s?{_MODEL_WORD}(?=\s?[\u4e00-\u9fff])"
        rf"|(?<=[\u4e00-\u9fff])\s?{_MODEL_WORD}\s?的?\s?[A-Z][a-z]{{2,}}"
        # a model's suffix after its name ("蓝牙耳机 Pro")
        # (not the letters of an id: "订单号68L6BC5V", "流水号LWZCB23SE")
        r"|(?<![A-Za-z])(?:Pro|Max|Mini|Ultra|Lite|Air)(?![A-Za-z])|(?<![A-Za-z0-9])SE(?![A-Za-z0-9])",
    ),
    # a flavour or scent ("绿茶味"), a model's edition written in Latin letters ("OLED版", "Pro版")
    ("味", r"[\u4e00-\u9fff]{1,3}(?<![口趣气滋意人韵品异美])味(?![道儿精着])"),
    ("版", r"[A-Za-z0-9]{2,8}\s?版"),
    ("版", r"[\u4e00-\u9fff]{2,4}(?<![基础标准专业高级企业旗舰团队个人免费尊享商业升级新旧])版"),
)
_ZH_OPTION_BRANCHES = (*_ZH_COLOUR, ("", _ZH_SIZE), *_ZH_VARIANT)
# The characters whose branches go together: 款 (said of money too: 退款, 付款) apart from the
# goods' 色, 味 and 版. Compiling the pattern takes tens of milliseconds, so only a few are made,
# each when a text first needs it.
_ZH_OPTION_GROUPS = ("款", "色味版")


def _zh_option(text: str) -> re.Pattern[str]:
    """The option pattern without the branches of the characters ``text`` lacks (by group)."""
    return _zh_option_of(tuple(group for group in _ZH_OPTION_GROUPS if any(mark in text for mark in group)))


@functools.cache  # one per set of groups present: four at most
def _zh_option_of(groups: tuple[str, ...]) -> re.Pattern[str]:
    present = "".join(groups)
    return re.compile("|".join(branch for mark, branch in _ZH_OPTION_BRANCHES if not mark or mark in present))


# The model a thing is for, a brand word with its number ("手机壳,iPhone 15", "手机壳,要Mate60的"):
# an option only as the clause after the goods, since alone it names what the customer uses
# ("Windows 11 上也不行"). Not a code (E3001: no lower-case letter) nor a year (4 digits).
_ZH_MODEL = re.compile(
    r"(?:(?<![A-Za-z0-9])[a-z]?[A-Z][a-z]+|小米|红米|荣耀|华为|一加|魅族|真我)\s?[A-Z]?[0-9]{1,3}(?![A-Za-z0-9])"
    # or a model word with 的 ("Switch,要OLED的"), or alone after a comma ("买的是Switch,OLED")
    rf"|(?<![A-Za-z]){_MODEL_WORD}(?=\s?的)|(?<=[,，]){_MODEL_WORD}(?=[。！!？?~～,，\s]|$)"
)


_ZH_HINT = re.compile(
    r"色|码|号|寸|升|[0-9]|ml|键|款|装|轴|版|味|位|册|烘|[XSMLNUA]|Type|USB|Lightning|HDMI|Pro|Max|Mini|Ultra|Lite"
    r"|SE|Air|[蓝绿黄白灰黑紫]|藏青|酒红|卡其|玫瑰金|碎花|格纹|条纹|纯色|印花|波点|迷彩|半|精装|平装"
    r"|[一二两三四五六七八九十](?:斤|克|米|匹|座|门|层|抽|片|粒|包|卷|磅)|[明雨]前|头采|[A-Z]{3}|透明"
)

_EN_OPTION = re.compile(
    # (not a person a customer loops in: "loop in Green from HR")
    rf"\b(?<!loop\s)(?<!looped\s)in\s+(?:{en.COLOUR}|{en.SIZE}|{en.MATERIAL})\b"
    # an option after its label: "size 10", "colour: navy", "material leather"
    rf"|\b(?:size|colou?r|material|finish|style)\s*:?\s+(?:{en.SIZE}|{en.COLOUR}|{en.MATERIAL})(?![0-9A-Za-z])"
    rf"|\b(?:the|a|an|my|our|that|this)\s+(?:{en.COLOUR}|{en.MATERIAL}|(?-i:XXXL|XXL|XL|XS|S|M|L)"
    # a size word only before a colour: "the large navy rain jacket", not "the large majority"
    rf"|(?:small|medium|large|x-large)\s+{en.COLOUR})\s+[a-z]+(?:[\s-][a-z]+)?"
    rf"|\(\s*(?:in\s+)?(?:{en.COLOUR}|{en.SIZE}|{en.MATERIAL})\s*\)"
    r"|\bwide\s+fit\b",
    re.IGNORECASE,
)
# Tried only where their word or a digit stands: a word before "version" would be tried at every word.
_EN_VARIANT = re.compile(
    r"\b(?!(?:latest|newest|new|old|older|current|updated|previous|last|this|that|which|any|free|full|web"
    r"|desktop|mobile)\s)[a-z]+(?:-[a-z]+)?\s+(?:version|edition|model)\b",
    re.IGNORECASE,
)
_EN_MEASURE = re.compile(
    r"\b[0-9]+(?:\.[0-9]+)?[\s-]?(?:inch|in\.|oz|ml|gb|tb|mm|cm)\b|\b[0-9]+-pack\b", re.IGNORECASE
)
_EN_HINT = re.compile(
    r"\b(?:in|size|colou?r|material|finish|style|the|an?|my|our|that|this)\s|\(|\bwide\b", re.IGNORECASE
)
_VARIANT_HINT = re.compile(r"version|edition|model", re.IGNORECASE)
_has_digit = re.compile("[0-9]").search
_has_latin = re.compile("[A-Za-z]").search

# A comma between digits that groups thousands ("20,000mAh") ends no clause.
_BREAK = re.compile(
    r"(?:(?<![0-9]),|,(?![0-9]{3}(?![0-9]))|[，。！？!?；;\n])+|(?<=[\u4e00-\u9fff)）])\s+(?=[\u4e00-\u9fff])|\s+[-–—]\s+|(?<=\.)\s+"
)
# A short aside in brackets, whose commas list options rather than end a clause.
_BRACKETED = re.compile(r"[(（][^()（）\n。！？!?；;]{1,40}[)）]")
# An email or a link ends its clause where a space and Chinese follow ("邮箱是a@b.com 黑色羽绒服 L码…"):
# a space between Latin and CJK is no break elsewhere ("Pro 款").
# Each token is read once from its start, possessively: a long run of letters is not retried at
# every position (see _money.py).
_LINK_THEN_CJK = re.compile(
    r"(?:(?<![A-Za-z0-9_.+-])[A-Za-z0-9_.+-]++@[A-Za-z0-9-]++(?:\.[A-Za-z0-9-]++)++|(?<!\S)https?://\S++)"
    r"(\s+)(?=[\u4e00-\u9fff])"
)
# What may stand between a product and the option after it: a comma, or the space a chat user types
# between CJK words ("保温杯,粉色的", "双肩包 藏青色到现在还没发货").
_NAMING_BREAK = re.compile(r"\s*[,，]\s*|\s+")
_LONE = 8  # characters: an option clause this short ("粉色的", ", size XS") names the clause before's product
# A longer "clause" is a run-on paste (its floor sentence holds it) or text that only happens to
# hold an option word ("…寲款谔…"): Chinese says as much in a third of the characters.
_MAX_CHARS = 120
_MAX_CJK_CHARS = 40
_CJK = re.compile("[\u4e00-\u9fff]")


class Product(NamedTuple):
    start: int
    end: int
    text: str


def products(text: str) -> Iterator[Product]:
    """The clauses of ``text`` that name goods with an option, in order, each once."""
    own = list(en.english_goods(text)) if _has_latin(text) else []  # in order, none overlapping
    spans = [(m.span(), m.re is _ZH_MODEL) for m in _options(text) if not _within(own, m.start())]
    if not spans and not own:
        return
    cuts = [m.span() for m in _BREAK.finditer(text)]
    if "(" in text or "（" in text:  # "Switch(白色,OLED)": a comma inside brackets lists options
        inside = [m.span() for m in _BRACKETED.finditer(text)]
        cuts = [cut for cut in cuts if not _within(inside, cut[0])]
    links: set[tuple[int, int]] = set()  # an email or link ends its clause: nothing after names it
    if "@" in text or "://" in text:
        links = {m.span(1) for m in _LINK_THEN_CJK.finditer(text)}
        cuts = sorted({*cuts, *links})
    breaks = [(0, 0), *cuts, (len(text), len(text))]
    found: list[tuple[int, int]] = []
    for (start, stop), model in spans:
        i = _clause_of(breaks, start)
        begin, end = breaks[i][1], breaks[i + 1][0]
        if model and not (i > 0 and _names_the_one_before(text, breaks[i - 1][1], begin, start)):
            continue
        # "保温杯,粉色的(到现在还没发货)": an option alone, or first after a comma or space, names the
        # product in the clause before it.
        # Not across a sentence's end: "…寄回去了!去年开始用的教育版" names no goods of the sentence before.
        if (
            i > 0
            and breaks[i] not in links
            and _NAMING_BREAK.fullmatch(text, breaks[i][0], breaks[i][1])
            and (
                len(_bare(text[begin:end])) <= _LONE
                or _names_the_one_before(text, breaks[i - 1][1], begin, start)
            )
        ):
            begin = breaks[i - 1][1]
        # the length first: a run-on "clause" is not read again for every option in it
        if _short(text, begin, end) and len(_bare(text[begin:start] + text[stop:end])) >= 2:
            found.append((begin, end))
    for start, stop in own:  # a noun phrase is pinned with its clause, like an option, whatever it holds
        first, last = _clause_of(breaks, start), _clause_of(breaks, stop)
        end = breaks[last + 1][0]
        # "the duvet cover - king", "the knife set, 7 piece": its option after a dash or comma
        if option := (
            en.DASH_OPTION.match(text, end)
            or en.COMMA_OPTION.match(text, end)
            or en.COMMA_WORD_OPTION.match(text, end)
        ):
            end = option.end()
        found.append((breaks[first][1], end))
    for begin, end in _joined(text, found):
        clause = text[begin:end].strip()
        at = text.index(clause, begin)
        yield Product(at, at + len(clause), clause)


def _within(spans: list[tuple[int, int]], at: int) -> bool:
    """Whether ``at`` is inside one of ``spans`` (in order, none overlapping), by bisection."""
    i = bisect.bisect_right(spans, at, key=lambda span: span[0]) - 1
    return i >= 0 and at < spans[i][1]


def _clause_of(breaks: list[tuple[int, int]], at: int) -> int:
    """The index of the break that opens the clause holding ``at``: found by bisection, since a
    text may hold as many options as breaks."""
    return bisect.bisect_left(breaks, at, lo=1, key=lambda b: b[0]) - 1


def _joined(text: str, found: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """One clause once, a clause inside a wider one ("the navy rain jacket" of "…, size XS") not
    again, and spans that share a clause as one ("机械键盘 白色" and "白色 茶轴": the goods with both
    options), while the whole stays short enough to be one."""
    joined: list[tuple[int, int]] = []
    for begin, end in sorted(set(found)):
        if joined and begin < joined[-1][1]:
            first, last = joined[-1]
            if end <= last:
                continue
            if _short(text, first, end):
                joined[-1] = (first, end)
                continue
        joined.append((begin, end))
    return joined


def _options(text: str) -> Iterator[re.Match[str]]:
    if _ZH_HINT.search(text):
        yield from _zh_option(text).finditer(text)
        if _CJK.search(text):
            yield from _ZH_MODEL.finditer(text)
    if _EN_HINT.search(text):
        yield from _EN_OPTION.finditer(text)
    if _VARIANT_HINT.search(text):
        yield from _EN_VARIANT.finditer(text)
    if _has_digit(text):
        yield from _EN_MEASURE.finditer(text)


_WORD_OR_CJK = re.compile(r"[\u4e00-\u9fff]|[A-Za-z0-9]+")


def _short(text: str, begin: int, end: int) -> bool:
    """Whether ``text[begin:end]`` is short enough to be one clause: ``_MAX_CHARS`` characters, or
    with Chinese in it ``_MAX_CJK_CHARS`` Chinese characters and Latin or digit runs (an order
    number in a Chinese clause counts as one word, not as its digits)."""
    if not _CJK.search(text, begin, end):
        return end - begin <= _MAX_CHARS
    if end - begin <= _MAX_CJK_CHARS:
        return True
    # one pass, and only over a clause that could still be short enough
    return end - begin <= 3 * _MAX_CJK_CHARS and len(_WORD_OR_CJK.findall(text, begin, end)) <= _MAX_CJK_CHARS


def _names_the_one_before(text: str, previous: int, begin: int, start: int) -> bool:
    """Whether the clause from ``begin`` is an option of the product in the clause before it, from
    ``previous``: nothing but particles before its option word, or, after Chinese, only Latin
    model words ("钢化膜,选的iPhone 15 Pro": the model is the film's option)."""
    before = _bare(text[begin:start])
    return not before or (not _CJK.search(before) and bool(_CJK.search(text, previous, begin)))


def _bare(clause: str) -> str:
    """The clause's words without spaces and the particles an option takes (要…的)."""
    return re.sub(r"[\s的要是选]", "", clause)

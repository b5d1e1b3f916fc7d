"""Goods named with their options: ``保温杯,粉色的``, ``M 码的灰色卫衣``, ``the grey hoodie in XL``.

Which colour, size, capacity or variant a customer ordered is an exact fact (the wrong one arrived,
the replacement must match), but no word list of products can be complete. What is regular is how
options are written: a colour (``粉色``, ``navy``), a size (``XL``, ``42 码``, ``大号``, ``size 9``), a
capacity or dimension (``750ml``, ``15 寸``, ``60 inch``), a variant (``降噪款``, ``两支装``,
``burr version``, ``2-pack``). Where one stands, the clause that holds it (and the product it names) is
pinned as written, with the clause before it when the option stands alone (``保温杯,粉色的``). Pure.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

_ZH_COLOUR = (
    r"(?:玫瑰金|象牙白|太空灰|香槟金?|藏青|天蓝|宝蓝|湖蓝|军绿|墨绿|橄榄绿|酒红|玫红|卡其|奶白|烟灰|"
    r"[深浅淡亮哑暗]?[红橙黄绿青蓝紫黑白灰粉棕褐金银米咖杏])色"
)
_ZH_SIZE = (
    r"(?<![0-9A-Za-z])(?:[0-9]{2,3}(?:\.5)?+\s?码|X{0,3}[SML]\s?码|X{1,3}[SL](?![A-Za-z])|[0-9]{3}/[0-9]{2,3}[AB]?"
    r"|[0-9]+(?:\.[0-9]+)?+\s?(?:英寸|寸|毫升|升|ml|mL|GB|TB|键|瓦)(?![A-Za-z])|[0-9]+(?:\.[0-9]+)?+\s?[LG](?![A-Za-z]))|[加特超]?[大中小]号"
)
# A variant: "降噪款", "Pro 款", "两支装", "青轴", "自动集尘版". Not money (付款, 退款, 扣的款), not "这款".
_ZH_VARIANT = (
    r"(?:[\u4e00-\u9fff]{1,4}|[A-Za-z]{1,8}\s?)(?<![付退贷欠汇尾首余借存罚赔货这那哪同每各此的扣])款(?!项)"
    r"|[一二两三四五六七八九十0-9]+[支只个件双瓶盒片包套]装|[青红茶黑白银]轴"
    r"|[\u4e00-\u9fff]{2,4}(?<![基础标准专业高级企业旗舰团队个人免费尊享商业升级新旧])版"
)
_ZH_OPTION = re.compile(f"{_ZH_COLOUR}|{_ZH_SIZE}|{_ZH_VARIANT}")
_ZH_HINT = re.compile(r"色|码|号|寸|升|[0-9][GLW]|ml|键|款|装|轴|版|[XSML]")

_EN_COLOUR = (
    r"(?:matte\s+|light\s+|dark\s+|pale\s+|deep\s+)?(?:black|white|grey|gray|silver|gold|rose\s+gold|red|blue|navy"
    r"|green|olive|khaki|beige|tan|brown|charcoal|cream|ivory|pink|purple|lilac|lavender|yellow|orange|teal"
    r"|turquoise|burgundy|maroon|coral|mint|sage|walnut|oak|maple|cherry|space\s+gr[ae]y|midnight|slate|sand"
    r"|stone|camel|mustard|rust|indigo|denim)"
)
# What the goods are made of or how they are built: "the hardshell carry-on", "in merino wool".
_EN_MATERIAL = (
    r"(?:leather|suede|merino(?:\s+wool)?|wool|cotton|linen|canvas|silk|cashmere|fleece|nylon|polyester"
    r"|stainless\s+steel|aluminium|aluminum|titanium|bamboo|ceramic|hard-?shell|soft-?shell)"
)
_EN_SIZE = (
    r"(?-i:XXXL|XXL|XL|XS|S|M|L)|small|medium|large|x-large|extra\s+large|one\s+size|wide\s+fit"
    # a shoe size, not a time: "in 9", "size 10.5", not "in 30 days"
    r"|[0-9]{1,2}(?:\.5)?(?![0-9]|\s*(?:days?|hours?|minutes?|mins?|weeks?|months?|years?|business|working)\b)"
)
_EN_OPTION = re.compile(
    rf"\bin\s+(?:{_EN_COLOUR}|{_EN_SIZE}|{_EN_MATERIAL})\b"
    # an option after its label: "size 10", "colour: navy", "material leather"
    rf"|\b(?:size|colou?r|material|finish|style)\s*:?\s+(?:{_EN_SIZE}|{_EN_COLOUR}|{_EN_MATERIAL})(?![0-9A-Za-z])"
    rf"|\b(?:the|a|an|my|our|that|this)\s+(?:{_EN_COLOUR}|{_EN_MATERIAL}|(?-i:XXXL|XXL|XL|XS|S|M|L)"
    # a size word only before a colour: "the large navy rain jacket", not "the large majority"
    rf"|(?:small|medium|large|x-large)\s+{_EN_COLOUR})\s+[a-z]+(?:[\s-][a-z]+)?"
    rf"|\(\s*(?:in\s+)?(?:{_EN_COLOUR}|{_EN_SIZE}|{_EN_MATERIAL})\s*\)"
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

_BREAK = re.compile(
    r"[,，。！？!?；;\n]+|(?<=[\u4e00-\u9fff)）])\s+(?=[\u4e00-\u9fff])|\s+[-–—]\s+|(?<=\.)\s+"
)
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
    spans = [m.span() for m in _options(text)]
    if not spans:
        return
    cuts = [m.span() for m in _BREAK.finditer(text)]
    if "@" in text or "://" in text:
        cuts = sorted({*cuts, *(m.span(1) for m in _LINK_THEN_CJK.finditer(text))})
    breaks = [(0, 0), *cuts, (len(text), len(text))]
    found: list[tuple[int, int]] = []
    for start, stop in spans:
        i = next(k for k in range(1, len(breaks)) if breaks[k][0] >= start) - 1
        begin, end = breaks[i][1], breaks[i + 1][0]
        # "保温杯,粉色的(到现在还没发货)": an option alone, or first after a comma or space, names the
        # product in the clause before it.
        if i > 0 and (
            len(_bare(text[begin:end])) <= _LONE
            or (not _bare(text[begin:start]) and _NAMING_BREAK.fullmatch(text, breaks[i][0], breaks[i][1]))
        ):
            begin = breaks[i - 1][1]
        named = _bare(text[begin:start] + text[stop:end])  # what the clause says besides the option
        limit = _MAX_CJK_CHARS if _CJK.search(text, begin, end) else _MAX_CHARS
        if end - begin <= limit and len(named) >= 2:
            found.append((begin, end))
    # One clause once, and a clause inside a wider one ("the navy rain jacket" of "…, size XS") not again.
    for begin, end in sorted(set(found)):
        if not any(a <= begin and end <= b and (a, b) != (begin, end) for a, b in found):
            clause = text[begin:end].strip()
            at = text.index(clause, begin)
            yield Product(at, at + len(clause), clause)


def _options(text: str) -> Iterator[re.Match[str]]:
    if _ZH_HINT.search(text):
        yield from _ZH_OPTION.finditer(text)
    if _EN_HINT.search(text):
        yield from _EN_OPTION.finditer(text)
    if _VARIANT_HINT.search(text):
        yield from _EN_VARIANT.finditer(text)
    if _has_digit(text):
        yield from _EN_MEASURE.finditer(text)


def _bare(clause: str) -> str:
    """The clause's words without spaces and the particles an option takes (要…的)."""
    return re.sub(r"[\s的要是]", "", clause)

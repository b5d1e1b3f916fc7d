"""Plans a customer is on or asks about: the business system's catalogue names, the ``X版`` /
``Pro plan`` families, a plan named in lower case with its options, cover bought for a term, and
goods pinned as a plan where no plan names them. Pure; linear in the text's length (spans already
taken are looked up by bisection)."""

from __future__ import annotations

import bisect
import functools
import re
from collections.abc import Iterator, Sequence

from ._contacts import Hit
from ._products import Product, products

_has_latin = re.compile("[A-Za-z]").search

# A plan's billing, term or seats: 月付, 按年付, 连续包年, 年卡, 两年, 10 人, 50 个账号.
_PLAN_OPTION = (
    r"(?:按|连续)?(?:包[月年季]|[月年季]付|[两三0-9]年付|[月年季]卡)"
    r"|(?:[一两三四五]|[1-5](?![0-9]))年(?![0-9一二三四五六七八九十月])"
    r"|(?:单人|多人|(?<![0-9一二两三四五六七八九十])[0-9一二两三四五六七八九十]++ ?"
    r"(?:人|个账号|个邮箱|个席位))"
    r"|(?<![0-9])[0-9]++ ?[GT]B?(?![A-Za-z])"
)
_PLAN = re.compile(
    r"(?:\s?(?:按?(?P<pre>[月年季])付的?|连续包(?P<card>[月年季])的?|(?P<card2>[月年季])卡的?|(?P<term>[一两三四五0-9]年)付?的?"
    # both, either way round: "年付 50 人的专业版"
    r"|(?P<seats>单人|多人|[0-9一二两三四五六七八九十]+ ?(?:人|个账号|个邮箱))的?)){0,2}"
    r"(?P<plan>(?:基础|标准|专业|高级|企业|旗舰|团队|个人|免费|尊享|商业|家庭|教育|学生|入门|进阶)版"
    r"|(?:高级|超级|黄金|白金|钻石|普通|年度|月度|PLUS|Plus|VIP|SVIP)\s?会员"
    # a service or cover bought with its term or billing: "延保服务", "碎屏险", "企业邮箱", "云存储套餐"
    r"|(?P<generic>(?:(?![的了是在把给我你他她它们买选加购开通续订])[\u4e00-\u9fff]){2,5}(?:套餐|服务|险|邮箱|宽带)))"
    # Its option, however attached: 月付, (年付), ,连续包月的, 要两年付的, 季卡, 单人, 10 人的,
    # 我们选的是按月付, 买的是一年的, (2T,年付), 年付 50 人.
    r"(?P<cycle>[((][^()()\n]{1,12}[))]"
    rf"|(?:[,， ]?(?:要|是|我们选的是|选的是|选的|当时买的是?|买的是?)?(?:{_PLAN_OPTION})(?:的|版)?){{1,2}}"
    r"|[月年]度)?"
)
_EN_CYCLE = (
    r"annual(?:ly)?|monthly|yearly|quarterly|month-to-month|family|single-user|(?:with\s+)?[0-9]+\s+seats"
    r"|(?:for\s+)?[0-9]+\s+(?:users|seats)"
    r"|[0-9]+-(?:seat|user|year)(?:\s+term)?|[0-9]+-year\s+term"
)
_EN_PLAN = re.compile(
    rf"\b(?P<pre>(?:(?:{_EN_CYCLE})\s+){{0,2}})"
    # a named tier, or any capitalised name before what it is: "Priority Support add-on", "Gold membership"
    r"(?P<plan>(?-i:Free|Basic|Starter|Standard|Pro|Professional|Premium|Plus|Business|Team|Enterprise|Ultimate"
    r"|Growth|Scale|(?!(?:The|My|Our|Your|This|That|These|Those|An?|Any|Each|Every|No|Which|What|Her|His|Their|Its"
    r"|Same|Old|New|Whole|Entire|Main|Other|Another)\b)[A-Z][a-z]+(?:\s+[A-Z][a-z]+){0,2}))"
    r"\s+(?P<kind>plan|tier|membership|subscription|edition"
    r"|package|account|add-on|addon|bundle)\b"
    # an edition before the goods it is of: "the Signature Edition Kindle Paperwhite"
    r"(?:(?<=edition)\s+(?P<goods>(?-i:(?!I\b|I')[A-Z][A-Za-z0-9-]*(?:\s+[A-Z0-9][A-Za-z0-9-]*){0,2})))?"
    rf"(?:\s*[,(]?\s*(?:(?:paid|billed|on)\s+)?(?P<cycle>{_EN_CYCLE})\b(?:\s+billing)?"
    # and a second option with it: "(annual billing, 25 users)"
    rf"(?:\s*,\s*(?:(?:paid|billed|on)\s+)?(?P<cycle2>{_EN_CYCLE})\b(?:\s+billing)?)?\)?)?"
    # and the term it was bought for: "the 200-seat Enterprise tier, for 2 years", "…, 2 years",
    # "…, with a 2-year term", "… with a 3-year term" (not a time since: "the Pro plan, 2 years ago")
    r"(?:(?:\s*,?\s+for\s+|\s*,\s*)(?P<term>(?:one|two|three|four|five|[0-9]{1,2})\s+years?)\b"
    r"(?!\s+(?:ago|old|later|back|since)\b)|(?:\s*,\s*|\s+(?=with\s))(?P<term2>(?:with\s+a\s+)?[0-9]{1,2}-year(?:\s+term)?)\b)?"
    # and seats after the term: "the Enterprise tier, 2 years, 200 seats"
    rf"(?:\s*,\s*(?P<cycle3>{_EN_CYCLE})\b)?",
    re.IGNORECASE,
)
# A plan named in lower case is told from any other "plan" by the options after it, which it must
# have: "the cloud storage plan, 2TB tier, annual billing", "the cloud storage plan, with 200GB".
_EN_PLAN_OPTION = (
    r"(?:with\s+)?(?:[0-9]+(?:\.[0-9]+)?\s?(?:GB|TB|MB|G|T)\b(?:\s+(?:tier|storage))?"
    rf"|(?:(?:paid|billed|on)\s+)?(?:{_EN_CYCLE})\b(?:\s+billing)?)"
)
_EN_LOWER_PLAN = re.compile(
    r"\b(?:the|our|my|a|an)\s+"
    r"(?P<name>(?-i:(?!(?:same|old|new|current|previous|other|whole|entire|next|right|wrong|cheapest|cheaper)\b)"
    r"[a-z][a-z-]*)(?:\s+(?-i:[a-z][a-z-]*)){0,2})"
    r"\s+(?P<kind>plan|subscription|membership|package)\b"
    rf"(?P<options>(?:\s*,\s*{_EN_PLAN_OPTION}){{1,2}})",
    re.IGNORECASE,
)
_EN_PLAN_WORD = re.compile(r"plan|subscription|membership|package", re.IGNORECASE)
# Cover bought for a term, named in lower case: "the one-year accidental damage protection".
# Words before "protection"/"warranty" that do not name the cover ("is my warranty, for 2 years").
_NOT_A_COVER_WORD = (
    r"(?:is|are|was|were|my|our|your|the|a|an|this|that|i|we|you|and|with|bought|added|got|have|has|had|buy"
    r"|add|get)"
)
_COVER = r"(?:protection(?:\s+plan)?|warranty|coverage|insurance)"
_EN_COVER = re.compile(
    rf"\b(?:one|two|three|four|five|[0-9])-year\s+(?:[a-z-]+\s+){{0,3}}{_COVER}\b"
    # or its term after it: "accidental damage protection, for 1 year", "…, with a 2-year term",
    # "the protection plan, 4 years" (not a time since: "the warranty, 2 years ago")
    rf"|\b(?:(?!{_NOT_A_COVER_WORD}\b)[a-z-]+\s+){{0,3}}{_COVER}"
    r"(?:\s*,?\s+for\s+(?:one|two|three|four|five|[0-9])\s+years?"
    r"|(?:\s*,\s*|\s+(?=with\s))(?:with\s+a\s+)?(?:one|two|three|four|five|[0-9])-year(?:\s+term)?"
    r"|\s*,\s*(?:one|two|three|four|five|[0-9])\s+years?(?!\s+(?:ago|old|later|back|since)\b))\b",
    re.IGNORECASE,
)


@functools.lru_cache(maxsize=8)
def _catalogue_pattern(catalogue: tuple[str, ...]) -> re.Pattern[str]:
    # Longest names first, so "专业版年付" wins over "专业版".
    return re.compile("|".join(re.escape(p) for p in sorted(catalogue, key=len, reverse=True)))


def plans(text: str, catalogue: Sequence[str] = ()) -> Iterator[Hit]:
    """Plan names: the backend's catalogue's (exact names), and the ``X版`` / ``Pro plan`` families
    where no catalogue name stands."""
    family = list(_plan_family(text))
    named = _Taken()
    if catalogue:
        for m in _catalogue_pattern(tuple(catalogue)).finditer(text):
            # A family match that holds the name and says more ("年付的企业版") keeps the billing cycle.
            if not any(
                h.start <= m.start() and m.end() <= h.end and h.end - h.start > len(m.group()) for h in family
            ):
                named.add(m.start(), m.end())
                yield Hit(m.start(), m.end(), m.group(), m.group(), "")
    goods = list(products(text))
    for hit in family:
        # A tier named as the option of goods ("the Kindle Paperwhite (Signature Edition)"): the
        # goods are pinned, with it.
        if _an_option_of(goods, hit, text):
            continue
        if not named.overlaps(hit.start, hit.end):
            named.add(hit.start, hit.end)
            yield hit
    for p in goods:
        if not named.overlaps(p.start, p.end):
            yield Hit(p.start, p.end, p.text, re.sub(r"\s+", "", p.text).lower(), "")


class _Taken:
    """Spans that do not overlap, in order: whether a range overlaps one is a binary search, so a
    long text naming many plans costs n log n, not n squared."""

    def __init__(self) -> None:
        self._spans: list[tuple[int, int]] = []

    def overlaps(self, start: int, end: int) -> bool:
        # Of the spans that start before ``end``, the last one ends last (none overlap).
        i = bisect.bisect_left(self._spans, (end,))
        return i > 0 and self._spans[i - 1][1] > start

    def add(self, start: int, end: int) -> None:
        bisect.insort(self._spans, (start, end))


def _an_option_of(goods: Sequence[Product], hit: Hit, text: str) -> bool:
    """Whether a tier is the option of goods whose clause holds it: in brackets after them, or as
    ", the … version" ("the Kindle Paperwhite, the Signature Edition version")."""
    # Goods come in order, each ending where or after the one before it ends: of those that start
    # before the tier, the last holds it if any does.
    i = bisect.bisect_left(goods, hit.start, key=lambda p: p.start) - 1
    if i < 0 or goods[i].end < hit.end:
        return False
    # the characters either side, read from a few around the tier, not the text's ends
    reach = _THE_ONE_REACH
    before = text[max(0, hit.start - reach) : hit.start].rstrip()[-1:]
    after = text[hit.end : hit.end + reach].lstrip()[:1]
    bracketed = bool(before and after) and before in "(\uff08" and after in ")\uff09"
    return bracketed or bool(
        _THE_ONE_BEFORE.search(text, max(0, hit.start - _THE_ONE_REACH), hit.start)
        and _THE_ONE_AFTER.match(text, hit.end)
    )


_THE_ONE_BEFORE = re.compile(r",\s*the\s+$", re.IGNORECASE)
_THE_ONE_REACH = 16  # characters before a tier read for ", the ": not the whole text for every tier
_THE_ONE_AFTER = re.compile(r"\s+(?:one|version|model)\b", re.IGNORECASE)


_PLAN_HINT = re.compile("版|会员|套餐|服务|险|邮箱|宽带")


def _plan_family(text: str) -> Iterator[Hit]:
    hinted, at = bool(_PLAN_HINT.search(text)), 0
    while hinted and (m := _PLAN.search(text, at)):
        at = m.end()
        if m.group("generic") and not (
            m.group("cycle")
            or m.group("pre")
            or m.group("card")
            or m.group("card2")
            or m.group("term")
            or m.group("seats")
        ):
            # "售后服务", "企业邮箱" alone: a service is a plan only with its term or billing, which
            # may stand inside the words read as its name ("从年付企业邮箱": 年付企业邮箱)
            at = m.start() + 1
            continue
        cycle = re.sub(r"[((连续包)),, 的要是按我们选当时买]", "", m.group("cycle") or "").replace("度", "付")
        cycle = cycle + "付" if cycle in ("月", "年", "季") else cycle
        before = m.group("pre") or m.group("card") or m.group("card2")  # 年付的/连续包月的/年卡的 高级会员
        cycle = cycle or (before + "付" if before else m.group("term") or "")
        cycle = cycle or re.sub(r"\s", "", m.group("seats") or "")  # 单人的基础版: 基础版单人
        yield Hit(m.start(), m.end(), m.group(), m.group("plan") + cycle, "")
    for m in _EN_PLAN.finditer(text) if _has_latin(text) else ():
        cycle = (" ".join((m.group("pre") or "").split()) or m.group("cycle") or "").lower()
        cycle = {"yearly": "annual", "annually": "annual", "month-to-month": "monthly"}.get(cycle, cycle)
        term = (m.group("term") or m.group("term2") or "").lower()
        options = (cycle, (m.group("cycle2") or "").lower(), term, (m.group("cycle3") or "").lower())
        cycle = ", ".join(c for c in options if c)
        key = f"{m.group('plan').title()} {m.group('kind').lower()}" + (f", {cycle}" if cycle else "")
        if m.group("goods"):
            key = f"{key} {m.group('goods')}"
        yield Hit(m.start(), m.end(), m.group(), key, "")
    for m in _EN_LOWER_PLAN.finditer(text) if _EN_PLAN_WORD.search(text) else ():
        start = m.start("name")
        said = text[start : m.end()]
        yield Hit(start, m.end(), said, " ".join(said.lower().replace(",", " ").split()), "")
    for m in _EN_COVER.finditer(text) if "year" in text.lower() else ():
        yield Hit(m.start(), m.end(), m.group(), m.group().lower(), "")

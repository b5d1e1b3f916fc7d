"""Dates as customers write them, resolved to ISO form against the turn's own time.

Absolute: ``2026年3月25日``, ``2026-03-25``, ``3月25日``/``3月25号``, ``3/25``, ``Sept 15``.
Relative (need the turn's ``created_at``): ``明天``, ``后天``, ``昨天``, ``前天``,
``下周五``, ``这周三``, ``上周一``, ``周五``/``星期五``/``礼拜五``, ``上个月12号``, ``下个月3号``,
``本月20号``, ``3天后``, ``2天前``; ``next Friday``, ``last Monday``, ``tomorrow``,
``the 3rd of last month``, ``3 days ago``, ``in two weeks``. A relative phrase in a turn with no
time is kept unresolved
(key ``rel:下周五``); a date with no year takes the turn's year, or ISO's ``--MM-DD`` without one.

A relative date means the day it meant when it was written: "明天" said on 3 March is 4 March,
read a week later or not, which is why the turn's time and not the clock resolves it.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import date, datetime, timedelta
from typing import NamedTuple

_MONTH_ABBREVIATIONS = ("jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec")
_MONTHS = {m: i for i, m in enumerate(_MONTH_ABBREVIATIONS, 1)}
_MONTH_NAME = (
    r"(?:Jan(?:uary)?|Feb(?:ruary)?|Mar(?:ch)?|Apr(?:il)?|May|June?|July?|Aug(?:ust)?"
    r"|Sep(?:t(?:ember)?)?|Oct(?:ober)?|Nov(?:ember)?|Dec(?:ember)?)"
)
_YEAR_TAIL = r"(?:,?\s+(?P<{name}>[0-9]{{4}})(?![0-9]|-[0-9]))?"
_WEEKDAYS = {"一": 0, "二": 1, "三": 2, "四": 3, "五": 4, "六": 5, "日": 6, "天": 6, "末": 5}
# Not "今天": customers say it of everything ("今天又试了一次"), and it would pin a date per turn.
_DAY_WORDS = {"大前天": -3, "前天": -2, "昨天": -1, "昨日": -1, "明天": 1, "明日": 1}
_DAY_WORDS.update({"后天": 2, "大后天": 3})
_EN_WEEKDAYS = {d: i for i, d in enumerate(("mon", "tue", "wed", "thu", "fri", "sat", "sun"))}
_EN_WEEKDAY = (
    r"mon(?:day)?|tue(?:s(?:day)?)?|wed(?:nesday)?|thu(?:rs(?:day)?)?|fri(?:day)?|sat(?:urday)?|sun(?:day)?"
)
_EN_SMALL = {
    w: n
    for n, w in enumerate(["one", "two", "three", "four", "five", "six", "seven", "eight", "nine", "ten"], 1)
}
_EN_SMALL_ALT = "|".join(_EN_SMALL)
_EN_DAY_WORDS = {"tomorrow": 1, "yesterday": -1, "the day after tomorrow": 2, "the day before yesterday": -2}
_SMALL = {"一": 1, "两": 2, "二": 2, "三": 3, "四": 4, "五": 5, "六": 6, "七": 7, "八": 8, "九": 9, "十": 10}

# Each form starts with a digit, a month name or one of the listed characters: the look-ahead
# lets the scan skip everything else at once; digit runs are read possessively (see _money.py).
_DATE = re.compile(
    r"(?=[0-9A-Za-z明后昨前大下上这本周星礼一两二三四五六七八九十])(?:"
    r"(?<![0-9])(?P<cy>[0-9]{4})\s*年\s*(?P<cm>[0-9]{1,2})\s*月\s*(?P<cd>[0-9]{1,2})(?![0-9])\s*[日号]?"
    r"|(?<![A-Za-z0-9-])(?P<iy>[0-9]{4})(?P<sep>[-/.])(?P<im>[0-9]{1,2})(?P=sep)(?P<id>[0-9]{1,2})(?![0-9])"
    r"|(?P<rm>上个?月|下个?月|本月|这个?月)\s*(?P<rd>[0-9]{1,2})\s*[日号](?![0-9])"
    r"|(?<![0-9年])(?P<mm>[0-9]{1,2})\s*月\s*(?P<md>[0-9]{1,2})\s*[日号]"
    r"|(?<![0-9A-Za-z/.:-])(?P<um>[0-9]{1,2})/(?P<ud>[0-9]{1,2})/(?P<uy>[0-9]{4})(?![0-9/:%]|\.[0-9])"
    r"|(?<![0-9A-Za-z/.:-])(?P<sm>[0-9]{1,2})/(?P<sd>[0-9]{1,2})(?![0-9/:%]|\.[0-9])"
    r"|(?P<wp>下下个?|下个?|上个?|这个?|本)?(?:周|星期|礼拜)(?P<wd>[一二三四五六日天末])"
    r"|(?P<dw>大前天|前天|昨天|昨日|明天|明日|大后天|后天)"
    r"|(?P<nn>[0-9]{1,3}|[一两二三四五六七八九十])\s*(?:个)?(?P<nu>天|周|星期|个月)(?P<nd>后|以后|之后|前|以前|之前)"
    rf"|\b(?P<en1>{_MONTH_NAME})\.?\s+(?P<ed1>[0-9]{{1,2}})(?:st|nd|rd|th)?(?![0-9]){_YEAR_TAIL.format(name='ey1')}"
    rf"|(?:\bthe\s+)?(?<![0-9])(?P<ed2>[0-9]{{1,2}})(?:st|nd|rd|th)?\s+(?:of\s+)?(?P<en2>{_MONTH_NAME})\b(?:(?<=\b(?!may)[A-Za-z]{{3}})\.|(?<=\bSept)\.)?{_YEAR_TAIL.format(name='ey2')}"
    rf"|\b(?P<ewp>next|last|this|coming)\s+(?P<ewd>{_EN_WEEKDAY})\b"
    r"|\b(?P<edw>the\s+day\s+after\s+tomorrow|the\s+day\s+before\s+yesterday|tomorrow|yesterday)\b"
    r"|\bthe\s+(?P<eod>[0-9]{1,2})(?:st|nd|rd|th)\s+of\s+(?P<eom>last|next|this)\s+month\b"
    rf"|\b(?P<enn>[0-9]{{1,3}}|a|an|{_EN_SMALL_ALT})\s+(?P<enu>days?|weeks?|months?)\s+(?P<end>ago|from\s+now|later)\b"
    rf"|\bin\s+(?P<inn>[0-9]{{1,3}}|a|an|{_EN_SMALL_ALT})\s+(?P<inu>days?|weeks?|months?)\b)",
    re.IGNORECASE,
)


class Found(NamedTuple):
    start: int
    end: int
    text: str
    key: str  # "2026-03-27", "--03-27" or "rel:下周五"
    relative: bool


def dates(text: str, when: datetime | None) -> Iterator[Found]:
    """Every date in ``text``; relative ones resolved against ``when`` (the turn's time)."""
    today = when.date() if when is not None else None
    for m in _DATE.finditer(text):
        key, relative = _key(m, today)
        if key is not None:
            yield Found(m.start(), m.end(), m.group().strip(), key, relative)


def _key(m: re.Match[str], today: date | None) -> tuple[str | None, bool]:
    g = m.groupdict()
    year = str(today.year) if today else None
    if g["cy"]:
        return _iso(g["cy"], g["cm"], g["cd"]), False
    if g["iy"]:
        return _iso(g["iy"], g["im"], g["id"]), False
    if g["mm"]:
        return _iso(year, g["mm"], g["md"]), False
    if g["um"]:  # 10/27/2027: month first, as written in the US
        if int(g["um"]) > 12 or int(g["ud"]) > 31:
            return None, False
        return _iso(g["uy"], g["um"], g["ud"]), False
    if g["sm"]:
        if int(g["sm"]) > 12 or int(g["sd"]) > 31:
            return None, False
        return _iso(year, g["sm"], g["sd"]), False
    if g["en1"]:
        return _iso(g["ey1"] or year, str(_MONTHS[g["en1"][:3].lower()]), g["ed1"]), False
    if g["en2"]:
        return _iso(g["ey2"] or year, str(_MONTHS[g["en2"][:3].lower()]), g["ed2"]), False
    if today is None:
        return "rel:" + re.sub(r"\s+", "", m.group()), True
    return _relative(g, today), True


def _relative(g: dict[str, str | None], today: date) -> str | None:
    if g["ewd"] or g["edw"] or g["eod"] or g["enu"] or g["inu"]:
        return _relative_english(g, today)
    if g["rm"]:
        shift = -1 if g["rm"].startswith("上") else 1 if g["rm"].startswith("下") else 0
        month_index = today.year * 12 + today.month - 1 + shift
        return _iso(str(month_index // 12), str(month_index % 12 + 1), g["rd"] or "")
    if g["wd"]:
        weeks = {"": 0, "这": 0, "本": 0, "下": 1, "下下": 2, "上": -1}[(g["wp"] or "").replace("个", "")]
        monday = today - timedelta(days=today.weekday())
        return (monday + timedelta(weeks=weeks, days=_WEEKDAYS[g["wd"] or "一"])).isoformat()
    if g["dw"]:
        return (today + timedelta(days=_DAY_WORDS[g["dw"]])).isoformat()
    raw = g["nn"] or "0"
    n = int(raw) if raw.isdigit() else _SMALL[raw]
    sign = -1 if (g["nd"] or "").endswith("前") else 1
    unit = g["nu"] or "天"
    if unit == "个月":
        month_index = today.year * 12 + today.month - 1 + sign * n
        return _iso(str(month_index // 12), str(month_index % 12 + 1), str(min(today.day, 28)))
    days = n * (7 if unit in ("周", "星期") else 1)
    return (today + timedelta(days=sign * days)).isoformat()


def _relative_english(g: dict[str, str | None], today: date) -> str | None:
    if g["ewd"]:
        weeks = {"next": 1, "coming": 1, "last": -1, "this": 0}[(g["ewp"] or "this").lower()]
        monday = today - timedelta(days=today.weekday())
        return (
            monday + timedelta(weeks=weeks, days=_EN_WEEKDAYS[(g["ewd"] or "mon")[:3].lower()])
        ).isoformat()
    if g["edw"]:
        return (today + timedelta(days=_EN_DAY_WORDS[" ".join((g["edw"] or "").lower().split())])).isoformat()
    if g["eod"]:
        shift = {"last": -1, "next": 1, "this": 0}[(g["eom"] or "this").lower()]
        month_index = today.year * 12 + today.month - 1 + shift
        return _iso(str(month_index // 12), str(month_index % 12 + 1), g["eod"] or "")
    raw, unit = (g["enn"], g["enu"]) if g["enu"] else (g["inn"], g["inu"])
    word = (raw or "1").lower()
    n = int(word) if word.isdigit() else 1 if word in ("a", "an") else _EN_SMALL[word]
    sign = -1 if (g["end"] or "").lower() == "ago" else 1
    unit = (unit or "day").lower().rstrip("s")
    if unit == "month":
        month_index = today.year * 12 + today.month - 1 + sign * n
        return _iso(str(month_index // 12), str(month_index % 12 + 1), str(min(today.day, 28)))
    return (today + timedelta(days=sign * n * (7 if unit == "week" else 1))).isoformat()


def _iso(year: str | None, month: str, day: str) -> str | None:
    """``YYYY-MM-DD``, or ISO 8601's ``--MM-DD`` without a year; None for impossible dates."""
    try:
        # A leap year stands in for a missing one, so "2月29日" is accepted.
        when = date(int(year) if year else 2000, int(month), int(day))
    except ValueError:
        return None
    if year is None:
        return f"--{when:%m-%d}"
    return when.isoformat() if 1900 <= when.year <= 2100 else None


def canonical_date(key: str) -> str:
    """A date key read again: ISO keys are already canonical, so this is the identity on them."""
    if key.startswith(("--", "rel:")):
        return key
    return date.fromisoformat(key).isoformat()

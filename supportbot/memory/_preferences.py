"""What a customer asked to be contacted by, and not by: read from a ticket's own words.

A resolved ticket's record keeps the customer's stated preferences (``以后有事发短信``, ``text me
instead of calling``, ``周末别给我打电话``) and current contact details, each with the day it
became true, and the profile (``memory._profile``) folds them over the customer's tickets: a later
ticket's value in the same *slot* retires the earlier one. Slots: ``contact`` (the one channel to
use), ``avoid:<channel>`` (one per channel), ``phone``, ``email``, ``address``.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import NamedTuple

__all__ = ["Stated", "stated_preferences"]

_CHANNELS = (
    ("sms", r"短信|text(?:\s+me)?|sms|texts"),
    ("email", r"邮件|邮箱|e-?mail"),
    ("wechat", r"微信|wechat"),
    ("phone", r"电话|打给我|call(?:\s+me)?|phone|calls"),
)
_AVOID = re.compile(
    r"(?:别|不要|不用|勿|请勿|千万别|don'?t|do\s+not|never|no\s+more|stop)\s*(?:再\s*)?(?:给我|跟我)?\s*(?:打|发|用)?\s*"
    r"(?P<what>短信|电话|邮件|微信|call(?:ing)?(?:\s+me)?|text(?:ing)?(?:\s+me)?|e-?mail(?:ing)?(?:\s+me)?|phone)",
    re.IGNORECASE,
)
_PREFER = re.compile(
    r"(?:用|通过|走)?(?P<what>短信|邮件|微信|电话)(?:联系|通知|沟通)|(?:有事|以后|今后)(?:就|都)?(?:发|打|用)(?P<what2>短信|邮件|微信|电话)"
    r"|\b(?:text|e-?mail|call|wechat)\s+me\s+instead\b"
    r"|\b(?:contact|reach|notify)\s+me\s+(?:by|via|through|on|over)\s+(?:text|sms|e-?mail|phone|wechat)\b"
    r"|\bprefer\s+(?:texts?|sms|e-?mails?|phone|calls?|wechat)\b",
    re.IGNORECASE,
)


class Stated(NamedTuple):
    slot: str  # "contact", "avoid:phone"
    value: str  # the channel ("sms", "email", ...)
    text: str  # the customer's words


def _channel(words: str) -> str | None:
    low = words.lower()
    return next((name for name, pattern in _CHANNELS if re.search(pattern, low)), None)


def stated_preferences(sentence: str) -> Iterator[Stated]:
    """The preferences one customer sentence states: channels to avoid, then the one to use."""
    avoided = set()
    for m in _AVOID.finditer(sentence):
        channel = _channel(m.group("what"))
        if channel is not None:
            avoided.add(channel)
            yield Stated(f"avoid:{channel}", channel, sentence)
    for m in _PREFER.finditer(sentence):
        channel = _channel(m.group())
        if channel is not None and channel not in avoided and not _AVOID.search(sentence[: m.end()]):
            yield Stated("contact", channel, sentence)
            return

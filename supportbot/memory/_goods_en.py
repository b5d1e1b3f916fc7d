"""English goods as customers name them: the colours, materials and sizes options are written in,
the noun phrase a purchase or return verb takes (``I'm returning the induction rice cooker``), and
the option a dash or comma sets after it (``the standing desk - white``, ``the nonstick pan, a
lid``). ``_products.products()`` pins the clause each names. Pure; linear in the text's length.
"""

from __future__ import annotations

import re
from collections.abc import Iterator

COLOUR = (
    r"(?:matte\s+|light\s+|dark\s+|pale\s+|deep\s+)?(?:black|white|grey|gray|silver|gold|rose\s+gold|red|blue|navy"
    r"|green|olive|khaki|beige|tan|brown|charcoal|cream|ivory|pink|purple|lilac|lavender|yellow|orange|teal"
    r"|turquoise|burgundy|maroon|coral|mint|sage|walnut|oak|maple|cherry|space\s+gr[ae]y|midnight|slate|sand"
    r"|stone|camel|mustard|rust|indigo|denim|graphite|espresso|natural|clear|transparent)"
)
# What the goods are made of or how they are built: "the hardshell carry-on", "in merino wool".
MATERIAL = (
    r"(?:leather|suede|merino(?:\s+wool)?|wool|cotton|linen|canvas|silk|cashmere|fleece|nylon|polyester"
    r"|stainless\s+steel|aluminium|aluminum|titanium|bamboo|ceramic|hard-?shell|soft-?shell)"
)
SIZE = (
    r"(?-i:XXXL|XXL|XL|XS|S|M|L)|small|medium|large|x-large|extra\s+large|one\s+size|wide\s+fit"
    r"|queen|king|twin|full|california\s+king|newborn"
    # a shoe size, not a time: "in 9", "size 10.5", not "in 30 days"
    r"|[0-9]{1,2}(?:\.5)?(?![0-9]|\s*(?:days?|hours?|minutes?|mins?|weeks?|months?|years?|business|working)\b)"
)


# English goods named with no option word the option patterns (``_products``) know: the noun
# phrase a purchase or return verb takes ("I'm returning the induction rice cooker", "can I
# exchange the 55-quart storage bins?"), or that an option in brackets follows ("the knife set
# (15-piece)"), up to a word that cannot be part of it. Its head must not be one of the things a
# ticket names that are not goods (the refund, the invoice, the order).
# Words that end a noun phrase: prepositions, conjunctions, pronouns, auxiliaries, time words.
_NOT_IN_A_NAME = (
    "your",
    "his",
    "her",
    "their",
    "its",
    "some",
    "any",
    "no",
    "every",
    "each",
    "at",
    "from",
    "in",
    "on",
    "to",
    "by",
    "if",
    "and",
    "but",
    "or",
    "which",
    "that",
    "because",
    "when",
    "as",
    "so",
    "then",
    "since",
    "before",
    "after",
    "until",
    "i",
    "we",
    "you",
    "it",
    "they",
    "he",
    "she",
    "still",
    "was",
    "were",
    "is",
    "are",
    "has",
    "have",
    "had",
    "never",
    "again",
    "back",
    "twice",
    "already",
    "now",
    "yet",
    "please",
    "just",
    "too",
    "also",
    "though",
    "anymore",
    "instead",
    "last",
    "yesterday",
    "today",
    "this",
    "these",
    "those",
    "for",
    "with",
    "of",
    "isn't",
    "wasn't",
    "doesn't",
    "don't",
    "didn't",
    "hasn't",
    "haven't",
    "won't",
    "can't",
    "will",
    "would",
    "could",
    "should",
    "did",
    "does",
    "do",
)
_NP_WORD = rf"(?!(?:{'|'.join(_NOT_IN_A_NAME)})\b)[a-z0-9][a-z0-9'-]*"
_NP_BODY = (
    rf"(?:{_NP_WORD}\s+){{0,4}}{_NP_WORD}"
    # an option phrase after the head: "with brown switches", "for iPhone 15", "in queen"
    rf"(?:\s+(?:with|for|in|of)\s+(?:(?:a|an|the)\s+)?(?:[A-Za-z0-9][A-Za-z0-9'-]*\s+){{0,2}}[A-Za-z0-9][A-Za-z0-9'-]*)?"
    # or after a comma, the option as "the … one": "the water bottle, the 24oz one"
    r"(?:,\s+the\s+[a-z0-9][a-z0-9'-]*(?:\s+[a-z0-9][a-z0-9'-]*){0,3}\s+(?:one|ones|version|model|edition)\b)?"
)
# "a case of …", "two pairs of …": how many, before the goods
_CONTAINERS = (
    r"(?:a|one|two|three)\s+(?:pairs?|box(?:es)?|bags?|sets?|packs?|cases?|jars?|bottles?|tubes?|cans?|rolls?"
    r"|cartons?|tubs?|tins?|pouch(?:es)?|packets?|jugs?)\s+of"
)
_CONTAINER = re.compile(rf"^{_CONTAINERS}\s+")
_EN_NP = (
    r"(?:the|a|an|my|our|this|that|these|those|two|three|four|five|six|[0-9]+"
    rf"|{_CONTAINERS})\s+{_NP_BODY}"
)
_IN_BRACKETS = (
    r"\s*\((?!\s*(?:in\s+case|if|i\b|just|fyi|not|sorry|again|lol|see|e\.g|i\.e|which|that|so\b|and\b"
    r"|or\b|but|yes|no\b|ok|maybe|probably|hopefully|hope|thanks|please|btw|same|still))[^()\n]{1,32}\)"
)
_EN_GOODS = re.compile(
    # Every form starts with a letter or a digit (or a character that matches one regardless of
    # case: the class is read with the pattern's IGNORECASE): the lookahead says so first, so the
    # other characters of a text (Chinese ones) fail at once instead of in each form.
    r"(?=[0-9A-Za-z])(?:"
    r"\b(?:ordered|bought|purchased|picked|received|returning|return|returned|exchange|exchanging|exchanged"
    r"|sent\s+me|shipped\s+me|delivered|restock|swap|replace|refund\s+for)\s+"
    rf"(?P<np>{_EN_NP})(?:{_IN_BRACKETS})?"
    rf"|(?P<np2>{_EN_NP}){_IN_BRACKETS}"
    # bought with no article: "I bought white wireless earbuds from you"
    # (one word only with its option in brackets: "I received moisturizer (fragrance-free)")
    rf"|\b(?:ordered|bought|purchased|received|sent\s+me)\s+(?P<np3>(?:{_NP_WORD}\s+){{0,3}}{_NP_WORD})(?:{_IN_BRACKETS})?"
    # what the goods did or are: "the firm mattress I received", "the cellular smartwatch was damaged too"
    rf"|(?P<np4>\b(?:the|my|our)\s+{_NP_BODY})(?:{_IN_BRACKETS})?"
    r"(?=\s+(?:(?:i|we)\s+(?:received|ordered|bought|got|returned|picked)|(?:was|were|is|are)\s+(?:damaged|broken|defective"
    r"|missing|a\s+disappointment|back\s+in\s+stock)|came\s+(?:in|with|broken|damaged)|arrived|broke|stopped\s+working"
    r"|(?:doesn't|don't|does\s+not|do\s+not)\s+(?:fit|match|work)|dropped\s+in\s+price|will\s+be\s+restocked"
    r"|(?:still\s+)?(?:hasn't|haven't|has\s+not|have\s+not)\s+(?:shipped|arrived)|in\s+my\s+cart))"
    # what is said of them: "my colleague recommended the robot vacuum", "a problem with the lipstick"
    rf"|\b(?:recommended|problem\s+with|issue\s+with|exchange\s+for)\s+(?P<np5>(?:the|my|our)\s+{_NP_BODY})"
    rf"(?:{_IN_BRACKETS})?(?=\s*[,.!?;(]|\s*$|\s+[-–—]\s|\s+(?:if\s+that|just\s+so|fyi|btw|by\s+the\s+way)\b)"
    # where they are and how they came: "my order also had a jar of … in it", "what arrived was the …",
    # "I got … as a gift", "I already sent the … back"
    rf"|\b(?:order\s+(?:also\s+)?had|what\s+(?:arrived|came|showed\s+up)\s+(?:was|were)|(?:i|we)\s+got|sent)\s+"
    rf"(?P<np8>{_EN_NP}|{_NP_BODY})(?:{_IN_BRACKETS})?"
    r"(?=\s+in\s+it\b|\s*,\s+not\b|\s+as\s+a\s+gift|\s+back\b)"
    rf"|\b(?:is|are)\s+(?P<np6>(?:the|my|our)\s+{_NP_BODY})(?=\s+back\s+in\s+stock)"
    # the option as "the … one": "the air fryer, the dual-basket one"
    rf"|(?P<np7>\b(?:the|a|an|my|our)\s+(?:{_NP_WORD}\s+){{0,3}}{_NP_WORD}"
    r",\s+the\s+[a-z0-9][a-z0-9'-]*(?:\s+[a-z0-9][a-z0-9'-]*){0,3}\s+(?:one|ones|version|model|edition)\b))",
    re.IGNORECASE,
)
_NOT_GOODS = frozenset(
    (
        "question",
        "questions",
        "request",
        "requests",
        "patience",
        "help",
        "refund",
        "refunds",
        "invoice",
        "invoices",
        "receipt",
        "email",
        "emails",
        "message",
        "messages",
        "call",
        "calls",
        "link",
        "code",
        "password",
        "account",
        "order",
        "orders",
        "item",
        "items",
        "package",
        "packages",
        "parcel",
        "payment",
        "payments",
        "charge",
        "charges",
        "money",
        "price",
        "app",
        "website",
        "site",
        "page",
        "issue",
        "problem",
        "error",
        "agent",
        "guy",
        "person",
        "team",
        "thing",
        "things",
        "stuff",
        "one",
        "ones",
        "date",
        "address",
        "number",
        "phone",
        "card",
        "bill",
        "ticket",
        "case",
        "form",
        "trial",
        "discount",
        "coupon",
        "update",
        "version",
        "replacement",
        "delivery",
        "shipping",
        "label",
        "tracking",
        "status",
        "time",
        "day",
        "days",
        "week",
        "weeks",
        "month",
        "months",
        "year",
        "years",
        "paperwork",
        "favor",
        "favour",
        "call-back",
        "callback",
        "reply",
        "response",
        "confirmation",
        "feedback",
        "fee",
        "fees",
        "credit",
        "amount",
        "wrong",
        "right",
        "rest",
        "same",
        "inbox",
        "mailbox",
        "line",
        "contact",
        "office",
        "name",
        "company",
        "boss",
        "manager",
        "colleague",
        "coworker",
        "browser",
        "laptop",
        "computer",
        "screenshot",
    )
)
# Every match of _EN_GOODS holds one of these words or a "(". The bracket is tested apart, at C
# speed (a reply's links have one), where the words are tried at every character of a text.
_EN_GOODS_HINT = re.compile(
    r"order|bought|purchas|picked|receiv|return|exchang|sent\s+me|shipped\s+me|deliver|restock|swap|replace"
    r"|refund\s+for|damaged|broke|defective|missing|disappoint|stock|came|arrived|working|fit|match|price|shipped"
    r"|cart|recommended|problem|issue|\bones?\b|version|model|edition|sent|gift",
    re.IGNORECASE,
)


# What holds goods is goods: "phone case", "pillow cases" (a "case" alone is a support case).
_HOLDER_WORDS = (
    "phone pillow carrying laptop camera glasses guitar pencil watch tablet ipad iphone earbud earbuds"
    " airpods storage travel protective charging battery"
)
_HOLDERS = frozenset(_HOLDER_WORDS.split())


def _not_goods(word: str, before: list[str]) -> bool:
    if word in ("case", "cases") and before and before[0] in _HOLDERS:
        return False
    return word in _NOT_GOODS


def english_goods(text: str) -> Iterator[tuple[int, int]]:
    if "(" not in text and not _EN_GOODS_HINT.search(text):
        return
    at = 0
    # A phrase that is no goods is read again from its next character: "a problem with the
    # moisturizer (fragrance-free)" is not goods as a whole, but holds them. A phrase is a few
    # words long, so this stays linear.
    while m := _EN_GOODS.search(text, at):
        at = m.start() + 1
        group = next(g for g in ("np", "np2", "np3", "np4", "np5", "np6", "np7", "np8") if m.group(g))
        start = m.start(group)
        # the goods, not ", the … one" after them nor the "a case of" before them
        words = _CONTAINER.sub("", m.group(group).lower().split(",")[0]).split()
        head = next((w for w in reversed(words) if w not in ("with", "for", "in", "of")), "")
        core = words[
            : next((k for k, w in enumerate(words) if w in ("with", "for", "in", "of") and k), len(words))
        ]
        # One word names goods only with its option in brackets ("the smartwatch (cellular)"), and
        # never a thing every ticket has ("the order (#…)", "my account (the old one)").
        bracketed = text[m.end() - 1] == ")"
        if (
            len(core) < (1 if bracketed else 2)
            or _not_goods(core[-1].strip("'s"), core[-2:-1])
            or _not_goods(head, words[-2:-1])
        ):
            continue
        at = m.end()
        yield start, m.end()  # with the option in brackets after it, if any


# Options a dash puts after goods ("the standing desk - white / 48-inch, …"): up to four short
# words or a slash, to a clause's end; not a remark a dash adds ("… - would appreciate any help",
# "… - cheers"), which starts with a word no option is.
_OPTION_WORD = r"[a-z0-9](?:[a-z0-9'-]|\.(?=[a-z0-9])|(?<=[0-9]),(?=[0-9]{3}(?![0-9])))*"
_NOT_AN_OPTION = (
    rf"(?!(?:{'|'.join(_NOT_IN_A_NAME)}|i|i'm|we|you|it|my|our|this|that|just|so|thanks|thank|cheers"
    r"|fyi|btw|sorry|please|hope|also|anyway|ugh|lol|ok|okay|no|yes|not|any|can|call|email|text|ship|send)\b)"
)
# an option ends its clause, or a remark follows it ("- brown / 10 if that matters")
_OPTION_ENDS = r"(?=\s*(?:[,!?;(.]|$|\s[-–—]\s)|\s+(?:if\s+that\s+(?:matters|helps)|fyi|btw|just\s+so)\b)"
DASH_OPTION = re.compile(
    rf"\s+[-–—]\s+{_NOT_AN_OPTION}{_OPTION_WORD}(?:\s+(?:/\s+)?{_OPTION_WORD}){{0,3}}{_OPTION_ENDS}",
    re.IGNORECASE,
)
# Or a measure a comma puts after them ("the knife set, 7 piece", "the mixed nuts, the 2.5 lb ones"):
# after a comma, only words that hold a figure, since most clauses after a comma are not options,
# and not a time since ("the warranty, 2 years ago").
_A_TIME_SINCE = r"(?![0-9]+\s+(?:years?|months?|weeks?|days?|hours?|minutes?)\s+(?:ago|later|back|since)\b)"
COMMA_OPTION = re.compile(
    rf",\s+(?:the\s+)?{_NOT_AN_OPTION}{_A_TIME_SINCE}(?=[^,.!?;]*[0-9])"
    rf"{_OPTION_WORD}(?:\s+{_OPTION_WORD}){{0,2}}(?:\s+(?:ones?|size|version|pack))?{_OPTION_ENDS}",
    re.IGNORECASE,
)


# Or, with no figure, only the narrow shapes of an option: a colour or material with what it is of
# ("the mechanical keyboard, brown switches"), or one lower-case word, with its article or "with"
# ("the nonstick pan, a lid"), that is no remark (", thanks", ", honestly").
_NOT_A_WORD_OPTION = (
    r"(?!(?:guys|folks|everyone|team|hello|hey|hi|thx|pls|plz|asap|though|anyway|anyways|right|sure|again"
    r"|yesterday|today|tomorrow|ago|etc|lol|haha|cheers|thanks|please|sorry|ugh|oops)\b)"
)
COMMA_WORD_OPTION = re.compile(
    rf",\s+(?:with\s+)?(?:(?:{COLOUR}|{MATERIAL})(?:\s+(?-i:[a-z]+))?"
    rf"|(?:an?\s+)?{_NOT_AN_OPTION}{_NOT_A_WORD_OPTION}(?-i:[a-z]{{3,}})(?<!ly)"
    # or an accessory it came with ("the robot vacuum, mop attachment")
    rf"|(?:an?\s+|the\s+)?{_NOT_AN_OPTION}(?-i:[a-z]{{3,}})\s+(?:attachment|kit|adapter|bundle|stand|mount|filter)s?)"
    rf"{_OPTION_ENDS}",
    re.IGNORECASE,
)

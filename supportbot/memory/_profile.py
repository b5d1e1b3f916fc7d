"""Customer profile: what a new ticket should know about a customer's past, in one short text.

Derived by fixed rules from the subscriptions and the tickets the business system already
resolved, never by a model: the same inputs give the same bytes in every process, and nothing
reaches the text that is not in a record (no guesses, no judgement of character). A profile that
states a wrong plan misleads every later ticket, so the rules stay small enough to test fully.

* A record that fails validation (missing or mistyped field, another customer's id, no
  ``resolved_on``) is skipped and counted in ``skipped_records``, never raised. Copies of one
  ticket id count once when they agree in what the rules use; conflicting copies are all skipped.
* Tickets resolved after ``today`` are ignored and *not* counted as skipped: they are not corrupt,
  only not visible yet to a profile built as of ``today`` (an old profile rebuilt, or clock skew
  between the business system and us). Validation comes first, so a corrupt future ticket counts.
* Plan and cycle come from the active subscription started by ``today``, the latest start winning.
* Issues: each ticket contributes its error codes (a code repeated in one ticket counts once) or,
  naming none, its category; ordered by count desc, most recent month desc, then key.
* Requests and promises are deduplicated, most recently mentioned first.
* The text keeps the plan line, then the top issue, requests, promises and the other issues; over
  ``max_chars`` it drops parts from the end of that list, and truncates only a plan line that
  alone does not fit.
"""

from __future__ import annotations

import dataclasses
import hashlib
import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from datetime import UTC, date, datetime
from decimal import Decimal
from typing import Literal

from .._records import Customer, PastTicket, Subscription
from ..errors import InvalidInput
from ._mask import mask_text

__all__ = [
    "LABELS",
    "RULES_VERSION",
    "PastTicket",
    "Preference",
    "Profile",
    "ProfileCorrection",
    "ProfileEntry",
    "RecurringIssue",
    "build_profile",
    "fingerprint",
]

# Part of every fingerprint: bump it when the rules or labels change, so cached profiles built by
# the old rules are rebuilt even though their inputs did not change.
RULES_VERSION = 3  # 2: requests, promises and resolutions masked; 3: preferences and contacts

# Every word the text uses, so a second language is one more entry rather than a code change.
LABELS: Mapping[str, Mapping[str, str]] = {
    "zh": {
        "plan": "{plan}{cycle}",
        "vip": " VIP",
        "no_plan": "无有效订阅",
        "had_plan": ",曾用{plan}{cycle}",
        "vip_no_plan": "VIP,无有效订阅",
        "code_issue": "{label} 已出现 {count} 次({months})",
        "category_issue": "{label}已出现 {count} 次({months})",
        "issue_once": "{label}({months})",
        "resolved_once": ",{resolution}解决",
        "resolved_all": ",均{resolution}解决",
        "resolved_mixed": ",处理方式:{resolutions}",
        "promise": "已承诺:{promise}",
        "preferences": "联系偏好:{items}(自 {since})",
        "contact.sms": "短信",
        "contact.email": "邮件",
        "contact.phone": "电话",
        "contact.wechat": "微信",
        "avoid.sms": "勿发短信",
        "avoid.email": "勿发邮件",
        "avoid.phone": "勿打电话",
        "avoid.wechat": "勿发微信",
        "list_sep": "、",
        "part_sep": ";",
        "end": "。",
        "ellipsis": "…",
        "category.technical": "技术问题",
        "category.billing": "账单问题",
        "category.invoice": "发票问题",
        "category.refund": "退款",
        "category.account": "账号问题",
        "category.plan_change": "套餐变更",
        "category.api": "API 问题",
        "category.other": "其他问题",
    },
}

IssueKind = Literal["error_code", "category"]
Entry = Literal["issue", "request", "promise", "contact"]
ENTRIES: tuple[Entry, ...] = ("issue", "request", "promise", "contact")


@dataclass(frozen=True, slots=True)
class ProfileCorrection:
    """An operator's correction of one profile entry, applied on top of what the records say:
    ``key`` names the entry as the profile shows it (an issue's code or category, a request's or
    promise's text, a contact's slot); ``value`` replaces it (None: the entry is retracted). The
    latest correction of an entry wins (sql/023_memory_corrections.sql keeps them all)."""

    entry: Entry
    key: str
    value: str | None


# Contact slots holding a value an operator can correct; the others (a channel to use or avoid)
# can only be retracted.
CORRECTABLE_SLOTS = ("phone", "email", "address")
# Beyond this many distinct months the list would crowd out everything else; a range says enough.
_MAX_LISTED_MONTHS = 4


@dataclass(frozen=True, slots=True)
class RecurringIssue:
    """One error code (or, for tickets without codes, one category) across resolved tickets."""

    kind: IssueKind
    key: str  # the error code, or the category value
    label: str
    count: int  # tickets, not mentions
    months: tuple[str, ...]  # "YYYY-MM" of each ticket, oldest first; len(months) == count
    resolutions: tuple[str, ...]  # aligned with months; "" when that ticket names none


@dataclass(frozen=True, slots=True)
class Preference:
    """What a customer stated, in one slot ("contact", "avoid:phone", "phone", "email", "address"),
    from the day it became true until a later ticket replaced it (``valid_to``; None: current)."""

    slot: str
    value: str
    text: str  # the customer's words (masked with mask_pii)
    valid_from: date
    valid_to: date | None = None


@dataclass(frozen=True, slots=True)
class Profile:
    customer_id: str
    name: str
    plan: str | None
    billing_cycle: str | None
    is_vip: bool
    recurring: tuple[RecurringIssue, ...]  # every issue seen, most frequent first
    open_requests: tuple[str, ...]
    promises: tuple[str, ...]
    ticket_count: int  # valid tickets resolved on or before today
    skipped_records: int  # subscriptions and tickets that failed validation
    text: str
    # Current stated preferences and contact details; ``stated_history`` also holds retired ones.
    preferences: tuple[Preference, ...] = ()
    contacts: tuple[Preference, ...] = ()
    stated_history: tuple[Preference, ...] = ()


@dataclass(frozen=True, slots=True)
class _CleanTicket:
    """A validated ticket reduced to what the rules use; comparable, so duplicates can be found."""

    id: str
    resolved_on: date
    keys: tuple[tuple[IssueKind, str], ...]
    resolution: str
    requests: tuple[str, ...]
    promises: tuple[str, ...]
    stated: tuple[tuple[str, str, str, datetime], ...] = ()  # (slot, value, text, since)


@dataclass(frozen=True, slots=True)
class _Part:
    priority: int  # lower survives longer when the text is over its cap
    order: int  # position in the rendered text
    text: str


class _Corrupt(Exception):
    """A record failed validation. Private: callers only ever see it as a skipped count."""


@dataclass(frozen=True, slots=True)
class ProfileEntry:
    """One entry of a profile an operator may retract, and rewrite if ``correctable``."""

    entry: Entry
    key: str  # what a ProfileCorrection names it by
    text: str  # as a page shows it
    correctable: bool


def profile_entries(profile: Profile) -> list[ProfileEntry]:
    """The entries of ``profile`` an operator can correct: recurring issues and channel
    preferences (retract only), requests, promises and contact details."""
    return [
        *(ProfileEntry("issue", i.key, f"{i.label} × {i.count}", False) for i in profile.recurring),
        *(ProfileEntry("request", r, r, True) for r in profile.open_requests),
        *(ProfileEntry("promise", p, p, True) for p in profile.promises),
        *(
            ProfileEntry("contact", p.slot, p.text, p.slot in CORRECTABLE_SLOTS)
            for p in (*profile.preferences, *profile.contacts)
        ),
    ]


def build_profile(
    customer: Customer,
    subscriptions: Sequence[Subscription],
    resolved_tickets: Sequence[PastTicket],
    *,
    today: date,
    max_chars: int = 100,
    language: str = "zh",
    mask: bool = True,
    corrections: Sequence[ProfileCorrection] = (),
) -> Profile:
    """Derive the customer's profile and its prompt text (at most ``max_chars`` characters).

    With ``mask`` (``Settings.mask_pii``) requests, promises and resolutions, which were once
    somebody's words, have their phone, email, ID and card numbers masked. ``corrections``, in
    the order they were made, retract or replace entries before the text is composed.
    """
    if max_chars < 1:
        raise InvalidInput(
            f"max_chars must be at least 1, got {max_chars}; pass the prompt's budget for the profile"
        )
    if language not in LABELS:
        raise InvalidInput(f"no profile labels for language {language!r}; use one of {sorted(LABELS)}")
    labels = LABELS[language]
    today = _as_date(today)
    subs, bad_subs = _valid_subscriptions(customer.id, subscriptions)
    tickets, bad_tickets = _valid_tickets(customer.id, resolved_tickets)
    visible = [t for t in tickets if t.resolved_on <= today]
    active = _active_subscription(subs, today)
    recurring = _rank_issues(visible, labels)
    requests = _latest_first(visible, "requests")
    promises = _latest_first(visible, "promises")
    if mask:
        recurring, requests, promises = _masked(recurring, requests, promises)
    history = _fold_stated(visible, mask=mask)
    current = tuple(p for p in history if p.valid_to is None)
    if corrections:
        latest: dict[tuple[str, str], str | None] = {(c.entry, c.key): c.value for c in corrections}
        recurring = tuple(i for i in recurring if ("issue", i.key) not in latest)
        requests = _corrected_texts(requests, "request", latest)
        promises = _corrected_texts(promises, "promise", latest)
        current = _corrected_stated(current, latest)
    preferences = tuple(p for p in current if p.slot == "contact" or p.slot.startswith("avoid:"))
    contacts = tuple(p for p in current if p not in preferences)
    base = _base_text(subs, today, customer.is_vip, labels)
    parts = _parts(recurring, requests, promises, labels, _preferences_text(preferences, labels))
    return Profile(
        customer_id=customer.id,
        name=customer.name,
        plan=active.plan if active else None,
        billing_cycle=active.billing_cycle if active else None,
        is_vip=customer.is_vip,
        recurring=recurring,
        open_requests=requests,
        promises=promises,
        ticket_count=len(visible),
        skipped_records=bad_subs + bad_tickets,
        text=_fit(base, parts, max_chars, labels),
        preferences=preferences,
        contacts=contacts,
        stated_history=history,
    )


def _fold_stated(tickets: Sequence[_CleanTicket], *, mask: bool) -> tuple[Preference, ...]:
    """Every stated value in the order it became true; a later value in its slot retires it (and a
    channel to use retires the wish to avoid it, and the other way round)."""
    said = sorted(
        ((since, ticket.resolved_on, i, slot, value, text) for ticket in tickets
         for i, (slot, value, text, since) in enumerate(ticket.stated)),
        key=lambda item: (_naive(item[0]), item[1], item[2]),
    )  # fmt: skip
    history: list[Preference] = []
    current: dict[str, int] = {}
    for since, _, _, slot, value, text in said:
        rivals = [slot]
        if slot == "contact":
            rivals.append(f"avoid:{value}")
        elif (
            slot.startswith("avoid:") and "contact" in current and history[current["contact"]].value == value
        ):
            rivals.append("contact")
        for rival in rivals:
            if rival in current:
                at = current.pop(rival)
                history[at] = dataclasses.replace(history[at], valid_to=since.date())
        current[slot] = len(history)
        history.append(Preference(slot, value, mask_text(text) if mask else text, since.date()))
    return tuple(history)


def _corrected_texts(
    texts: Sequence[str], entry: Entry, latest: Mapping[tuple[str, str], str | None]
) -> tuple[str, ...]:
    out = (latest.get((entry, t), t) if (entry, t) in latest else t for t in texts)
    return tuple(dict.fromkeys(t for t in out if t))


def _corrected_stated(
    current: Sequence[Preference], latest: Mapping[tuple[str, str], str | None]
) -> tuple[Preference, ...]:
    kept = []
    for p in current:
        if ("contact", p.slot) not in latest:
            kept.append(p)
        elif (value := latest[("contact", p.slot)]) is not None and p.slot in CORRECTABLE_SLOTS:
            kept.append(dataclasses.replace(p, value=value, text=value))
    return tuple(kept)


def _naive(moment: datetime) -> datetime:
    """Comparable whether written with a zone or not (a bare date reads as its midnight UTC)."""
    return moment.astimezone(UTC).replace(tzinfo=None) if moment.tzinfo else moment


def _preferences_text(preferences: Sequence[Preference], labels: Mapping[str, str]) -> str:
    if not preferences:
        return ""
    items = [
        labels[p.slot.replace(":", ".") if p.slot != "contact" else f"contact.{p.value}"] for p in preferences
    ]
    since = max(p.valid_from for p in preferences)
    return labels["preferences"].format(items=labels["list_sep"].join(items), since=since.isoformat())


# -- validation ---------------------------------------------------------------------------------


def _as_date(value: date) -> date:
    # datetime is a date subclass but does not compare with one; a timestamp means its day.
    return value.date() if isinstance(value, datetime) else value


def _normalized(value: object) -> str:
    """The value as single-spaced text; raises _Corrupt unless it is a non-blank string."""
    if not isinstance(value, str) or not value.strip():
        raise _Corrupt
    return " ".join(value.split())


def _text_list(value: object) -> tuple[str, ...]:
    """An optional list of strings, normalized and deduplicated in order; blank items dropped."""
    if value is None:
        return ()
    if not isinstance(value, list | tuple):
        raise _Corrupt
    if not all(isinstance(item, str) for item in value):
        raise _Corrupt
    return tuple(dict.fromkeys(" ".join(item.split()) for item in value if item.strip()))


def _check_amounts(value: object) -> None:
    if value is None:
        return
    if not isinstance(value, list | tuple):
        raise _Corrupt
    for item in value:
        # bool is an int subclass, and True is no amount.
        if isinstance(item, bool) or not isinstance(item, str | int | float | Decimal):
            raise _Corrupt


def _parse_ticket(record: object, customer_id: str) -> _CleanTicket:
    if not isinstance(record, PastTicket) or record.customer_id != customer_id:
        raise _Corrupt
    ticket_id = _normalized(record.id)
    if not isinstance(record.subject, str) or not isinstance(record.resolved_on, date):
        raise _Corrupt
    facts = record.facts
    if not isinstance(facts, Mapping):
        raise _Corrupt
    category = _normalized(facts.get("category"))
    # Codes compare case-insensitively: "e3001" typed by an agent is the same failure as "E3001".
    codes = tuple(dict.fromkeys(code.upper() for code in _text_list(facts.get("error_codes"))))
    resolution = "" if facts.get("resolution") is None else _normalized(facts.get("resolution"))
    _text_list(facts.get("ids"))
    _text_list(facts.get("dates"))
    _check_amounts(facts.get("amounts"))
    keys: tuple[tuple[IssueKind, str], ...] = tuple(("error_code", code) for code in codes)
    return _CleanTicket(
        id=ticket_id,
        resolved_on=_as_date(record.resolved_on),
        keys=keys or (("category", category),),
        resolution=resolution,
        requests=_text_list(facts.get("requests")),
        promises=_text_list(facts.get("promises")),
        stated=_stated(facts.get("preferences")) + _stated(facts.get("contacts")),
    )


_SLOTS = ("contact", "avoid:sms", "avoid:email", "avoid:phone", "avoid:wechat", "phone", "email", "address")


def _stated(value: object) -> tuple[tuple[str, str, str, datetime], ...]:
    """A record's stated preferences or contacts; absent in records written before they were kept."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise _Corrupt
    found = []
    for entry in value:
        if not isinstance(entry, Mapping) or entry.get("slot") not in _SLOTS:
            raise _Corrupt
        fields = [entry.get("value"), entry.get("text"), entry.get("since")]
        if not all(isinstance(f, str) and f for f in fields):
            raise _Corrupt
        try:  # a date, or the moment it was said (which orders two statements of one day)
            since = datetime.fromisoformat(str(entry["since"]))
        except ValueError:
            raise _Corrupt from None
        found.append((str(entry["slot"]), str(entry["value"]), str(entry["text"]), since))
    return tuple(found)


def _valid_tickets(customer_id: str, records: Sequence[PastTicket]) -> tuple[list[_CleanTicket], int]:
    """Valid tickets oldest first, and how many records were skipped."""
    copies: dict[str, list[_CleanTicket]] = {}
    skipped = 0
    for record in records:
        try:
            clean = _parse_ticket(record, customer_id)
        except _Corrupt:
            skipped += 1
            continue
        copies.setdefault(clean.id, []).append(clean)
    kept = []
    for same_id in copies.values():
        # A join that repeats a row must not inflate counts; conflicting copies leave no way to
        # tell which one is true, so neither is trusted.
        if all(copy == same_id[0] for copy in same_id):
            kept.append(same_id[0])
            skipped += len(same_id) - 1
        else:
            skipped += len(same_id)
    kept.sort(key=lambda t: (t.resolved_on, t.id))
    return kept, skipped


def _valid_subscriptions(customer_id: str, records: Sequence[Subscription]) -> tuple[list[Subscription], int]:
    kept = []
    for record in records:
        if (
            isinstance(record, Subscription)
            and record.customer_id == customer_id
            and all(isinstance(v, str) for v in (record.id, record.plan, record.billing_cycle, record.status))
            and isinstance(record.started_on, date)
        ):
            kept.append(record)
    return kept, len(records) - len(kept)


# -- derivation ---------------------------------------------------------------------------------


def _active_subscription(subs: Sequence[Subscription], today: date) -> Subscription | None:
    candidates = [s for s in subs if s.status == "active" and _as_date(s.started_on) <= today]
    # The id breaks a tie between two starts on one day, so the choice never depends on order.
    return max(candidates, key=lambda s: (_as_date(s.started_on), s.id), default=None)


def _month(day: date) -> str:
    return f"{day.year:04d}-{day.month:02d}"


def _issue_label(kind: IssueKind, key: str, labels: Mapping[str, str]) -> str:
    if kind == "error_code":
        return key
    return labels.get(f"category.{key}", key)


def _rank_issues(tickets: Sequence[_CleanTicket], labels: Mapping[str, str]) -> tuple[RecurringIssue, ...]:
    grouped: dict[tuple[IssueKind, str], list[_CleanTicket]] = {}
    for ticket in tickets:  # oldest first, so each group is too
        for kind_key in ticket.keys:
            grouped.setdefault(kind_key, []).append(ticket)
    ranked = []
    for (kind, key), group in grouped.items():
        last = group[-1].resolved_on
        # Recency is compared by month, not day: two issues last seen in one month are equally
        # fresh to a reader, and the key then gives a stable order.
        rank = (-len(group), -(last.year * 12 + last.month), key, kind)
        ranked.append(
            (
                rank,
                RecurringIssue(
                    kind=kind,
                    key=key,
                    label=_issue_label(kind, key, labels),
                    count=len(group),
                    months=tuple(_month(t.resolved_on) for t in group),
                    resolutions=tuple(t.resolution for t in group),
                ),
            )
        )
    ranked.sort(key=lambda pair: pair[0])
    return tuple(issue for _, issue in ranked)


def _latest_first(tickets: Sequence[_CleanTicket], field: Literal["requests", "promises"]) -> tuple[str, ...]:
    """Distinct texts, the most recently mentioned first; a tie on the day goes by text."""
    last_seen: dict[str, date] = {}
    for ticket in tickets:
        for text in getattr(ticket, field):
            last_seen[text] = max(ticket.resolved_on, last_seen.get(text, ticket.resolved_on))
    return tuple(sorted(last_seen, key=lambda text: (-last_seen[text].toordinal(), text)))


def _masked(
    recurring: Sequence[RecurringIssue], requests: Sequence[str], promises: Sequence[str]
) -> tuple[tuple[RecurringIssue, ...], tuple[str, ...], tuple[str, ...]]:
    """The free-text parts masked; two texts that differ only in a masked number become one."""
    issues = tuple(
        dataclasses.replace(issue, resolutions=tuple(mask_text(r) for r in issue.resolutions))
        for issue in recurring
    )
    return (
        issues,
        tuple(dict.fromkeys(mask_text(r) for r in requests)),
        tuple(dict.fromkeys(mask_text(p) for p in promises)),
    )


# -- text ---------------------------------------------------------------------------------------


def _base_text(subs: Sequence[Subscription], today: date, is_vip: bool, labels: Mapping[str, str]) -> str:
    active = _active_subscription(subs, today)
    if active is not None:
        plan = labels["plan"].format(plan=active.plan, cycle=active.billing_cycle)
        return plan + (labels["vip"] if is_vip else "")
    text = labels["vip_no_plan"] if is_vip else labels["no_plan"]
    started = [s for s in subs if _as_date(s.started_on) <= today]
    last = max(started, key=lambda s: (_as_date(s.started_on), s.id), default=None)
    # A lapsed customer asking about a plan they no longer have is common; name the last one.
    if last is not None:
        text += labels["had_plan"].format(plan=last.plan, cycle=last.billing_cycle)
    return text


def _months_text(months: Sequence[str]) -> str:
    """Months as in "2026-04/07/09": the year is written only when it changes."""
    distinct = list(dict.fromkeys(months))
    if len(distinct) > _MAX_LISTED_MONTHS:
        return f"{distinct[0]}~{distinct[-1]}"
    shown, year = [], ""
    for month in distinct:
        shown.append(month[5:] if month[:4] == year else month)
        year = month[:4]
    return "/".join(shown)


def _issue_text(issue: RecurringIssue, labels: Mapping[str, str]) -> str:
    if issue.count == 1:
        template = labels["issue_once"]
    else:
        template = labels["code_issue"] if issue.kind == "error_code" else labels["category_issue"]
    text = template.format(label=issue.label, count=issue.count, months=_months_text(issue.months))
    named = list(dict.fromkeys(r for r in issue.resolutions if r))
    if len(named) == 1 and all(issue.resolutions):
        # "均…" only when every ticket says so; one silent ticket makes it a claim we cannot back.
        key = "resolved_once" if issue.count == 1 else "resolved_all"
        return text + labels[key].format(resolution=named[0])
    if named:
        return text + labels["resolved_mixed"].format(resolutions=labels["list_sep"].join(named))
    return text


def _parts(
    recurring: Sequence[RecurringIssue],
    requests: Sequence[str],
    promises: Sequence[str],
    labels: Mapping[str, str],
    preferences: str = "",
) -> list[_Part]:
    """Everything after the plan line, each with its survival priority and display position."""
    issues = [_issue_text(issue, labels) for issue in recurring]
    promised = [labels["promise"].format(promise=p) for p in promises]
    stated = [preferences] if preferences else []
    # Display order: issues, requests, promises, how to reach the customer.
    shown = issues + list(requests) + promised + stated
    # Survival order: the top issue, how to reach the customer (every later reply must respect
    # it), requests, promises, then the other issues. A promise outranks a second issue because
    # forgetting it invites a reply that contradicts it.
    top = min(len(issues), 1)
    rest = list(range(len(issues), len(shown) - len(stated)))
    stated_at = list(range(len(shown) - len(stated), len(shown)))
    survival = list(range(top)) + stated_at + rest + list(range(top, len(issues)))
    return [_Part(priority=rank, order=pos, text=shown[pos]) for rank, pos in enumerate(survival)]


def _compose(base: str, parts: Sequence[_Part], labels: Mapping[str, str]) -> str:
    text = base + labels["end"]
    if parts:
        ordered = sorted(parts, key=lambda p: p.order)
        text += labels["part_sep"].join(p.text for p in ordered) + labels["end"]
    return text


def _fit(base: str, parts: Sequence[_Part], max_chars: int, labels: Mapping[str, str]) -> str:
    kept = sorted(parts, key=lambda p: p.priority)
    text = _compose(base, kept, labels)
    while kept and len(text) > max_chars:
        kept.pop()
        text = _compose(base, kept, labels)
    if len(text) > max_chars:
        text = text[: max_chars - len(labels["ellipsis"])] + labels["ellipsis"]
    return text[:max_chars]


# -- cache key ----------------------------------------------------------------------------------


def _plain(value: object) -> object:
    """A JSON-ready copy in which equal inputs look equal (Decimal 3588 == 3588.00, key order)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        return {f.name: _plain(getattr(value, f.name)) for f in dataclasses.fields(value)}
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if isinstance(value, date):  # datetime included
        return value.isoformat()
    if isinstance(value, Decimal):
        return format(value.normalize(), "f")
    if value is None or isinstance(value, str | int | float):
        return value
    return f"{type(value).__qualname__}:{value!r}"


def _dump(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, separators=(",", ":"))


def fingerprint(
    customer: Customer,
    subscriptions: Sequence[Subscription],
    resolved_tickets: Sequence[PastTicket],
) -> str:
    """A sha256 over the inputs, independent of their order: rebuild a cached profile when it changes.

    It covers every subscription field, so an upgrade without a ticket changes it. It does not
    cover ``today``, ``max_chars`` or ``language``: a cache that varies those must add them to its
    key, and a ticket dated in the future becomes visible without changing the fingerprint.
    """
    payload = {
        "rules": RULES_VERSION,
        "customer": _plain(customer),
        "subscriptions": sorted((_plain(s) for s in subscriptions), key=_dump),
        "tickets": sorted((_plain(t) for t in resolved_tickets), key=_dump),
    }
    return hashlib.sha256(_dump(payload).encode("utf-8")).hexdigest()

"""The console's HTML pages. Each POST checks the CSRF token, validates its fields (re-rendering
the page with a message beside each bad field) and redirects after success."""

from __future__ import annotations

from collections.abc import Callable
from datetime import date
from decimal import Decimal, InvalidOperation
from typing import Annotated, Any
from urllib.parse import quote

from fastapi import APIRouter, Depends, Request, Response
from fastapi.responses import HTMLResponse, RedirectResponse, StreamingResponse
from starlette.concurrency import run_in_threadpool

from .. import i18n
from .._front import _validate as validate
from ..errors import InvalidInput, WrongType
from ._live import InboxFeed, inbox_stream, mark
from ._security import COOKIE, CSRF_FIELD, Forbidden, NeedSignIn, approver, check_csrf
from ._service import (
    ACTIONS,
    KINDS,
    SAVED_REPLY_CHARS,
    SEARCH_CHARS,
    STATUSES,
    VIEWS,
    Console,
    Kind,
    View,
)  # fmt: skip
from ._users import NAME_CHARS, Operator, Throttle, Users
from ._web import Ctx, context, describe, operator_of, render, set_session_cookie, who_is

router = APIRouter(include_in_schema=False)


async def form_of(request: Request) -> dict[str, str]:
    """The posted form's text fields, after its CSRF token is checked against the session."""
    form = await request.form()
    fields = {k: v for k, v in form.items() if isinstance(v, str)}
    ctx = context(request)
    if ctx.session is None:  # signed out or expired: say so before speaking of tokens
        raise NeedSignIn(expired=ctx.expired)
    check_csrf(ctx.session, fields.get(CSRF_FIELD))
    return fields


Form = Annotated[dict[str, str], Depends(form_of)]


def _console(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


def _see_other(path: str) -> RedirectResponse:
    return RedirectResponse(path, 303)


# -- sign-in -----------------------------------------------------------------------------------


@router.get("/login")
def login_page(request: Request, expired: int = 0) -> Response:
    ctx = context(request)
    if ctx.session and ctx.session.operator:
        return _see_other("/inbox")
    session = ctx.session or request.app.state.sessions.new()
    response = render(request, "login.html", Ctx(session, False, ctx.address), expired=bool(expired))
    set_session_cookie(request, response, session)
    return response


@router.post("/login")
def login(request: Request, form: Form) -> Response:
    ctx = context(request)
    name = form.get("name", "").strip()[:NAME_CHARS]
    password = form.get("password", "")
    throttle: Throttle = request.app.state.throttle
    tr = request.app.state.tr
    wait = throttle.wait(name, ctx.address)
    errors: dict[str, str] = {}
    if not name:
        errors["name"] = tr("field.required")
    if not password:
        errors["password"] = tr("field.required")
    if wait > 0:
        errors["form"] = tr("login.throttled", minutes=int(wait // 60) + 1)
    if errors:
        return render(request, "login.html", ctx, 429 if wait > 0 else 422, errors=errors, name=name)
    users: Users = request.app.state.users
    operator = users.verify(name, password)
    if operator is None:
        throttle.failed(name, ctx.address)
        errors["form"] = tr("login.wrong")
        return render(request, "login.html", ctx, 401, errors=errors, name=name)
    throttle.succeeded(name)
    sessions = request.app.state.sessions
    if ctx.session is not None:
        sessions.end(ctx.session.id)  # a new id after sign-in: a planted session id is worth nothing
    session = sessions.new(operator)
    response = _see_other("/inbox")
    set_session_cookie(request, response, session)
    return response


@router.post("/logout")
def logout(request: Request, form: Form) -> Response:
    ctx = context(request)
    if ctx.session is not None:
        request.app.state.sessions.end(ctx.session.id)
    response = _see_other("/login")
    response.delete_cookie(COOKIE, path="/")
    return response


# -- inbox -------------------------------------------------------------------------------------


@router.get("/")
def home(request: Request) -> Response:
    operator_of(request)
    return _see_other("/inbox")


@router.get("/inbox", response_class=HTMLResponse)
def inbox(request: Request, kind: str = "", customer: str = "", view: str = "all") -> Response:
    ctx, operator = operator_of(request)
    chosen, customer, seen = _inbox_filters(kind, customer, view)
    items = _console(request).inbox(kind=chosen, customer=customer, view=seen, who=who_is(request, operator))
    shown = {"items": items, "kind": chosen or "", "customer": customer, "view": seen, "mark": mark(items)}
    return render(request, "inbox.html", ctx, 200, **shown)


def _inbox_filters(kind: str, customer: str, view: str) -> tuple[Kind | None, str, View]:
    chosen = next((k for k in KINDS if k == kind), None)
    return chosen, customer[: validate.EMAIL_CHARS], next((v for v in VIEWS if v == view), "all")


@router.get("/inbox/events")
async def inbox_events(
    request: Request, kind: str = "", customer: str = "", view: str = "all", shown: str = ""
) -> Response:
    """The open inbox page's event stream (static/console.js): it reloads its rows on ``inbox``.
    Reading the session here is not activity: an open page keeps nobody signed in."""
    sessions = request.app.state.sessions
    cookie = request.cookies.get(COOKIE)
    session, expired = await run_in_threadpool(sessions.get, cookie, touch=False)
    if session is None or session.operator is None:
        raise NeedSignIn(expired=expired)
    chosen, customer, seen = _inbox_filters(kind, customer, view)
    who = who_is(request, session.operator)
    feed: InboxFeed = request.app.state.inbox_feed
    console = _console(request)

    def still_signed_in() -> bool:
        live, _ = sessions.get(cookie, touch=False)
        return live is not None and live.operator is not None

    stream = inbox_stream(
        feed,
        lambda: console.inbox(kind=chosen, customer=customer, view=seen, who=who),
        still_signed_in,
        request.is_disconnected,
        shown[:32],
    )
    headers = {"Cache-Control": "no-store", "X-Accel-Buffering": "no"}  # nginx: do not hold events back
    return StreamingResponse(stream, media_type="text/event-stream", headers=headers)


# -- search ------------------------------------------------------------------------------------


@router.get("/search", response_class=HTMLResponse)
def search(
    request: Request,
    q: str = "",
    customer: str = "",
    status: str = "",
    since: str = "",
    until: str = "",
    page: str = "1",
) -> Response:
    # Every value read as text and checked here: a bad one is a field error on the page.
    ctx, _ = operator_of(request)
    tr = request.app.state.tr
    errors: dict[str, str] = {}
    days = {name: _day(value, name, tr, errors) for name, value in (("since", since), ("until", until))}
    chosen = next((s for s in STATUSES if s == status), None)
    number = int(page) if page.isascii() and page.isdigit() else 1
    if len(q) > SEARCH_CHARS:
        errors["q"] = tr("field.too_long", limit=SEARCH_CHARS)
    asked = {"q": q, "customer": customer, "status": chosen or "", "since": since, "until": until}
    if errors:
        return render(request, "search.html", ctx, 422, result=None, asked=asked, errors=errors)
    result = _console(request).search(
        text=q,
        customer=customer[: validate.EMAIL_CHARS],
        status=chosen,
        since=days["since"],
        until=days["until"],
        page=number,
    )
    return render(request, "search.html", ctx, 200, result=result, asked=asked, searched=any(asked.values()))


def _day(value: str, field: str, tr: i18n.Translate, errors: dict[str, str]) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value)
    except ValueError:
        errors[field] = tr("field.date")
        return None


# -- approvals ---------------------------------------------------------------------------------


@router.get("/approvals/{ticket_id}", response_class=HTMLResponse)
def approval_page(request: Request, ticket_id: str) -> Response:
    ctx, _operator = operator_of(request)
    return _approval(request, ctx, ticket_id)


def _approval(request: Request, ctx: Ctx, ticket_id: str, status: int = 200, **values: Any) -> HTMLResponse:
    view = _console(request).approval(ticket_id)
    return render(request, "approval.html", ctx, status, view=view, **values)


@router.post("/approvals/{ticket_id}/claim")
def claim(request: Request, ticket_id: str, form: Form) -> Response:
    _ctx, operator = operator_of(request)
    _console(request).claim(ticket_id, approver(operator))
    return _see_other(f"/approvals/{quote(ticket_id)}")


@router.post("/approvals/{ticket_id}/release")
def release(request: Request, ticket_id: str, form: Form) -> Response:
    _ctx, operator = operator_of(request)
    _console(request).release(ticket_id, approver(operator))
    return _see_other(f"/approvals/{quote(ticket_id)}")


@router.post("/approvals/{ticket_id}/decide")
def decide(request: Request, ticket_id: str, form: Form) -> Response:
    ctx, operator = operator_of(request)
    approver(operator)
    tr = request.app.state.tr
    action, note = form.get("decision", ""), form.get("note", "").strip()
    typed = form.get("amount", "").strip()
    errors: dict[str, str] = {}
    if action not in ACTIONS:
        errors["decision"] = tr("field.choose_decision")
    if not note:
        errors["note"] = tr("field.note_required")
    elif len(note) > validate.NOTE_CHARS:
        errors["note"] = tr("field.too_long", limit=validate.NOTE_CHARS)
    amount = _typed_amount(typed, action, tr, errors)
    if errors:
        values = {"errors": errors, "note": note, "decision": action, "amount": typed}
        return _approval(request, ctx, ticket_id, 422, **values)
    chosen = next(a for a in ACTIONS if a == action)  # the checked string, as the Literal it is
    _console(request).decide(ticket_id, operator, action=chosen, note=note, amount=amount, source=ctx.source)
    if action == "respond":  # the refund still waits: back to it, the answer shown on the ticket
        return _see_other(f"/tickets/{quote(ticket_id)}?responded=1")
    return _see_other(f"/tickets/{quote(ticket_id)}?decided=1")


def _typed_amount(typed: str, action: str, tr: i18n.Translate, errors: dict[str, str]) -> Decimal | None:
    """The amount typed to approve less than asked; a field error when it is no amount, or is
    given with another action."""
    if not typed:
        return None
    if action != "approve":
        errors["amount"] = tr("field.amount_only_approve")
        return None
    try:
        return validate.amount("amount", Decimal(typed))
    except (InvalidOperation, InvalidInput):
        errors["amount"] = tr("field.amount_invalid")
        return None


# -- tickets -----------------------------------------------------------------------------------


@router.get("/tickets/{ticket_id}", response_class=HTMLResponse)
def ticket_page(
    request: Request,
    ticket_id: str,
    at: str | None = None,
    decided: str = "",
    responded: str = "",
    corrected: str = "",
    saved: str = "",
) -> Response:
    # Query values read as text: a typed parameter would answer `?at=abc` with the framework's
    # JSON error instead of a page in the operator's language.
    ctx, _ = operator_of(request)
    if at is not None and not (at.isascii() and at.isdigit()):
        raise WrongType(f"a step number is written in digits, not {at[:20]!r}")
    step = None if at is None else int(at)
    flags = {"decided": decided == "1", "responded": responded == "1", "corrected": corrected == "1"}
    if saved and at is None:  # a saved reply put in the reply box, filled from this ticket
        team, _, name = saved.partition("/")
        teams = (
            who_is(request, ctx.session.operator).teams
            if ctx.session and ctx.session.operator
            else frozenset()
        )
        chosen = next(
            (r for r in _console(request).saved_replies(teams) if (r.team, r.name) == (team, name)), None
        )
        if chosen is not None:
            flags["text"] = _console(request).filled(chosen, ticket_id)  # type: ignore[assignment]
    return _ticket(request, ctx, ticket_id, at=step, **flags)


def _ticket(
    request: Request, ctx: Ctx, ticket_id: str, status: int = 200, *, at: int | None = None, **values: Any
) -> HTMLResponse:
    console = _console(request)
    view = console.ticket(ticket_id, at=at)
    operator = ctx.session.operator if ctx.session else None
    replies = console.saved_replies(who_is(request, operator).teams) if operator else []
    return render(request, "ticket.html", ctx, status, view=view, saved_replies=replies, **values)


@router.post("/tickets/{ticket_id}/fork")
def fork(request: Request, ticket_id: str, form: Form) -> Response:
    ctx, operator = operator_of(request)
    tr = request.app.state.tr
    seq = form.get("seq", "")
    if not seq.isdigit() or not 1 <= int(seq) <= validate.INT32_MAX:
        return _ticket(request, ctx, ticket_id, 422, errors={"seq": tr("field.step_number")})
    try:
        new_id = _console(request).fork(ticket_id, int(seq), operator, source=ctx.source)
    except Exception as exc:
        code, key, fields = describe(exc)
        if code >= 500:
            raise
        return _ticket(request, ctx, ticket_id, code, at=int(seq), errors={"seq": tr(key, **fields)})
    return _see_other(f"/tickets/{quote(new_id)}")


@router.post("/tickets/{ticket_id}/notes")
def add_note(request: Request, ticket_id: str, form: Form) -> Response:
    ctx, operator = operator_of(request)
    tr = request.app.state.tr
    body = form.get("body", "").strip()
    error = ""
    if not body:
        error = tr("field.required")
    elif len(body) > validate.NOTE_CHARS:
        error = tr("field.too_long", limit=validate.NOTE_CHARS)
    if error:
        return _ticket(request, ctx, ticket_id, 422, errors={"body": error}, body=body)
    _console(request).add_note(ticket_id, operator, body)
    return _see_other(f"/tickets/{quote(ticket_id)}#notes")


@router.post("/tickets/{ticket_id}/facts/{position}")
def correct_fact(request: Request, ticket_id: str, position: int, form: Form) -> Response:
    """Correct (``action=correct``, the new ``value``) or retract a pinned fact, with a reason."""
    ctx, operator = operator_of(request)

    def record(value: str | None, reason: str) -> object:
        console = _console(request)
        return console.correct_fact(
            ticket_id, position, operator, value=value, reason=reason, source=ctx.source
        )

    def again(status: int, errors: dict[str, str]) -> Response:
        return _ticket(request, ctx, ticket_id, status, errors=errors)

    done = f"/tickets/{quote(ticket_id)}?corrected=1#fact-{position}"
    return _corrected(request, form, f"fact-{position}", record, again, done)


def _corrected(
    request: Request,
    form: dict[str, str],
    field: str,
    record: Callable[[str | None, str], object],
    again: Callable[[int, dict[str, str]], Response],
    done: str,
) -> Response:
    """A correction form posted: checked, recorded (``value`` None for a retraction), and the page
    again with the error beside ``field``, or a redirect to ``done``."""
    tr = request.app.state.tr
    action, value, reason = (form.get(name, "").strip() for name in ("action", "value", "reason"))
    error = _correction_error(tr, action, value, reason)
    if error:
        return again(422, {field: error})
    try:
        record(None if action == "retract" else value, reason)
    except Exception as exc:
        code, key, fields = describe(exc)
        if code >= 500:
            raise
        return again(code, {field: tr(key, **fields)})
    return _see_other(done)


def _correction_error(tr: i18n.Translate, action: str, value: str, reason: str) -> str:
    if action not in ("correct", "retract"):
        return tr("field.invalid")
    if not reason or (action == "correct" and not value):
        return tr("field.required")
    if len(reason) > validate.NOTE_CHARS or len(value) > validate.NOTE_CHARS:
        return tr("field.too_long", limit=validate.NOTE_CHARS)
    return ""


@router.post("/tickets/{ticket_id}/assign")
def assign(request: Request, ticket_id: str, form: Form) -> Response:
    """Assign the ticket to an operator and/or a team (``me=1``: to the one asking)."""
    ctx, operator = operator_of(request)
    tr = request.app.state.tr
    users: Users = request.app.state.users
    person = operator.name if form.get("me") == "1" else form.get("operator", "").strip() or None
    team = form.get("team", "").strip() or None
    if person is None and team is None:
        return _ticket(request, ctx, ticket_id, 422, errors={"assign": tr("field.assign_someone")})
    if (person is not None and person not in users.names()) or (
        team is not None and team not in users.teams()
    ):
        return _ticket(request, ctx, ticket_id, 422, errors={"assign": tr("field.invalid")})
    _console(request).assign(ticket_id, operator, operator=person, team=team, source=ctx.source)
    return _see_other(f"/tickets/{quote(ticket_id)}#assignment")


@router.post("/tickets/{ticket_id}/take-over")
def take_over(request: Request, ticket_id: str, form: Form) -> Response:
    ctx, operator = operator_of(request)
    _console(request).take_over(ticket_id, operator, source=ctx.source)
    return _see_other(f"/tickets/{quote(ticket_id)}#takeover")


@router.post("/tickets/{ticket_id}/reply")
def reply(request: Request, ticket_id: str, form: Form) -> Response:
    """Send a person's reply. An amount, date, time limit or id found nowhere in the ticket or the
    customer's records is a warning (the check the bot's drafts get): the page asks again, and
    ``confirm=1`` sends it as written."""
    ctx, operator = operator_of(request)
    tr = request.app.state.tr
    text = form.get("text", "").strip()
    limit = _console(request).bot.settings.max_message_chars
    error = (
        tr("field.required") if not text else tr("field.too_long", limit=limit) if len(text) > limit else ""
    )
    if error:
        return _ticket(request, ctx, ticket_id, 422, errors={"text": error}, text=text)
    if form.get("confirm") != "1" and (problems := _console(request).reply_problems(ticket_id, text)):
        warnings = [tr(f"reply.unsupported.{kind}", values="、".join(values)) for kind, values in problems]
        return _ticket(request, ctx, ticket_id, 422, warnings=warnings, text=text)
    _console(request).reply(ticket_id, operator, text, source=ctx.source)
    return _see_other(f"/tickets/{quote(ticket_id)}#takeover")


@router.post("/tickets/{ticket_id}/hand-back")
def hand_back(request: Request, ticket_id: str, form: Form) -> Response:
    ctx, operator = operator_of(request)
    tr = request.app.state.tr
    note = form.get("note", "").strip()
    if len(note) > validate.NOTE_CHARS:
        error = tr("field.too_long", limit=validate.NOTE_CHARS)
        return _ticket(request, ctx, ticket_id, 422, errors={"note": error}, hand_back_note=note)
    _console(request).hand_back(ticket_id, operator, note=note, source=ctx.source)
    return _see_other(f"/tickets/{quote(ticket_id)}")


# -- saved replies -----------------------------------------------------------------------------


@router.get("/replies", response_class=HTMLResponse)
def replies_page(request: Request) -> Response:
    ctx, operator = operator_of(request)
    return _replies(request, ctx, operator)


def _replies(
    request: Request, ctx: Ctx, operator: Operator, status: int = 200, **values: Any
) -> HTMLResponse:
    who = who_is(request, operator)
    replies = _console(request).saved_replies(who.teams)
    return render(request, "replies.html", ctx, status, replies=replies, my_teams=sorted(who.teams), **values)


@router.post("/replies")
def save_reply(request: Request, form: Form) -> Response:
    """Add or replace a saved reply of one of the operator's teams ("" for everyone)."""
    ctx, operator = operator_of(request)
    tr = request.app.state.tr
    team, name, body = form.get("team", ""), form.get("name", "").strip(), form.get("body", "").strip()
    errors: dict[str, str] = {}
    if team and team not in who_is(request, operator).teams:
        errors["team"] = tr("field.invalid")
    if not name or len(name) > NAME_CHARS:
        errors["name"] = tr("field.required") if not name else tr("field.too_long", limit=NAME_CHARS)
    if not body or len(body) > SAVED_REPLY_CHARS:
        errors["body"] = tr("field.required") if not body else tr("field.too_long", limit=SAVED_REPLY_CHARS)
    if errors:
        return _replies(request, ctx, operator, 422, errors=errors, name=name, body=body, team_chosen=team)
    _console(request).save_reply(operator, team=team, name=name, body=body)
    return _see_other("/replies")


@router.post("/replies/delete")
def delete_reply(request: Request, form: Form) -> Response:
    _ctx, operator = operator_of(request)
    team = form.get("team", "")
    if team and team not in who_is(request, operator).teams:
        raise Forbidden()
    _console(request).delete_reply(team=team, name=form.get("name", ""))
    return _see_other("/replies")


# -- customers ---------------------------------------------------------------------------------


@router.get("/customers/{email}", response_class=HTMLResponse)
def customer_page(request: Request, email: str, corrected: str = "") -> Response:
    ctx, _ = operator_of(request)
    return _customer(request, ctx, email, corrected=corrected == "1")


def _customer(request: Request, ctx: Ctx, email: str, status: int = 200, **values: Any) -> HTMLResponse:
    view = _console(request).customer(email)
    return render(request, "customer.html", ctx, status, view=view, **values)


@router.post("/customers/{email}/profile")
def correct_profile(request: Request, email: str, form: Form) -> Response:
    """Correct or retract one profile entry (``entry``, ``key`` as the page lists them)."""
    ctx, operator = operator_of(request)
    entry, key = form.get("entry", ""), form.get("key", "")

    def record(value: str | None, reason: str) -> object:
        console = _console(request)
        return console.correct_profile(
            email, entry, key, operator, value=value, reason=reason, source=ctx.source
        )

    def again(status: int, errors: dict[str, str]) -> Response:
        return _customer(request, ctx, email, status, errors=errors)

    done = f"/customers/{quote(email)}?corrected=1#entries"
    return _corrected(request, form, f"entry-{entry}-{key}", record, again, done)


@router.post("/customers/{email}/forget")
def forget(request: Request, email: str, form: Form) -> Response:
    ctx, operator = operator_of(request)
    approver(operator)
    tr = request.app.state.tr
    if form.get("confirm", "").strip() != email:
        return _customer(request, ctx, email, 422, errors={"confirm": tr("field.confirm_email")})
    try:
        report = _console(request).forget(email, operator, source=ctx.source)
    except Exception as exc:
        code, key, fields = describe(exc)
        if code >= 500:
            raise
        return _customer(request, ctx, email, code, errors={"confirm": tr(key, **fields)})
    return render(request, "forgotten.html", ctx, report=report)

"""The JSON API: everything the pages do, for another helpdesk to drive.

Sign in with ``POST /api/session`` ({"name", "password"}): the answer sets the session cookie
and returns the CSRF token, which every POST and DELETE sends back as ``X-CSRF-Token``. Errors
are ``{"error": CODE, "message": TEXT}`` with a 4xx status; invalid bodies are 422 with
pydantic's per-field ``detail``. The description is at ``GET /api/openapi.json`` (signed in).
"""

from __future__ import annotations

from datetime import date
from decimal import Decimal
from typing import Annotated, Any, Literal

from fastapi import APIRouter, Depends, Query, Request, Response
from fastapi.responses import JSONResponse
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from .._front import _validate as validate
from .._state import TicketStatus
from ..errors import AmountRefused, InvalidInput
from ._security import COOKIE, CSRF_HEADER, Forbidden, approver, check_csrf
from ._service import SAVED_REPLY_CHARS, SEARCH_CHARS, Console, Kind, View
from ._users import NAME_CHARS, Operator
from ._web import context, operator_of, set_session_cookie, who_is

router = APIRouter(prefix="/api", tags=["console"])


class _Body(BaseModel):
    model_config = ConfigDict(extra="forbid", str_strip_whitespace=True)


class SignIn(_Body):
    name: str = Field(min_length=1, max_length=NAME_CHARS)
    password: str = Field(min_length=1, max_length=1024)


class Decision(_Body):
    decision: Literal["approve", "reject", "respond"] = Field(
        description="approve or reject the refund, or respond: a note to the agent, who answers the"
        " customer from it while the refund still waits"
    )
    note: str = Field(
        min_length=1,
        max_length=validate.NOTE_CHARS,
        description="required: told to the customer on a rejection; the instruction to the agent on respond",
    )
    amount: Decimal | None = Field(
        default=None, description="approve only: approve this much instead of what was asked (never more)"
    )


class ForkAt(_Body):
    seq: int = Field(ge=1, le=validate.INT32_MAX, description="the step to fork from (see steps)")


class NewNote(_Body):
    body: str = Field(min_length=1, max_length=validate.NOTE_CHARS)


class Reply(_Body):
    text: str = Field(
        min_length=1, max_length=validate.NOTE_CHARS * 5, description="the reply to the customer"
    )


class HandBack(_Body):
    note: str = Field(default="", max_length=validate.NOTE_CHARS, description="for colleagues: the audit log")


class Assign(_Body):
    operator: str | None = Field(default=None, max_length=NAME_CHARS, description="an operator's name")
    team: str | None = Field(default=None, max_length=NAME_CHARS, description="a team of the users file")


class Correction(_Body):
    value: str | None = Field(
        default=None,
        min_length=1,
        max_length=validate.NOTE_CHARS,
        description="the right value; null retracts",
    )
    reason: str = Field(min_length=1, max_length=validate.NOTE_CHARS, description="kept in the audit log")


class ProfileCorrection(Correction):
    entry: Literal["issue", "request", "promise", "contact"]
    key: str = Field(
        min_length=1, max_length=validate.NOTE_CHARS, description="the entry as the profile shows it"
    )


class NewSavedReply(_Body):
    team: str = Field(default="", max_length=NAME_CHARS, description="one of your teams; empty for everyone")
    name: str = Field(min_length=1, max_length=NAME_CHARS)
    body: str = Field(
        min_length=1, max_length=SAVED_REPLY_CHARS, description="with {name}, {ticket}, {amount}..."
    )


class Text(_Body):
    text: str = Field(min_length=1, max_length=validate.NOTE_CHARS * 5)


class Confirm(_Body):
    confirm: str = Field(
        min_length=1, max_length=validate.EMAIL_CHARS, description="the customer's email again"
    )


def signed_in(request: Request) -> Operator:
    return operator_of(request)[1]


def csrf_checked(request: Request) -> Operator:
    ctx, operator = operator_of(request)
    check_csrf(ctx.session, request.headers.get(CSRF_HEADER))
    return operator


Reader = Annotated[Operator, Depends(signed_in)]
Writer = Annotated[Operator, Depends(csrf_checked)]


def _console(request: Request) -> Console:
    console: Console = request.app.state.console
    return console


def _json(value: Any) -> Any:
    return to_jsonable_python(value)


@router.post("/session")
def sign_in(request: Request, body: SignIn) -> Response:
    ctx = context(request)
    throttle = request.app.state.throttle
    tr = request.app.state.tr
    wait = throttle.wait(body.name, ctx.address)
    if wait > 0:
        message = tr("login.throttled", minutes=int(wait // 60) + 1)
        return JSONResponse({"error": "throttled", "message": message}, 429)
    operator = request.app.state.users.verify(body.name, body.password)
    if operator is None:
        throttle.failed(body.name, ctx.address)
        return JSONResponse({"error": "wrong_credentials", "message": tr("login.wrong")}, 401)
    throttle.succeeded(body.name)
    if ctx.session is not None:
        request.app.state.sessions.end(ctx.session.id)
    session = request.app.state.sessions.new(operator)
    response = JSONResponse({"operator": _json(operator), "csrf_token": session.csrf})
    set_session_cookie(request, response, session)
    return response


@router.delete("/session")
def sign_out(request: Request, operator: Writer) -> Response:
    session = context(request).session
    if session is not None:
        request.app.state.sessions.end(session.id)
    response = JSONResponse({"signed_out": True})
    response.delete_cookie(COOKIE, path="/")
    return response


@router.get("/me")
def me(operator: Reader) -> Any:
    return _json(operator)


@router.get("/openapi.json", include_in_schema=False)
def openapi(request: Request, operator: Reader) -> Any:
    return request.app.openapi()


@router.get("/inbox")
def inbox(
    request: Request,
    operator: Reader,
    kind: Kind | None = None,
    customer: Annotated[str, Query(max_length=validate.EMAIL_CHARS)] = "",
    view: View = "all",
) -> Any:
    who = who_is(request, operator)
    return _json(_console(request).inbox(kind=kind, customer=customer, view=view, who=who))


@router.get("/search")
def search(
    request: Request,
    operator: Reader,
    q: Annotated[str, Query(max_length=SEARCH_CHARS)] = "",
    customer: Annotated[str, Query(max_length=validate.EMAIL_CHARS)] = "",
    status: TicketStatus | None = None,
    since: date | None = None,
    until: date | None = None,
    page: Annotated[int, Query(ge=1, le=10_000)] = 1,
) -> Any:
    """Tickets open and closed by id or any turn's text, customer, status and days opened."""
    found = _console(request).search(
        text=q, customer=customer, status=status, since=since, until=until, page=page
    )
    return _json(found)


@router.get("/sla")
def sla(request: Request, operator: Reader) -> Any:
    """The running service-level clocks, the soonest due first."""
    return _json(_console(request).bot.service_clocks())


@router.get("/approvals/{ticket_id}")
def approval(request: Request, ticket_id: str, operator: Reader) -> Any:
    return _json(_console(request).approval(ticket_id))


@router.post("/approvals/{ticket_id}/claim")
def claim(request: Request, ticket_id: str, operator: Writer) -> Any:
    return _json(_console(request).claim(ticket_id, approver(operator)))


@router.delete("/approvals/{ticket_id}/claim")
def release(request: Request, ticket_id: str, operator: Writer) -> Any:
    return {"released": _console(request).release(ticket_id, approver(operator))}


@router.post("/approvals/{ticket_id}/decision")
def decide(request: Request, ticket_id: str, body: Decision, operator: Writer) -> Any:
    if body.amount is not None and body.decision != "approve":
        raise AmountRefused("an amount goes with an approval only", reason="invalid", field="amount")
    result = _console(request).decide(
        ticket_id,
        approver(operator),
        action=body.decision,
        note=body.note,
        amount=validate.amount("amount", body.amount) if body.amount is not None else None,
        source=context(request).source,
    )
    return _json(result)


@router.get("/tickets/{ticket_id}")
def ticket(
    request: Request,
    ticket_id: str,
    operator: Reader,
    at: Annotated[int | None, Query(ge=1, le=validate.INT32_MAX)] = None,
) -> Any:
    view = _console(request).ticket(ticket_id, at=at)
    return {**_json(view), "reply": view.state.reply}


@router.post("/tickets/{ticket_id}/forks")
def fork(request: Request, ticket_id: str, body: ForkAt, operator: Writer) -> Any:
    new_id = _console(request).fork(ticket_id, body.seq, operator, source=context(request).source)
    return {"ticket_id": new_id, "forked_from": ticket_id, "at": body.seq}


@router.get("/tickets/{ticket_id}/notes")
def notes(request: Request, ticket_id: str, operator: Reader) -> Any:
    return _json(_console(request).ticket(ticket_id).notes)


@router.post("/tickets/{ticket_id}/notes")
def add_note(request: Request, ticket_id: str, body: NewNote, operator: Writer) -> Any:
    return _json(_console(request).add_note(ticket_id, operator, body.body))


@router.post("/tickets/{ticket_id}/takeover")
def take_over(request: Request, ticket_id: str, operator: Writer) -> Any:
    state = _console(request).take_over(ticket_id, operator, source=context(request).source)
    return {"ticket_id": ticket_id, "human_agent": state.human_agent, "turns": _json(state.turns)}


@router.post("/tickets/{ticket_id}/replies")
def reply(request: Request, ticket_id: str, body: Reply, operator: Writer) -> Any:
    return _json(_console(request).reply(ticket_id, operator, body.text, source=context(request).source))


@router.post("/tickets/{ticket_id}/reply-check")
def reply_check(request: Request, ticket_id: str, body: Text, operator: Reader) -> Any:
    """What a reply states that the ticket and the customer's records do not hold (the check the
    console warns with before a person's reply is sent): ``[{"kind", "values"}]``."""
    problems = _console(request).reply_problems(ticket_id, body.text)
    return {"warnings": [{"kind": kind, "values": values} for kind, values in problems]}


@router.post("/tickets/{ticket_id}/assignment")
def assign(request: Request, ticket_id: str, body: Assign, operator: Writer) -> Any:
    users = request.app.state.users
    if body.operator is None and body.team is None:
        raise InvalidInput("assign a ticket to an operator, a team, or both", field="operator")
    if (body.operator is not None and body.operator not in users.names()) or (
        body.team is not None and body.team not in users.teams()
    ):
        raise InvalidInput("no such operator or team in the console's users file", field="operator")
    done = _console(request).assign(
        ticket_id, operator, operator=body.operator, team=body.team, source=context(request).source
    )
    return _json(done)


@router.post("/tickets/{ticket_id}/facts/{position}")
def correct_fact(request: Request, ticket_id: str, position: int, body: Correction, operator: Writer) -> Any:
    fact = _console(request).correct_fact(
        ticket_id, position, operator, value=body.value, reason=body.reason, source=context(request).source
    )
    return _json(fact)


@router.get("/replies")
def saved_replies(request: Request, operator: Reader) -> Any:
    return _json(_console(request).saved_replies(who_is(request, operator).teams))


@router.post("/replies")
def save_reply(request: Request, body: NewSavedReply, operator: Writer) -> Any:
    if body.team and body.team not in who_is(request, operator).teams:
        raise Forbidden()
    _console(request).save_reply(operator, team=body.team, name=body.name, body=body.body)
    return {"saved": True, "team": body.team, "name": body.name}


@router.post("/tickets/{ticket_id}/hand-back")
def hand_back(request: Request, ticket_id: str, body: HandBack, operator: Writer) -> Any:
    result = _console(request).hand_back(ticket_id, operator, note=body.note, source=context(request).source)
    return {"ticket_id": ticket_id, "round": _json(result)}


@router.get("/tickets/{ticket_id}/audit")
def audit(request: Request, ticket_id: str, operator: Reader) -> Any:
    return _json(_console(request).bot.audit(ticket_id))


@router.get("/customers/{email}")
def customer(request: Request, email: str, operator: Reader) -> Any:
    return _json(_console(request).customer(email))


@router.post("/customers/{email}/profile/corrections")
def correct_profile(request: Request, email: str, body: ProfileCorrection, operator: Writer) -> Any:
    profile = _console(request).correct_profile(
        email, body.entry, body.key, operator, value=body.value, reason=body.reason,
        source=context(request).source,
    )  # fmt: skip
    return _json(profile)


@router.post("/customers/{email}/forget")
def forget(request: Request, email: str, body: Confirm, operator: Writer) -> Any:
    approver(operator)
    if body.confirm != email:
        message = request.app.state.tr("field.confirm_email")
        detail = [{"loc": ["body", "confirm"], "msg": message, "type": "confirm"}]
        return JSONResponse({"error": "invalid", "message": message, "detail": detail}, 422)
    return _json(_console(request).forget(email, operator, source=context(request).source))

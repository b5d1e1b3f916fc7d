"""What the console's pages and JSON API share: who is asking (the session), rendering a page,
the session cookie, and how an error a caller can see is worded.

Separate from the app (``_app.py``), which wires the routers of ``_pages.py`` and ``_api.py``:
they import from here, and the app imports them, so no module imports one that imports it.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import datetime
from typing import Any

from fastapi import Request, Response
from fastapi.responses import HTMLResponse, JSONResponse
from fastapi.templating import Jinja2Templates
from markupsafe import Markup

from .. import i18n
from ..errors import (
    ApprovalNotPending,
    ClaimConflict,
    CorrectionRefused,
    CustomerBusy,
    ForkRefused,
    InvalidInput,
    InvalidStepNumber,
    NotFound,
    NotTakenOver,
    StoreError,
    SupportbotError,
    TakeoverRefused,
    TicketBusy,
    UnknownCustomer,
    UnknownTicket,
)
from ._security import COOKIE, NeedSignIn, Session, Sessions
from ._service import Who
from ._users import Operator, Users


@dataclass(frozen=True, slots=True)
class Ctx:
    """What a request knows about its caller."""

    session: Session | None
    expired: bool
    address: str

    @property
    def source(self) -> str:
        """Where an action came from, as the audit log records it."""
        return f"console {self.address}"


def context(request: Request) -> Ctx:
    """The request's session (read once per request: sessions live in the database)."""
    found: Ctx | None = getattr(request.state, "console_ctx", None)
    if found is None:
        sessions: Sessions = request.app.state.sessions
        session, expired = sessions.get(request.cookies.get(COOKIE))
        found = request.state.console_ctx = Ctx(session, expired, _address(request))
    return found


def _address(request: Request) -> str:
    return request.client.host if request.client else "unknown"


def set_session_cookie(request: Request, response: Response, session: Session) -> None:
    response.set_cookie(
        COOKIE,
        session.id,
        httponly=True,
        samesite="strict",
        secure=bool(request.app.state.secure_cookies),
        path="/",
    )


def render(request: Request, template: str, ctx: Ctx, status: int = 200, **values: Any) -> HTMLResponse:
    templates: Jinja2Templates = request.app.state.templates
    session = ctx.session
    response = templates.TemplateResponse(
        request,
        template,
        {
            "operator": session.operator if session else None,
            "csrf": session.csrf if session else "",
            **values,
        },
        status_code=status,
    )
    return response


def who_is(request: Request, operator: Operator) -> Who:
    """The operator with their teams and their teams' members, for the inbox's views."""
    users: Users = request.app.state.users
    teams = frozenset(users.teams_of(operator.name))
    members = users.teams()
    return Who(operator.name, teams, frozenset(m for t in teams for m in members.get(t, ())))


def when_text(moment: datetime | None) -> str:
    """A time as text in the server's zone (where an element cannot hold markup: a title)."""
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment else "—"


def when(moment: datetime | None) -> Markup:
    """A time as a ``<time>`` element: the server's zone as written, which the page's script
    (static/console.js) rewrites in the operator's own time zone, the browser's."""
    if moment is None:
        return Markup("—")
    return Markup('<time datetime="{}">{}</time>').format(moment.isoformat(), when_text(moment))


def waited(tr: i18n.Translate, seconds: int) -> str:
    if seconds < 3600:
        return tr("waited.minutes", n=seconds // 60)
    if seconds < 86400:
        return tr("waited.hours", n=seconds // 3600, m=seconds % 3600 // 60)
    return tr("waited.days", n=seconds // 86400, h=seconds % 86400 // 3600)


def describe(exc: BaseException) -> tuple[int, str, dict[str, Any]]:
    """(HTTP status, catalog key, fields) for an error a caller can see; never its class or traceback."""
    ticket = getattr(exc, "ticket_id", None) or ""
    if isinstance(exc, ClaimConflict):
        if exc.holder is None:
            return 409, "error.claim_expired", {"ticket": ticket}
        return 409, "error.claim_held", {"ticket": ticket, "holder": exc.holder}
    if isinstance(exc, ApprovalNotPending):
        return 409, "error.not_waiting", {"ticket": ticket}
    if isinstance(exc, TicketBusy):
        return 409, "error.ticket_busy", {"ticket": ticket, "seconds": round(exc.retry_after, 1)}
    if isinstance(exc, CustomerBusy):
        return 409, "error.customer_busy", {"tickets": ", ".join(exc.tickets)}
    if isinstance(exc, TakeoverRefused):
        return 409, "error.takeover_refused", {"ticket": ticket}
    if isinstance(exc, NotTakenOver):
        return 409, "error.not_taken_over", {"ticket": ticket}
    if isinstance(exc, ForkRefused):
        return 409, "error.fork_refused", {"ticket": ticket}
    if isinstance(exc, CorrectionRefused):
        return 409, "error.correction_refused", {}
    if isinstance(exc, UnknownTicket):
        return 404, "error.unknown_ticket", {"ticket": ticket}
    if isinstance(exc, UnknownCustomer):
        return 404, "error.unknown_customer", {}
    if isinstance(exc, InvalidStepNumber | NotFound):
        return 404, "error.unknown_step", {}
    if isinstance(exc, InvalidInput):
        return 422, "error.invalid", {}
    if isinstance(exc, StoreError):
        return 503, "error.store", {}
    if isinstance(exc, SupportbotError):
        return 500, "error.failed", {}
    return 500, "error.unexpected", {}


def is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def error_response(request: Request, status: int, key: str, fields: dict[str, Any]) -> Response:
    tr: i18n.Translate = request.app.state.tr
    message = tr(key, **fields)
    if is_api(request):
        return JSONResponse({"error": key.removeprefix("error."), "message": message}, status)
    try:
        ctx = context(request)
    except StoreError:  # the database is what failed: the error page without the session
        ctx = Ctx(None, False, _address(request))
    return render(request, "error.html", ctx, status, message=message)


def operator_of(request: Request) -> tuple[Ctx, Operator]:
    ctx = context(request)
    if ctx.session is None or ctx.session.operator is None:
        raise NeedSignIn(expired=ctx.expired)
    return ctx, ctx.session.operator

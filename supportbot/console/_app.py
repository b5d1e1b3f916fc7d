"""The console's ASGI app: sign-in, the session and CSRF checks, error pages, and the routers.

``create_app`` builds it around a :class:`~supportbot.console.service.Console`; the pages
(pages.py) and the JSON API (api.py) are thin layers over that one object.
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import datetime
from pathlib import Path
from typing import Any

from fastapi import FastAPI, Request, Response
from fastapi.responses import HTMLResponse, JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from starlette.middleware.trustedhost import TrustedHostMiddleware

from .. import i18n
from ..errors import (
    ApprovalNotPending,
    ClaimConflict,
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
from ..memory._facts import FACT_LABELS_EN, FACT_LABELS_ZH
from ._security import COOKIE, BadCsrf, Forbidden, NeedSignIn, Session, Sessions
from ._service import Console
from ._users import Operator, Throttle, Users

HERE = Path(__file__).resolve().parent
log = logging.getLogger("supportbot.console")


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
    sessions: Sessions = request.app.state.sessions
    session, expired = sessions.get(request.cookies.get(COOKIE))
    address = request.client.host if request.client else "unknown"
    return Ctx(session, expired, address)


def create_app(
    console: Console,
    users: Users,
    *,
    secure_cookies: bool,
    lang: i18n.Language | None = None,
    sessions: Sessions | None = None,
    throttle: Throttle | None = None,
    allowed_hosts: list[str] | None = None,
) -> FastAPI:
    # The OpenAPI description is served by an authenticated route in api.py, not the public default.
    app = FastAPI(title="supportbot console", docs_url=None, redoc_url=None, openapi_url=None)
    tr = i18n.translator("console", lang)
    app.state.console = console
    app.state.users = users
    app.state.sessions = sessions if sessions is not None else Sessions()
    app.state.throttle = throttle if throttle is not None else Throttle()
    app.state.secure_cookies = secure_cookies
    app.state.tr = tr
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(t=tr, lang=tr.language, when=when, waited=lambda s: waited(tr, s))
    common = i18n.translator("common", tr.language)
    templates.env.filters["status"] = lambda s: _label(common, "status", s)
    templates.env.filters["outcome"] = lambda s: _label(common, "outcome", s) if s else "—"
    labels = FACT_LABELS_ZH if tr.language == "zh" else FACT_LABELS_EN
    templates.env.filters["fact_kind"] = lambda kind: labels.get(kind, kind)
    app.state.templates = templates
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.middleware("http")(_headers)
    if allowed_hosts:  # a page on another site resolving its name to 127.0.0.1 gets nothing (DNS rebinding)
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    _handle_errors(app)
    from . import _api as api
    from . import _pages as pages

    app.include_router(pages.router)
    app.include_router(api.router)
    return app


def _label(common: i18n.Translate, group: str, value: str) -> str:
    """A status or outcome in the page's language: the common catalog's, else the console's own
    (for values the engine gained after the common catalog), else the value as it is."""
    key = f"{group}.{value}"
    for domain in ("common", "console"):
        texts = i18n.catalog(domain, common.language)
        if key in texts:
            return texts[key]
    return value


async def _headers(request: Request, call_next: Callable[[Request], Awaitable[Response]]) -> Response:
    response = await call_next(request)
    # No script or frame from anywhere else; pages are never cached (they show customer data).
    response.headers["Content-Security-Policy"] = (
        "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; form-action 'self'"
    )
    response.headers["X-Frame-Options"] = "DENY"
    response.headers["X-Content-Type-Options"] = "nosniff"
    response.headers["Referrer-Policy"] = "same-origin"
    if not request.url.path.startswith("/static/"):
        response.headers["Cache-Control"] = "no-store"
    return response


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


def when(moment: datetime | None) -> str:
    return moment.astimezone().strftime("%Y-%m-%d %H:%M") if moment else "—"


def waited(tr: i18n.Translate, seconds: int) -> str:
    if seconds < 3600:
        return tr("waited.minutes", n=seconds // 60)
    if seconds < 86400:
        return tr("waited.hours", n=seconds // 3600, m=seconds % 3600 // 60)
    return tr("waited.days", n=seconds // 86400, h=seconds % 86400 // 3600)


# -- errors ------------------------------------------------------------------------------------


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


def _is_api(request: Request) -> bool:
    return request.url.path.startswith("/api/")


def _handle_errors(app: FastAPI) -> None:
    async def need_sign_in(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, NeedSignIn)
        if _is_api(request):
            reason = "session_expired" if exc.expired else "sign_in_required"
            return JSONResponse({"error": reason, "message": app.state.tr(f"error.{reason}")}, 401)
        target = "/login?expired=1" if exc.expired else "/login"
        response = RedirectResponse(target, 303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def forbidden(request: Request, exc: Exception) -> Response:
        return _error(request, 403, "error.forbidden", {})

    async def bad_csrf(request: Request, exc: Exception) -> Response:
        return _error(request, 403, "error.csrf", {})

    async def failed(request: Request, exc: Exception) -> Response:
        status, key, fields = describe(exc)
        if status >= 500:
            # The route's pattern, not its path: paths carry customer emails.
            route = getattr(request.scope.get("route"), "path", "?")
            log.error("%s %s failed", request.method, route, exc_info=(type(exc), exc, exc.__traceback__))
        return _error(request, status, key, fields)

    app.add_exception_handler(NeedSignIn, need_sign_in)
    app.add_exception_handler(Forbidden, forbidden)
    app.add_exception_handler(BadCsrf, bad_csrf)
    app.add_exception_handler(SupportbotError, failed)
    app.add_exception_handler(Exception, failed)


def _error(request: Request, status: int, key: str, fields: dict[str, Any]) -> Response:
    tr: i18n.Translate = request.app.state.tr
    message = tr(key, **fields)
    if _is_api(request):
        return JSONResponse({"error": key.removeprefix("error."), "message": message}, status)
    ctx = context(request)
    return render(request, "error.html", ctx, status, message=message)


def operator_of(request: Request) -> tuple[Ctx, Operator]:
    ctx = context(request)
    if ctx.session is None or ctx.session.operator is None:
        raise NeedSignIn(expired=ctx.expired)
    return ctx, ctx.session.operator

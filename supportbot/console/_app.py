"""The console's ASGI app: sign-in, the session and CSRF checks, error pages, and the routers.

``create_app`` builds it around a :class:`~supportbot.console._service.Console`; the pages
(``_pages.py``) and the JSON API (``_api.py``) are thin layers over that one object, sharing what
``_web.py`` holds.
"""

from __future__ import annotations

import hmac
import logging
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from pathlib import Path
from urllib.parse import urlencode

from fastapi import FastAPI, Request, Response
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, RedirectResponse
from fastapi.staticfiles import StaticFiles
from fastapi.templating import Jinja2Templates
from markupsafe import Markup, escape
from starlette.concurrency import run_in_threadpool
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.middleware.trustedhost import TrustedHostMiddleware

from .. import i18n
from ..errors import SupportbotError
from ..i18n._prompts import fact_labels
from ..reply._findings import basis_text
from ..run import _metrics as metrics
from ..run._values import ServiceClock
from ..run._waiting import listen_url
from . import _api as api
from . import _pages as pages
from ._live import InboxFeed
from ._security import COOKIE, BadCsrf, Forbidden, NeedSignIn, Sessions, StoredSessions
from ._service import STATUSES, Console
from ._users import Throttle, Users
from ._web import describe, error_response, is_api, waited, when, when_text

HERE = Path(__file__).resolve().parent
log = logging.getLogger("supportbot.console")


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
    feed = InboxFeed(listen_url(console.bot.settings, console.store.url), console.store.connect_kwargs)

    @asynccontextmanager
    async def lifespan(_app: FastAPI) -> AsyncIterator[None]:
        yield
        feed.close()

    # The OpenAPI description is served by an authenticated route in _api.py, not the public default.
    app = FastAPI(
        title="supportbot console", docs_url=None, redoc_url=None, openapi_url=None, lifespan=lifespan
    )
    tr = i18n.translator("console", lang)
    app.state.console = console
    app.state.inbox_feed = feed
    app.state.users = users
    app.state.sessions = sessions if sessions is not None else StoredSessions(console.store, users)
    app.state.throttle = throttle if throttle is not None else Throttle()
    app.state.secure_cookies = secure_cookies
    app.state.tr = tr
    templates = Jinja2Templates(directory=str(HERE / "templates"))
    templates.env.globals.update(t=tr, lang=tr.language, when=when, when_text=when_text)
    templates.env.globals.update(
        waited=lambda s: waited(tr, s), tm=lambda key, **kw: _with_markup(tr, key, kw)
    )
    common = i18n.translator("common", tr.language)
    templates.env.filters["status"] = lambda s: _label(common, "status", s)
    templates.env.filters["outcome"] = lambda s: _label(common, "outcome", s) if s else "—"
    labels = fact_labels(tr.language)
    templates.env.filters["fact_kind"] = lambda kind: labels.get(kind, kind)
    templates.env.filters["basis"] = lambda basis: basis_text(basis, tr.language)
    templates.env.filters["step"] = lambda step: _label(tr, "step", step)
    templates.env.filters["source"] = lambda source: _source(tr, source)
    templates.env.filters["detail"] = lambda detail: _detail(tr, detail)
    templates.env.filters["excerpt"] = _excerpt
    templates.env.globals.update(statuses=STATUSES, query=_search_query, superseded=_superseded)
    templates.env.globals.update(
        clock_text=lambda clock: _clock_text(tr, clock), operators=users.names(), teams=list(users.teams())
    )
    app.state.templates = templates
    app.mount("/static", StaticFiles(directory=str(HERE / "static")), name="static")
    app.middleware("http")(_headers)
    if allowed_hosts:  # a page on another site resolving its name to 127.0.0.1 gets nothing (DNS rebinding)
        app.add_middleware(TrustedHostMiddleware, allowed_hosts=allowed_hosts)
    _handle_errors(app)
    app.add_api_route("/metrics", _metrics, methods=["GET"], include_in_schema=False)
    app.include_router(pages.router)
    app.include_router(api.router)
    return app


def _label(common: i18n.Translate, group: str, value: str) -> str:
    """A code name (a status, an outcome, a step, an audit detail's key) in the page's language:
    the common catalog's, else the console's own, else the value as it is (a name a newer version
    records is shown rather than failing)."""
    key = f"{group}.{value}"
    for domain in ("common", "console"):
        texts = i18n.catalog(domain, common.language)
        if key in texts:
            return texts[key]
    return value


def _with_markup(tr: i18n.Translate, key: str, fields: dict[str, object]) -> Markup:
    """A catalogue sentence holding markup arguments (a ``<time>`` element): the sentence and every
    other argument are escaped, the markup ones kept."""
    return escape(i18n.catalog("console", tr.language)[key]).format(**fields)


def _excerpt(content: str, searched: str, before: int = 40, after: int = 100) -> Markup:
    """The part of a turn around the searched text, the match marked."""
    at = content.lower().find(searched.lower()) if searched else -1
    if at < 0:
        return escape(content[: before + after]) + ("…" if len(content) > before + after else "")
    start, end = max(0, at - before), min(len(content), at + len(searched) + after)
    return Markup("{}{}<mark>{}</mark>{}{}").format(
        "…" if start else "",
        content[start:at],
        content[at : at + len(searched)],
        content[at + len(searched) : end],
        "…" if end < len(content) else "",
    )


def _clock_text(tr: i18n.Translate, clock: ServiceClock) -> str:
    """ "Reply: 25 min left" / "Decision: 1 h 10 min overdue" in the page's language."""
    seconds = abs(clock.seconds_left)
    time = (
        tr("clock.hours", h=seconds // 3600, m=seconds % 3600 // 60)
        if seconds >= 3600
        else tr("clock.minutes", m=seconds // 60)
    )
    key = "clock.overdue" if clock.breached else "clock.left"
    return tr(key, kind=tr(f"clock.kind.{clock.kind}"), time=time)


def _superseded(facts: list[object]) -> set[int]:
    """Ledger positions a later fact replaced (facts given as dicts, on the approval page: none)."""
    return {s for f in facts if isinstance(s := getattr(f, "supersedes", None), int)}


def _search_query(asked: dict[str, str], page: int) -> str:
    return urlencode({**{k: v for k, v in asked.items() if v}, "page": page})


def _source(tr: i18n.Translate, source: str) -> str:
    """Where an audited action came from: "console 10.0.0.7" in words, the address kept."""
    kind, _, rest = source.partition(" ")
    return " ".join(part for part in (_label(tr, "source", kind), rest) if part)


def _detail(tr: i18n.Translate, detail: dict[str, object]) -> list[tuple[str, str]]:
    """An audit entry's details as (label, value) pairs in the page's language."""

    def text(value: object) -> str:
        if isinstance(value, bool):
            return tr("audit.yes") if value else tr("audit.no")
        return str(value)

    return [(_label(tr, "audit.key", key), text(value)) for key, value in detail.items()]


async def _metrics(request: Request) -> Response:
    """Prometheus metrics (run/_metrics.py) for a scraper holding Settings.metrics_token; off
    (404) without one. Not a signed-in page: a monitoring system has no session."""
    console: Console = request.app.state.console
    token = console.bot.settings.metrics_token
    if not token:
        return Response(status_code=404)
    given = request.headers.get("authorization", "")
    if not hmac.compare_digest(given.encode(), f"Bearer {token}".encode()):
        return Response(status_code=401, headers={"WWW-Authenticate": "Bearer"})
    text = await run_in_threadpool(metrics.exposition, console.store, console.bot.settings, console.clock())
    return Response(text, media_type=metrics.CONTENT_TYPE)


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


# -- errors ------------------------------------------------------------------------------------


def _handle_errors(app: FastAPI) -> None:
    async def need_sign_in(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, NeedSignIn)
        if is_api(request):
            reason = "session_expired" if exc.expired else "sign_in_required"
            return JSONResponse({"error": reason, "message": app.state.tr(f"error.{reason}")}, 401)
        target = "/login?expired=1" if exc.expired else "/login"
        response = RedirectResponse(target, 303)
        response.delete_cookie(COOKIE, path="/")
        return response

    async def forbidden(request: Request, exc: Exception) -> Response:
        return error_response(request, 403, "error.forbidden", {})

    async def bad_csrf(request: Request, exc: Exception) -> Response:
        return error_response(request, 403, "error.csrf", {})

    async def failed(request: Request, exc: Exception) -> Response:
        status, key, fields = describe(exc)
        if status >= 500:
            # The route's pattern, not its path: paths carry customer emails.
            route = getattr(request.scope.get("route"), "path", "?")
            log.error("%s %s failed", request.method, route, exc_info=(type(exc), exc, exc.__traceback__))
        return error_response(request, status, key, fields)

    async def bad_request(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, RequestValidationError)
        if is_api(request):  # the API keeps FastAPI's documented 422 body, which clients parse
            return await request_validation_exception_handler(request, exc)
        # The names of the fields, never their values: a value may be customer data.
        fields = sorted({str(error["loc"][-1]) for error in exc.errors() if error.get("loc")})
        return error_response(request, 422, "error.bad_request", {"fields": ", ".join(fields) or "?"})

    async def http_error(request: Request, exc: Exception) -> Response:
        assert isinstance(exc, StarletteHTTPException)
        if is_api(request):
            return await http_exception_handler(request, exc)
        key = {404: "error.not_found", 405: "error.method_not_allowed"}.get(exc.status_code, "error.invalid")
        return error_response(request, exc.status_code, key, {})

    app.add_exception_handler(RequestValidationError, bad_request)
    app.add_exception_handler(StarletteHTTPException, http_error)
    app.add_exception_handler(NeedSignIn, need_sign_in)
    app.add_exception_handler(Forbidden, forbidden)
    app.add_exception_handler(BadCsrf, bad_csrf)
    app.add_exception_handler(SupportbotError, failed)
    app.add_exception_handler(Exception, failed)

"""The HTTP API: an ASGI app (FastAPI) over ``AsyncSupportBot`` for a customer-facing client.

Routes (``/openapi.json`` describes them; ``docs/http-api.md`` is generated from it):

    POST /v1/tickets                       open a ticket with the customer's first message
    POST /v1/tickets/{ticket_id}/messages  a customer message (``Idempotency-Key``: its message_id)
    GET  /v1/tickets/{ticket_id}           the ticket's status and its conversation
    GET  /v1/tickets/{ticket_id}/events    Server-Sent Events: each new turn as it is stored
    GET  /chat                             a page to try it as a customer would

The two POSTs answer with the round's result as JSON, or, asked with ``Accept:
text/event-stream``, follow the round as it runs: ``step`` events (``reading``, ``drafting``, …),
then one of ``reply``, ``waiting`` (a person decides a refund or has the ticket), ``queued``. A
client that goes away does not stop the round: the message is stored and answered, and
``GET …/events`` shows the answer.

Every ``/v1`` call presents an integration's key (``Authorization: Bearer sbk_…``), made and
revoked with ``python -m supportbot serve --add-key``; a key acts only for its customers (a ticket
of another customer is not found), at most ``rate_per_minute`` times a minute. Bodies are bounded
(``max_body`` bytes). Operators' endpoints stay in the console.
"""

from __future__ import annotations

import asyncio
import html
import json
import logging
import time
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass
from importlib import resources
from typing import Annotated, Any, Literal

from fastapi import Depends, FastAPI, Header, Request
from fastapi.responses import HTMLResponse, JSONResponse, Response, StreamingResponse
from pydantic import BaseModel, Field
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from .. import i18n
from .._front._bot_async import AsyncSupportBot
from ..config import Settings
from ..errors import (
    IdempotencyConflict,
    InvalidInput,
    NotFound,
    StoreBusy,
    StoreError,
    SupportbotError,
    TicketBusy,
)
from ..run._rounds import RoundResult
from ..store._failures import no_ticket
from . import _keys as keys

log = logging.getLogger("supportbot.http")

MAX_BODY = 64 * 1024  # bytes: a message is at most 20,000 characters, in JSON
KEY_CACHE_SECONDS = 2.0  # a revoked key stops working within this long
FOLLOW_RECHECK = 0.5  # seconds between reads of a followed ticket's turn count
KEEP_ALIVE = 15.0  # seconds between comments on a quiet event stream (proxies close idle ones)

# Steps as a customer-facing client names them while it waits (``step`` events).
PROGRESS = {
    "start_round": "reading",
    "load_customer": "reading",
    "prepare_context": "reading",
    "classify": "reading",
    "retrieve": "searching",
    "act": "checking_account",
    "draft": "drafting",
    "check": "checking",
    "respond": "sending",
    "finalize": "sending",
    "handoff": "handing_off",
    "approval": "waiting_for_a_person",
}


# -- what goes over the wire --------------------------------------------------------------------


class NewTicket(BaseModel):
    email: str = Field(max_length=254, description="The customer's address (one the key may act for).")
    subject: str = Field("", max_length=200, description="Defaults to the start of the message.")
    message: str = Field(min_length=1, max_length=20000, description="The customer's first message.")


class NewMessage(BaseModel):
    message: str = Field(min_length=1, max_length=20000, description="What the customer wrote.")


class Round(BaseModel):
    """The round that answered (or took up) the message."""

    ticket_id: str
    round: int
    outcome: Literal["resolved", "waiting_approval", "escalated", "queued", "with_human"]
    reply: str = Field(description="What the customer is told; empty while nothing was said yet.")


class Turn(BaseModel):
    idx: int
    role: Literal["customer", "agent"]
    content: str
    created_at: str


class Ticket(BaseModel):
    ticket_id: str
    status: str
    turns: list[Turn]


class Problem(BaseModel):
    error: str = Field(description="The error's name, e.g. UnknownTicket, TicketBusy, RateLimited.")
    message: str
    retry_after: float | None = None


_AS_EVENTS: dict[str, Any] = {
    "content": {"text/event-stream": {}},
    "description": (
        "The round's result; with Accept: text/event-stream, its events"
        " (step…, then reply, waiting or queued)."
    ),
}
_ANSWERS: dict[int | str, dict[str, Any]] = {
    401: {"model": Problem, "description": "No key, or a key that is unknown or revoked."},
    403: {"model": Problem, "description": "The key does not act for that customer."},
    404: {"model": Problem, "description": "No such ticket for this key's customers."},
    409: {"model": Problem, "description": "A message id reused for other words, or the ticket is busy."},
    413: {"model": Problem, "description": "The body is over the limit."},
    422: {"model": Problem, "description": "Bad input; the message says what to send instead."},
    429: {"model": Problem, "description": "Over the key's rate; see Retry-After."},
    503: {"model": Problem, "description": "The database is busy or away; retry."},
}


# -- the app --------------------------------------------------------------------------------------


@dataclass(slots=True)
class _Caller:
    key_id: str
    customers: list[str]


class _Keys:
    """The keys presented, checked against the table (each row cached for ``KEY_CACHE_SECONDS``)."""

    def __init__(self, bot: AsyncSupportBot) -> None:
        self._bot = bot
        self._rows: dict[str, tuple[float, Any]] = {}
        self.limits = keys.RateLimits()

    async def caller(self, authorization: str | None) -> _Caller:
        presented = (authorization or "").removeprefix("Bearer ").strip()
        parsed = keys.parse(presented) if presented else None
        if parsed is None:
            raise _Refused(401, "Unauthorized", "present an API key: Authorization: Bearer sbk_…")
        key_id, secret = parsed
        cached = self._rows.get(key_id)
        if cached is None or time.monotonic() - cached[0] > KEY_CACHE_SECONDS:
            async with self._bot._store.connection() as conn:
                row = await self._bot._store.keys.key(conn, key_id)
            cached = (time.monotonic(), row)
            self._rows[key_id] = cached
        row = cached[1]
        if row is None or row.revoked_at is not None or not keys.matches(secret, row.secret_sha256):
            raise _Refused(401, "Unauthorized", "the API key is unknown or revoked")
        wait = self.limits.take(key_id, row.rate_per_minute)
        if wait:
            raise _Refused(
                429, "RateLimited", f"over {row.rate_per_minute} requests a minute", retry_after=wait
            )
        return _Caller(key_id, list(row.customers))


async def _caller(request: Request, authorization: Annotated[str | None, Header()] = None) -> _Caller:
    keys_: _Keys = request.app.state.supportbot_keys
    return await keys_.caller(authorization)


Caller = Annotated[_Caller, Depends(_caller)]


class _Refused(Exception):
    def __init__(self, status: int, error: str, message: str, *, retry_after: float | None = None) -> None:
        super().__init__(message)
        self.status, self.error, self.message, self.retry_after = status, error, message, retry_after


def create_app(
    bot: AsyncSupportBot | None = None,
    *,
    settings: Settings | None = None,
    max_body: int = MAX_BODY,
    lang: i18n.Language | None = None,
) -> FastAPI:
    """The HTTP API as an ASGI app. With ``bot`` it serves that bot (the host opens and closes
    it); without, it opens one from ``settings`` (default: the environment) for its lifespan.
    ``lang``: the chat page's language (default: SUPPORTBOT_LANG, then the locale)."""
    state: dict[str, Any] = {}
    running: set[asyncio.Task[RoundResult]] = set()  # rounds whose client may have gone: kept alive

    @asynccontextmanager
    async def lifespan(_: FastAPI) -> AsyncIterator[None]:
        if bot is not None:
            state["bot"] = bot
            app.state.supportbot_keys = _Keys(bot)
            yield
            return
        async with AsyncSupportBot.open(settings=settings) as opened:
            state["bot"] = opened
            app.state.supportbot_keys = _Keys(opened)
            yield
            if running:
                await asyncio.wait(running, timeout=opened.settings.worker_shutdown_seconds)

    app = FastAPI(
        title="supportbot HTTP API",
        version="1",
        description="Customer-facing tickets over AsyncSupportBot; keys: `supportbot serve --add-key`.",
        lifespan=lifespan,
        docs_url=None,  # Swagger UI loads from a CDN: nothing at run time comes from the network
        redoc_url=None,
    )
    app.add_middleware(_BoundedBody, limit=max_body)

    def the_bot() -> AsyncSupportBot:
        found: AsyncSupportBot = state["bot"]
        return found

    async def allowed_ticket(ticket_id: str, who: _Caller) -> str:
        row = await the_bot().ticket(ticket_id)
        if not keys.allows(who.customers, row.customer_email):
            raise no_ticket(ticket_id)  # the very answer a ticket that does not exist gets
        return row.id

    @app.exception_handler(_Refused)
    async def refused(_: Request, exc: _Refused) -> Response:
        return _problem(exc.status, exc.error, exc.message, exc.retry_after)

    @app.exception_handler(SupportbotError)
    async def failed(_: Request, exc: SupportbotError) -> Response:
        return _problem(*_status_of(exc), retry_after=getattr(exc, "retry_after", None))

    @app.post(
        "/v1/tickets",
        status_code=201,
        response_model=Round,
        responses={**_ANSWERS, 200: _AS_EVENTS},
        summary="Open a ticket with the customer's first message",
    )
    async def open_ticket(body: NewTicket, who: Caller, accept: Annotated[str, Header()] = "") -> Response:
        if not keys.allows(who.customers, body.email):
            raise _Refused(403, "Forbidden", "this key does not act for that customer")
        bot_ = the_bot()
        if "text/event-stream" in accept:
            # The ticket is made first, without its round, so that its id can be followed.
            submitted = await bot_.open_ticket(
                body.email, subject=body.subject, body=body.message, wait=False
            )
            return _events(bot_, submitted.ticket_id, lambda: bot_.resume(submitted.ticket_id), running)
        result = await bot_.open_ticket(body.email, subject=body.subject, body=body.message)
        return JSONResponse(_round(result), status_code=201)

    @app.post(
        "/v1/tickets/{ticket_id}/messages",
        response_model=Round,
        responses={**_ANSWERS, 200: _AS_EVENTS},
        summary="Add a customer message and answer it",
    )
    async def send(
        ticket_id: str,
        body: NewMessage,
        who: Caller,
        accept: Annotated[str, Header()] = "",
        idempotency_key: Annotated[str | None, Header(max_length=255)] = None,
    ) -> Response:
        ticket_id = await allowed_ticket(ticket_id, who)
        bot_ = the_bot()
        if "text/event-stream" in accept:
            return _events(
                bot_,
                ticket_id,
                lambda: bot_.send(ticket_id, body.message, message_id=idempotency_key),
                running,
            )
        result = await bot_.send(ticket_id, body.message, message_id=idempotency_key)
        return JSONResponse(_round(result))

    @app.get(
        "/v1/tickets/{ticket_id}",
        response_model=Ticket,
        responses=_ANSWERS,
        summary="The ticket's status and conversation",
    )
    async def ticket(ticket_id: str, who: Caller) -> Ticket:
        ticket_id = await allowed_ticket(ticket_id, who)
        bot_ = the_bot()
        state_ = await bot_.state(ticket_id)
        row = await bot_.ticket(ticket_id)
        return Ticket(ticket_id=ticket_id, status=row.status, turns=_turns(state_.turns, 0))

    @app.get(
        "/v1/tickets/{ticket_id}/events",
        responses={**_ANSWERS, 200: {"content": {"text/event-stream": {}}, "description": "turn events."}},
        summary="Follow the ticket: each new turn as it is stored (Server-Sent Events)",
    )
    async def follow(ticket_id: str, who: Caller, after: int = 0) -> StreamingResponse:
        """``turn`` events for the turns from position ``after`` on, as they are stored; a comment
        every 15 s keeps the stream open. Reconnect with ``after`` = the last idx + 1."""
        ticket_id = await allowed_ticket(ticket_id, who)
        if after < 0:
            raise InvalidInput("after must be 0 or more", after=after)
        return StreamingResponse(_follow(the_bot(), ticket_id, after), media_type="text/event-stream")

    @app.get("/chat", response_class=HTMLResponse, include_in_schema=False)
    async def chat() -> HTMLResponse:
        return HTMLResponse(_chat_page(lang or i18n.language()), headers=_PAGE_HEADERS)

    @app.get("/chat.js", include_in_schema=False)
    async def chat_script() -> Response:
        script = resources.files(__package__).joinpath("static/chat.js").read_text(encoding="utf-8")
        return Response(script, media_type="text/javascript", headers={"Cache-Control": "no-cache"})

    return app


# -- answers --------------------------------------------------------------------------------------


def _round(result: RoundResult) -> dict[str, object]:
    return {
        "ticket_id": result.ticket_id,
        "round": result.round,
        "outcome": result.outcome,
        "reply": result.reply,
    }


def _turns(turns: Any, start: int) -> list[Turn]:
    return [
        Turn(idx=t.idx, role=t.role, content=t.content, created_at=t.created_at.isoformat())
        for t in turns[start:]
        if t.role in ("customer", "agent") and t.idx is not None
    ]


def _status_of(exc: SupportbotError) -> tuple[int, str, str]:
    status = 500
    if isinstance(exc, NotFound):
        status = 404
    elif isinstance(exc, IdempotencyConflict | TicketBusy):
        status = 409
    elif isinstance(exc, InvalidInput):
        status = 422
    elif isinstance(exc, StoreBusy | StoreError):
        status = 503
    if status == 500:  # a bug or a state the API cannot help with: logged by type only
        log.error("request failed: %s", type(exc).__name__)
    return status, type(exc).__name__, str(exc) if status != 500 else "the request failed; try again later"


def _problem(status: int, error: str, message: str, retry_after: float | None = None) -> Response:
    headers = {"Retry-After": str(max(1, round(retry_after)))} if retry_after else None
    body = {"error": error, "message": message, "retry_after": retry_after}
    return JSONResponse(body, status_code=status, headers=headers)


def _sse(event: str, data: object) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, ensure_ascii=False)}\n\n".encode()


_FINAL = {"resolved": "reply", "waiting_approval": "waiting", "escalated": "waiting", "with_human": "waiting"}


def _events(
    bot: AsyncSupportBot,
    ticket_id: str,
    run: Callable[[], Awaitable[RoundResult | None]],
    running: set[asyncio.Task[RoundResult]],
) -> StreamingResponse:
    """The round ``run`` starts, as events: ``step`` as each step starts, then its result. The round
    runs as a task of its own, which a client that goes away does not cancel."""

    async def stream() -> AsyncIterator[bytes]:
        steps: asyncio.Queue[str] = asyncio.Queue()
        with bot._engine.watching(ticket_id, steps.put_nowait):
            task = asyncio.create_task(_result(run, ticket_id))
            running.add(task)
            task.add_done_callback(running.discard)
            shown = None
            yield _sse("ticket", {"ticket_id": ticket_id})
            while not task.done():
                getting = asyncio.ensure_future(steps.get())
                try:
                    await asyncio.wait({getting, task}, return_when=asyncio.FIRST_COMPLETED)
                finally:  # also when the client went away while this waited
                    if not getting.done():
                        getting.cancel()
                if getting.done() and not getting.cancelled():
                    progress = PROGRESS.get(getting.result())
                    if progress and progress != shown:
                        shown = progress
                        yield _sse("step", {"step": progress})
        try:
            result = await asyncio.shield(task)
        except SupportbotError as exc:
            status, error, message = _status_of(exc)
            yield _sse("error", {"status": status, "error": error, "message": message})
            return
        yield _sse(_FINAL.get(result.outcome, "queued"), _round(result))

    return StreamingResponse(stream(), media_type="text/event-stream", headers={"Cache-Control": "no-cache"})


async def _result(run: Callable[[], Awaitable[RoundResult | None]], ticket_id: str) -> RoundResult:
    result = await run()
    return result if result is not None else RoundResult(ticket_id=ticket_id, round=0, outcome="queued")


async def _follow(bot: AsyncSupportBot, ticket_id: str, after: int) -> AsyncIterator[bytes]:
    sent = after
    quiet_since = time.monotonic()
    while True:
        stored = (await bot.ticket(ticket_id)).turn_count
        if stored > sent:
            state = await bot.state(ticket_id)
            for turn in _turns(state.turns, sent):
                yield _sse("turn", turn.model_dump())
            sent = stored
            quiet_since = time.monotonic()
        elif time.monotonic() - quiet_since > KEEP_ALIVE:
            yield b": keep-alive\n\n"
            quiet_since = time.monotonic()
        await asyncio.sleep(FOLLOW_RECHECK)


# -- the chat page --------------------------------------------------------------------------------

_PAGE_HEADERS = {
    "Content-Security-Policy": "default-src 'self'; style-src 'self' 'unsafe-inline'; frame-ancestors 'none'",
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
}


def _chat_page(lang: str) -> str:
    words = i18n.catalog("http", "en" if lang == "en" else "zh")
    page = resources.files(__package__).joinpath("static/chat.html").read_text(encoding="utf-8")
    texts = {k.removeprefix("chat."): v for k, v in words.items() if k.startswith("chat.")}
    page = page.replace("__LANG__", "en" if lang == "en" else "zh-CN")
    page = page.replace("__TEXTS__", json.dumps(texts, ensure_ascii=False).replace("<", "\\u003c"))
    for name, text in texts.items():
        page = page.replace(f"__{name}__", html.escape(text))
    return page


# -- bounded bodies -------------------------------------------------------------------------------


class _BoundedBody:
    """Refuses a request body over ``limit`` bytes (413) before the app reads it all: by its
    Content-Length when it says one, else as its chunks arrive."""

    def __init__(self, app: ASGIApp, limit: int) -> None:
        self.app, self.limit = app, limit

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http":
            await self.app(scope, receive, send)
            return
        length = dict(scope.get("headers") or []).get(b"content-length")
        if length is not None and (not length.isdigit() or int(length) > self.limit):
            await _too_large(self.limit)(scope, receive, send)
            return
        seen = 0

        async def bounded() -> Message:
            nonlocal seen
            message = await receive()
            if message["type"] == "http.request":
                seen += len(message.get("body", b""))
                if seen > self.limit:
                    raise _TooLarge
            return message

        try:
            await self.app(scope, bounded, send)
        except _TooLarge:
            await _too_large(self.limit)(scope, receive, send)


class _TooLarge(Exception):
    pass


def _too_large(limit: int) -> ASGIApp:
    return _problem(413, "TooLarge", f"the body is over {limit} bytes")

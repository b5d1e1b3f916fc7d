"""The interactive `chat` command: a ticket conversation in the terminal, streamed as it is drafted.

Kept apart from cli/_main.py because it is the only command that holds a terminal session: it owns a
prompt loop, streams draft text, asks for approvals inline and must leave cleanly on Ctrl+C.
"""

from __future__ import annotations

import os
import select
import shlex
import sys
from collections.abc import Callable, Sequence
from contextlib import AbstractContextManager
from functools import partial
from typing import Any, TextIO, TypeVar

from pydantic import BaseModel

from .._front._bot import SupportBot
from .._state import SupportState, Turn
from ..config import Settings
from ..errors import InvalidInput
from ..i18n import Translate, error_text, label, translator
from ..llm._factory import models_from_settings
from ..llm.base import LLM, Completion, Message
from ..run._rounds import RoundResult

T = TypeVar("T")

SHOWN_TURNS = 20  # on resume; `show` prints every turn

OpenBot = Callable[..., AbstractContextManager[SupportBot]]


# -- terminal helpers ------------------------------------------------------------------------


def _styled(stream: TextIO) -> bool:
    # Escape codes only where a person is watching; NO_COLOR is the common opt-out.
    return stream.isatty() and "NO_COLOR" not in os.environ


def dim(text: str, stream: TextIO) -> str:
    return f"\033[2m{text}\033[0m" if _styled(stream) else text


class Progress:
    """A one-line "working…" on stderr while a round waits on the model.

    Shown only on a terminal, where it can be erased again; a log file would collect one stray
    line per round, which is noise, not progress.
    """

    def __init__(self, text: str, stream: TextIO | None = None) -> None:
        self._text = text
        self._stream = stream or sys.stderr
        self._shown = False

    def show(self) -> None:
        if self._stream.isatty():
            self._stream.write(self._text)
            self._stream.flush()
            self._shown = True

    def clear(self) -> None:
        if self._shown:
            self._stream.write("\r\033[K")
            self._stream.flush()
            self._shown = False


def ask(prompt: str) -> str:
    """input(), except that Ctrl+C interrupts it every time.

    On a terminal input() blocks in read(2) and sees SIGINT only by that read being interrupted:
    a Ctrl+C landing between the prompt being printed and the read starting stays pending until
    the next Enter (the interactive test hit this on a loaded machine). Waiting in select() with a
    timeout returns to the interpreter often enough for the pending KeyboardInterrupt to fire.
    """
    if not sys.stdin.isatty():
        return input(prompt)
    sys.stdout.write(prompt)
    sys.stdout.flush()
    fd = sys.stdin.fileno()
    while not select.select([fd], [], [], 0.2)[0]:
        pass
    data = os.read(fd, 1 << 16)  # the terminal is in line mode: one read, one line
    if not data:
        raise EOFError
    return data.decode(errors="replace").rstrip("\n")


class DraftStream:
    """Prints draft text as the model produces it, dimmed and marked, since it is not yet the reply.

    The check step may reject a draft (a redraft follows) and finalize rewrites citations as links
    and may append a refund decision, so what streams is labelled "drafting" and the reply actually
    sent is printed afterwards whenever it differs.
    """

    def __init__(self, out: TextIO, progress: Progress, t: Translate) -> None:
        self._out, self._progress, self._t = out, progress, t
        self._drafts: list[str] = []
        self._open_line = False

    def new_round(self) -> None:
        self._drafts = []

    def start_draft(self) -> None:
        self.finish()
        self._progress.clear()
        text = (
            self._t("chat.drafting")
            if not self._drafts
            else self._t("chat.redrafting", n=len(self._drafts) + 1)
        )
        self._out.write(dim(f"… {text}\n", self._out))
        self._out.flush()
        self._drafts.append("")

    def token(self, piece: str) -> None:
        self._progress.clear()
        if not self._drafts:
            self._drafts.append("")
        self._drafts[-1] += piece
        self._out.write(dim(piece, self._out))
        self._out.flush()
        self._open_line = not piece.endswith("\n")

    def finish(self) -> None:
        if self._open_line:
            self._out.write("\n")
            self._open_line = False

    @property
    def last_draft(self) -> str:
        return self._drafts[-1] if self._drafts else ""


class _AnnouncingModel:
    """The main model, telling the stream when a new draft begins (the only free-text call it gets)."""

    def __init__(self, llm: LLM, on_start: Callable[[], None]) -> None:
        self._llm, self._on_start = llm, on_start

    def chat(
        self, messages: Sequence[Message], *, schema: type[BaseModel] | None = None, temperature: float = 0.0
    ) -> Completion:
        if schema is None:
            self._on_start()
        return self._llm.chat(messages, schema=schema, temperature=temperature)


# -- the memory line -------------------------------------------------------------------------


def context_text(usage: dict[str, int], t: Translate) -> str:
    """Prompt tokens used of the budget, when the context builder reported them."""
    if "total" not in usage or "budget" not in usage:
        return t("context.unknown")
    total, budget = usage["total"], usage["budget"]
    share = t("context.share", percent=total * 100 // budget) if budget > 0 else ""
    return t("context.used", total=total, budget=budget, share=share)


def clip(text: str, limit: int) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= limit else flat[: limit - 1] + "…"


def memory_line(state: SupportState, t: Translate) -> str:
    profile = t("chat.profile", text=clip(state.profile, 30)) if state.profile else t("chat.no_profile")
    return t(
        "chat.memory",
        turns=len(state.turns),
        folded=state.summarized_upto,
        facts=len(state.facts),
        profile=profile,
        context=context_text(state.context_usage, t),
    )


def resume_command(ticket_id: str, database_url: str | None) -> str:
    # The URL goes in only when it was typed on the command line: from the environment it is
    # still there next time, and a password in it is already in the shell's history either way.
    parts = ["python", "-m", "supportbot", "chat", "--ticket", ticket_id]
    if database_url:
        parts += ["--database-url", database_url]
    return shlex.join(parts)


# -- the session -----------------------------------------------------------------------------


class ChatSession:
    def __init__(
        self,
        bot: SupportBot,
        stream: DraftStream,
        progress: Progress,
        *,
        approver: str,
        out: TextIO,
        t: Translate,
    ) -> None:
        self.bot, self.stream, self.progress = bot, stream, progress
        self.approver, self.out, self.t = approver, out, t
        self.common = translator("common", t.language)
        self.ticket_id: str | None = None

    def say(self, text: str = "") -> None:
        print(text, file=self.out, flush=True)

    def open(self, email: str, message: str, subject: str) -> None:
        self.say(self.t("chat.opening", email=email, message=message))
        result = self._round(lambda: self.bot.open_ticket(email, subject=subject, body=message))
        self.ticket_id = result.ticket_id
        self.say(self.t("chat.created", ticket=result.ticket_id))
        self.after_round(result)

    def resume(self, ticket_id: str) -> None:
        state = self.bot.state(ticket_id)  # unknown ticket: the error ends the command with exit 1
        self.ticket_id = ticket_id
        ticket = state.ticket
        self.say(self.t("show.title", ticket=ticket.id, email=ticket.customer_email, subject=ticket.subject))
        self._print_turns(state.turns)
        self.say(dim(memory_line(state, self.t), self.out))
        # Finishes a round an earlier process left behind, or reports the refund still waiting.
        result = self._round(lambda: self.bot.resume(ticket_id))
        if result is not None:
            self.after_round(result)

    def loop(self) -> None:
        assert self.ticket_id is not None
        self.say(self.t("chat.instructions"))
        prompt = label(self.common, "role", "customer") + "> "
        while True:
            message = ask(prompt).strip()
            if not message:
                continue
            ticket_id = self.ticket_id
            try:
                result = self._round(partial(self.bot.send, ticket_id, message))
            except InvalidInput as exc:  # nothing was stored: say why and let the operator retype
                print(self.t("error", message=error_text(exc, self.t.language)), file=sys.stderr, flush=True)
                continue
            self.after_round(result)

    def after_round(self, result: RoundResult) -> None:
        if result.outcome == "waiting_approval":
            result = self._ask_approval(result)
        self._print_result(result)
        self.say(dim(memory_line(self.bot.state(result.ticket_id), self.t), self.out))

    def _round(self, run: Callable[[], T]) -> T:
        self.stream.new_round()
        self.progress.show()
        try:
            return run()
        finally:
            self.settle()

    def settle(self) -> None:
        """Erase the progress line and end a half-streamed line, before anything else is printed."""
        self.progress.clear()
        self.stream.finish()

    def _ask_approval(self, result: RoundResult) -> RoundResult:
        refund = self.bot.state(result.ticket_id).refund_request
        if refund is not None:
            self.say(
                self.t(
                    "chat.refund",
                    id=refund.id,
                    amount=refund.amount,
                    currency=refund.currency,
                    invoice=refund.invoice_id,
                )
            )
        answer = ask(self.t("chat.approve_prompt")).strip().lower()
        approved = answer in ("y", "yes", "是")
        decided = self.t("approved" if approved else "rejected")
        self.say(self.t("chat.decided", decision=decided, by=self.approver))
        decide = self.bot.approve if approved else self.bot.reject
        return self._round(lambda: decide(result.ticket_id, approver=self.approver))

    def _print_result(self, result: RoundResult) -> None:
        outcome = label(self.common, "outcome", result.outcome)
        if result.outcome == "queued":
            self.say(self.t("chat.queued"))
        elif result.reply and result.reply.strip() == self.stream.last_draft.strip():
            self.say(self.t("chat.draft_sent", outcome=outcome, round=result.round))
        elif result.reply:
            self.say(self.t("chat.sent", outcome=outcome, round=result.round))
            self.say(result.reply)

    def _print_turns(self, turns: Sequence[Turn]) -> None:
        if len(turns) > SHOWN_TURNS:
            self.say(dim(self.t("chat.earlier", n=len(turns) - SHOWN_TURNS), self.out))
        for turn in turns[-SHOWN_TURNS:]:
            self.say(f"{label(self.common, 'role', turn.role)}> {turn.content}")


def run_chat(args: Any, settings: Settings, open_bot: OpenBot) -> int:
    out = sys.stdout
    t = translator("cli", args.language)
    progress = Progress(t("chat.working"))
    stream = DraftStream(out, progress, t)
    llm, small_llm = models_from_settings(settings, on_token=stream.token)
    approver = args.by or os.environ.get("USER") or "operator"
    with open_bot(llm=_AnnouncingModel(llm, stream.start_draft), small_llm=small_llm) as bot:
        session = ChatSession(bot, stream, progress, approver=approver, out=out, t=t)
        try:
            if args.ticket:
                session.resume(args.ticket)
            else:
                session.open(args.email, args.message, args.subject or "")
            session.loop()
        except (KeyboardInterrupt, EOFError):
            session.settle()
            _goodbye(session, args, out)
        except Exception:
            # main() reports the error itself; the operator still needs the way back in.
            session.settle()
            if session.ticket_id is not None:
                command = resume_command(session.ticket_id, args.database_url)
                print(t("chat.resume_hint", command=command), file=sys.stderr)
            raise
    return 0


def _goodbye(session: ChatSession, args: Any, out: TextIO) -> None:
    print(file=out)
    if session.ticket_id is None:
        # Interrupted inside the first round: the ticket exists but its id never reached us.
        command = f"python -m supportbot tickets --customer {args.email}"
        print(session.t("chat.left_maybe_created", command=command), file=out)
        return
    command = resume_command(session.ticket_id, args.database_url)
    print(session.t("chat.left", command=command), file=out, flush=True)

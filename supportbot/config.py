"""Settings, read from SUPPORTBOT_* environment variables, with defaults that work offline."""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import platformdirs

from ._redact import check_api_key, hide_password
from .errors import ConfigError

# How structured answers are asked for, best first; "auto" starts at the first and steps down.
JSON_MODES = ("auto", "json_schema", "json_object+schema", "json_object", "none")


def _default_data_dir() -> Path:
    return Path(platformdirs.user_data_dir("supportbot", appauthor=False))


@dataclass(frozen=True, slots=True)
class Settings:
    database_url: str | None = None  # None: start the embedded PostgreSQL under data_dir
    data_dir: Path = dataclasses.field(default_factory=_default_data_dir)
    max_message_chars: int = 20_000
    max_revisions: int = 2
    # How long a lease lasts unless renewed: a holder that dies is replaced at once where the server
    # can tell (a direct connection), else after this long (behind a pooler in transaction mode).
    lease_seconds: float = 30.0
    # How long send() waits for a live round of another process that holds the ticket to answer its
    # message before it returns "queued" (the answer then comes from that round, or a worker).
    send_wait_seconds: float = 30.0
    pool_max_size: int = 4
    # Database connections (store/_store.py). A round holds a connection only while it talks to the
    # database, so a pool far smaller than the number of threads serves them all.
    pool_timeout: float = 5.0  # seconds to wait for a free pooled connection, then StoreBusy
    db_timeout: float = 10.0  # seconds: connect, statement and lock timeout; 0 turns the last two off
    # Off behind a pooler in transaction mode (PgBouncer): a prepared statement lives in one server
    # session, and the pooler hands the next transaction to another one.
    prepared_statements: bool = True
    llm_base_url: str | None = None
    llm_api_key: str | None = dataclasses.field(default=None, repr=False)
    llm_model: str = "gpt-4o-mini"
    llm_small_model: str | None = None
    # Dollars per million (prompt, completion) tokens, by model name; a model not listed costs 0.
    # SUPPORTBOT_LLM_PRICES="gpt-4o-mini=0.15/0.60,deepseek-chat=0.27/1.10"
    llm_prices: Mapping[str, tuple[float, float]] = dataclasses.field(default_factory=dict)
    llm_timeout: float = 30.0  # seconds per network operation of one model request
    # Retries after the first attempt: connection errors, 429 and 5xx. A read timeout is not
    # re-sent (the server may still be working on it): see llm/_openai.py.
    llm_max_retries: int = 3
    # The most tokens one answer may take: small for the JSON answers (classify, check, fact
    # extraction); the draft and the summary get llm_max_tokens, within their budgets (the room
    # context_window leaves for an answer; summary_cap, else history_budget).
    llm_max_tokens_small: int = 512
    llm_max_tokens: int = 1024
    # Seconds of model time one round may use in all; then it hands the ticket to a person.
    llm_round_seconds: float = 90.0
    # How structured answers are asked for: "auto" (json_schema, stepping down once per process
    # when the server refuses it), "json_schema", "json_object+schema" (llama.cpp), "json_object",
    # or "none" (the schema in the prompt only; the answer's JSON is repaired from its text).
    llm_json_mode: str = "auto"
    # Compression (memory/_compress.py): what the conversation part of a prompt may cost.
    history_budget: int = 1200  # tokens for summary + unsummarized turns before folding starts
    keep_last: int = 4  # turns always kept verbatim
    # Tokens a summary may take at most; None: whatever the budget leaves after facts and kept turns.
    summary_cap: int | None = None
    max_pending_turns: int | None = None  # also fold when more turns than this are pending
    context_window: int = 16_000  # tokens the model accepts; the whole prompt must fit
    trigger_fraction: float | None = None  # also fold when history exceeds this share of context_window
    # Mask phones, emails, ID and bank cards where records leave the ticket: the resolved-ticket
    # record and the profiles built from it, refund reasons. A ticket's own prompt shows them.
    mask_pii: bool = True
    # Never show the model personal data: phones, emails, ID and bank cards become stable
    # placeholders ([PHONE_1], [EMAIL_1]) in everything sent to it, restored in what it returns.
    pii_placeholders: bool = False
    # With a real small model: also ask it for facts the rules missed (memory/_assist.py); each is
    # kept only if it quotes its turn verbatim. Off by default: one more model call per round.
    fact_assist: bool = False
    # The business system when open() is given none, and the one the CLI and the console act on:
    # "demo", or "package.module:factory" where factory(settings) returns a supportbot.Backend.
    backend: str | None = None
    # Workers (run/_worker.py) and waiting for answers (store/_listen.py).
    worker_threads: int = 8  # rounds one worker process runs at once (each mostly waits on the model)
    worker_sweep_seconds: float = 2.0  # look for work at least this often, with or without NOTIFY
    worker_max_attempts: int = 5  # failed rounds of one ticket before a human gets it
    worker_retry_seconds: float = 2.0  # the first retry's delay; each further one doubles it
    worker_shutdown_seconds: float = 30.0  # on SIGTERM, how long running rounds may take to end
    # How long a worker goes on without a model (connection refused, timeouts, 429, 5xx, 401/403)
    # before the tickets it claims go to people; until then it pauses claiming and gives them back.
    model_outage_grace: float = 300.0
    listen: bool = True  # be notified of answers and work (LISTEN) instead of polling only
    # A direct connection for notifications (LISTEN) when database_url goes through a pooler in
    # transaction mode (PgBouncer), where a listening session is handed to other clients. Without
    # it, such a deployment (prepared_statements off) polls.
    listen_url: str | None = None
    # Service levels (run/_sla.py): minutes a person may take. A clock runs only while a person
    # has the turn; the console shows the time left and `python -m supportbot sla` the breaches.
    sla_approval_minutes: int = 240  # a refund waiting for a decision
    sla_first_response_minutes: int = 60  # a handed-off ticket, until a person first replies
    sla_next_response_minutes: int = 120  # a customer's message on a ticket a person owns
    # Retention (run/_retention.py), in days after a resolved ticket went quiet; 0 keeps for ever.
    # The workers apply it every retention_sweep_seconds; `python -m supportbot retention` shows it.
    retention_steps_days: int = 30  # step log and checkpoints shrink to the final state
    retention_summaries_days: int = 30  # the conversation summary is emptied
    retention_facts_days: int = 180  # pinned facts are deleted
    retention_audit_days: int = 0  # audit rows older than this are deleted
    retention_sweep_seconds: float = 3600.0
    # A bearer token for the Prometheus /metrics endpoints (worker --metrics-port, the console);
    # without one they are off. A secret: never shown in repr.
    metrics_token: str | None = dataclasses.field(default=None, repr=False)

    def __post_init__(self) -> None:
        # Here, not only in from_env: a key passed as Settings(llm_api_key=...) is checked too.
        check_api_key(self.llm_api_key)
        if self.llm_json_mode not in JSON_MODES:
            raise ConfigError(
                f"SUPPORTBOT_LLM_JSON_MODE={self.llm_json_mode!r} is not one of {', '.join(JSON_MODES)}",
                reason="value",
                setting="SUPPORTBOT_LLM_JSON_MODE",
                value=self.llm_json_mode,
            )
        if self.llm_max_tokens < 1 or self.llm_max_tokens_small < 1 or self.llm_round_seconds <= 0:
            raise ConfigError(
                "SUPPORTBOT_LLM_MAX_TOKENS and SUPPORTBOT_LLM_MAX_TOKENS_SMALL must be at least 1, and "
                "SUPPORTBOT_LLM_ROUND_SECONDS above 0",
                reason="value",
                setting="SUPPORTBOT_LLM_MAX_TOKENS",
            )

        self._check_retention()
        slas = (self.sla_approval_minutes, self.sla_first_response_minutes, self.sla_next_response_minutes)
        if min(slas) < 1:
            raise ConfigError(
                "SUPPORTBOT_SLA_APPROVAL_MINUTES, SUPPORTBOT_SLA_FIRST_RESPONSE_MINUTES and "
                "SUPPORTBOT_SLA_NEXT_RESPONSE_MINUTES must be at least 1",
                reason="value",
                setting="SUPPORTBOT_SLA_APPROVAL_MINUTES",
            )

    def _check_retention(self) -> None:
        days = (self.retention_steps_days, self.retention_summaries_days, self.retention_facts_days)
        if min(*days, self.retention_audit_days) < 0 or self.retention_sweep_seconds <= 0:
            raise ConfigError(
                "SUPPORTBOT_RETENTION_*_DAYS are 0 (keep for ever) or more, and "
                "SUPPORTBOT_RETENTION_SWEEP_SECONDS above 0",
                reason="value",
                setting="SUPPORTBOT_RETENTION_STEPS_DAYS",
            )
        steps = self.retention_steps_days
        # A summary and facts go from a pruned step log only (run/_retention.py).
        if any(d and (not steps or d < steps) for d in days[1:]):
            raise ConfigError(
                "SUPPORTBOT_RETENTION_SUMMARIES_DAYS and SUPPORTBOT_RETENTION_FACTS_DAYS must be 0 or at "
                "least SUPPORTBOT_RETENTION_STEPS_DAYS (which must then be set)",
                reason="value",
                setting="SUPPORTBOT_RETENTION_SUMMARIES_DAYS",
            )

    def __repr__(self) -> str:
        # The dataclass repr, minus the key, with any password in the URLs masked.
        shown = []
        for f in dataclasses.fields(self):
            if f.repr:
                value = getattr(self, f.name)
                if f.name in ("database_url", "llm_base_url", "listen_url") and isinstance(value, str):
                    value = hide_password(value)
                shown.append(f"{f.name}={value!r}")
        return f"Settings({', '.join(shown)})"

    @classmethod
    def from_env(cls, env: Mapping[str, str] | None = None, **overrides: object) -> Settings:
        """Build settings from SUPPORTBOT_* variables; keyword overrides win over the environment."""
        env = os.environ if env is None else env
        values: dict[str, object] = {}
        for f in dataclasses.fields(cls):
            raw = env.get(f"SUPPORTBOT_{f.name.upper()}")
            if raw is None or raw == "":
                continue
            values[f.name] = _parse(f.name, f.type, raw)
        values.update(overrides)
        return cls(**values)  # type: ignore[arg-type]


def _parse(name: str, kind: object, raw: str) -> object:
    kind = str(kind)
    if name == "llm_prices":
        return parse_prices(raw)
    try:
        if kind.startswith("bool"):
            return _boolean(raw)
        if kind.startswith("int"):
            return int(raw)
        if kind.startswith("float"):
            return float(raw)
        if kind.startswith("Path"):
            return Path(raw).expanduser()
    except ValueError:
        raise ConfigError(
            f"SUPPORTBOT_{name.upper()}={raw!r} is not a valid {kind.split(' ')[0]}",
            reason="value",
            setting=f"SUPPORTBOT_{name.upper()}",
            value=raw,
        ) from None
    return raw


def parse_prices(raw: str) -> dict[str, tuple[float, float]]:
    """``"model=prompt/completion,..."`` (dollars per million tokens) as {model: (prompt, completion)}.

    A model name may itself hold "/" or ":" (``Qwen/Qwen2.5-7B``, ``llama3:8b``), so an entry is
    split at its last "=" and the price at the last "/".
    """
    example = 'e.g. SUPPORTBOT_LLM_PRICES="gpt-4o-mini=0.15/0.60,deepseek-chat=0.27/1.10"'
    prices: dict[str, tuple[float, float]] = {}
    for entry in (part.strip() for part in raw.split(",")):
        if not entry:
            continue
        model, eq, price = entry.rpartition("=")
        prompt, slash, completion = price.rpartition("/")
        model = model.strip()
        try:
            pair = (float(prompt), float(completion)) if eq and slash and model else None
        except ValueError:
            pair = None
        if pair is None or not all(math.isfinite(p) and p >= 0 for p in pair):
            raise ConfigError(
                f"SUPPORTBOT_LLM_PRICES entry {entry!r} is not model=prompt/completion with two non-negative "
                f"dollar prices per million tokens; {example}",
                setting="SUPPORTBOT_LLM_PRICES",
            )
        if model in prices:
            raise ConfigError(
                f"SUPPORTBOT_LLM_PRICES lists {model!r} twice; keep one entry per model",
                setting="SUPPORTBOT_LLM_PRICES",
            )
        prices[model] = pair
    return prices


def _boolean(raw: str) -> bool:
    lowered = raw.strip().lower()
    if lowered in ("1", "true", "yes", "on"):
        return True
    if lowered in ("0", "false", "no", "off"):
        return False
    raise ValueError(raw)

"""Test fixtures: one real PostgreSQL per test session, a fresh database per test.

The server is the embedded one the package uses by default, or SUPPORTBOT_DATABASE_URL when set
(that role needs CREATEDB). Each test gets its own database cloned from a migrated template, so
tests never see each other's rows.
"""

from __future__ import annotations

import itertools
import os
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING

import psycopg
import pytest
from hypothesis import HealthCheck, settings
from psycopg import sql
from psycopg.conninfo import conninfo_to_dict, make_conninfo
from support.both_bots import BOTH, Loop, open_view
from support.fakes import ScriptedLLM, seed_business

from supportbot import Settings, SupportBot
from supportbot.backend.demo import load_demo_data
from supportbot.store._migrate import migrate

if TYPE_CHECKING:
    from playwright.sync_api import Browser

CHROMIUM = "/usr/bin/chromium"  # Debian's, installed by scripts/install-test-deps; never a download

settings.register_profile(
    "default", max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
settings.register_profile(
    "ci", max_examples=120, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow]
)
settings.load_profile("ci" if os.environ.get("CI") else "default")

_counter = itertools.count()


def _with_dbname(url: str, dbname: str) -> str:
    params = conninfo_to_dict(url)
    params["dbname"] = dbname
    return make_conninfo("", **params)


@pytest.fixture(scope="session")
def server_url(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """An admin URL of a running PostgreSQL server for the whole test session."""
    url = os.environ.get("SUPPORTBOT_DATABASE_URL")
    if url:
        yield url
        return
    from supportbot.store._embedded import embedded_url

    data_dir = tmp_path_factory.mktemp("pg")
    yield embedded_url(data_dir, admin=True)  # the superuser: the fixtures create databases


@pytest.fixture(scope="session")
def template_db(server_url: str) -> Iterator[str]:
    name = f"supportbot_template_{os.getpid()}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))
        admin.execute(sql.SQL("CREATE DATABASE {}").format(sql.Identifier(name)))
    with psycopg.connect(_with_dbname(server_url, name)) as conn:
        migrate(conn, demo=True)
    yield name
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def database_url(server_url: str, template_db: str, pooler: Callable[[str], str]) -> Iterator[str]:
    """A URL of a fresh, migrated database that only this test uses."""
    name = f"supportbot_test_{os.getpid()}_{next(_counter)}"
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(
            sql.SQL("CREATE DATABASE {} TEMPLATE {}").format(
                sql.Identifier(name), sql.Identifier(template_db)
            )
        )
    yield pooler(_with_dbname(server_url, name))
    with psycopg.connect(server_url, autocommit=True) as admin:
        admin.execute(sql.SQL("DROP DATABASE IF EXISTS {} WITH (FORCE)").format(sql.Identifier(name)))


@pytest.fixture
def demo_url(database_url: str) -> str:
    """A fresh database holding the demo data (docs/demo-data.md)."""
    with psycopg.connect(database_url) as conn:
        load_demo_data(conn)
    return database_url


@pytest.fixture
def db(database_url: str) -> str:
    """A fresh database with the two customers of fakes.seed_business, for tests whose bots live
    in other processes."""
    with psycopg.connect(database_url) as conn:
        seed_business(conn)
    return database_url


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """The behaviour suites (both_bots.BOTH) run against SupportBot and AsyncSupportBot."""
    module = metafunc.module.__name__.rpartition(".")[2]
    if (
        "front" in metafunc.fixturenames
        and module in BOTH
        and metafunc.definition.get_closest_marker("sync_only") is None
    ):
        metafunc.parametrize("front", ["sync", "async"], indirect=True)


@pytest.fixture
def front(request: pytest.FixtureRequest) -> str:
    """Which bot ``open_bot`` opens: "sync" (SupportBot) or "async" (AsyncSupportBot, driven
    through both_bots.AsyncView)."""
    return str(getattr(request, "param", "sync"))


@pytest.fixture
def open_bot(database_url: str, front: str) -> Iterator[Callable[..., SupportBot]]:
    """Opens bots on a database with two customers (fakes.seed_business); closes them after.

    ``open_bot(llm=None, **settings)``: the llm defaults to a fresh ScriptedLLM. In the behaviour
    suites it opens each test twice: a SupportBot, and an AsyncSupportBot seen through AsyncView.
    """
    with psycopg.connect(database_url) as conn:
        seed_business(conn)
    bots: list[SupportBot] = []
    loop = Loop() if front == "async" else None

    def make(llm: object | None = None, **overrides: object) -> SupportBot:
        model = llm or ScriptedLLM()
        settings = bot_settings(database_url, **overrides)
        if loop is not None:
            bot: SupportBot = open_view(loop, database_url, llm=model, settings=settings)  # type: ignore[assignment]
        else:
            bot = SupportBot.open(database_url, llm=model, settings=settings, backend="demo")  # type: ignore[arg-type]
        bots.append(bot)
        return bot

    yield make
    for bot in bots:
        bot.close()
    if loop is not None:
        loop.close()


# -- through PgBouncer: tests/test_pgbouncer.py re-runs test modules with SUPPORTBOT_TEST_PGBOUNCER=1 --

VIA_PGBOUNCER = os.environ.get("SUPPORTBOT_TEST_PGBOUNCER") == "1"


def bot_settings(url: str, **overrides: object) -> Settings:
    """Settings for a test's database: through PgBouncer (transaction mode), no prepared statements."""
    if VIA_PGBOUNCER:
        overrides.setdefault("prepared_statements", False)
    return Settings(database_url=url, **overrides)  # type: ignore[arg-type]


@pytest.fixture(scope="session")
def pooler(server_url: str) -> Iterator[Callable[[str], str]]:
    """Maps a URL of the test server to the same database through PgBouncer, in a run through one."""
    if not VIA_PGBOUNCER:
        yield lambda url: url
        return
    from support.pgbouncer import pgbouncer

    with pgbouncer(server_url) as through:
        address = conninfo_to_dict(through)
        yield lambda url: make_conninfo(url, host=address["host"], port=address["port"])


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    """Debian's headless Chromium through Playwright, one for the whole run (the browser tests)."""
    from playwright.sync_api import sync_playwright

    with sync_playwright() as playwright:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start.
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        yield chromium
        chromium.close()

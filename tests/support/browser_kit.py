"""Shared by the browser tests: a console served by uvicorn on a free loopback port, signing in,
screenshots, axe-core and the keyboard. The ``browser`` fixture (Debian's Chromium) is in
conftest.py."""

from __future__ import annotations

import os
import threading
import time
from pathlib import Path

import uvicorn
from playwright.sync_api import Page, expect

from support.console_kit import PASSWORDS


class LiveConsole:
    """uvicorn serving the app in a thread, on a port the OS picks."""

    def __init__(self, app: object) -> None:
        config = uvicorn.Config(app, host="127.0.0.1", port=0, log_level="warning", access_log=False)  # type: ignore[arg-type]
        self.server = uvicorn.Server(config)
        self.thread = threading.Thread(target=self.server.run, daemon=True)

    def __enter__(self) -> str:
        self.thread.start()
        deadline = time.monotonic() + 30
        while not self.server.started:
            assert time.monotonic() < deadline and self.thread.is_alive(), "the console did not start"
            time.sleep(0.02)
        port = self.server.servers[0].sockets[0].getsockname()[1]
        return f"http://127.0.0.1:{port}"

    def __exit__(self, *exc: object) -> None:
        self.server.should_exit = True
        self.thread.join(timeout=10)


def shot(page: Page, name: str) -> None:
    folder = os.environ.get("SUPPORTBOT_SCREENSHOTS")
    if folder:
        page.screenshot(path=str(Path(folder) / f"console-{name}.png"), full_page=True)


def sign_in_page(page: Page, url: str, name: str) -> None:
    page.goto(f"{url}/login")
    page.fill("input[name=name]", name)
    page.fill("input[name=password]", PASSWORDS[name])
    page.click("button[type=submit]")
    expect(page).to_have_url(f"{url}/inbox")


def axe_script() -> Path:
    """axe-core from the npm registry, installed by scripts/install-test-deps (never at test time)."""
    found = Path(__file__).resolve().parents[2] / ".test-tools" / "node_modules" / "axe-core" / "axe.min.js"
    if not found.exists():
        raise RuntimeError(f"axe-core is not installed at {found}: run scripts/install-test-deps")
    return found


def serious_violations(page: Page) -> list[str]:
    page.add_script_tag(path=str(axe_script()))
    result = page.evaluate("async () => await axe.run(document)")
    return [
        f"{v['id']} ({v['impact']}): {v['help']} at {[n['target'] for n in v['nodes']][:3]}"
        for v in result["violations"]
        if v["impact"] in ("serious", "critical")
    ]


def tab_to(page: Page, selector: str, limit: int = 80) -> None:
    """Press Tab until the element ``selector`` names has the focus, as a keyboard user would."""
    page.wait_for_load_state()  # after an Enter that followed a link or sent a form
    for _ in range(limit):
        page.keyboard.press("Tab")
        if page.evaluate("(s) => document.activeElement && document.activeElement.matches(s)", selector):
            return
    raise AssertionError(f"{selector} cannot be reached with Tab")

"""`python -m supportbot chat` driven through a pseudo-terminal, the way an operator uses it.

A real terminal matters here: Ctrl+C must arrive as SIGINT from the terminal driver, input()
must read from a tty, and streaming and the progress line only switch on when a tty is attached.
The stdlib `pty` keeps the test free of extra dependencies. Waits are long because the shared
2-core machine can take seconds to start a process.
"""

from __future__ import annotations

import codecs
import os
import pty
import re
import select
import signal
import sys
import time
from collections.abc import Iterator

import psycopg
import pytest

ANSI = re.compile(r"\x1b\[[0-9;]*[A-Za-z]")
TIMEOUT = 90.0


class Terminal:
    """A child process on a pseudo-terminal, with expect-style reading of its output."""

    def __init__(self, *args: str, env: dict[str, str]) -> None:
        argv = [sys.executable, "-m", "supportbot", *args]
        self.pid, self.fd = pty.fork()
        if self.pid == 0:  # the child: exec at once, before anything else runs in the fork
            # A terminal's Ctrl+C must reach the chat even when the suite itself was started with
            # SIGINT ignored (a non-interactive shell's background job): an ignored signal stays
            # ignored across exec, and Python then never raises KeyboardInterrupt.
            signal.signal(signal.SIGINT, signal.SIG_DFL)
            os.execve(sys.executable, argv, env)
        self.seen = ""  # everything read so far, escape codes removed
        self._pos = 0  # where the next expect starts looking
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")

    def _read(self, deadline: float) -> bool:
        ready, _, _ = select.select([self.fd], [], [], max(0.0, min(1.0, deadline - time.monotonic())))
        if not ready:
            return True
        try:
            chunk = os.read(self.fd, 4096)
        except OSError:  # EIO: the child closed the terminal
            return False
        if not chunk:
            return False
        self.seen += ANSI.sub("", self._decoder.decode(chunk))
        return True

    def expect(self, text: str, timeout: float = TIMEOUT) -> str:
        """Wait until ``text`` appears after the previous match; return what came before it."""
        deadline = time.monotonic() + timeout
        while True:
            at = self.seen.find(text, self._pos)
            if at >= 0:
                before, self._pos = self.seen[self._pos : at], at + len(text)
                return before
            if time.monotonic() > deadline or not self._read(deadline):
                raise AssertionError(
                    f"never saw {text!r} ({self._ended()}); the terminal shows:\n{self.seen[-3000:]}"
                )

    def _ended(self) -> str:
        """How the child stands, for a failure message: still running, or its exit status."""
        try:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
        except ChildProcessError:
            return "already reaped"
        return "still running" if not pid else f"exited with {os.waitstatus_to_exitcode(status)}"

    def send(self, text: str) -> None:
        os.write(self.fd, text.encode())

    def wait(self, timeout: float = TIMEOUT) -> int:
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            pid, status = os.waitpid(self.pid, os.WNOHANG)
            if pid:
                os.close(self.fd)
                return os.waitstatus_to_exitcode(status)
            self._read(time.monotonic() + 0.2)
        raise AssertionError(f"the chat did not exit; the terminal shows:\n{self.seen[-3000:]}")

    def kill(self) -> None:
        try:
            os.kill(self.pid, signal.SIGKILL)
            os.waitpid(self.pid, 0)
        except (ChildProcessError, ProcessLookupError):
            pass


@pytest.fixture
def terminals() -> Iterator[list[Terminal]]:
    opened: list[Terminal] = []
    yield opened
    for terminal in opened:
        terminal.kill()  # only reached with a still-running child when a test failed


def _env() -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")}
    return {**env, "USER": "值班同事", "TERM": "xterm", "SUPPORTBOT_LANG": "zh", "SUPPORTBOT_BACKEND": "demo"}


def test_chat_follow_up_approval_interrupt_and_resume(demo_url: str, terminals: list[Terminal]) -> None:
    first = Terminal(
        "chat",
        "wugang@example.com",
        "招商银行的流水又同步失败了,提示 E3001",
        "--by",
        "王经理",
        "--database-url",
        demo_url,
        env=_env(),
    )
    terminals.append(first)
    streamed = first.expect("── 发给客户(已答复,第 1 轮)──")
    assert "起草中" in streamed and "E3001" in streamed  # the draft streamed before the final reply
    first.expect("[KB-bank-001](https://help.example.com/kb/KB-bank-001)")  # citations rendered as links
    memory = first.expect("客户> ")
    assert "[记忆] 2 条消息" in memory and "画像「专业版年付 VIP" in memory

    first.send("重新授权了还是不行,另外这个年付我想申请退款 200 元\r")
    first.expect("[审批] 退款申请 R")
    first.expect("通过这笔退款吗?[y/N] ")
    first.send("y\r")
    first.expect("[审批] 批准,审批人 王经理")
    first.expect("── 发给客户(已答复,第 2 轮)──")
    first.expect("已审批通过,款项将原路退回")
    memory = first.expect("客户> ")
    assert "[记忆] 4 条消息" in memory and "钉住事实" in memory

    first.send("\x03")  # Ctrl+C at the prompt
    first.expect("下次接着聊:python -m supportbot chat --ticket T000001 --database-url")
    assert first.wait() == 0
    assert "Traceback" not in first.seen

    with psycopg.connect(demo_url) as conn:
        decided = conn.execute(
            "SELECT approved, approver FROM supportbot.approvals WHERE ticket_id = 'T000001'"
        ).fetchall()
        roles = conn.execute(
            "SELECT role FROM supportbot.turns WHERE ticket_id = 'T000001' ORDER BY idx"
        ).fetchall()
    assert decided == [(True, "王经理")]
    assert [r for (r,) in roles] == ["customer", "agent", "customer", "agent"]

    again = Terminal("chat", "--ticket", "T000001", "--database-url", demo_url, env=_env())
    terminals.append(again)
    again.expect("工单 T000001 · wugang@example.com")
    earlier = again.expect("[记忆] 4 条消息")
    assert "客户> 招商银行的流水又同步失败了" in earlier and "款项将原路退回" in earlier
    again.expect("客户> ")
    again.send("\x04")  # Ctrl+D: end of input also leaves cleanly
    again.expect("下次接着聊:python -m supportbot chat --ticket T000001")
    assert again.wait() == 0

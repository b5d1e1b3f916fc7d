"""The documentation's examples, run as a new user pastes them, against a fresh database.

README.md's embedding snippet runs in this process; the `$ python -m supportbot ...` lines of
docs/cli.md run in order, each in a process of its own (about half a second each), and must
exit 0 unless the page shows `$ echo $?` with another code right after.
"""

from __future__ import annotations

import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from support.fakes import rows

from supportbot import SupportBot

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
CLI_DOC = ROOT / "docs" / "cli.md"
PROMPT = "$ python -m supportbot"


@dataclass(frozen=True)
class Example:
    argv: list[str]
    exit_code: int
    output: list[str]  # the lines the page shows under it


def embedding_snippet() -> str:
    """The first ```python block under the README's "## Embedding it" heading."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n## Embedding it\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "README.md: no ```python block under '## Embedding it'"
    return match.group(1)


def asyncio_snippet() -> str:
    """The ```python block under the README's "### From asyncio" heading (the FastAPI example)."""
    text = README.read_text(encoding="utf-8")
    section = text.split("\n### From asyncio\n", 1)[1].split("\n## ", 1)[0]
    match = re.search(r"```python\n(.*?)```", section, re.DOTALL)
    assert match, "README.md: no ```python block under '### From asyncio'"
    return match.group(1)


def code_blocks(text: str) -> list[list[str]]:
    return [
        block.splitlines() for block in re.findall(r"^```[a-z]*\n(.*?)^```", text, re.DOTALL | re.MULTILINE)
    ]


def cli_examples(text: str) -> list[Example]:
    """Each `$ python -m supportbot ...` line, its expected exit code and the output shown."""
    found: list[Example] = []
    for block in code_blocks(text):
        for i, line in enumerate(block):
            if line.startswith(PROMPT + " "):
                argv = shlex.split(line[len(PROMPT) :], comments=True)
                output = []
                for after in block[i + 1 :]:
                    if after.startswith("$ "):
                        break
                    output.append(after)
                found.append(Example(argv, 0, output))
            elif line == "$ echo $?" and found:
                found[-1] = Example(found[-1].argv, int(block[i + 1]), found[-1].output)
    return found


def _env(url: str) -> dict[str, str]:
    base = {k: v for k, v in os.environ.items() if not k.startswith("SUPPORTBOT_")}
    return {
        **base,
        "SUPPORTBOT_DATABASE_URL": url,
        "SUPPORTBOT_LANG": "zh",
        "SUPPORTBOT_BACKEND": "demo",  # as docs/cli.md and the README's tour export it
        "USER": "doc-reader",
        "NO_COLOR": "1",
    }


@pytest.mark.parametrize("with_demo_data", [False, True], ids=["fresh", "demo"])
def test_the_readme_embedding_snippet_runs_as_pasted(
    with_demo_data: bool,
    request: pytest.FixtureRequest,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    url: str = request.getfixturevalue("demo_url" if with_demo_data else "database_url")
    for name in list(os.environ):
        if name.startswith("SUPPORTBOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SUPPORTBOT_DATABASE_URL", url)
    exec(compile(embedding_snippet(), "README.md", "exec"), {})
    out = capsys.readouterr().out
    tickets = rows(url, "SELECT id, status FROM supportbot.tickets ORDER BY id")
    assert len(tickets) == 2  # the ticket and its fork
    if with_demo_data:
        # Only this ticket's refund was decided, by the name the snippet gives.
        refunds = rows(url, "SELECT ticket_id, status, decided_by FROM demo.refunds")
        assert refunds == [(tickets[0][0], "approved", "王经理")]
        assert "E3001" in out.splitlines()[-1]  # 吴刚's profile
    else:
        assert out.splitlines()[-1].startswith("no profile")
        assert rows(url, "SELECT count(*) FROM demo.refunds") == [(0,)]


def test_the_cli_tour_runs_as_pasted(database_url: str) -> None:
    examples = cli_examples(CLI_DOC.read_text(encoding="utf-8"))
    assert len(examples) >= 10 and any(e.exit_code != 0 for e in examples)
    for example in examples:
        proc = subprocess.run(
            [sys.executable, "-m", "supportbot", *example.argv],
            check=False,
            env=_env(database_url),
            stdin=subprocess.DEVNULL,  # interactive commands see the operator leave at once
            capture_output=True,
            text=True,
            timeout=180,
        )
        assert proc.returncode == example.exit_code, (example.argv, proc.stdout[-2000:], proc.stderr)
        if example.argv == ["demo"]:
            # The demo is played on a fixed day, so the profiles it prints are the page's, exactly.
            shown = [line for line in example.output if line.startswith("[画像]") or "[画像]" in line]
            printed = [line for line in proc.stdout.splitlines() if "[画像]" in line]
            assert shown and shown == printed


def test_the_tours_say_which_business_system_their_commands_act_on() -> None:
    # The tour runs with SUPPORTBOT_BACKEND=demo (_env): a reader who pastes it needs it too.
    assert "export SUPPORTBOT_BACKEND=demo" in CLI_DOC.read_text(encoding="utf-8")
    tour = README.read_text(encoding="utf-8").split("\n## The CLI in two minutes\n", 1)[1]
    assert "$ export SUPPORTBOT_BACKEND=demo" in tour.split("\n## ", 1)[0]


def test_the_readme_cli_examples_are_in_the_tested_tour() -> None:
    section = README.read_text(encoding="utf-8").split("\n## The CLI in two minutes\n", 1)[1]
    section = section.split("\n## ", 1)[0]
    readme = [e.argv for e in cli_examples(section)]
    tour = [e.argv for e in cli_examples(CLI_DOC.read_text(encoding="utf-8"))]
    assert readme and all(argv in tour for argv in readme), [a for a in readme if a not in tour]


def test_the_extractors_find_what_they_should() -> None:
    page = "\n".join(
        [
            "```",
            "$ python -m supportbot approve T1 --yes --by 王经理 --note '30 天内,符合政策'   # decide",
            "已批准",
            "$ python -m supportbot show T404",
            "error: no ticket",
            "$ echo $?",
            "1",
            "```",
        ]
    )
    examples = cli_examples(page)
    assert [e.argv for e in examples] == [
        ["approve", "T1", "--yes", "--by", "王经理", "--note", "30 天内,符合政策"],
        ["show", "T404"],
    ]
    assert [e.exit_code for e in examples] == [0, 1] and examples[0].output == ["已批准"]
    assert "SupportBot.open(" in embedding_snippet()


def test_the_readme_fastapi_example_answers_as_pasted(demo_url: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """The asyncio example: the bot opened in the app's lifespan, one route that sends a message."""
    from fastapi.testclient import TestClient

    for name in list(os.environ):
        if name.startswith("SUPPORTBOT_"):
            monkeypatch.delenv(name)
    monkeypatch.setenv("SUPPORTBOT_DATABASE_URL", demo_url)
    with SupportBot.open(backend="demo") as bot:
        ticket = bot.open_ticket("wugang@example.com", body="流水又同步失败了,提示 E3001").ticket_id
    example: dict[str, object] = {}
    exec(compile(asyncio_snippet(), "README.md", "exec"), example)
    with TestClient(example["app"]) as client:  # type: ignore[arg-type]
        sent = {"text": "还是不行", "message_id": "m-1"}
        answered = client.post(f"/tickets/{ticket}/messages", json=sent)
        again = client.post(f"/tickets/{ticket}/messages", json=sent)
    assert answered.status_code == 200 and answered.json()["outcome"] == "resolved"
    assert answered.json()["reply"] and again.json() == answered.json()  # the same message_id: stored once
    assert rows(demo_url, "SELECT count(*) FROM supportbot.turns WHERE ticket_id = %s", ticket) == [(4,)]

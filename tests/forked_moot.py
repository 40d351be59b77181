"""``python -m moot …`` for the tests, without paying Python's start-up and moot's imports on every run.

A test that runs moot as a command wants a real process: its own working directory, environment, standard
streams, exit code and signals. Starting one costs about 0.6 s of interpreter start-up and imports, and the suite
runs moot as a command well over a thousand times. So a helper process (the *zygote*) imports the whole command
line once, and each run is a fork of it: a fresh process in every way a test can see, ready in milliseconds.

The zygote is only used where a fork is the same as a new interpreter: an environment that changes how Python
starts (``PYTHONPATH``, ``PYTHONHASHSEED``, the locale, …) gets a real ``python -m moot``. ``MOOT_TEST_NO_FORK=1``
turns the zygote off for the whole run.
"""

from __future__ import annotations

import atexit
import contextlib
import io
import json
import os
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import threading
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import IO

MOOT = [sys.executable, "-m", "moot"]

# Read by the interpreter before any code runs, so a fork cannot honour a change to them.
_START_UP_ENV = ("PYTHON", "LANG", "LC_", "LANGUAGE")
_HEADER = struct.Struct("!I")


def run(
    args: Sequence[str],
    *,
    cwd: str | Path | None = None,
    env: Mapping[str, str] | None = None,
    input: str | None = None,
    timeout: float | None = None,
) -> subprocess.CompletedProcess[str]:
    """What ``subprocess.run([*MOOT, *args], capture_output=True, text=True, …)`` returns, from a fork when it can."""
    environ = dict(os.environ if env is None else env)
    zygote = _zygote(environ)
    if zygote is None:
        return subprocess.run(
            [*MOOT, *args], cwd=cwd, env=environ, input=input or "", capture_output=True, text=True, timeout=timeout
        )
    return zygote.run(list(args), cwd=str(cwd or os.getcwd()), env=environ, input=input or "", timeout=timeout)


class _Zygote:
    def __init__(self) -> None:
        self.folder = tempfile.mkdtemp(prefix="moot-zygote-")
        self.address = os.path.join(self.folder, "socket")
        self.env = dict(os.environ)
        self.process = subprocess.Popen(
            [sys.executable, __file__, self.address], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, env=self.env
        )
        assert self.process.stdout is not None
        if self.process.stdout.readline().strip() != b"ready":
            raise RuntimeError("the moot zygote did not start")

    def serves(self, env: Mapping[str, str]) -> bool:
        def start_up(e: Mapping[str, str]) -> dict[str, str]:
            return {k: v for k, v in e.items() if k.startswith(_START_UP_ENV) and k != "PYTHONUNBUFFERED"}

        return self.process.poll() is None and start_up(env) == start_up(self.env)

    def run(
        self, args: list[str], *, cwd: str, env: dict[str, str], input: str, timeout: float | None
    ) -> subprocess.CompletedProcess[str]:
        with (
            tempfile.TemporaryFile() as stdin,
            tempfile.TemporaryFile() as stdout,
            tempfile.TemporaryFile() as stderr,
            socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as conn,
        ):
            stdin.write(input.encode("utf-8"))
            stdin.seek(0)
            conn.connect(self.address)
            request = json.dumps({"args": args, "cwd": cwd, "env": env}).encode("utf-8")
            socket.send_fds(conn, [_HEADER.pack(len(request)) + request], [f.fileno() for f in (stdin, stdout, stderr)])
            pid = int(_line(conn))
            conn.settimeout(timeout)
            try:
                line = _line(conn)
            except TimeoutError:
                os.kill(pid, signal.SIGKILL)
                conn.settimeout(None)
                _line(conn)
                raise subprocess.TimeoutExpired([*MOOT, *args], timeout or 0, _read(stdout), _read(stderr)) from None
            returncode = int(line) if line else -signal.SIGKILL  # the waiter itself was killed
            return subprocess.CompletedProcess([*MOOT, *args], returncode, _read(stdout), _read(stderr))


def _line(conn: socket.socket) -> str:
    got = b""
    while not got.endswith(b"\n"):
        byte = conn.recv(1)
        if not byte:
            break
        got += byte
    return got.decode().strip()


def _read(file: IO[bytes]) -> str:
    """A captured stream as ``text=True`` gives it: decoded, with universal newlines."""
    file.seek(0)
    return file.read().decode("utf-8", "replace").replace("\r\n", "\n").replace("\r", "\n")


_started: list[_Zygote] = []
_lock = threading.Lock()


def _zygote(env: Mapping[str, str]) -> _Zygote | None:
    if os.environ.get("MOOT_TEST_NO_FORK") == "1":
        return None
    with _lock:
        if not _started:
            zygote = _Zygote()
            _started.append(zygote)
            atexit.register(_stop, zygote)
        zygote = _started[0]
    return zygote if zygote.serves(env) else None


def _stop(zygote: _Zygote) -> None:
    zygote.process.kill()
    zygote.process.wait()
    for name in os.listdir(zygote.folder):
        os.unlink(os.path.join(zygote.folder, name))
    os.rmdir(zygote.folder)


# ---- the zygote itself (this file run as a program) ----


def _serve(address: str) -> None:
    import moot.cli.commands
    import moot.cli.tool_app  # noqa: F401

    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(address)
    listener.listen(64)
    signal.signal(signal.SIGCHLD, signal.SIG_IGN)  # the waiters below are reaped by the kernel
    sys.stdout.write("ready\n")
    sys.stdout.flush()
    while True:
        conn, _ = listener.accept()
        if os.fork() == 0:
            listener.close()
            signal.signal(signal.SIGCHLD, signal.SIG_DFL)
            _wait_for_one(conn)
        conn.close()


def _wait_for_one(conn: socket.socket) -> None:
    """In a fork of the zygote: start the run, tell the test its pid, then its exit code. Never returns."""
    try:
        data, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
        (size,) = _HEADER.unpack(data[: _HEADER.size])
        data = data[_HEADER.size :]
        while len(data) < size:
            data += conn.recv(size - len(data))
        request = json.loads(data)
        pid = os.fork()
        if pid == 0:
            conn.close()
            _become_moot(request, fds)
        for fd in fds:
            os.close(fd)
        conn.sendall(f"{pid}\n".encode())
        _, status = os.waitpid(pid, 0)
        code = os.waitstatus_to_exitcode(status)
        conn.sendall(f"{code}\n".encode())
    finally:
        os._exit(0)


def _become_moot(request: dict[str, object], fds: list[int]) -> None:
    """In the fork that is the run: what ``python -m moot ARGS`` would be, from its streams to its exit."""
    for target, fd in enumerate(fds):
        os.dup2(fd, target)
        os.close(fd)
    env = request["env"]
    assert isinstance(env, dict)
    os.environ.clear()
    os.environ.update(env)
    os.chdir(str(request["cwd"]))
    unbuffered = bool(env.get("PYTHONUNBUFFERED"))
    sys.stdin = sys.__stdin__ = io.TextIOWrapper(open(0, "rb", closefd=False), encoding="utf-8")  # noqa: SIM115
    sys.stdout = sys.__stdout__ = _stream(1, unbuffered)
    sys.stderr = sys.__stderr__ = _stream(2, True)
    args = request["args"]
    assert isinstance(args, list)
    import moot

    sys.argv = [str(Path(moot.__file__).with_name("__main__.py")), *args]
    sys.path[0] = os.getcwd()  # as ``python -m`` puts it
    code: int = 0
    try:
        from moot.cli import main

        main(args)
    except SystemExit as exc:
        if exc.code is None or isinstance(exc.code, int):
            code = exc.code or 0
        else:
            print(exc.code, file=sys.stderr)
            code = 1
    except KeyboardInterrupt:
        sys.stderr.flush()
        signal.signal(signal.SIGINT, signal.SIG_DFL)
        os.kill(os.getpid(), signal.SIGINT)
    except BaseException:
        import traceback

        traceback.print_exc()
        code = 1
    # As the interpreter ends: wait for threads that are not daemons, run the exit handlers, flush.
    threading._shutdown()  # type: ignore[attr-defined]
    atexit._run_exitfuncs()
    for stream in (sys.stdout, sys.stderr):
        with contextlib.suppress(Exception):
            stream.flush()
    os._exit(code)


def _stream(fd: int, unbuffered: bool) -> io.TextIOWrapper:
    return io.TextIOWrapper(
        open(fd, "wb", closefd=False),
        encoding="utf-8",
        errors="backslashreplace" if fd == 2 else "strict",
        line_buffering=False,
        write_through=unbuffered,
    )


if __name__ == "__main__":
    _serve(sys.argv[1])

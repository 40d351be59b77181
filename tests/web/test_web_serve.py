"""``moot serve`` and ``moot export`` as a user meets them without a browser: ports, tokens, bad paths."""

from __future__ import annotations

import http.cookiejar
import json
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
from web_helpers import MOOT, WEB_TOKEN, moot, place_examples, serving, serving_printed


def _status(
    url: str,
    opener: urllib.request.OpenerDirector | None = None,
    host: str | None = None,
    token: str | None = WEB_TOKEN,
) -> int:
    """The status of a GET of ``url``, with the cookie of ``token`` (None: none)."""
    headers = {"Host": host} if host else {}
    if token is not None:
        headers["Cookie"] = f"moot_token={token}"
    request = urllib.request.Request(url, headers=headers)
    try:
        with (opener or urllib.request.build_opener()).open(request, timeout=10) as response:
            return int(response.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_busy_port_is_one_sentence_and_exit_2(work_root: Path) -> None:
    with socket.socket() as busy:
        busy.bind(("127.0.0.1", 0))
        busy.listen()
        port = busy.getsockname()[1]
        done = moot("serve", "--root", str(work_root), "--port", str(port), cwd=work_root)
    assert done.returncode == 2
    assert (
        done.stderr.strip() == f"moot: port {port} on 127.0.0.1 is in use; pass --port with a free port (or --port 0)."
    )


def test_loopback_serves_only_the_records_of_the_root(work_root: Path) -> None:
    placed = place_examples(work_root)
    (work_root / "secret.txt").write_text("not a record", encoding="utf-8")
    with serving(work_root) as url:
        assert _status(url) == 200
        assert _status(url + "r/" + placed["duel"]) == 200
        assert _status(url + "r/secret.txt") == 404
        assert _status(url + "r/debates/../secret.txt") == 404
        assert _status(url + "r/%2e%2e/%2e%2e/etc/passwd") == 404
        assert _status(url, host="attacker.example") == 400  # a rebound DNS name reaches nothing


@pytest.mark.parametrize("host", ["127.0.0.1", "0.0.0.0"])
def test_every_request_needs_the_token_loopback_included(work_root: Path, host: str) -> None:
    place_examples(work_root)
    with serving_printed(work_root, "--host", host) as url:
        assert "?token=" in url
        token = url.split("?token=")[1]
        assert len(token) >= 32  # drawn at start: nobody else knows it
        base = url.split("?")[0].replace("0.0.0.0", "127.0.0.1")
        assert _status(base, token=None) == 401
        assert _status(base + "?token=wrong", token=None) == 401
        assert _status(base + "?token=%C3%A9", token=None) == 401  # any text is compared, none breaks the server
        assert _status(base + "r/debates/consensus-six-turns.md", token="wrong") == 401
        jar = urllib.request.build_opener(urllib.request.HTTPCookieProcessor(http.cookiejar.CookieJar()))
        assert _status(f"{base}?token={token}", jar, token=None) == 200  # sets the cookie, then the index
        assert _status(base + "r/debates/consensus-six-turns.md", jar, token=None) == 200


def test_a_token_given_is_the_one_asked(work_root: Path) -> None:
    with serving_printed(work_root, "--token", "s3cret-token") as url:
        assert url.endswith("/?token=s3cret-token")
        assert _status(url.split("?")[0], token=None) == 401
        assert _status(url.split("?")[0], token="s3cret-token") == 200


# The other user's side: the system's python3 and its standard library only.
KNOCK = r"""
import json, sys, urllib.error, urllib.request
def get(url, **headers):
    try:
        with urllib.request.urlopen(urllib.request.Request(url, headers=headers), timeout=10) as answer:
            return answer.status
    except urllib.error.HTTPError as refused:
        return refused.code
base = sys.argv[1]
print(json.dumps([get(base), get(base + "?token=guess"), get(base + "r/debates/consensus-six-turns.md")]))
"""


def test_another_user_of_the_machine_cannot_read_the_records_on_loopback(work_root: Path, other_user: Any) -> None:
    place_examples(work_root)
    with serving_printed(work_root) as url:
        knocked = other_user(KNOCK, url.split("?")[0])
        assert knocked.returncode == 0, knocked.stderr
        assert json.loads(knocked.stdout) == [401, 401, 401]


def test_serve_refuses_a_missing_root(tmp_path: Path) -> None:
    done = moot("serve", "--root", str(tmp_path / "nowhere"), cwd=tmp_path)
    assert done.returncode == 2
    assert "is not a directory; pass --root" in done.stderr


@pytest.mark.parametrize("inside", [False, True])
def test_export_never_writes_over_the_record(work_root: Path, inside: bool) -> None:
    placed = place_examples(work_root)
    record = work_root / placed["roundtable" if inside else "duel"]
    target = record / "page.html" if inside else record
    before = {p: p.read_bytes() for p in (record.iterdir() if record.is_dir() else [record])}
    done = moot("export", str(record), "--html", str(target), cwd=work_root)
    assert done.returncode == 2
    assert "is the record itself" in done.stderr
    assert {p: p.read_bytes() for p in (record.iterdir() if record.is_dir() else [record])} == before


def test_export_of_a_file_that_is_no_record(work_root: Path) -> None:
    notes = work_root / "notes.md"
    notes.write_text("# Notes\n", encoding="utf-8")
    done = moot("export", str(notes), "--html", str(work_root / "out.html"), cwd=work_root)
    assert done.returncode == 2
    assert done.stderr.startswith("moot: cannot show") and "Traceback" not in done.stderr
    assert not (work_root / "out.html").exists()


def test_ctrl_c_stops_the_server_cleanly_while_a_page_is_live(work_root: Path) -> None:
    place_examples(work_root)
    proc = subprocess.Popen(
        [*MOOT, "serve", "--root", str(work_root), "--port", "0"],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None and proc.stderr is not None
    url = proc.stdout.readline().split(" at ")[1].split()[0]
    base, token = url.split("?token=")
    live = urllib.request.Request(
        base + "events/debates/consensus-six-turns.md", headers={"Cookie": f"moot_token={token}"}
    )
    with urllib.request.urlopen(live, timeout=10) as stream:
        assert stream.readline().startswith(b"event: update")  # the page is live
        proc.send_signal(signal.SIGINT)
        proc.wait(timeout=30)
    assert proc.returncode == 130  # moot's exit code for Ctrl-C
    assert proc.stderr.read() == ""  # no error line, no traceback

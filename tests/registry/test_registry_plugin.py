"""A protocol package outside moot (tests/registry/plugin/pingpong), registered only through a
``moot.protocols`` entry point, gains `moot run`, `moot resume`, `moot check`, `moot rules` and `moot show`."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import moot as moot_package

PLUGIN_DIR = Path(__file__).resolve().parent / "plugin"


def dist_info(site: Path, name: str, version: str, plugin: str, *, protocol: str | None = None) -> None:
    """An installed distribution ``name`` in ``site`` (a folder for sys.path) whose one ``moot.protocols`` entry
    point registers the protocol ``protocol`` (default: ``name``) as ``plugin`` (``module:ATTRIBUTE``), as pip
    would leave it."""
    info = site / f"{name.replace('-', '_')}-{version}.dist-info"
    info.mkdir(parents=True)
    (info / "METADATA").write_text(f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n", encoding="utf-8")
    (info / "entry_points.txt").write_text(f"[moot.protocols]\n{protocol or name} = {plugin}\n", encoding="utf-8")


def registered(site: Path) -> dict[str, str]:
    """An environment whose Python finds the pingpong package and its entry point (a dist-info on sys.path)."""
    dist_info(site, "pingpong", "0.1", "pingpong:PLUGIN")
    return {"PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN_DIR)])}


def fresh(env: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a fresh Python that imports this moot (installed or not) first, then ``env``'s
    PYTHONPATH: the registry is read anew."""
    clean = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    here = str(Path(moot_package.__file__).resolve().parents[1])
    path = os.pathsep.join(p for p in (here, (env or {}).get("PYTHONPATH", "")) if p)
    return {**clean, **(env or {}), "PYTHONPATH": path}


def python(*argv: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """A fresh Python (:func:`fresh`) running ``argv``."""
    return subprocess.run(
        [sys.executable, *argv],
        cwd=cwd,
        env=fresh(env),
        capture_output=True,
        text=True,
        timeout=120,
    )


def moot(*args: str, cwd: Path, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    """This moot's command line in a fresh process."""
    return python("-m", "moot", *args, cwd=cwd, env=env)


def script(path: Path, *words: str) -> str:
    path.write_text("\n".join(json.dumps({"word": w}) for w in words) + "\n", encoding="utf-8")
    return f"script:{path}"


@pytest.fixture
def plugin_env(tmp_path: Path) -> dict[str, str]:
    return registered(tmp_path / "site")


def test_an_entry_point_adds_moot_run_check_and_show(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    agents = script(tmp_path / "rally.jsonl", "ping", "pong", "ping", "pong")
    done = moot("run", "pingpong", "--topic", "Warm up", "--agents", agents, "--json", cwd=tmp_path, env=plugin_env)
    assert done.returncode == 0, done.stderr
    result = json.loads(done.stdout)
    assert result["protocol"] == "pingpong" and result["outcome"] == "RALLY" and result["turns"] == 4
    record = tmp_path / ".pingpong" / "warm-up.md"
    assert record.read_text(encoding="utf-8").endswith("- ping: ping\n- pong: pong\n- ping: ping\n- pong: pong\n")

    checked = moot("check", str(record), "--json", cwd=tmp_path, env=plugin_env)
    report = json.loads(checked.stdout)
    assert checked.returncode == 0 and report["protocol"] == "pingpong" and report["verdict"] == "valid"
    assert report["state"]["status"] == "RALLY"

    shown = moot("show", str(record), "--plain", cwd=tmp_path, env=plugin_env)
    assert shown.returncode == 0, shown.stderr
    assert "# Ping Pong: Warm up" in shown.stdout and "status RALLY" in shown.stdout


def test_check_reports_the_plugins_own_rules_and_resume_continues_its_record(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    folder = tmp_path / ".pingpong"
    folder.mkdir()
    broken = folder / "broken.md"
    broken.write_text("# Ping Pong: B\nVolleys: 4\n\n- ping: ping\n- pong: ping\nspin\n", encoding="utf-8")
    checked = moot("check", str(broken), cwd=tmp_path, env=plugin_env)
    assert checked.returncode == 1
    assert "error PINGPONG_WORD (turn 2)" in checked.stdout and "error PINGPONG_LINE" in checked.stdout

    halfway = folder / "halfway.md"
    halfway.write_text("# Ping Pong: H\nVolleys: 4\n\n- ping: ping\n- pong: pong\n", encoding="utf-8")
    agents = script(tmp_path / "rest.jsonl", "ping", "miss")
    resumed = moot("resume", str(halfway), "--agents", agents, "--json", cwd=tmp_path, env=plugin_env)
    assert resumed.returncode == 1, resumed.stderr  # a miss ends the rally without consensus
    assert json.loads(resumed.stdout)["outcome"] == "MISS"
    assert halfway.read_text(encoding="utf-8").endswith("- pong: pong\n- ping: ping\n- pong: miss\n")


def test_rules_and_help_list_the_plugin_beside_the_built_in_protocols(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    rules = json.loads(moot("rules", "pingpong", "--json", cwd=tmp_path, env=plugin_env).stdout)
    ids = {row["id"] for row in rules if row["protocol"] == "pingpong"}
    assert ids == {"PINGPONG_ORDER", "PINGPONG_WORD", "PINGPONG_AFTER_END", "PINGPONG_LINE"}
    everything = json.loads(moot("rules", "--json", cwd=tmp_path, env=plugin_env).stdout)
    assert {"critique", "duel", "agora", "roundtable", "pingpong"} <= {row["protocol"] for row in everything}
    listed = moot("run", "--help", cwd=tmp_path, env=plugin_env).stdout
    assert "pingpong" in listed and "A ping-pong rally" in listed
    assert "--volleys" in moot("run", "pingpong", "--help", cwd=tmp_path, env=plugin_env).stdout


def test_without_the_entry_point_moot_knows_no_pingpong(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    record = tmp_path / ".pingpong" / "r.md"
    record.parent.mkdir()
    record.write_text("# Ping Pong: R\nVolleys: 2\n\n- ping: ping\n- pong: pong\n", encoding="utf-8")
    assert moot("check", str(record), cwd=tmp_path, env=plugin_env).returncode == 0
    plain = {"PYTHONPATH": str(PLUGIN_DIR)}  # the package is importable, but nothing registers it
    unknown = moot("check", str(record), cwd=tmp_path, env=plain)
    assert unknown.returncode == 2 and "NOT_A_MOOT_ARTIFACT" in unknown.stdout
    assert moot("run", "pingpong", "--topic", "T", cwd=tmp_path, env=plain).returncode == 2
    refused = moot("rules", "pingpong", cwd=tmp_path, env=plain)
    assert refused.returncode == 2
    assert (
        "protocol 'pingpong' is unknown; use one of agora, auto, council, critique, duel, roundtable." in refused.stderr
    )


def test_a_plugin_that_cannot_load_is_left_out_with_a_sentence_and_moot_still_works(tmp_path: Path) -> None:
    dist_info(tmp_path / "site", "broken", "0.1", "nowhere.at_all:PLUGIN")
    done = moot("rules", "duel", "--json", cwd=tmp_path, env={"PYTHONPATH": str(tmp_path / "site")})
    assert done.returncode == 0 and {row["protocol"] for row in json.loads(done.stdout)} >= {"duel"}
    assert "the protocol broken (nowhere.at_all:PLUGIN) cannot be loaded" in done.stderr
    assert "fix or uninstall the package that provides it." in done.stderr


def test_a_plugins_record_gets_a_page_without_a_view(tmp_path: Path, plugin_env: dict[str, str]) -> None:
    agents = script(tmp_path / "rally.jsonl", "ping", "pong")
    moot("run", "pingpong", "--topic", "Warm <up>", "--agents", agents, cwd=tmp_path, env=plugin_env)  # halts
    record = tmp_path / ".pingpong" / "warm-up.md"
    page = tmp_path / "page.html"
    done = moot("export", str(record), "--html", str(page), cwd=tmp_path, env=plugin_env)
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert "<h1>Warm &lt;up&gt;</h1>" in html  # its topic, escaped
    assert "- ping: ping" in html and "<th>status</th><td>open</td>" in html  # transcript and state
    assert "<svg" not in html  # no view registered: no panels


def test_moot_protocols_lists_every_protocol_with_its_package_and_capabilities(
    tmp_path: Path, plugin_env: dict[str, str]
) -> None:
    done = moot("protocols", "--json", cwd=tmp_path, env=plugin_env)
    assert done.returncode == 0, done.stderr
    rows = {row["name"]: row for row in json.loads(done.stdout)["protocols"]}
    assert list(rows) == ["agora", "auto", "council", "critique", "duel", "roundtable", "pingpong"]  # moot's own first
    assert rows["pingpong"]["distribution"] == "pingpong" and rows["pingpong"]["version"] == "0.1"
    assert (
        rows["council"]["capabilities"] == ["analysis", "review", "sealed", "view"]
        and rows["pingpong"]["capabilities"] == []
    )
    assert rows["duel"]["distribution"] == "moot"


def test_moot_protocols_check_names_a_plugin_with_a_typo_and_the_others_still_work(tmp_path: Path) -> None:
    site = tmp_path / "site"
    package = site / "typo"
    package.mkdir(parents=True)
    (package / "__init__.py").write_text(
        (PLUGIN_DIR / "pingpong" / "__init__.py")
        .read_text(encoding="utf-8")
        .replace('name="pingpong"', 'name="typo"')
        .replace("pingpong.driver:PingPongDriver", "pingpong.drivr:PingPongDriver")
        .replace("pingpong.record:FORMAT_RULES", "pingpong.record:FORMAT_RULEZ"),
        encoding="utf-8",
    )
    dist_info(site, "typo", "0.2", "typo:PLUGIN")
    env = {"PYTHONPATH": os.pathsep.join([str(site), str(PLUGIN_DIR)])}

    listed = moot("protocols", cwd=tmp_path, env=env)
    assert listed.returncode == 0 and "typo\ttypo 0.2" in listed.stdout  # listing imports nothing it names

    checked = moot("protocols", "--check", cwd=tmp_path, env=env)
    assert checked.returncode == 1
    problems = [line for line in checked.stderr.splitlines() if line.startswith("moot: the protocol typo")]
    assert len(problems) == 2 and "pingpong.record:FORMAT_RULEZ" in problems[0]
    assert "pingpong.drivr:PingPongDriver" in problems[1] and problems[1].endswith("fix or uninstall typo.")
    assert "the protocol duel" not in checked.stderr

    rules = moot("rules", "--json", cwd=tmp_path, env=env)  # every other protocol's rules still listed
    assert rules.returncode == 0, rules.stderr
    assert {"duel", "critique", "council"} <= {row["protocol"] for row in json.loads(rules.stdout)}
    assert "pingpong.record:FORMAT_RULEZ" in rules.stderr
    assert moot("ls", cwd=tmp_path, env=env).returncode == 0

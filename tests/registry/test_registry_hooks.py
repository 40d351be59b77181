"""A plugin's optional hooks reach the generic parts of moot: its positions give `moot show --json` conformity
figures (numeric positions included), its view gives the exported page a panel drawn
with moot.web.plots, and its call plan sizes the dry run's estimate."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from test_registry_plugin import PLUGIN_DIR, dist_info, moot


@pytest.fixture
def hooks_env(tmp_path: Path) -> dict[str, str]:
    """An environment whose Python registers ping-pong with its hooks (pingpong_hooks:PLUGIN)."""
    dist_info(tmp_path / "site", "pingpong", "0.1", "pingpong_hooks:PLUGIN")
    return {"PYTHONPATH": f"{tmp_path / 'site'}:{PLUGIN_DIR}"}


@pytest.fixture
def rally(tmp_path: Path) -> Path:
    record = tmp_path / ".pingpong" / "r.md"
    record.parent.mkdir()
    record.write_text(
        "# Ping Pong: R\nVolleys: 4\n\n- ping: ping\n- pong: pong\n- ping: ping\n- pong: miss\n", encoding="utf-8"
    )
    return record


def test_a_plugins_numeric_positions_give_show_its_conformity(
    tmp_path: Path, hooks_env: dict[str, str], rally: Path
) -> None:
    done = moot("show", str(rally), "--json", cwd=tmp_path, env=hooks_env)
    assert done.returncode == 0, done.stderr
    returned = json.loads(done.stdout)["conformity"]["returned"]
    assert returned["participants"]["pong"] == {"positions": [1, 0], "changes": 1}  # numbers stay numbers
    assert returned["participants"]["ping"] == {"positions": [1, 1], "changes": 0}
    assert returned["first_speaker"] == "ping" and returned["total_changes"] == 1
    assert (returned["initial_distinct"], returned["final_distinct"]) == (1, 2)
    shown = moot("show", str(rally), "--plain", cwd=tmp_path, env=hooks_env).stdout
    assert "conformity: returned" in shown and "position changes: 1 (ping 0, pong 1)" in shown


def test_a_plugins_view_draws_its_panel_with_moots_plot_helpers(
    tmp_path: Path, hooks_env: dict[str, str], rally: Path
) -> None:
    page = tmp_path / "page.html"
    done = moot("export", str(rally), "--html", str(page), cwd=tmp_path, env=hooks_env)
    assert done.returncode == 0, done.stderr
    html = page.read_text(encoding="utf-8")
    assert 'aria-label="the rally"' in html and html.count("<circle") >= 4 + 2  # a dot per return, the legend's
    assert "position changes: 1" in html  # the conformity from its positions


def test_a_plugins_call_plan_prices_the_dry_run_estimate(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.syspath_prepend(str(PLUGIN_DIR))
    monkeypatch.setenv("OPENAI_API_KEY", "sk-never-used")  # priced, never asked
    from pingpong.driver import PingPongDriver, PingPongOptions

    from moot.agents import resolve_agent
    from moot.engine.estimate import estimate
    from moot.engine.loop import Limits

    driver = PingPongDriver.start(tmp_path, PingPongOptions(topic="T", volleys=5), "2026-01-01 10:00")
    assert driver.call_plan() == ["ping", "pong", "ping", "pong", "ping"]
    agent = resolve_agent("openai:gpt-4o-mini")
    ping, pong = estimate(driver, {"ping": agent, "pong": agent}, Limits())
    assert (ping.role, ping.calls, ping.max_completion_tokens) == ("ping", 3, 60)  # at most 20 tokens a return
    assert (pong.role, pong.calls, pong.max_completion_tokens) == ("pong", 2, 40)
    assert 0 < ping.completion_tokens <= ping.max_completion_tokens  # expected: a typical return, within its budget
    assert ping.cost_usd is not None and pong.cost_usd is not None and ping.cost_usd > pong.cost_usd > 0

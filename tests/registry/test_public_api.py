"""moot's public Python surface: what ``moot`` and ``moot.plugin`` export is pinned, importing them is cheap, and
every error moot raises on purpose can be caught as MootError."""

from __future__ import annotations

import importlib
import inspect
import pkgutil
import subprocess
import sys
from pathlib import Path

import moot
import moot.plugin

EXAMPLES = Path(__file__).resolve().parents[1] / "critique" / "examples" / "valid"


def test_the_public_names_are_pinned_and_each_resolves() -> None:
    assert moot.__all__ == [
        "CheckReport", "MootError", "PluginError", "Protocol", "UserError", "__version__", "check_path",
        "installed_protocols",
    ]  # fmt: skip
    for name in moot.__all__:
        assert getattr(moot, name) is not None
    assert {"Protocol", "Ref", "RecordFormat", "Driver", "RuleBook", "Violation", "View", "Panel"} <= set(
        moot.plugin.__all__
    )
    for name in moot.plugin.__all__:
        assert getattr(moot.plugin, name) is not None


def test_check_path_and_protocols_work_from_the_top_level(tmp_path: Path) -> None:
    record = next(EXAMPLES.glob("*.md"))
    report = moot.check_path(record)
    assert isinstance(report, moot.CheckReport) and report.protocol == "critique" and not report.errors
    assert {"critique", "duel", "agora", "roundtable", "council"} <= set(moot.installed_protocols())
    assert all(isinstance(plugin, moot.Protocol) for plugin in moot.installed_protocols().values())


def test_importing_moot_imports_nothing_else_of_moot() -> None:
    code = "import sys, moot; print(sorted(m for m in sys.modules if m.startswith('moot')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "['moot']"


def test_every_exception_moot_defines_is_a_moot_error() -> None:
    """A caller (a plugin, a script) can catch everything moot raises on purpose with one except clause."""
    outside = []
    for info in pkgutil.walk_packages(moot.__path__, "moot."):
        if info.name.startswith(("moot.__main__", "moot.cli", "moot.mcp.__main__")):
            continue  # entry points: importing them builds the app
        module = importlib.import_module(info.name)
        for name, value in vars(module).items():
            if (
                inspect.isclass(value)
                and issubclass(value, Exception)
                and value.__module__ == info.name
                and not name.startswith("_")
                and not issubclass(value, moot.MootError)
            ):
                outside.append(f"{info.name}.{name}")
    assert outside == ["moot.agents.human_form.FormError"]  # a person's form input, caught where it is read

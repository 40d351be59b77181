"""moot's public Python surface: what ``moot`` and ``moot.plugin`` export is pinned, and importing them is cheap.
That every error moot raises on purpose can be caught as MootError is test_errors_tree.py's."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import moot
import moot.plugin

EXAMPLES = Path(__file__).resolve().parents[1] / "critique" / "examples" / "valid"
PLUGINS = Path(__file__).resolve().parent / "plugin"


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
    assert {*moot.plugin._LAZY, *moot.plugin._MODULES} <= set(moot.plugin.__all__)  # all it re-exports is public
    for name in moot.plugin.__all__:
        assert getattr(moot.plugin, name) is not None
    for drawing in (moot.plugin.svg, moot.plugin.plots):
        for name in drawing.__all__:
            assert getattr(drawing, name) is not None


def test_the_example_plugins_import_only_the_public_surface() -> None:
    """What a protocol package needs of moot is in moot.plugin: the examples import no other module of moot."""
    outside = []
    for file in sorted(PLUGINS.rglob("*.py")):
        for node in ast.walk(ast.parse(file.read_text(encoding="utf-8"))):
            if isinstance(node, ast.Import):
                modules = [alias.name for alias in node.names]
            elif isinstance(node, ast.ImportFrom) and node.module == "moot":
                modules = [f"moot.{alias.name}" for alias in node.names if alias.name not in moot.__all__]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                modules = [node.module]
            else:
                continue
            outside += [
                f"{file.relative_to(PLUGINS)}:{node.lineno} imports {module}"
                for module in modules
                if module.startswith("moot.") and module not in ("moot.plugin", "moot.testing")
            ]
    assert not outside, "\n".join(outside)


def test_check_path_and_protocols_work_from_the_top_level(tmp_path: Path) -> None:
    record = next(EXAMPLES.glob("*.md"))
    report = moot.check_path(record)
    assert isinstance(report, moot.CheckReport) and report.protocol == "critique" and not report.errors
    assert {"critique", "duel", "agora", "roundtable", "council"} <= set(moot.installed_protocols())
    assert all(isinstance(plugin, moot.Protocol) for plugin in moot.installed_protocols().values())


@pytest.mark.parametrize(
    ("module", "imported"),
    [
        ("moot", ["moot"]),
        # a plugin's entry point imports moot.plugin; what it re-exports (the run command, tools, drawing) waits
        ("moot.plugin", ["moot", "moot.errors", "moot.plugin"]),
    ],
)
def test_importing_the_public_modules_imports_little_else_of_moot(module: str, imported: list[str]) -> None:
    code = f"import sys, {module}; print(sorted(m for m in sys.modules if m.startswith('moot')))"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == str(imported)

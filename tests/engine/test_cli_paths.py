"""`moot run`, `moot run --batch` and `moot resume` keep every path inside the work root: a source, an agenda, a
--context or --source outside it, a `../` escape and a record folder that is a symbolic link out of the root are
refused in one sentence (exit 2), and nothing is written inside the root or outside it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from engine_helpers import run_moot, write_script

from moot.paths import CLI_FIX

FOLDERS = {"critique": ".dialogues", "duel": "debates", "agora": ".agora", "roundtable": ".roundtable"}


def tree(top: Path) -> dict[str, bytes | None]:
    """Every path under ``top`` (links not followed) and a file's bytes."""
    return {
        p.relative_to(top).as_posix(): (p.read_bytes() if p.is_file() and not p.is_symlink() else None)
        for p in sorted(top.rglob("*"))
    }


@pytest.fixture
def places(tmp_path: Path) -> tuple[Path, Path]:
    """(the work root, a folder outside it holding a Markdown document, a text file and the agents' script)."""
    root = tmp_path / "work"
    (root / "docs").mkdir(parents=True)
    (root / "docs" / "inside.md").write_text("# Inside\n\nA document in the root.\n", encoding="utf-8")
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "doc.md").write_text("# Secret plan\n\nNot for the model.\n", encoding="utf-8")
    (outside / "notes.txt").write_text("secret notes\n", encoding="utf-8")
    write_script(outside / "script.jsonl", ["not a turn"] * 8)
    return root, outside


def refused(done: subprocess.CompletedProcess[str], what: str) -> str:
    """The one sentence of a refusal with exit code 2."""
    assert done.returncode == 2, done.stdout + done.stderr
    lines = done.stderr.strip().splitlines()
    assert len(lines) == 1 and lines[0].startswith("moot: ") and "Traceback" not in lines[0], lines
    assert what in lines[0], lines[0]
    return lines[0]


def outside_args(outside: Path, escape: bool) -> list[list[str]]:
    """A run per kind of path a person names, each naming a file outside the root (absolute or by ``../``)."""
    doc = "docs/../../outside/doc.md" if escape else str(outside / "doc.md")
    notes = "../outside/notes.txt" if escape else str(outside / "notes.txt")
    return [
        ["run", "duel", doc],
        ["run", "duel", "docs/inside.md", "--source", notes],
        ["run", "roundtable", "--agenda", notes],
        ["run", "critique", "--topic", "T", "--context", notes],
        ["run", "critique", "--topic", "T", "--source", notes],
        ["run", "agora", "--topic", "T", "--source", str(outside) if not escape else "../outside"],
        ["run", "council", "--question", "Q?", "--member", "a=local", "--member", "b=local", "--source", notes],
    ]


@pytest.mark.parametrize("escape", [False, True], ids=["absolute", "dot-dot"])
def test_moot_run_refuses_a_path_outside_the_work_root(places: tuple[Path, Path], escape: bool) -> None:
    root, outside = places
    before = tree(root.parent)
    script = f"script:{outside / 'script.jsonl'}"
    for args in outside_args(outside, escape):
        agents = [] if args[1] == "council" else ["--agents", script]
        done = run_moot(*args, *agents, cwd=root)
        sentence = refused(done, "is outside the work root")
        assert sentence.endswith(CLI_FIX + "."), sentence
        assert tree(root.parent) == before, args


def test_moot_run_reads_a_file_inside_the_root_from_where_it_is_run(places: tuple[Path, Path]) -> None:
    root, outside = places
    script = f"script:{outside / 'script.jsonl'}"
    # From a folder inside the root, with --root: the document is named relative to the current directory.
    done = run_moot("run", "duel", "inside.md", "--root", "..", "--agents", script, "--json", cwd=root / "docs")
    assert done.returncode == 1 and json.loads(done.stdout)["artifact"].startswith("../debates/"), done.stderr
    assert len(list((root / "debates").glob("*-inside.md"))) == 1


@pytest.mark.parametrize("protocol", [*FOLDERS, "council"])
def test_moot_run_refuses_a_record_folder_that_links_out_of_the_root(places: tuple[Path, Path], protocol: str) -> None:
    root, outside = places
    folder = FOLDERS.get(protocol, ".council")
    target = outside / "records"
    target.mkdir()
    (root / folder).symlink_to(target)
    before = tree(root.parent)
    script = f"script:{outside / 'script.jsonl'}"
    args = {
        "critique": ["--topic", "T", "--agents", script],
        "duel": ["docs/inside.md", "--agents", script],
        "agora": ["--topic", "T", "--agents", script],
        "roundtable": ["--topic", "T", "--agents", script],
        "council": ["--question", "Q?", "--member", f"a={script}", "--member", f"b={script}"],
    }[protocol]
    done = run_moot("run", protocol, *args, cwd=root)
    assert f"{root / folder} is a symbolic link" in refused(done, "replace the link with what it points to")
    assert tree(root.parent) == before and list(target.iterdir()) == []


def test_moot_resume_refuses_a_record_reached_through_a_linked_folder(places: tuple[Path, Path]) -> None:
    root, outside = places
    script = f"script:{outside / 'script.jsonl'}"
    done = run_moot("run", "critique", "--topic", "T", "--max-rounds", "1", "--agents", script, cwd=root)
    assert done.returncode == 1 and (root / ".dialogues" / "t.md").is_file(), done.stderr
    shutil.move(root / ".dialogues", outside / "dialogues")
    (root / ".dialogues").symlink_to(outside / "dialogues")
    before = tree(root.parent)
    resumed = run_moot("resume", ".dialogues/t.md", "--agents", script, cwd=root)
    assert f"{root / '.dialogues'} is a symbolic link" in refused(resumed, "symbolic link")
    assert tree(root.parent) == before


def test_a_batch_line_naming_a_path_outside_its_root_is_refused_and_the_others_run(
    places: tuple[Path, Path],
) -> None:
    root, outside = places
    linked = root.parent / "linked-root"
    linked.mkdir()
    (linked / ".dialogues").symlink_to(outside)
    script = f"script:{outside / 'script.jsonl'}"
    common = {"agents": script, "root": str(root)}
    lines = [
        {"protocol": "duel", "source": str(outside / "doc.md"), **common},
        {"protocol": "duel", "source": "work/docs/../../outside/doc.md", **common},
        {"protocol": "roundtable", "speakers": ["a", "b"], "agenda": "/etc/passwd", **common},
        {"protocol": "agora", "topic": "T", "sources": ["work/../outside"], **common},
        {"protocol": "duel", "source": "work/docs/inside.md", "supporting": [str(outside)], **common},
        {"protocol": "critique", "topic": "T", "agents": script, "root": str(linked)},
        {"protocol": "duel", "source": "work/docs/inside.md", **common},
    ]
    batch = root.parent / "batch.jsonl"
    batch.write_text("".join(json.dumps(line) + "\n" for line in lines), encoding="utf-8")
    before = tree(outside)
    done = run_moot("run", "--batch", str(batch), cwd=root.parent)
    rows = {row["line"]: row for row in map(json.loads, done.stdout.splitlines())}
    for line in range(1, 6):
        assert "is outside the work root" in rows[line]["error"] and CLI_FIX in rows[line]["error"], rows[line]
    assert f"{linked / '.dialogues'} is a symbolic link" in rows[6]["error"]
    assert "error" not in rows[7] and (root / "debates").is_dir()
    assert sorted(p.name for p in root.iterdir()) == ["debates", "docs"]  # only the good line wrote
    assert tree(outside) == before and "Traceback" not in done.stderr


def test_moot_ls_leaves_out_a_record_folder_that_is_a_link_and_says_so(places: tuple[Path, Path]) -> None:
    root, outside = places
    examples = Path(__file__).resolve().parents[1]
    (root / ".dialogues").mkdir()
    shutil.copy(examples / "critique" / "examples" / "valid" / "planning-done.md", root / ".dialogues" / "real.md")
    (outside / "agora").mkdir()
    shutil.copy(examples / "agora" / "examples" / "valid" / "timeout.md", outside / "agora" / "elsewhere.md")
    (root / ".agora").symlink_to(outside / "agora")
    listed = run_moot("ls", "--json", cwd=root)
    assert listed.returncode == 0, listed.stderr
    assert [row["path"] for row in json.loads(listed.stdout)] == [".dialogues/real.md"]
    note = listed.stderr.strip().splitlines()
    assert len(note) == 1 and note[0].startswith(f"moot: skipped: {root / '.agora'} is a symbolic link;"), note


def test_each_driver_refuses_to_start_in_a_linked_record_folder(places: tuple[Path, Path]) -> None:
    """Also for starts that come from neither moot run nor a spec (moot review starts its drivers itself)."""
    from moot.errors import PathRefused
    from moot.protocols.agora.driver import AgoraDriver, AgoraOptions
    from moot.protocols.council.driver import CouncilDriver, CouncilOptions
    from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

    root, outside = places
    starts = {
        ".dialogues": lambda: CritiqueDriver.start(root, CritiqueOptions(topic="T"), "2026-01-01 10:00"),
        ".agora": lambda: AgoraDriver.start(root, AgoraOptions(topic="T"), "2026-01-01 10:00"),
        ".council": lambda: CouncilDriver.start(
            root, CouncilOptions(question="Q?", members=(("alice", "local"), ("bob", "local"))), "2026-01-01 10:00"
        ),
    }
    for folder, start in starts.items():
        (outside / folder).mkdir()
        (root / folder).symlink_to(outside / folder)
        with pytest.raises(PathRefused, match="is a symbolic link"):
            start()
        assert list((outside / folder).iterdir()) == []

"""Bounded work on records near the 16 MiB cap: ``moot check`` and one page of ``moot serve`` per protocol, and
``slugify`` on a 1 MB topic — time and peak memory of this code beside a baseline revision, measured in one run.

The records are realistic: many turns of real length, each protocol's own format. A critique, an Agora debate
and a roundtable are written by moot's own drivers turn by turn (a valid debate as long as the protocol allows,
filled to the cap); a duel (at most six turns) and a council (one answer per member) cannot hold that many
valid turns, so theirs repeat a hand-written valid record's turns to the cap, as a runaway tool or an attacker
would (every extra turn is a violation ``moot check`` must report). Each measurement is one fresh process:
``moot check`` (its wall time and peak RSS), and ``moot serve`` answering one request for the record's page
(the request's time and the server's peak RSS, VmHWM, after it, and that of the child process it reads a record
of over 1 MiB in). The viewer checks a record of up to 2 MiB (``moot.web.isolated.CHECKED_BYTES``) and shows a
larger one unchecked, a page at a time: the quick run's records are just under that bound, so its pages are
checked; the full run's are not.

``python -m bench.bounds [--baseline REV] [--quick] [--timeout S]``: the baseline is a git revision whose
``src/`` is exported to a temporary directory and run the same way (default: the commit before the bounds
work); a baseline run past ``--timeout`` seconds is reported as such.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import tempfile
import threading
import time
import tomllib
import unicodedata
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench.common import BenchResult, Table, fmt
from moot.web.isolated import CHECKED_BYTES

REPO = Path(__file__).resolve().parents[1]
EXAMPLES = REPO / "tests"
CAP = 16 * 1024 * 1024
FILL = CAP - 64 * 1024  # room for a last turn and the chain mark
TOKEN = "bench-bounds"
BASELINE = "366baf8"  # main before the bounds work
STAMP = "2026-05-01 10:00"
PARAGRAPH = (
    "A shared cache keeps the total footprint low, but one noisy tenant can evict everyone else's hot keys; a "
    "per-tenant floor bounds the worst case while the pool keeps most of the gain, and billing stays exact. "
)


# --- the records -------------------------------------------------------------------------------------------


def _size(path: Path) -> int:
    if path.is_dir():
        return sum(p.stat().st_size for p in path.iterdir() if p.is_file())
    return path.stat().st_size


def _drive(driver: Any, reply: Callable[[str, int], str], fill: int) -> Path:
    """Commit ``reply(role, n)`` turn after turn through ``driver`` until the record holds ``fill`` bytes."""
    number = 0
    while driver.next_speaker() is not None and _size(driver.record_path) < fill:
        number += 1
        role = driver.next_speaker()
        candidate = driver.read_reply(role, reply(role, number), STAMP)
        if candidate.errors:
            raise RuntimeError(f"turn {number} of the generated {driver.protocol} record: {candidate.errors[0]}")
        driver.commit(candidate.turn)
    path: Path = driver.record_path
    return path


def long_critique(root: Path, fill: int) -> Path:
    from moot.protocols.critique.driver import CritiqueDriver, CritiqueOptions

    driver = CritiqueDriver.start(root, CritiqueOptions(topic="Shared cache", max_rounds=1000), STAMP)
    body = "\n\n".join(PARAGRAPH * 4 for _ in range(10))  # about 8 KB: a long model turn

    def reply(role: str, number: int) -> str:
        return json.dumps({"message": f"Point {number}.\n\n{body}", "status": "AWAITING", "summary": ""})

    return _drive(driver, reply, fill)


def long_agora(root: Path, fill: int) -> Path:
    from moot.protocols.agora.driver import AgoraDriver, AgoraOptions

    options = AgoraOptions(topic="Shared cache", max_turns=100_000, deadlock_window=100_000)
    driver = AgoraDriver.start(root, options, STAMP)
    sentence = PARAGRAPH.split(";")[0]

    def reply(role: str, number: int) -> str:
        evidence = [
            {"source": f"benchmark run {number}-{k}", "content": PARAGRAPH.strip(), "confidence": 0.8} for k in range(3)
        ]
        signal_, target = ("propose", None) if number <= 2 else ("counter", f"turn-{number - 1}")
        message = f"Turn {number}: {sentence}. {sentence}, again. {sentence}, once more. So I hold my view."
        return json.dumps(
            {"signal": signal_, "message": message, "confidence": 0.7, "target": target, "evidence": evidence}
        )

    return _drive(driver, reply, fill)


def long_roundtable(root: Path, fill: int) -> Path:
    from moot.protocols.roundtable.driver import RoundtableDriver, RoundtableOptions

    options = RoundtableOptions(speakers=("architect", "operator"), topic="Shared cache", max_rounds=5000)
    driver = RoundtableDriver.start(root, options, STAMP)
    body = "\n\n".join(PARAGRAPH * 4 for _ in range(3))

    def reply(role: str, number: int) -> str:
        return json.dumps(
            {
                "position": f"Speech {number}: share the cache with a floor.",
                "analysis": body,
                "responses_and_questions": body,
                "prompt_for_next_speaker": "What would change your mind?",
                "consensus_reached": False,
            }
        )

    return _drive(driver, reply, fill)


def repeated(example: Path, target: Path, turn_heading: str, stop: str | None, fill: int) -> Path:
    """``example``'s header, then its turns again and again (renumbered) until ``fill`` bytes."""
    text = example.read_text(encoding="utf-8")
    if stop is not None:
        text = text.split(stop)[0]
    starts = [m.start() for m in re.finditer(turn_heading, text, re.MULTILINE)]
    header, turns = text[: starts[0]], [text[a:b] for a, b in zip(starts, [*starts[1:], len(text)], strict=True)]
    parts, size, number = [header], len(header.encode()), 0
    while size < fill:
        piece = re.sub(r"Turn \d+", f"Turn {number + 1}", turns[number % len(turns)], count=1)
        number += 1
        parts.append(piece)
        size += len(piece.encode())
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text("".join(parts), encoding="utf-8")
    return target


RECORDS: dict[str, Callable[[Path, int], Path]] = {
    "critique (written by moot)": long_critique,
    "agora (written by moot)": long_agora,
    "roundtable (written by moot)": long_roundtable,
    "duel (example turns repeated)": lambda root, fill: repeated(
        EXAMPLES / "duel/examples/valid/consensus-six-turns.md",
        root / "debates/2026-05-01-shared-cache.md",
        "^## Turn ",
        "## Terminal Conclusion",
        fill,
    ),
    "council (example answers repeated)": lambda root, fill: repeated(
        EXAMPLES / "council/examples/valid/synthesized-two-members.md",
        root / ".council/shared-cache.md",
        "^## Stage 1",
        "## Stage 2",
        fill,
    ),
    "agora (example turns repeated)": lambda root, fill: repeated(
        EXAMPLES / "agora/examples/valid/consensus-fact-based.md",
        root / ".agora/dispatch.md",
        "^## Turn ",
        "## Outcome",
        fill,
    ),
}


def build(where: Path, fill: int) -> dict[str, Path]:
    """Each record in a work root of its own under ``where`` (the viewer's index then lists only it)."""
    built = {}
    for number, (name, make) in enumerate(RECORDS.items()):
        root = where / f"root{number}"
        root.mkdir(parents=True)
        started = time.perf_counter()
        built[name] = make(root, fill)
        print(f"  built {name}: {_size(built[name]):,} bytes in {time.perf_counter() - started:.1f} s", flush=True)
    return built


# --- measuring ---------------------------------------------------------------------------------------------

_CHECK = """
import json, resource, sys, time
from pathlib import Path
started = time.perf_counter()
try:
    from moot.detect import check_path
except ImportError:  # a baseline from before the protocol packages
    from moot.artifacts import check_path
report = check_path(Path(sys.argv[1]))
usage = resource.getrusage(resource.RUSAGE_SELF)
print(json.dumps({"s": time.perf_counter() - started, "cpu": usage.ru_utime + usage.ru_stime, "rss": usage.ru_maxrss,
                  "verdict": report.verdict, "violations": len(report.violations),
                  "turns": report.summary.turns if report.summary else None}))
"""


@dataclass
class Measure:
    seconds: float | None  # None: past the timeout
    rss_mib: float | None
    note: str = ""
    cpu: float | None = None  # CPU seconds of the process (a loaded machine stretches the wall time)
    child_mib: float | None = None  # the viewer's child process, when it read the record

    def cells(self) -> list[str]:
        if self.seconds is None:
            return [self.note if self.note.startswith("HTTP") else f"> {self.note}", "—"]
        rss = fmt(self.rss_mib or 0, 0) + (f" (child {fmt(self.child_mib, 0)})" if self.child_mib else "")
        cpu = f" ({fmt(self.cpu, 1)} CPU)" if self.cpu is not None else ""
        return [fmt(self.seconds, 1) + cpu, rss]


def _env(src: Path) -> dict[str, str]:
    return {**os.environ, "PYTHONPATH": str(src), "PYTHONDONTWRITEBYTECODE": "1"}


def check(src: Path, record: Path, timeout: float) -> tuple[Measure, dict[str, Any]]:
    try:
        done = subprocess.run(
            [sys.executable, "-c", _CHECK, str(record)],
            env=_env(src),
            capture_output=True,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return Measure(None, None, f"{timeout:.0f} s"), {}
    if done.returncode != 0:
        raise RuntimeError(done.stderr)
    found = json.loads(done.stdout)
    return Measure(found["s"], found["rss"] / 1024, cpu=found["cpu"]), found


def _peak_rss_mib(pid: int) -> float:
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return 0.0  # it ended meanwhile
    found = re.search(r"VmHWM:\s+(\d+)", status)
    return int(found.group(1)) / 1024 if found else 0.0


def _children(pid: int) -> list[int]:
    found: list[int] = []
    for task in Path(f"/proc/{pid}/task").glob("*"):
        with contextlib.suppress(OSError):
            found += [int(child) for child in (task / "children").read_text().split()]
    return found


class ChildPeak:
    """The highest peak RSS of any child of ``pid`` while it runs (the viewer checks a large record in one)."""

    def __init__(self, pid: int) -> None:
        self.pid, self.peak, self._stop = pid, 0.0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.wait(0.05):
            for child in _children(self.pid):
                self.peak = max(self.peak, _peak_rss_mib(child))

    def __enter__(self) -> ChildPeak:
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


@contextmanager
def _viewer(src: Path, root: Path) -> Iterator[tuple[subprocess.Popen[str], str]]:
    process = subprocess.Popen(
        [sys.executable, "-m", "moot", "serve", "--root", str(root), "--port", "0", "--token", TOKEN],
        env=_env(src),
        stdout=subprocess.PIPE,
        stderr=subprocess.DEVNULL,
        text=True,
        start_new_session=True,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        yield process, line[line.index("http://") :].split()[0].split("?")[0]
    finally:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def page(src: Path, root: Path, record: Path, timeout: float) -> tuple[Measure, dict[str, Any]]:
    """One request for the record's page from a fresh ``moot serve``; the server's peak RSS after it."""
    name = record.relative_to(root).as_posix()
    with _viewer(src, root) as (process, base):
        request = urllib.request.Request(f"{base}r/{name}", headers={"Cookie": f"moot_token={TOKEN}"})
        started = time.perf_counter()
        try:
            with ChildPeak(process.pid) as child, urllib.request.urlopen(request, timeout=timeout) as response:
                body = response.read()
        except urllib.error.HTTPError as exc:  # a refusal is that revision's answer, reported as such
            return Measure(None, _peak_rss_mib(process.pid), f"HTTP {exc.code}"), {}
        except (TimeoutError, OSError) as exc:
            if time.perf_counter() - started < timeout:
                raise
            return Measure(None, _peak_rss_mib(process.pid), f"{timeout:.0f} s ({type(exc).__name__})"), {}
        seconds = time.perf_counter() - started
        return Measure(seconds, _peak_rss_mib(process.pid), child_mib=child.peak or None), {"bytes": len(body)}


def baseline_src(revision: str, where: Path) -> Path:
    """``src/`` of ``revision``, exported beside the records, with that revision's own protocol entry points.

    The installed moot's entry points name today's protocol modules, which an older tree may not have: a
    ``moot`` dist-info in the exported ``src/`` comes first on the path, and importlib.metadata reads only the
    first distribution of a name, so the old tree registers its own protocols."""
    target = where / f"baseline-{revision}"
    target.mkdir()
    archive = subprocess.run(["git", "-C", str(REPO), "archive", revision, "src"], capture_output=True, check=True)
    subprocess.run(["tar", "-x", "-C", str(target)], input=archive.stdout, check=True)
    project = subprocess.run(
        ["git", "-C", str(REPO), "show", f"{revision}:pyproject.toml"], capture_output=True, text=True, check=True
    )
    points = tomllib.loads(project.stdout)["project"].get("entry-points", {})
    info = target / "src" / "moot-0.0.0.dist-info"
    info.mkdir()
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: moot\nVersion: 0.0.0\n", encoding="utf-8")
    groups = [
        f"[{group}]\n" + "".join(f"{name} = {ref}\n" for name, ref in refs.items()) for group, refs in points.items()
    ]
    (info / "entry_points.txt").write_text("\n".join(groups), encoding="utf-8")
    return target / "src"


# --- slugify -----------------------------------------------------------------------------------------------


def quadratic_slugify(topic: str, fallback: str, max_bytes: int = 120) -> str:
    """The slug cut the bounds work replaced: one character at a time, the whole slug encoded again each time."""
    text = unicodedata.normalize("NFKC", topic).casefold()
    slug = re.sub(r"-+", "-", "".join(ch if ch.isalnum() else "-" for ch in text)).strip("-")
    while len(slug.encode("utf-8")) > max_bytes:
        slug = slug[:-1].rstrip("-")
    return slug or fallback


def slug_times(size: int, timeout: float) -> tuple[float, float | None]:
    from moot.core.files import slugify

    topic = ("Should every tenant share one cache, or each get its own? " * (size // 58 + 1))[:size]
    started = time.perf_counter()
    slugify(topic, "debate")
    now = time.perf_counter() - started
    code = f"import sys; sys.path.insert(0, {str(REPO)!r}); from bench.bounds import quadratic_slugify as q; "
    code += f"q(('Should every tenant share one cache, or each get its own? ' * {size // 58 + 1})[:{size}], 'x')"
    started = time.perf_counter()
    try:
        subprocess.run([sys.executable, "-c", code], timeout=timeout, check=True)
    except subprocess.TimeoutExpired:
        return now, None
    return now, time.perf_counter() - started


# --- the benchmark -----------------------------------------------------------------------------------------


def _records(where: Path, fill: int) -> dict[str, Path]:
    """The records under ``where``: built there, or the ones an earlier run built (a moot-written roundtable of
    thousands of speeches takes minutes to write)."""
    built = where / "built.json"
    if built.exists():
        return {name: Path(path) for name, path in json.loads(built.read_text()).items()}
    print(f"building records of {fill:,} bytes under {where}", flush=True)
    records = build(where, fill)
    built.write_text(json.dumps({name: str(path) for name, path in records.items()}))
    return records


def run(quick: bool, baseline: str = BASELINE, timeout: float = 300.0, keep: Path | None = None) -> BenchResult:
    fill = CHECKED_BYTES - 64 * 1024 if quick else FILL
    shm = "/dev/shm" if Path("/dev/shm").is_dir() else None
    where = keep or Path(tempfile.mkdtemp(prefix="moot-bounds-", dir=shm))
    where.mkdir(parents=True, exist_ok=True)
    scratch = Path(tempfile.mkdtemp(prefix="moot-bounds-src-", dir=shm))
    try:
        records = _records(where, fill)
        old_src = baseline_src(baseline, scratch)
        new_src = REPO / "src"
        rows, data = [], {}
        for name, record in records.items():
            root = where / record.relative_to(where).parts[0]
            new_check, found = check(new_src, record, timeout)
            old_check, _ = check(old_src, record, timeout)
            new_page, shown = page(new_src, root, record, timeout)
            old_page, _ = page(old_src, root, record, timeout)
            row = [name, f"{_size(record) / 2**20:.1f}", str(found.get("turns")), f"{found.get('verdict')}"]
            row += [*old_check.cells(), *new_check.cells(), *old_page.cells(), *new_page.cells()]
            rows.append(row)
            data[name] = {
                "bytes": _size(record),
                "check": {"baseline": old_check.__dict__, "now": new_check.__dict__, **found},
                "page": {"baseline": old_page.__dict__, "now": new_page.__dict__, **shown},
            }
            print("  " + " | ".join(row), flush=True)
        now, before = slug_times(1_000_000, timeout)
        data["slugify_1MB"] = {"now_s": now, "baseline_s": before}
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
        if keep is None:
            shutil.rmtree(where, ignore_errors=True)
    columns = ["record", "MiB", "turns", "verdict", "check s (before)", "check MiB (before)", "check s", "check MiB"]
    columns += ["page s (before)", "server MiB (before)", "page s", "server MiB"]
    slug = (
        f"slugify of a 1 MB topic: {now:.3f} s (before: {'> ' + str(timeout) if before is None else f'{before:.1f}'} s)"
    )
    return BenchResult(
        name="bounds",
        summary=f"moot check and one viewer page on records near the 16 MiB cap, before ({baseline}) and now; {slug}.",
        tables=[Table("Records near the cap: moot check and one page of moot serve", columns, rows, notes=[slug])],
        data=data,
    )


def main() -> None:
    parser = argparse.ArgumentParser(prog="python -m bench.bounds", description=__doc__.splitlines()[0])
    parser.add_argument("--baseline", default=BASELINE, help=f"the git revision to compare with (default {BASELINE})")
    parser.add_argument("--quick", action="store_true", help="records just under 2 MiB instead of 16 MiB")
    parser.add_argument("--timeout", type=float, default=300.0, help="seconds before a measurement is given up")
    parser.add_argument("--records", type=Path, help="build the records here once and reuse them in later runs")
    args = parser.parse_args()
    result = run(args.quick, args.baseline, args.timeout, args.records)
    for table in result.tables:
        print(" | ".join(table.columns))
        for row in table.rows:
            print(" | ".join(row))
        print(*table.notes, sep="\n")


if __name__ == "__main__":
    main()

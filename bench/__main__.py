"""``python -m bench [--quick] [--only overhead,leases] [--merge] [--out DIR]``: run the benchmarks, write the results.

The full run writes bench/RESULTS.md and bench/results.json (the files kept on main); ``--quick`` (under two
minutes on 2 cores) writes bench/RESULTS-quick.md and results-quick.json unless ``--out`` says otherwise.
``--only … --merge`` keeps the other benchmarks' results from the existing JSON, each summary saying the date
of the run it comes from.
"""

from __future__ import annotations

import argparse
import importlib
import shlex
import sys
import time
import traceback
from pathlib import Path

from bench import machine, report
from bench.common import BenchResult

BENCHMARKS = [
    "overhead",
    "concurrency",
    "workers",
    "model_efficiency",
    "tokens",
    "caching",
    "estimates",
    "bounds",
    "leases",
    "shared_append",
    "startup",
    "sealed",
    "embedded_reliability",
]


def parse_args(argv: list[str]) -> argparse.Namespace:
    parser = argparse.ArgumentParser(prog="python -m bench", description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes: under two minutes on 2 cores")
    parser.add_argument("--only", default="", help=f"comma-separated subset of: {', '.join(BENCHMARKS)}")
    parser.add_argument("--out", type=Path, default=Path(__file__).parent, help="where to write the results")
    parser.add_argument(
        "--merge",
        action="store_true",
        help="with --only: keep the other benchmarks' results from the existing results JSON, dated",
    )
    parser.add_argument(
        "--report-only",
        action="store_true",
        help="run nothing: write the report again from its results JSON, with the latest long reliability figures",
    )
    args = parser.parse_args(argv)
    args.only = [name.strip() for name in args.only.split(",") if name.strip()] or BENCHMARKS
    unknown = sorted(set(args.only) - set(BENCHMARKS))
    if unknown:
        parser.error(f"unknown benchmark(s) {', '.join(unknown)}; choose from {', '.join(BENCHMARKS)}")
    return args


def run_one(name: str, quick: bool) -> BenchResult:
    """Run one benchmark; a crash becomes a reported failure so the others still run."""
    try:
        module = importlib.import_module(f"bench.{name}")
        result: BenchResult = module.run(quick)
        return result
    except Exception as exc:
        traceback.print_exc()
        return BenchResult(name, "", [], {"error": repr(exc)}, skipped=f"failed: {exc!r}")


def main(argv: list[str] | None = None) -> int:
    args = parse_args(sys.argv[1:] if argv is None else argv)
    command = shlex.join(["python", "-m", "bench", *(sys.argv[1:] if argv is None else argv)])
    stem = "results-quick" if args.quick else "results"
    if args.report_only:
        md, js = report.rewrite(args.out, stem)
        print(f"wrote {md} and {js}")
        return 0
    results = []
    for name in args.only:
        print(f"== {name}", flush=True)
        started = time.perf_counter()
        result = run_one(name, args.quick)
        print(f"   {result.skipped or result.summary} ({time.perf_counter() - started:.1f} s)", flush=True)
        results.append(result)
    if args.merge:
        results = report.merged(args.out, stem, results)
    md, js = report.write(args.out, stem, machine.describe(command), results, args.quick)
    print(f"wrote {md} and {js}")
    return 1 if any(r.skipped and r.skipped.startswith("failed") for r in results) else 0


if __name__ == "__main__":
    sys.exit(main())

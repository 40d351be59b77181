"""``python -m moot.hosts [DIR] [--check]``: write the agent-host instruction files (default DIR:
./integrations), or with ``--check`` list the ones that are out of date and exit 1."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from moot.hosts import stale, write


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m moot.hosts", description=__doc__)
    parser.add_argument("directory", nargs="?", type=Path, default=Path("integrations"))
    parser.add_argument("--check", action="store_true", help="Only compare; exit 1 if a file is out of date.")
    args = parser.parse_args(argv)
    if args.check:
        outdated = stale(args.directory)
        for relative in outdated:
            print(f"out of date: {args.directory / relative}", file=sys.stderr)
        if outdated:
            print("Regenerate them with: python -m moot.hosts", file=sys.stderr)
        return 1 if outdated else 0
    for path in write(args.directory):
        print(path)
    return 0


if __name__ == "__main__":
    sys.exit(main())

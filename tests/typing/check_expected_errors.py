"""Run mypy on ``expected_errors.py`` and check it reports exactly the marked errors."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
TARGET = HERE / "expected_errors.py"
MARK = re.compile(r"#\s*E:\s*([\w-]+)")
REPORTED = re.compile(r"^[^:]+:(\d+):(?:\d+:)? error: .*\[([\w-]+)\]$")


def expected() -> set[tuple[int, str]]:
    """The (line, error code) pairs marked in the file."""
    out = set()
    for number, line in enumerate(TARGET.read_text().splitlines(), start=1):
        match = MARK.search(line)
        if match:
            out.add((number, match.group(1)))
    return out


def reported() -> set[tuple[int, str]]:
    """The (line, error code) pairs mypy reports."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(TARGET)],
        capture_output=True,
        text=True,
        check=False,
    )
    found = set()
    for line in proc.stdout.splitlines():
        match = REPORTED.match(line)
        if match:
            found.add((int(match.group(1)), match.group(2)))
    return found


def main() -> int:
    """Compare and print the differences; exit non-zero if any."""
    want, got = expected(), reported()
    missing, unexpected = sorted(want - got), sorted(got - want)
    for line, code in missing:
        print(f"expected_errors.py:{line}: mypy no longer reports [{code}]")
    for line, code in unexpected:
        print(f"expected_errors.py:{line}: unexpected mypy error [{code}]")
    if missing or unexpected:
        return 1
    print(f"typing: {len(want)} expected errors reported, none unexpected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Run mypy on a file of wrong code and check it reports exactly the marked errors.

``python check_expected_errors.py [FILE]`` checks ``FILE`` (a path, or a name in this
folder); without one, ``expected_errors.py``.
"""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

HERE = Path(__file__).parent
DEFAULT = HERE / "expected_errors.py"
MARK = re.compile(r"#\s*E:\s*([\w-]+)")
REPORTED = re.compile(r"^[^:]+:(\d+):(?:\d+:)? error: .*\[([\w-]+)\]$")


def expected(target: Path) -> set[tuple[int, str]]:
    """The (line, error code) pairs marked in ``target``."""
    out = set()
    for number, line in enumerate(target.read_text().splitlines(), start=1):
        match = MARK.search(line)
        if match:
            out.add((number, match.group(1)))
    return out


def reported(target: Path) -> set[tuple[int, str]]:
    """The (line, error code) pairs mypy reports for ``target``."""
    proc = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", str(target)],
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


def target_of(argv: list[str]) -> Path:
    """The file named on the command line (as given, else in this folder), or the default."""
    if not argv:
        return DEFAULT
    given = Path(argv[0])
    return given if given.exists() else HERE / given


def main(argv: list[str] | None = None) -> int:
    """Compare and print the differences; exit non-zero if any."""
    target = target_of(sys.argv[1:] if argv is None else argv)
    want, got = expected(target), reported(target)
    missing, unexpected = sorted(want - got), sorted(got - want)
    for line, code in missing:
        print(f"{target.name}:{line}: mypy no longer reports [{code}]")
    for line, code in unexpected:
        print(f"{target.name}:{line}: unexpected mypy error [{code}]")
    if missing or unexpected:
        return 1
    print(f"typing: {len(want)} expected errors reported in {target.name}, none unexpected")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

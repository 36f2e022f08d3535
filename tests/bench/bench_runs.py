"""Running a benchmark script as the smoke tests do: quick, in a subprocess, ending in JSON."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

BENCH = Path(__file__).resolve().parents[2] / "bench"


def quick_run(script: str, *options: str) -> tuple[dict[str, Any], str]:
    """Run ``bench/<script> --quick --json *options``: its figures (the last line), its table."""
    done = subprocess.run(
        [sys.executable, str(BENCH / script), "--quick", "--json", *options],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    return json.loads(lines[-1]), "\n".join(lines[:-1])


def run_code(code: str) -> subprocess.CompletedProcess[str]:
    """Run ``code`` in a new interpreter, with ``bench/`` as its first argument."""
    return subprocess.run(
        [sys.executable, "-c", code, str(BENCH)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )


def check_figures(figures: dict[str, Any], measured: Iterable[str], derived: Iterable[str]) -> None:
    """Each figure named is a finite number; the ``measured`` ones (times) are positive.

    Derived figures (differences, ratios) are only finite: a difference of two noisy quick
    measurements may come out negative on a busy machine; the benchmarks are not timing tests.
    """
    measured = tuple(measured)
    for key in (*measured, *derived):
        value = figures[key]
        assert isinstance(value, (int, float)), (key, value)
        assert not isinstance(value, bool), key
        assert math.isfinite(value), (key, value)
    for key in measured:
        assert figures[key] > 0, (key, figures[key])

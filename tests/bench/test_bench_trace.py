"""Smoke test of bench/trace_cost.py: it runs and reports every figure (no timing checks)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "trace_cost.py"

MEASURED = ("bare_us", "layers_us", "off_us", "sdk_us", "content_us")
"""Times measured directly: positive."""
DERIVED = (
    "off_extra_us",
    "off_own_us",
    "sdk_extra_us",
    "content_extra_us",
    "off_ratio",
    "sdk_ratio",
)
"""Differences and ratios: finite numbers (a difference of quick measurements may be negative)."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/trace_cost.py --quick --json prints every figure as a number, timings positive."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", "--runs", "30"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    for key in MEASURED:
        assert figures[key] > 0, key
    for key in DERIVED:
        assert math.isfinite(figures[key]), key

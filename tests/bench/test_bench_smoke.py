"""Smoke test of bench/overhead.py: it runs and reports every figure (no timing checks)."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from pathlib import Path

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "overhead.py"

MEASURED = ("base_us", "mw_us", "floor_us", "history_us", "concurrent_wall_s")
"""Times measured directly: positive."""
DERIVED = (
    "closure_layer_us",
    "per_layer_us",
    "base_ratio",
    "layer_ratio",
    "history_ratio",
    "concurrent_peak_rss_mb",
)
"""Differences and ratios of measurements: finite numbers (a difference of two noisy quick
measurements may come out negative on a busy machine; the bench is not a timing test)."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/overhead.py --quick --json prints every figure as a number, timings positive."""
    done = subprocess.run(
        [sys.executable, str(SCRIPT), "--quick", "--json", "--concurrency", "200"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.strip().splitlines()
    figures = json.loads(lines[-1])
    for key in (*MEASURED, *DERIVED):
        value = figures[key]
        assert isinstance(value, (int, float)), (key, value)
        assert not isinstance(value, bool), key
        assert math.isfinite(value), (key, value)
    for key in MEASURED:
        assert figures[key] > 0, (key, figures[key])
    assert figures["layer_calls_per_run"] == 40
    assert figures["history_messages"] == 1000
    table = "\n".join(lines[:-1])
    for ratio in ("base_ratio", "layer_ratio", "history_ratio"):
        assert ratio in table


ADAPTERS = SCRIPT.with_name("adapters.py")


def test_adapter_bench_reports_every_provider() -> None:
    """bench/adapters.py --quick --json gives positive figures for each provider."""
    done = subprocess.run(
        [sys.executable, str(ADAPTERS), "--quick", "--json"],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures = json.loads(done.stdout.strip().splitlines()[-1])
    assert set(figures) == {"openai chat", "openai responses", "anthropic"}
    for provider in figures.values():
        for key in ("sdk_response_us", "ours_response_us", "sdk_chunk_us", "ours_chunk_us"):
            assert math.isfinite(provider[key])
            assert provider[key] > 0

"""Smoke test of bench/trace_cost.py: it runs and reports every figure (no timing checks)."""

from __future__ import annotations

from bench_runs import check_figures, quick_run

MEASURED = ("bare_us", "layers_us", "off_us", "sdk_us", "content_us", "by_hand_us")
"""Times measured directly."""
DERIVED = (
    "off_extra_us",
    "off_own_us",
    "sdk_extra_us",
    "by_hand_extra_us",
    "sdk_own_us",
    "content_extra_us",
    "off_ratio",
    "sdk_ratio",
)
"""Differences and ratios."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/trace_cost.py --quick --json prints every figure as a number, timings positive."""
    figures, _ = quick_run("trace_cost.py", "--runs", "30")
    check_figures(figures, MEASURED, DERIVED)

"""Smoke test of bench/subagents.py: it runs and reports every figure."""

from __future__ import annotations

from bench_runs import check_figures, quick_run

MEASURED = ("child_run_us", "plain_tool_us", "as_tool_us")
"""Times measured directly: positive."""
DERIVED = ("as_tool_overhead_us", "as_tool_ratio")
"""A difference and a ratio of measurements: finite numbers."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/subagents.py --quick --json gives the three times, the overhead and the ratio."""
    figures, table = quick_run("subagents.py", "--runs", "20", "--rounds", "1")
    check_figures(figures, MEASURED, DERIVED)
    assert set(figures) == {*MEASURED, *DERIVED, "rounds", "runs"}
    assert "as_tool overhead per call" in table

"""Smoke test of bench/mcp_tools.py: it runs and reports every figure (no timing checks)."""

from __future__ import annotations

from bench_runs import check_figures, quick_run

MEASURED = ("sdk_us", "server_us", "relist_us", "list_us", "run_function_us", "run_mcp_us")
"""Times measured directly."""
DERIVED = (
    "server_extra_us",
    "call_path_us",
    "call_path_extra_us",
    "server_ratio",
    "call_path_ratio",
)
"""Differences and ratios."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/mcp_tools.py --quick --json prints every figure as a number, timings positive."""
    figures, table = quick_run("mcp_tools.py", "--runs", "20")
    check_figures(figures, MEASURED, DERIVED)
    assert "ClientSession.call_tool, directly" in table

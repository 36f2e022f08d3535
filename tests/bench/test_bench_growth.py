"""Smoke test of bench/growth.py: it runs and reports every figure (no timing checks)."""

from __future__ import annotations

from bench_runs import check_figures, quick_run

BUILTINS = (
    "trace",
    "retry",
    "limit_calls",
    "budget",
    "rate_limit",
    "cache",
    "redact_pii",
    "compact",
)
"""The stack's built-ins, each with its share of a turn."""
MEASURED = ("turn_us_10", "turn_us_100", "turn_us_1000", "bare_turn_us_10", "bare_turn_us_1000")
"""Times measured directly: positive."""
DERIVED = ("growth_ratio", "bare_growth_ratio")
"""Ratios of measurements: finite numbers."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/growth.py --quick --json gives the turn at each size and each built-in's share."""
    figures, table = quick_run("growth.py", "--runs", "2", "--rounds", "1")
    check_figures(figures, MEASURED, DERIVED)
    for size in (10, 1000):
        assert set(figures[f"builtin_us_{size}"]) == set(BUILTINS)
        check_figures(figures[f"builtin_us_{size}"], (), BUILTINS)
        check_figures(figures[f"without_us_{size}"], BUILTINS, ())
    assert figures["growth_ratio"] == figures["turn_us_1000"] / figures["turn_us_10"]
    for label in ("the stack", "redact_pii", "target <= 1.5"):
        assert label in table

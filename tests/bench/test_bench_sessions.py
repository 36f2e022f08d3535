"""Smoke test of bench/sessions.py: it starts its PostgreSQL, runs and reports every figure."""

from __future__ import annotations

from bench_runs import check_figures, quick_run

SIZES = (1, 100, 1000)
DURABLE = ("sqlite", "sqlite_normal", "postgres")
MEASURED = (
    "thread_hop_us",
    *(f"memory_turn_us_{n}" for n in SIZES),
    *(
        f"{store}_{kind}_us_{n}"
        for store in DURABLE
        for kind in ("turn", "alternating", "first_load")
        for n in SIZES
    ),
)
"""Times measured directly: positive."""
DERIVED = tuple(f"{store}_turn_growth" for store in (*DURABLE, "memory"))
"""Ratios of measurements: finite numbers."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/sessions.py --quick --json gives every store's figures at every size."""
    figures, table = quick_run("sessions.py", "--runs", "4", "--rounds", "1")
    check_figures(figures, MEASURED, DERIVED)
    assert set(figures) == {*MEASURED, *DERIVED, "rounds", "runs"}
    for label in ("sqlite (synchronous=full)", "postgresql", "first load by a new store"):
        assert label in table

"""Smoke test of bench/overhead.py: it runs and reports every figure (no timing checks)."""

from __future__ import annotations

from bench_runs import check_figures, quick_run

MEASURED = ("base_us", "mw_us", "floor_us", "history_us", "concurrent_wall_s")
"""Times measured directly: positive."""
DERIVED = (
    "closure_layer_us",
    "per_layer_us",
    "base_ratio",
    "layer_ratio",
    "closure_layer_in_run_us",
    "layer_ratio_in_run",
    "history_ratio",
    "concurrent_peak_rss_mb",
)
"""Differences and ratios of measurements: finite numbers (a difference of two noisy quick
measurements may come out negative on a busy machine; the bench is not a timing test)."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/overhead.py --quick --json prints every figure as a number, timings positive."""
    figures, table = quick_run("overhead.py", "--concurrency", "200")
    check_figures(figures, MEASURED, DERIVED)
    assert figures["layer_calls_per_run"] == 40
    assert figures["history_messages"] == 1000
    for label in ("base_ratio", "layer_ratio", "history_ratio", "a closure layer costs"):
        assert label in table


def test_adapter_bench_reports_every_provider() -> None:
    """bench/adapters.py --quick --json gives positive figures for each provider."""
    figures, _ = quick_run("adapters.py")
    assert set(figures) == {"openai chat", "openai responses", "anthropic"}
    for provider in figures.values():
        check_figures(
            provider, ("sdk_response_us", "ours_response_us", "sdk_chunk_us", "ours_chunk_us"), ()
        )

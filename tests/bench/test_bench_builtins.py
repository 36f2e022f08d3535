"""Smoke test of bench/builtins.py: it runs and reports every figure (no timing checks)."""

from __future__ import annotations

from bench_runs import check_figures, quick_run

BUILTINS = (
    "trace_sdk",
    "retry",
    "retry_tools",
    "fallback",
    "limit_calls",
    "budget",
    "rate_limit",
    "cache_miss",
    "cache_hit",
    "timeout",
    "repair_history",
    "patch_tool_calls",
    "redact_pii",
    "guard",
    "instructions",
    "emulate_tools",
    "select_tools",
    "cache_prompt",
    "compact",
)
"""Every built-in with a marginal cost."""
MEASURED = (
    "bare_us",
    "stack_us",
    "stack_untraced_us",
    "sdk_baseline_us",
    "bare_yielding_us",
    "stack_yielding_us",
    "redact_chunk_us",
    "redact_1k_messages_us",
    "compact_window_1k_us",
    "compact_clear_1k_us",
)
"""Times measured directly."""
DERIVED = (
    "stack_ratio",
    "stack_ratio_vs_sdk_baseline",
    "stack_ratio_untraced",
    "stack_extra_us",
    "sdk_by_hand_us",
    "stack_over_sdk_baseline_us",
    "marginal_sum_stack_us",
    "stack_ratio_yielding",
    "rate_limit_yielding_marginal_us",
)
"""Differences and ratios."""


def test_quick_run_prints_every_figure_as_json() -> None:
    """bench/builtins.py --quick --json gives every figure and each built-in's marginal cost."""
    figures, table = quick_run("builtins.py", "--runs", "20")
    check_figures(figures, MEASURED, DERIVED)
    assert set(figures["marginal_us"]) == set(BUILTINS)
    check_figures(figures["with_us"], BUILTINS, ())
    check_figures(figures["marginal_us"], (), BUILTINS)
    for ratio in ("stack_ratio", "stack_ratio_untraced", "stack_ratio_vs_sdk_baseline"):
        assert ratio in table

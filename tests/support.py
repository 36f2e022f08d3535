"""Helpers shared by the test modules: typed tools and an unwrapping assertion."""

from __future__ import annotations

from returns.result import Result, Success

from fncore import AgentError, RunResult


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def run_ok(outcome: Result[RunResult, AgentError]) -> RunResult:
    """Unwrap a successful run, with the failure in the assertion message otherwise."""
    assert isinstance(outcome, Success), outcome
    result: RunResult = outcome.unwrap()
    return result

"""Helpers shared by the test modules: typed tools, unwrapping, and tool-call checks."""

from __future__ import annotations

from collections.abc import Iterable

from returns.result import Result, Success

from fncore import (
    AgentError,
    Message,
    ModelRequest,
    ModelResponse,
    RunResult,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolResultPart,
    ToolSpec,
)


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


def streamed_calls(items: Iterable[object]) -> dict[str, tuple[str, str]]:
    """Each call id a stream started, with its name and its argument deltas joined.

    What a stream consumer can correlate; an argument delta for a call id that was never
    started fails the assertion.
    """
    calls: dict[str, tuple[str, str]] = {}
    for item in items:
        if isinstance(item, ToolCallStarted):
            calls[item.call_id] = (item.name, "")
        elif isinstance(item, ToolCallArgsDelta):
            assert item.call_id in calls, f"arguments for {item.call_id!r}, never started"
            name, args = calls[item.call_id]
            calls[item.call_id] = (name, args + item.delta)
    return calls


def call_map(response: ModelResponse) -> dict[str, tuple[str, str]]:
    """Each tool call of ``response``: its id with its name and arguments."""
    return {c.id: (c.name, c.arguments) for c in response.tool_calls}


def follow_up(response: ModelResponse, tools: tuple[ToolSpec, ...]) -> ModelRequest:
    """The next request after ``response``: its message, then one result per tool call."""
    results = tuple(ToolResultPart(c.id, c.name, "ok") for c in response.tool_calls)
    return ModelRequest(
        (Message.user("go"), response.message, Message("tool", results)), tools=tools
    )

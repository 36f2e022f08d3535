"""Helpers shared by the test modules: typed tools, unwrapping, tool-call checks, the CLI."""

from __future__ import annotations

import os
import subprocess
import sys
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any

from returns.result import Result, Success

from fncore import (
    AgentError,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    RunResult,
    ToolResultPart,
    ToolSpec,
)
from fncore.core import ResponseAssembler, StreamDelta

ABSENT: Any = object()
"""A field value that leaves the field out of the wire JSON (a missing id)."""

IDS = (ABSENT, None, "", "c_real")
"""Tool-call ids as servers send them: missing, null, empty, then a real one."""

ASSIGNED = ["call_0", "call_1", "call_2", "c_real"]
"""The ids the calls of `IDS` get: `fallback_call_id` of their index, or their own."""


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
    """The tool calls a consumer assembles from a stream's deltas, as `call_map` gives them."""
    assembler = ResponseAssembler()
    for item in items:
        if not isinstance(item, ModelResponse | ModelError):
            assert isinstance(item, StreamDelta), item
            assembler.add(item)
    return call_map(assembler.finish())


def call_map(response: ModelResponse) -> dict[str, tuple[str, str]]:
    """Each tool call of ``response``: its id with its name and arguments."""
    return {c.id: (c.name, c.arguments) for c in response.tool_calls}


def follow_up(response: ModelResponse, tools: tuple[ToolSpec, ...]) -> ModelRequest:
    """The next request after ``response``: its message, then one result per tool call."""
    results = tuple(ToolResultPart(c.id, c.name, "ok") for c in response.tool_calls)
    return ModelRequest(
        (Message.user("go"), response.message, Message("tool", results)), tools=tools
    )


def run_fncore(
    home: Path, *args: str, environ: Mapping[str, str] | None = None, cwd: Path | None = None
) -> subprocess.CompletedProcess[str]:
    """Run the installed ``fncore`` script in a subprocess, with ``FNCORE_HOME=home``.

    The runner's own ``FNCORE_*`` variables are left out; ``environ`` adds variables; it runs
    in ``cwd`` (default: this process's current directory).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("FNCORE_")}
    env["FNCORE_HOME"] = str(home)
    env.update(environ or {})
    script = Path(sys.executable).parent / "fncore"
    command = [str(script)] if script.exists() else [sys.executable, "-m", "fncore.cli"]
    return subprocess.run(
        [*command, *args],
        capture_output=True,
        text=True,
        env=env,
        cwd=cwd,
        timeout=120,
        check=False,
    )

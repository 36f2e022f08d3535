"""Helpers of the in-process engine tests: settings on a fresh SQLite file, a scripted agent.

`Work` is a deterministic agent: its model answers from what the request holds (the round
is read from the last tool result, so a trimmed history still ends), its tool logs every
call, and a test can make the tool "crash" at its k-th call by raising `SimulatedCrash`,
a BaseException, as a SIGKILL would stop the process: nothing of that step is recorded.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import SecretStr

from fncore import Agent, Message, ModelRequest, Registry, ToolCallPart
from fncore.settings import DurableSettings
from fncore.testing import FunctionModel


class SimulatedCrash(BaseException):
    """Stops the process's run as a kill would: not an error value, not recorded."""


def durable_settings(folder: Path, **more: Any) -> DurableSettings:
    """`DurableSettings` on a fresh SQLite file in ``folder``, polling fast."""
    url = SecretStr(f"sqlite:///{folder / 'durable.sqlite'}")
    return DurableSettings(url=url, executor_id="test-worker", polling_interval=0.05, **more)


def _round_of(messages: Iterable[Message]) -> int:
    """The round a request is in: one after the round of the last tool result, else 0."""
    for message in reversed(tuple(messages)):
        if message.role == "tool":
            content = message.parts[-1].content  # type: ignore[union-attr]
            return int(content.split(".")[0].removeprefix("did ")) + 1
    return 0


@dataclass
class Work:
    """A scripted agent's model and tool, with their logs."""

    rounds: int = 2
    """How many rounds of tool calls before the answer."""
    width: int = 2
    """How many concurrent tool calls per round."""
    crash_at: str | None = None
    """The id of the tool call that raises `SimulatedCrash` (the first time it runs)."""
    gate: asyncio.Event | None = None
    """If given, each tool call waits for it (`entered` is set when one does)."""
    entered: asyncio.Event = field(default_factory=asyncio.Event)
    """Set when a tool call waits at the gate."""
    model_calls: list[int] = field(default_factory=list)
    """The round of each request the model got."""
    tool_calls: list[str] = field(default_factory=list)
    """Each tool call's id, in the order they started."""

    def reply(self, request: ModelRequest) -> Message | str:
        """The model: tool calls for rounds left, then an answer naming what it saw."""
        at = _round_of(request.messages)
        self.model_calls.append(at)
        if at < self.rounds:
            calls = tuple(
                ToolCallPart(f"c{at}_{i}", "work", json.dumps({"round": at, "i": i}))
                for i in range(self.width)
            )
            return Message("assistant", calls)
        seen = sum(1 for m in request.messages if m.role == "tool")
        offered = len(request.tools)
        return f"done after {at} rounds; saw {seen} tool messages and {offered} tools; " + (
            f"prompt={request.instructions!r}"
        )

    async def work(self, round: int, i: int) -> str:
        """Do a piece of work."""
        call_id = f"c{round}_{i}"
        self.tool_calls.append(call_id)
        if self.crash_at == call_id:
            self.crash_at = None
            raise SimulatedCrash
        if self.gate is not None:
            self.entered.set()
            await self.gate.wait()
        return f"did {round}.{i}"

    def agent(
        self,
        registry: Registry | None = None,
        *,
        name: str = "worker",
        tools: Iterable[Callable[..., Any]] = (),
        **options: Any,
    ) -> Agent:
        """An agent of this model and tool (and ``tools``)."""
        return Agent(
            FunctionModel(self.reply),
            registry=Registry() if registry is None else registry,
            tools=[self.work, *tools],
            name=name,
            **options,
        )

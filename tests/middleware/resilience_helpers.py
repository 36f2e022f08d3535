"""What the tests of retry, fallback and timeout share: models that stall, stream recorders."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator
from dataclasses import dataclass, field
from typing import Any

import pytest
import stamina.instrumentation
from returns.result import Result

from fncore import Agent, AgentError, ModelError, ModelRequest, ModelResponse, Registry, RunResult
from fncore.core import ModelStreamItem, StreamDelta
from fncore.events import TextDelta


@dataclass
class Stalling:
    """A real `Model` that streams ``deltas``, then ends with ``ending`` or never answers.

    ``started`` counts the calls; ``cancelled`` those cancelled while waiting, so a test
    sees that a deadline stopped the work instead of leaving it running.
    """

    deltas: tuple[StreamDelta, ...] = ()
    ending: ModelResponse | ModelError | None = None
    name: str = "stalling"
    started: int = 0
    cancelled: int = 0
    requests: list[ModelRequest] = field(default_factory=list)

    async def _wait(self) -> None:
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            self.cancelled += 1
            raise

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Never answers: waits until cancelled."""
        self.started += 1
        self.requests.append(request)
        await self._wait()
        raise AssertionError("unreachable")

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Yields the deltas, then the ending, or waits until cancelled."""
        self.started += 1
        self.requests.append(request)
        for delta in self.deltas:
            yield delta
        if self.ending is None:
            await self._wait()
        else:
            yield self.ending


async def streamed(
    agent: Agent, prompt: str, **options: Any
) -> tuple[str, Result[RunResult, AgentError]]:
    """The text a stream's consumer saw, and the run's outcome."""
    stream = agent.stream(prompt, **options)
    text = "".join([e.text async for e in stream if isinstance(e, TextDelta)])
    return text, await stream.result()


async def answer(agent: Agent, prompt: str, stream: bool, **options: Any) -> Any:
    """The run's outcome, run or streamed (then read to the end)."""
    if stream:
        return (await streamed(agent, prompt, **options))[1]
    return await agent.run(prompt, **options)


def agent_with(model: Any, *registries: Registry, **options: Any) -> Agent:
    """An agent on ``model`` with ``registries`` included in order."""
    registry = Registry()
    for other in registries:
        registry.include(other)
    return Agent(model, registry=registry, **options)


@dataclass
class Scheduled:
    """What stamina reported for one scheduled retry."""

    wait_for: float
    caused_by: str


@pytest.fixture(name="retries")
def retries_fixture() -> Iterator[list[Scheduled]]:
    """The retries stamina schedules during the test, with their waits (its own hook)."""
    seen: list[Scheduled] = []

    def record(details: stamina.instrumentation.RetryDetails) -> None:
        seen.append(Scheduled(details.wait_for, repr(details.caused_by)))

    stamina.instrumentation.set_on_retry_hooks([record])
    yield seen
    stamina.instrumentation.set_on_retry_hooks(None)

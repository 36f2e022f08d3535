"""What the built-ins' tests share: configured containers, and a run's outcome in either mode."""

from __future__ import annotations

from typing import Any

import pytest

from fncore import (
    Agent,
    ConfigError,
    Container,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Registry,
    RunOutcome,
    load_container,
)
from fncore.events import RunCompleted
from fncore.testing import ScriptedModel


def configured(*entries: dict[str, Any]) -> Container:
    """A container whose configuration lists ``entries`` under ``[[middleware]]``."""
    return load_container(overrides={"middleware": list(entries)}, environ={})


def config_error(entry: dict[str, Any]) -> str:
    """The one-line ConfigError that building an agent with ``entry`` raises."""
    with pytest.raises(ConfigError) as info:
        configured(entry).agent()
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"config key 'middleware[0]' (use = {entry['use']!r}): ")
    return text


async def outcome_of(agent: Agent, prompt: str, *, streaming: bool, **options: Any) -> RunOutcome:
    """The run's outcome, from ``run`` or from the last event of ``stream``."""
    if not streaming:
        return await agent.run(prompt, **options)
    last: Any = None
    async for event in agent.stream(prompt, **options):
        last = event
    assert isinstance(last, RunCompleted)
    return last.outcome


async def seen_outside_cache(cache: Registry, answer: ModelResponse) -> list[ModelResponse]:
    """What a ``model_call`` middleware outside ``cache`` sees over two runs of one prompt.

    The model answers ``answer``, then would answer something else: the second run is the
    cache's hit. ``cache`` is closed afterwards.
    """
    seen: list[ModelResponse] = []
    registry = Registry()

    @registry.on("model_call", name="trace")  # placed outside the cache
    async def spy(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        outcome = await call_next(ctx)
        seen.append(outcome.unwrap())
        return outcome

    registry.include(cache)
    agent = Agent(ScriptedModel([answer, "unused"]), registry=registry)
    for _ in range(2):
        await agent.run("go")
    await registry.aclose()
    return seen

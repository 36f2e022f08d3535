"""What the built-ins' tests share: configured containers, and a run's outcome in either mode."""

from __future__ import annotations

from typing import Any

import pytest

from fncore import Agent, ConfigError, Container, RunOutcome, load_container
from fncore.events import RunCompleted


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

"""`instructions`: templates from metadata, prompt functions, the date and time, config."""

from __future__ import annotations

from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, outcome_of

from fncore import Agent, Registry, SystemPromptContext, load_container
from fncore.middleware import MissingField, instructions
from fncore.testing import TestModel

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])

NOON = datetime(2026, 11, 23, 12, 30, tzinfo=UTC)


def fixed() -> datetime:
    """A clock stopped at 2026-11-23 12:30 UTC."""
    return NOON


async def prompt_of(registry: Registry, *, stream: bool = False, **options: Any) -> str:
    """The system prompt the model received for one run with ``registry``."""
    model = TestModel()
    agent = Agent(model, registry=registry, instructions="Be brief.")
    (await outcome_of(agent, "hi", streaming=stream, **options)).unwrap()
    return model.requests[0].instructions


@MODES
async def test_a_template_is_filled_from_metadata(stream: bool) -> None:
    """{user_name} comes from run(..., metadata=...), after the agent's instructions."""
    registry = instructions(template="You help {user_name} ({plan:>5}).")
    prompt = await prompt_of(registry, stream=stream, metadata={"user_name": "Ada", "plan": "pro"})
    assert prompt == "Be brief.\n\nYou help Ada (  pro)."


@MODES
async def test_a_missing_field_is_an_error_naming_it(stream: bool) -> None:
    """A field the metadata lacks: MissingField, not a blank."""
    agent = Agent(TestModel(), registry=instructions(template="Hi {user_name}, {tier}"))
    outcome = await outcome_of(agent, "hi", streaming=stream, metadata={"tier": "gold"})
    error = outcome.failure()
    assert isinstance(error, MissingField)
    assert (error.field, error.position, error.middleware) == (
        "user_name",
        "system_prompt",
        "instructions",
    )
    assert "metadata={'user_name': ...}" in error.message


async def test_the_date_in_a_time_zone_and_format() -> None:
    """The clock's time, converted to the time zone, written in the format."""
    registry = instructions(
        date=True, timezone="Asia/Tokyo", date_format="%Y-%m-%d %H:%M %Z", clock=fixed
    )
    assert await prompt_of(registry) == "Be brief.\n\n2026-11-23 21:30 JST"


async def test_the_default_date_format() -> None:
    """By default, the weekday, date, time and zone in UTC."""
    prompt = await prompt_of(instructions(date=True, clock=fixed))
    assert prompt == "Be brief.\n\nCurrent date and time: Monday 23 November 2026, 12:30 (UTC)."


async def test_the_real_clock_gives_today() -> None:
    """Without a clock, the date is today's (in UTC)."""
    before = datetime.now(UTC).strftime("%Y-%m-%d")
    prompt = await prompt_of(instructions(date=True, date_format="%Y-%m-%d"))
    assert prompt.endswith((before, datetime.now(UTC).strftime("%Y-%m-%d")))


@MODES
async def test_a_function_sync_or_async_adds_its_text(stream: bool) -> None:
    """A prompt function of the context (sync, then async), in order, with the separator."""

    def rounds(ctx: SystemPromptContext) -> str:
        return f"Round {ctx.round}."

    async def who(ctx: SystemPromptContext) -> str:
        return f"Run by {ctx.run.metadata['user']}."

    registry = Registry()
    registry.include(instructions(function=rounds))
    registry.include(instructions(function=who, separator=" ", name="who"))
    prompt = await prompt_of(registry, stream=stream, metadata={"user": "Bo"})
    assert prompt == "Be brief.\n\nRound 1. Run by Bo."


async def test_all_parts_in_order_on_an_empty_prompt() -> None:
    """Template, function, then date; no leading separator without agent instructions."""
    model = TestModel()
    registry = instructions(
        template="For {u}.",
        function=lambda ctx: "Helpful.",
        date=True,
        date_format="%Y",
        clock=fixed,
    )
    await Agent(model, registry=registry).run("hi", metadata={"u": "me"})
    assert model.requests[0].instructions == "For me.\n\nHelpful.\n\n2026"


def test_nothing_to_add_is_refused() -> None:
    """No template, function or date: it would add nothing, so it is refused, code and config."""
    with pytest.raises(ValueError, match="instructions has nothing to add"):
        instructions(date=False, timezone="Europe/Paris")
    assert "instructions has nothing to add" in config_error({"use": "instructions"})


async def test_configuration_from_a_toml_file(tmp_path: Path) -> None:
    """A template, a function by module path and a date from a TOML file."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        '[[middleware]]\nuse = "instructions"\ntemplate = "You help {user_name}."\n'
        'function = "instructions_functions:house_rules"\n'
        'date = true\ntimezone = "Europe/Paris"\ndate_format = "%Z"\n'
    )
    container = load_container(path, environ={})
    model = TestModel()
    agent = container.agent(model=model)
    await agent.run("hi", metadata={"user_name": "Ada"})
    assert model.requests[0].instructions.endswith("You help Ada.\n\nNo swearing.\n\nCET")


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "instructions", "template": "Hi {"}, "template:"),
        ({"use": "instructions", "template": "Hi {}"}, "fields must be named"),
        ({"use": "instructions", "timezone": "Mars/Olympus"}, "not a known IANA time zone"),
        ({"use": "instructions", "function": "nowhere:f"}, "cannot import"),
        ({"use": "instructions", "date": "often"}, "parameter 'date'"),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Bad templates, zones and names: one ConfigError line naming the entry."""
    assert words in config_error(entry)

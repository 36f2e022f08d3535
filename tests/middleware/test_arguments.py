"""Every built-in checks its arguments when it is made, from code and from configuration alike.

Each case here is refused the same way both ways: in code the factory raises a
``ValueError`` (a `pydantic.ValidationError` is one), in configuration building the agent
raises a one-line `ConfigError` naming the entry.
"""

from __future__ import annotations

import math
from typing import Any

import pytest
from helpers import config_error

from fncore import Agent
from fncore.middleware import BUILTINS, Price, budget, load_factory
from fncore.testing import TestModel

SECONDS = "must be a positive, finite number of seconds"

BAD: dict[str, tuple[dict[str, Any], str]] = {
    "trace": ({"max_attribute_length": 8}, "at least 32, not 8"),
    "approve": ({"decisions": ["maybe"]}, "Input should be 'approve', 'edit'"),
    "retry": ({"max_time": math.inf}, SECONDS),
    "retry_tools": ({"wait_max": -1}, "greater than or equal to 0"),
    "fallback": ({"models": [5]}, "instance of Model"),
    "limit_calls": ({"model_calls_per_reply": -1}, "greater than or equal to 0"),
    "budget": (
        {"prices": {"test": {"input": -1, "output": 2}}, "cost_per_reply": 1},
        "greater than or equal to 0",
    ),
    "rate_limit": ({"max_wait": math.nan}, "finite number"),
    "cache": ({"ttl": math.inf}, SECONDS),
    "timeout": ({"reply": -1.5}, SECONDS),
    "compact": ({"keep": 0}, "greater than 0"),
    "repair_history": ({"unknown_signatures": "drop"}, "'keep' or 'strip'"),
    "redact_pii": ({"detectors": ["passport"]}, "Input should be 'email', 'phone'"),
    "guard": ({"deny": ["x"], "window_seconds": math.inf}, SECONDS),
    "patch_tool_calls": ({"name": 5}, "valid string"),
    "emulate_tools": ({"tools": []}, "tools is empty"),
    "select_tools": ({"max_tools": 0}, "greater than or equal to 1"),
    "cache_prompt": ({"messages": 5}, "less than or equal to 4"),
    "instructions": ({"date": True, "timezone": "Mars/Olympus"}, "not a known IANA time zone"),
}
"""Per built-in, a wrong argument and words of the message that refuses it."""

NOTHING: dict[str, tuple[dict[str, Any], str]] = {
    "approve": ({"tools": []}, "tools is empty"),
    "retry_tools": ({"max_attempts": 1}, "would retry nothing"),
    "fallback": ({"models": []}, "needs models"),
    "limit_calls": ({"model_calls_per_reply": None}, "needs a limit"),
    "budget": ({"tokens_per_reply": None}, "needs a budget"),
    "rate_limit": ({"requests_per_minute": None}, "needs a limit"),
    "cache": ({"models": False}, "would cache nothing"),
    "timeout": ({"model_call": None, "reply": None}, "needs a deadline"),
    "redact_pii": ({"detectors": []}, "nothing to find"),
    "guard": ({}, "nothing to check"),
    "emulate_tools": ({"tools": []}, "tools is empty"),
    "cache_prompt": (
        {"instructions": False, "tools": False, "messages": 0, "openai_key": False},
        "would mark nothing",
    ),
    "instructions": ({}, "nothing to add"),
}
"""Per built-in that can be told to do nothing, arguments that would make it a no-op."""


def test_every_built_in_has_a_case() -> None:
    """A new built-in needs a wrong-argument case here."""
    assert set(BAD) == set(BUILTINS)


@pytest.mark.parametrize("use", sorted(BUILTINS))
def test_a_wrong_argument_is_refused_in_code_and_in_configuration(use: str) -> None:
    """The same wrong argument: a ValueError from the factory, a ConfigError from config."""
    arguments, words = BAD[use]
    with pytest.raises(ValueError, match=words):
        load_factory(use)(**arguments)
    assert words in config_error({"use": use, **arguments})


@pytest.mark.parametrize("use", sorted(BUILTINS))
def test_a_wrongly_typed_name_is_refused_in_code(use: str) -> None:
    """Every factory checks its arguments' types in code, as configuration does."""
    with pytest.raises(ValueError, match="valid string"):
        load_factory(use)(name=["not", "a", "name"])
    assert "parameter 'name'" in config_error({"use": use, "name": ["not", "a", "name"]})


@pytest.mark.parametrize("use", sorted(NOTHING))
def test_a_built_in_that_would_do_nothing_is_refused(use: str) -> None:
    """Told to do nothing, a built-in is an error when made, not a silent no-op."""
    arguments, words = NOTHING[use]
    with pytest.raises(ValueError, match=words):
        load_factory(use)(**arguments)
    assert words in config_error({"use": use, **arguments})


@pytest.mark.parametrize(
    ("use", "parameter"),
    [
        ("cache", "ttl"),
        ("budget", "period"),
        ("retry", "max_time"),
        ("timeout", "model_call"),
        ("guard", "window_seconds"),
    ],
)
@pytest.mark.parametrize("seconds", [0, -5, math.inf, math.nan, "soon", True])
def test_every_time_in_seconds_is_checked_by_the_one_rule(
    use: str, parameter: str, seconds: object
) -> None:
    """Zero, negative, infinite, NaN, text that is no number, a bool: one message, both ways."""
    arguments: dict[str, Any] = {parameter: seconds}
    if use == "guard":
        arguments["deny"] = ["x"]
    with pytest.raises(ValueError, match=SECONDS):
        load_factory(use)(**arguments)
    assert f"parameter {parameter!r}: {SECONDS}" in config_error({"use": use, **arguments})


async def test_budget_prices_given_as_plain_mappings_become_prices() -> None:
    """{"input": ..., "output": ...} is turned into a Price, and runs are priced with it."""
    plain = budget(prices={"test": {"input": 1e5, "output": 1e5}}, cost_per_reply=3.5)
    typed = budget(prices={"test": Price(input=1e5, output=1e5)}, cost_per_reply=3.5)
    outcomes = [await Agent(TestModel(), registry=r).run("hi") for r in (plain, typed)]
    assert outcomes[0] == outcomes[1]
    assert outcomes[0].unwrap().output == "hi"

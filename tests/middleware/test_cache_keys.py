"""The cache's keys: the same in every process, whatever a request holds, or a clear refusal."""

from __future__ import annotations

import dataclasses
import json
import os
import subprocess
import sys

from fncore import (
    Agent,
    MiddlewareError,
    ModelSettings,
    Outcome,
    Registry,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.middleware import cache
from fncore.session_stores._json import canonical
from fncore.testing import ScriptedModel, TestModel, tool_calls

KEYS = r"""
import dataclasses, datetime, decimal, enum, json, uuid

from fncore import Message, ModelRequest, ModelSettings, RunInfo, State, Tool, ToolCallContext
from fncore.middleware._cache_json import request_key, tool_key
from fncore.testing import tool_calls


class Colour(enum.Enum):
    RED = "red"


@dataclasses.dataclass(frozen=True)
class Window:
    sizes: frozenset


WORDS = [f"word{i}" for i in range(40)]
extra = {
    "tags": set(WORDS),
    "nested": {"pairs": (1, 2), "raw": b"\x00\xff", "when": datetime.date(2026, 11, 1)},
    "colour": Colour.RED,
    "window": Window(frozenset(WORDS[:10])),
    "ids": {7: "seven", 3: "three"},
    "amount": decimal.Decimal("1.50"),
    "uuid": uuid.UUID(int=5),
}
request = ModelRequest((Message.user("hi"),), settings=ModelSettings(extra=extra))


def labels(names: set[str]) -> str:
    "Join the names."
    return ",".join(sorted(names))


tool = Tool.from_function(labels)
args = tool.check(json.dumps({"names": WORDS}))
call = tool_calls(("labels", {"names": WORDS})).tool_calls[0]
context = ToolCallContext(RunInfo("r", {}, State()), call, tool, args)
print(json.dumps([request_key(request, "m"), tool_key(context)]))
"""
"""Prints the cache keys of a request and a tool call whose values JSON cannot say as such."""


def keys_with_hash_seed(seed: str) -> list[str]:
    """The keys `KEYS` prints in a fresh process whose string hashes use ``seed``."""
    environ = {**os.environ, "PYTHONHASHSEED": seed}
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", KEYS],
        capture_output=True,
        text=True,
        env=environ,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    keys: list[str] = json.loads(done.stdout)
    return keys


def test_sets_and_other_non_json_values_key_the_same_in_every_process() -> None:
    """A set (and bytes, enums, dataclasses, dates, ...) gives one key whatever the hash seed.

    Sets of strings iterate in an order that depends on ``PYTHONHASHSEED``: keyed by their
    ``repr``, each process had its own key, and a shared cache (Redis) never hit.
    """
    first, second, third = (keys_with_hash_seed(seed) for seed in ("1", "2", "12345"))
    assert first == second == third
    assert len(set(first)) == 2  # the request's key and the tool call's


async def test_a_value_with_no_canonical_form_is_refused_with_an_error_value() -> None:
    """An object the cache cannot key is a MiddlewareError naming where it is; nothing is sent."""

    class Client:
        """Not data: its repr holds its address, another in each process."""

    model = TestModel()
    agent = Agent(model, registry=cache())
    settings = ModelSettings(extra={"client": Client()})
    error = (await agent.run("hi", model_settings=settings)).failure()
    assert isinstance(error, MiddlewareError)
    assert (error.position, error.middleware) == ("model_call", "cache")
    assert "ModelSettings.extra['client'] holds a value of type" in error.message
    assert "Client" in error.message
    assert model.requests == []


async def test_a_tool_argument_with_no_canonical_form_is_refused() -> None:
    """A cached tool called with such an object fails the same way, at ``tool_call``."""

    class Opaque:
        """Not data."""

    ran: list[object] = []

    def use(thing: object) -> str:
        """Use a thing."""
        ran.append(thing)
        return "used"

    registry = Registry()

    @registry.on("tool_call", order="outermost")
    async def opaque(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return await call_next(ctx.with_args(thing=Opaque()))

    registry.include(cache(models=False, tools=["use"]))
    model = ScriptedModel([tool_calls(("use", {"thing": 1})), "done"])
    error = (await Agent(model, registry=registry, tools=[use]).run("go")).failure()
    assert isinstance(error, MiddlewareError)
    assert (error.position, error.middleware) == ("tool_call", "cache")
    assert "the arguments of 'use'['thing'] holds a value of type" in error.message
    assert ran == []


def test_a_dataclass_keys_by_the_fields_its_equality_compares() -> None:
    """Two equal values key alike: a field left out of equality (``compare=False``) stays out."""

    @dataclasses.dataclass(frozen=True)
    class Tagged:
        name: str
        seen: int = dataclasses.field(default=0, compare=False)

    assert Tagged("a", 1) == Tagged("a", 2)
    assert canonical(Tagged("a", 1)) == canonical(Tagged("a", 2))
    assert canonical(Tagged("a")) != canonical(Tagged("b"))

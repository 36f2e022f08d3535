"""`patch_tool_calls`: malformed JSON repaired, types coerced, patches recorded, streamed too."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from fake_provider import FakeProvider
from helpers import configured, outcome_of
from openai_wire import call, call_chunk, chat_model, chat_stream, chunk, close_clients, completion
from otel_support import Otel
from support import add, run_ok

from fncore import Agent, Message, Registry, ToolCallPart, ToolResultPart, load_container
from fncore.events import RoundFinished, RunEnd, ToolCallArgsDelta
from fncore.middleware import ToolCallPatch, patch_tool_calls, patched_calls
from fncore.middleware.patch_tool_calls import patch_arguments
from fncore.testing import ScriptedModel

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])

SCHEMA: dict[str, Any] = {
    "type": "object",
    "properties": {
        "n": {"type": "integer"},
        "x": {"type": "number"},
        "flag": {"type": "boolean"},
        "name": {"type": "string"},
        "tags": {"type": "array", "items": {"type": "integer"}},
        "maybe": {"anyOf": [{"type": "integer"}, {"type": "null"}]},
        "inner": {"$ref": "#/$defs/Inner"},
    },
    "$defs": {"Inner": {"type": "object", "properties": {"k": {"type": "integer"}}}},
}


@pytest.mark.parametrize(
    ("raw", "patched", "changes"),
    [
        ('{"n": "3"}', '{"n": 3}', ('n: "3" -> 3',)),
        ('{"n": 3.0}', '{"n": 3}', ("n: 3.0 -> 3",)),
        ('{"n": "4.0"}', '{"n": 4}', ('n: "4.0" -> 4',)),
        ('{"x": "2.5"}', '{"x": 2.5}', ('x: "2.5" -> 2.5',)),
        ('{"flag": "TRUE"}', '{"flag": true}', ('flag: "TRUE" -> true',)),
        ('{"name": 7}', '{"name": "7"}', ('name: 7 -> "7"',)),
        (
            '{"tags": "[1, \\"2\\"]"}',
            '{"tags": [1, 2]}',
            ('tags: "[1, \\"2\\"]" -> [1, "2"]', 'tags[1]: "2" -> 2'),
        ),
        ('{"maybe": "5"}', '{"maybe": 5}', ('maybe: "5" -> 5',)),
        ('{"inner": {"k": "1"}}', '{"inner": {"k": 1}}', ('inner.k: "1" -> 1',)),
        ("{'n': 1,}", '{"n": 1}', ("repaired JSON",)),
        ('{"n": 1', '{"n": 1}', ("repaired JSON",)),
        ('"{\\"n\\": 2}"', '{"n": 2}', ("decoded JSON string",)),
    ],
)
def test_each_repair_and_coercion(raw: str, patched: str, changes: tuple[str, ...]) -> None:
    """The documented repairs and coercions, one by one."""
    assert patch_arguments(raw, SCHEMA) == (patched, changes)


@pytest.mark.parametrize(
    "raw",
    ['{"n": 3, "x": 1.5, "flag": false}', '{"n": "three"}', '{"flag": "yes"}', "", "[1, 2]"],
)
def test_what_is_left_alone(raw: str) -> None:
    """Valid values, values no rule converts, and non-objects are left as they came."""
    assert patch_arguments(raw, SCHEMA) == (raw, ())


def test_unrepairable_json_is_left_as_it_came() -> None:
    """Text json-repair cannot make an object of stays unchanged."""
    assert patch_arguments("no json here", SCHEMA) == ("no json here", ())


def broken_call(arguments: str = "{'a': '2', 'b': 3,}") -> Message:
    """An assistant turn calling add with ``arguments``."""
    return Message("assistant", (ToolCallPart("c1", "add", arguments),))


def agent_on(model: Any, *registries: Registry) -> Agent:
    """An agent with the add tool, patch_tool_calls and ``registries``."""
    registry = Registry()
    registry.include(patch_tool_calls())
    for extra in registries:
        registry.include(extra)
    return Agent(model, registry=registry, tools=[add])


def recorded() -> tuple[Registry, list[tuple[ToolCallPatch, ...]]]:
    """A registry whose run_end hook records each reply's patches."""
    hooks = Registry()
    seen: list[tuple[ToolCallPatch, ...]] = []

    @hooks.hook("run_end")
    async def record(event: RunEnd) -> None:
        seen.append(patched_calls(event.run))

    return hooks, seen


@MODES
async def test_a_malformed_call_runs_with_patched_arguments(stream: bool) -> None:
    """The tool runs with the repaired, coerced arguments; the patch is recorded."""
    model = ScriptedModel([broken_call(), "five"])
    hooks, seen = recorded()
    result = run_ok(await outcome_of(agent_on(model, hooks), "add", streaming=stream))
    assert result.messages[0].tool_calls[0].arguments == '{"a": 2, "b": 3}'
    assert result.messages[1].parts == (ToolResultPart("c1", "add", "5"),)
    assert seen == [
        (
            ToolCallPatch(
                "c1",
                "add",
                "{'a': '2', 'b': 3,}",
                '{"a": 2, "b": 3}',
                ("repaired JSON", 'a: "2" -> 2'),
            ),
        )
    ]


async def test_without_it_the_model_gets_the_validation_message() -> None:
    """The same call, unpatched, is an error result for the model."""
    model = ScriptedModel([broken_call(), "sorry"])
    result = run_ok(await Agent(model, tools=[add]).run("add"))
    assert result.messages[1].tool_results[0].is_error


async def test_an_unrepairable_call_gets_the_validation_message() -> None:
    """Arguments no repair can save reach validation unchanged; nothing is recorded."""
    model = ScriptedModel([broken_call('{"a": "two", "b": 3}'), "sorry"])
    hooks, seen = recorded()
    result = run_ok(await agent_on(model, hooks).run("add"))
    error = result.messages[1].tool_results[0]
    assert error.is_error
    assert error.content.startswith("Invalid arguments for tool 'add'")
    assert seen == [()]


async def test_the_stream_shows_raw_deltas_and_the_patched_response() -> None:
    """Argument deltas are the model's text; RoundFinished carries the patched call."""
    model = ScriptedModel([broken_call(), "five"], chunk=4)
    deltas: list[str] = []
    finished: list[str] = []
    async for event in agent_on(model).stream("add"):
        if isinstance(event, ToolCallArgsDelta):
            deltas.append(event.delta)
        elif isinstance(event, RoundFinished) and event.response.tool_calls:
            finished.append(event.response.tool_calls[0].arguments)
    assert "".join(deltas) == "{'a': '2', 'b': 3,}"
    assert finished == ['{"a": 2, "b": 3}']


async def test_unknown_tools_are_not_touched() -> None:
    """A call to a tool the request did not offer keeps its arguments."""
    model = ScriptedModel([Message("assistant", (ToolCallPart("c1", "nope", "{'x'"),)), "ok"])
    result = run_ok(await agent_on(model).run("go"))
    assert result.messages[0].tool_calls[0].arguments == "{'x'"


@MODES
async def test_openai_calls_are_patched(fake_provider: FakeProvider, stream: bool) -> None:
    """Through the real SDK adapter: a truncated, stringly-typed call runs."""
    model = chat_model(fake_provider)
    raw = '{"a": "20", "b": 22'
    if stream:
        first = chat_stream(
            call_chunk(0, call_id="c1", name="add", args=raw[:6]),
            call_chunk(0, args=raw[6:]),
            finish="tool_calls",
        )
        final = chat_stream(chunk({"role": "assistant", "content": "42"}))
    else:
        first = completion(calls=(call("c1", "add", raw),), finish="tool_calls")
        final = completion("42")
    fake_provider.reply(first, final)
    try:
        result = run_ok(await outcome_of(agent_on(model), "add", streaming=stream))
        assert result.messages[1].tool_results[0].content == "42"
        sent_call = fake_provider.requests[1].body["messages"][1]["tool_calls"][0]
        assert sent_call["function"]["arguments"] == '{"a": 20, "b": 22}'
    finally:
        await close_clients()


async def test_patches_are_span_events() -> None:
    """The current span gets one fncore.patch_tool_calls event per patched call."""
    otel = Otel()
    tracer = otel.tracer_provider.get_tracer("test")
    model = ScriptedModel([broken_call(), "five"])
    with tracer.start_as_current_span("app"):
        run_ok(await agent_on(model).run("add"))
    events = [e for e in otel.one("app").events if e.name == "fncore.patch_tool_calls"]
    assert len(events) == 1
    assert dict(events[0].attributes or {})["gen_ai.tool.call.id"] == "c1"


async def test_patch_tool_calls_loads_from_configuration() -> None:
    """With use alone, it stands at model_call and patches."""
    container = configured({"use": "patch_tool_calls"})
    agent = container.agent(model=ScriptedModel([broken_call(), "five"]), tools=[add])
    assert agent.describe().positions["model_call"] == ("patch_tool_calls",)
    assert run_ok(await agent.run("add")).messages[1].tool_results[0].content == "5"


async def test_patch_tool_calls_from_a_toml_file(tmp_path: Path) -> None:
    """The same from a file."""
    path = tmp_path / "fncore.toml"
    path.write_text('[[middleware]]\nuse = "patch_tool_calls"\nname = "patch"\n')
    agent = load_container(path, environ={}).agent(model=ScriptedModel([]))
    assert agent.describe().positions["model_call"] == ("patch",)


async def test_concurrent_runs_each_record_their_own_patch() -> None:
    """1,000 concurrent runs through one stack: each records exactly its one patch."""
    hooks, seen = recorded()
    registry = Registry()
    registry.include(patch_tool_calls())
    registry.include(hooks)

    def agent() -> Agent:
        return Agent(ScriptedModel([broken_call(), "five"]), registry=registry, tools=[add])

    outcomes = await asyncio.gather(*(agent().run("add") for _ in range(1000)))
    assert all(run_ok(o).messages[1].tool_results[0].content == "5" for o in outcomes)
    assert len(seen) == 1000
    assert all(len(s) == 1 for s in seen)


@pytest.mark.parametrize(
    "raw",
    [
        '{"x": "abc"}',
        '{"tags": "[1,"}',
        '{"tags": "{\\"a\\": 1}"}',
        '{"n": 3.5}',
        '"hello"',
        '"[1]"',
    ],
)
def test_values_no_rule_fits_stay(raw: str) -> None:
    """A non-number, broken or mistyped JSON text, a fraction for an integer: unchanged."""
    assert patch_arguments(raw, SCHEMA) == (raw, ())


def test_schemas_without_properties_or_with_odd_refs_are_followed_safely() -> None:
    """Free-form objects and a $ref to nowhere leave the values alone."""
    assert patch_arguments('{"a": "1"}', {"type": "object"}) == ('{"a": "1"}', ())
    odd = {"type": "object", "properties": {"a": {"$ref": "#/nowhere/x"}}, "nowhere": 3}
    assert patch_arguments('{"a": "1"}', odd) == ('{"a": "1"}', ())


async def test_valid_calls_pass_unchanged() -> None:
    """A call with valid arguments is not patched and not recorded."""
    model = ScriptedModel([broken_call('{"a": 2, "b": 3}'), "five"])
    hooks, seen = recorded()
    result = run_ok(await agent_on(model, hooks).run("add"))
    assert result.messages[0].tool_calls[0].arguments == '{"a": 2, "b": 3}'
    assert seen == [()]

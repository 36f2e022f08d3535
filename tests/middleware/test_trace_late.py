"""`trace`: what middleware add after an attempt returns, and the usage of a resumed run.

On the real OpenTelemetry SDK with in-memory exporters, as the other ``trace`` tests.
"""

from __future__ import annotations

import pytest
from opentelemetry import trace as otel_trace
from otel_support import Otel, attrs
from returns.result import Success

from fncore import (
    Agent,
    Approve,
    LoopSettings,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    ToolResultPart,
)
from fncore.errors import MaxIterationsReached, ProviderUnavailable
from fncore.middleware import _genai as g
from fncore.middleware import approve, patch_tool_calls, retry
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

IN, OUT = g.USAGE_INPUT_TOKENS, g.USAGE_OUTPUT_TOKENS


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@pytest.fixture
def otel() -> Otel:
    """An SDK tracer and meter provider, each exporting to memory."""
    return Otel()


# -- what is added after an attempt returned ---------------------------------------------------


async def test_patch_tool_calls_events_reach_the_exported_chat_span(otel: Otel) -> None:
    """patch_tool_calls records its patch after the model answered: it is on the chat span."""
    registry = otel.registry()
    registry.include(patch_tool_calls())
    model = ScriptedModel([tool_calls(("add", {"a": "2", "b": 3.0})), "5"])
    await Agent(model, registry=registry, tools=[add]).run("add")
    first = otel.named("chat scripted")[0]
    (event,) = [e for e in first.events if e.name == "fncore.patch_tool_calls"]
    assert dict(event.attributes or {}) == {
        "gen_ai.tool.call.id": "call_0",
        "gen_ai.tool.name": "add",
        "fncore.patch.changes": ('a: "2" -> 2', "b: 3.0 -> 3"),
    }


async def test_what_is_set_after_an_attempt_lands_on_that_attempt(otel: Otel) -> None:
    """Attributes and events set after each attempt returned land on that attempt's span.

    The span still ends when its attempt returned, before what was added after it; a retry
    (outside) opens the next attempt's span after the first has ended.
    """
    registry = otel.registry()
    registry.include(retry(wait_initial=0, wait_jitter=0))

    @registry.on("model_call", name="late")
    async def late(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        outcome = await call_next(ctx)
        span = otel_trace.get_current_span()
        span.add_event("late.seen", {"ok": isinstance(outcome, Success)})
        span.set_attribute("late.ok", isinstance(outcome, Success))
        return outcome

    model = ScriptedModel([ProviderUnavailable(message="busy"), "fine"])
    await Agent(model, registry=registry).run("hi")
    failed, answered = otel.named("chat scripted")
    for span, ok in ((failed, False), (answered, True)):
        assert attrs(span)["late.ok"] is ok
        (event,) = [e for e in span.events if e.name == "late.seen"]
        assert dict(event.attributes or {}) == {"ok": ok}
        assert span.end_time is not None
        assert span.end_time <= event.timestamp
    assert failed.end_time is not None
    assert answered.start_time is not None
    assert failed.end_time <= answered.start_time
    assert attrs(failed)["error.type"] == "ProviderUnavailable"


# -- a resumed run's usage ---------------------------------------------------------------------


def usage_of(otel: Otel) -> tuple[int, int]:
    """The (input, output) tokens on the one ``invoke_agent`` span."""
    run = attrs(otel.one("invoke_agent agent"))
    return run.get(IN, 0), run.get(OUT, 0)


async def test_a_resumed_run_reports_only_what_it_spent(otel: Otel) -> None:
    """The paused run's span and the resumed run's span add up to the reply's usage."""
    registry = otel.registry()
    registry.include(approve())
    agent = Agent(TestModel(), registry=registry, tools=[add])
    paused = (await agent.run("What is 2 + 3?")).unwrap()
    assert paused.paused is not None
    before = usage_of(otel)
    assert before == (paused.usage.input_tokens, paused.usage.output_tokens)
    otel.exporter.clear()
    done = (await agent.resume(paused.paused.checkpoint_id, Approve())).unwrap()
    after = usage_of(otel)
    (chat,) = otel.named("chat test")  # the one model call made after the resume
    assert after == (attrs(chat)[IN], attrs(chat)[OUT])
    total = done.usage
    assert (before[0] + after[0], before[1] + after[1]) == (total.input_tokens, total.output_tokens)


async def test_a_resumed_run_that_fails_reports_only_what_it_spent(otel: Otel) -> None:
    """A loop error after the resume carries the reply's usage: the span keeps its own part."""
    registry = otel.registry()
    registry.include(approve())
    agent = Agent(
        TestModel(), registry=registry, tools=[add], settings=LoopSettings(max_iterations=1)
    )
    paused = (await agent.run("What is 2 + 3?")).unwrap()
    assert paused.paused is not None
    otel.exporter.clear()
    failed = (await agent.resume(paused.paused.checkpoint_id, Approve())).failure()
    assert isinstance(failed, MaxIterationsReached)
    assert failed.usage == paused.usage  # the reply spent nothing more after the resume
    run = attrs(otel.one("invoke_agent agent"))
    assert run["error.type"] == "MaxIterationsReached"
    assert IN not in run


async def test_a_resumed_caller_does_not_count_its_paused_childs_usage_again(otel: Otel) -> None:
    """A sub-agent's usage before the pause is on the paused run's span only."""
    deleted: list[str] = []

    def delete_file(path: str) -> str:
        """Delete a file."""
        deleted.append(path)
        return f"deleted {path}"

    def cleaner(request: ModelRequest) -> str | Message:
        last = request.messages[-1]
        if last.role == "tool":
            return f"cleaned: {last.text or last.parts[0].content}"  # type: ignore[union-attr]
        return tool_calls(("delete_file", {"path": "a.txt"}))

    def boss(request: ModelRequest) -> str | Message:
        last = request.messages[-1]
        if last.role == "tool":
            part = last.parts[0]
            assert isinstance(part, ToolResultPart)
            return f"done: {part.content}"
        return tool_calls(("cleaner", {"prompt": "tidy up"}))

    careful = Registry()
    careful.include(approve())
    child = Agent(FunctionModel(cleaner), registry=careful, tools=[delete_file], name="cleaner")
    lead = Agent(FunctionModel(boss), registry=otel.registry(), tools=[child.as_tool()])
    paused = (await lead.run("tidy up")).unwrap()
    assert paused.paused is not None
    before = usage_of(otel)
    otel.exporter.clear()
    decisions = {r.call_id: Approve() for r in paused.paused.requests}
    done = (await lead.resume(paused.paused.checkpoint_id, decisions)).unwrap()
    assert deleted == ["a.txt"]
    after = usage_of(otel)
    total = done.usage
    assert before[0] > 0
    assert after[0] > 0
    assert (before[0] + after[0], before[1] + after[1]) == (total.input_tokens, total.output_tokens)

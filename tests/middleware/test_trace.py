"""`trace`: GenAI spans and metrics, on the real OpenTelemetry SDK with in-memory exporters."""

from __future__ import annotations

import asyncio
import dataclasses
import importlib
import json
from pathlib import Path
from typing import Any

import pytest
from opentelemetry import trace as otel_trace
from opentelemetry.metrics import NoOpMeterProvider
from opentelemetry.sdk.trace.sampling import ALWAYS_OFF, ParentBased
from opentelemetry.trace import (
    NonRecordingSpan,
    NoOpTracerProvider,
    ProxyTracerProvider,
    SpanContext,
    SpanKind,
    StatusCode,
    TraceFlags,
)
from otel_support import Otel, attrs, parent_of, span_id
from returns.result import Failure, Success

from fncore import (
    Agent,
    ConfigError,
    LoopSettings,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Outcome,
    Registry,
    Terminate,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
    Usage,
    load_container,
)
from fncore.errors import RateLimited
from fncore.middleware import _genai as g
from fncore.middleware import trace
from fncore.testing import FunctionModel, ScriptedModel, TestModel, tool_calls

PROMPT = "What is 2 + 3?"
TRACE_MODULE = importlib.import_module("fncore.middleware.trace")
"""The module (``fncore.middleware.trace`` as an attribute is the factory)."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def mul(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@pytest.fixture
def otel() -> Otel:
    """An SDK tracer and meter provider, each exporting to memory."""
    return Otel()


def tool_round(*names: str) -> Message:
    """The model asks for each of ``names`` with a=2, b=3."""
    return tool_calls(*((name, {"a": 2, "b": 3}) for name in names))


# -- names, kinds, tree ---------------------------------------------------------------------


async def test_a_run_is_one_agent_span_over_chat_and_tool_spans(otel: Otel) -> None:
    """invoke_agent (internal) holds each chat (client) and execute_tool (internal) span."""
    agent = Agent(TestModel(), registry=otel.registry(), tools=[add, mul], name="calc")
    outcome = await agent.run(PROMPT)
    assert isinstance(outcome, Success)
    run = otel.one("invoke_agent calc")
    chats = otel.named("chat test")
    tools = [*otel.named("execute_tool add"), *otel.named("execute_tool mul")]
    assert len(otel.spans()) == 5
    assert run.kind is SpanKind.INTERNAL
    assert run.parent is None
    assert [c.kind for c in chats] == [SpanKind.CLIENT, SpanKind.CLIENT]
    assert {t.kind for t in tools} == {SpanKind.INTERNAL}
    assert {parent_of(s) for s in (*chats, *tools)} == {span_id(run)}
    assert chats[0].end_time <= min(t.start_time for t in tools)  # type: ignore[operator]
    assert max(t.end_time for t in tools) <= chats[1].start_time  # type: ignore[type-var, operator]

    usage = outcome.unwrap().usage
    assert attrs(run) == {
        "gen_ai.operation.name": "invoke_agent",
        "gen_ai.agent.name": "calc",
        "fncore.run.id": attrs(run)["fncore.run.id"],
        "gen_ai.provider.name": "fncore.testing",
        "gen_ai.request.model": "test",
        "gen_ai.usage.input_tokens": usage.input_tokens,
        "gen_ai.usage.output_tokens": usage.output_tokens,
        "fncore.stop_reason": "completed",
        "fncore.rounds": 2,
    }
    first = attrs(chats[0])
    assert first == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fncore.testing",
        "gen_ai.request.model": "test",
        "fncore.attempt": 1,
        "gen_ai.response.finish_reasons": ("tool_calls",),
        "gen_ai.response.model": "test",
        "gen_ai.usage.input_tokens": first["gen_ai.usage.input_tokens"],
        "gen_ai.usage.output_tokens": first["gen_ai.usage.output_tokens"],
    }
    assert attrs(chats[1])["gen_ai.response.finish_reasons"] == ("stop",)
    assert attrs(otel.one("execute_tool add")) == {
        "gen_ai.operation.name": "execute_tool",
        "gen_ai.tool.name": "add",
        "gen_ai.tool.call.id": "call_0_0",
        "gen_ai.tool.type": "function",
        "gen_ai.tool.description": "Add two integers.",
    }
    assert all(s.status.status_code is StatusCode.UNSET for s in otel.spans())


async def test_a_session_is_the_conversation_id(otel: Otel) -> None:
    """A run continuing a session names it as gen_ai.conversation.id."""
    agent = Agent(TestModel(), registry=otel.registry())
    await agent.run("hi", session_id="thread-7")
    assert attrs(otel.one("invoke_agent agent"))["gen_ai.conversation.id"] == "thread-7"


async def test_request_settings_become_request_attributes(otel: Otel) -> None:
    """Max tokens, temperature, top_p, stop, seed and the penalties reach the chat span."""
    settings = ModelSettings(
        temperature=0.2,
        max_tokens=300,
        top_p=0.9,
        stop=("END", "STOP"),
        seed=7,
        extra={"top_k": 40, "frequency_penalty": 0.5, "presence_penalty": 0.25, "x": True},
    )
    agent = Agent(TestModel(), registry=otel.registry(), model_settings=settings)
    await agent.run("hi")
    chat = attrs(otel.one("chat test"))
    assert {k: v for k, v in chat.items() if k.startswith("gen_ai.request.")} == {
        "gen_ai.request.model": "test",
        "gen_ai.request.temperature": 0.2,
        "gen_ai.request.max_tokens": 300,
        "gen_ai.request.top_p": 0.9,
        "gen_ai.request.stop_sequences": ("END", "STOP"),
        "gen_ai.request.seed": 7,
        "gen_ai.request.top_k": 40,
        "gen_ai.request.frequency_penalty": 0.5,
        "gen_ai.request.presence_penalty": 0.25,
    }


async def test_cache_and_reasoning_tokens_are_recorded_when_reported(otel: Otel) -> None:
    """Cache read, cache write and reasoning tokens land on the chat span when not zero."""
    usage = Usage(100, 40, cache_read_tokens=60, cache_write_tokens=10, reasoning_tokens=25)
    model = FunctionModel(lambda r: ModelResponse(Message.assistant("ok"), usage, "length", "m-1"))
    agent = Agent(model, registry=otel.registry())
    await agent.run("hi")
    chat = attrs(otel.one("chat function"))
    assert chat["gen_ai.usage.input_tokens"] == 100
    assert chat["gen_ai.usage.output_tokens"] == 40
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 60
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 10
    assert chat["gen_ai.usage.reasoning.output_tokens"] == 25
    assert chat["gen_ai.response.finish_reasons"] == ("length",)
    assert chat["gen_ai.response.model"] == "m-1"


async def test_a_model_that_reports_no_usage_gets_no_usage_attributes(otel: Otel) -> None:
    """All-zero usage means unknown: no gen_ai.usage.* and no token metric."""
    model = FunctionModel(lambda r: ModelResponse(Message.assistant("ok")))
    await Agent(model, registry=otel.registry()).run("hi")
    chat = attrs(otel.one("chat function"))
    assert not [k for k in chat if k.startswith("gen_ai.usage.")]
    assert "gen_ai.response.model" not in chat
    assert otel.points(g.TOKEN_USAGE) == ()
    assert len(otel.points(g.OPERATION_DURATION)) == 1


# -- errors and terminations ------------------------------------------------------------------


async def test_a_model_error_is_error_type_on_the_chat_and_run_spans(otel: Otel) -> None:
    """The error's class is error.type, the status is ERROR with the message."""
    model = ScriptedModel([RateLimited(message="slow down", provider="acme")])
    outcome = await Agent(model, registry=otel.registry()).run("hi")
    assert isinstance(outcome, Failure)
    for span in (otel.one("chat scripted"), otel.one("invoke_agent agent")):
        assert attrs(span)["error.type"] == "RateLimited"
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "slow down"
    (point,) = otel.points(g.OPERATION_DURATION)
    assert dict(point.attributes or {})["error.type"] == "RateLimited"


async def test_a_loop_error_keeps_the_usage_spent(otel: Otel) -> None:
    """MaxIterationsReached carries its usage; the run span records it with the error."""
    agent = Agent(
        TestModel(), registry=otel.registry(), tools=[add], settings=LoopSettings(max_iterations=1)
    )
    outcome = await agent.run(PROMPT)
    assert isinstance(outcome, Failure)
    run = attrs(otel.one("invoke_agent agent"))
    assert run["error.type"] == "MaxIterationsReached"
    assert run["gen_ai.usage.input_tokens"] == outcome.failure().usage.input_tokens  # type: ignore[attr-defined]


async def test_a_tool_error_result_is_a_tool_error(otel: Otel) -> None:
    """A tool that raises gives an error result: error.type tool_error, status ERROR."""

    def broken(a: int, b: int) -> int:
        raise RuntimeError("no")

    model = ScriptedModel([tool_round("broken"), "sorry"])
    await Agent(model, registry=otel.registry(), tools=[broken]).run("hi")
    span = otel.one("execute_tool broken")
    assert attrs(span)["error.type"] == "tool_error"
    assert "gen_ai.tool.description" not in attrs(span)  # it has no docstring
    assert span.status.status_code is StatusCode.ERROR
    assert "error.type" not in attrs(otel.one("invoke_agent agent"))


async def test_a_terminate_is_recorded_as_a_termination_not_an_error(otel: Otel) -> None:
    """At the model (one attempt) and at a tool, Terminate sets fncore.terminated only."""
    registry = otel.registry()

    @registry.on("model_call", order="innermost")
    async def stop_round_2(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        if len(ctx.request.messages) > 1:
            return Failure(Terminate("enough"))
        return await call_next(ctx)

    @registry.on("tool_call")
    async def stop_mul(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        if ctx.tool.name == "mul":
            return Failure(Terminate("no multiplying"))
        return await call_next(ctx)

    model = ScriptedModel([tool_round("add"), tool_round("mul")])
    outcome = await Agent(model, registry=registry, tools=[add, mul]).run("hi")
    assert outcome.unwrap().stop_reason == "terminated"
    # Round 2: stop_round_2 (inside trace_chat) stops the attempt; the call never reaches the model.
    chats = otel.named("chat scripted")
    assert [attrs(c).get("fncore.terminated") for c in chats] == [None, True]
    assert model.remaining == 1
    for span in (chats[1], otel.one("invoke_agent agent")):
        assert span.status.status_code is StatusCode.UNSET
        assert "error.type" not in attrs(span)
        assert attrs(span)["fncore.terminated"] is True
    assert "terminate.output" not in str(attrs(chats[1]))  # content is off
    durations = otel.points(g.OPERATION_DURATION)
    assert sum(p.count for p in durations) == 2
    assert all("error.type" not in dict(p.attributes or {}) for p in durations)


async def test_a_tool_termination_is_on_the_tool_span(otel: Otel) -> None:
    """A tool_call middleware's Terminate marks that execute_tool span, not as an error."""
    registry = otel.registry(capture_content=True)

    @registry.on("tool_call")
    async def stop(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        return Failure(Terminate("stopped at the tool"))

    await Agent(ScriptedModel([tool_round("add")]), registry=registry, tools=[add]).run("hi")
    span = attrs(otel.one("execute_tool add"))
    assert span["fncore.terminated"] is True
    assert span["fncore.terminate.output"] == "stopped at the tool"
    assert "error.type" not in span


async def test_a_run_middleware_termination_marks_the_run(otel: Otel) -> None:
    """A run middleware inside trace that terminates: the run span says so."""
    registry = otel.registry()

    @registry.on("run")
    async def refuse(ctx: Any, call_next: Any) -> Any:
        return Failure(Terminate("not today"))

    outcome = await Agent(TestModel(), registry=registry).run("hi")
    assert outcome.unwrap().output == "not today"
    run = otel.one("invoke_agent agent")
    assert attrs(run)["fncore.terminated"] is True
    assert run.status.status_code is StatusCode.UNSET


@pytest.mark.parametrize("where", ["in-model", "in-tool"])
async def test_a_cancelled_run_ends_its_spans_as_cancelled(otel: Otel, where: str) -> None:
    """Cancellation goes through: the open spans end, error.type CancelledError."""
    reached = asyncio.Event()

    async def forever(request: ModelRequest) -> str:
        """A model that never answers."""
        reached.set()
        await asyncio.Event().wait()
        return "never"  # pragma: no cover

    async def wait(a: int, b: int) -> int:
        """A tool that never returns."""
        reached.set()
        await asyncio.Event().wait()
        return a  # pragma: no cover

    if where == "in-model":
        model: Any = FunctionModel(forever)
        spans = ["chat function", "invoke_agent agent"]
    else:
        model = ScriptedModel([tool_round("wait")])
        spans = ["execute_tool wait", "invoke_agent agent"]
    agent = Agent(model, registry=otel.registry(), tools=[wait])
    run = asyncio.ensure_future(agent.run("hi"))
    await reached.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    for name in spans:
        span = otel.one(name)
        assert attrs(span)["error.type"] == "CancelledError"
        assert span.status.status_code is StatusCode.ERROR
        assert span.status.description == "CancelledError went through"


# -- attempts: retries, fallbacks, calls that never reach the model ---------------------------


async def test_each_attempt_gets_its_own_chat_span(otel: Otel) -> None:
    """A retry and a fallback inside trace: one chat span per attempt, numbered, siblings."""
    registry = otel.registry()
    backup = TestModel("backup")

    @registry.on("model_call")
    async def fallback(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        outcome = await call_next(ctx)
        if isinstance(outcome, Failure):
            return await call_next(dataclasses.replace(ctx, model=backup))
        return outcome

    @registry.on("model_call")
    async def retry(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        outcome = await call_next(ctx)
        return outcome if isinstance(outcome, Success) else await call_next(ctx)

    failing = RateLimited(message="busy")
    primary = ScriptedModel([failing, failing], name="primary")
    outcome = await Agent(primary, registry=registry).run("hi")
    assert outcome.unwrap().output == "hi"
    run = otel.one("invoke_agent agent")
    chats = sorted(
        [*otel.named("chat primary"), *otel.named("chat backup")], key=lambda s: s.start_time or 0
    )
    assert [(c.name, attrs(c)["fncore.attempt"]) for c in chats] == [
        ("chat primary", 1),
        ("chat primary", 2),
        ("chat backup", 3),
    ]
    assert [attrs(c).get("error.type") for c in chats] == ["RateLimited", "RateLimited", None]
    assert {parent_of(c) for c in chats} == {span_id(run)}
    assert attrs(run)["gen_ai.request.model"] == "primary"  # the first model called
    assert len(otel.spans()) == 4
    assert sum(p.count for p in otel.points(g.OPERATION_DURATION)) == 3


async def test_a_cache_hit_is_one_chat_span_with_what_the_cache_set(otel: Otel) -> None:
    """The convention: a middleware sets fncore.cache.hit on the current span.

    A hit that answers without the model gives one chat span (attempt 0, internal) holding
    it, with no usage and no metrics; a miss puts it on the attempt's span.
    """
    registry = otel.registry()
    cached = ModelResponse(Message.assistant("from cache"), Usage(5, 5, requests=1), "stop", "m")

    @registry.on("model_call")
    async def cache(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        span = otel_trace.get_current_span()
        assert span.is_recording()
        hit = ctx.request.messages[-1].text == "cached?"
        span.set_attribute(g.CACHE_HIT, hit)
        span.add_event("cache.lookup", {"key": "k1"})
        return Success(cached) if hit else await call_next(ctx)

    agent = Agent(TestModel(), registry=registry)
    assert (await agent.run("cached?")).unwrap().output == "from cache"
    hit = otel.one("chat test")
    assert hit.kind is SpanKind.INTERNAL
    assert attrs(hit) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fncore.testing",
        "gen_ai.request.model": "test",
        "fncore.attempt": 0,
        "fncore.cache.hit": True,
        "gen_ai.response.finish_reasons": ("stop",),
        "gen_ai.response.model": "m",
    }
    assert [e.name for e in hit.events] == ["cache.lookup"]
    assert parent_of(hit) == span_id(otel.one("invoke_agent agent"))
    assert otel.points(g.OPERATION_DURATION) == ()
    assert "gen_ai.provider.name" not in attrs(otel.one("invoke_agent agent"))

    otel.exporter.clear()
    await agent.run("not cached")
    miss = otel.one("chat test")
    assert miss.kind is SpanKind.CLIENT
    assert attrs(miss)["fncore.cache.hit"] is False
    assert attrs(miss)["fncore.attempt"] == 1
    assert [e.name for e in miss.events] == ["cache.lookup"]


async def test_a_cache_hit_with_content_on_records_the_answer(otel: Otel) -> None:
    """With capture_content, the call answered without the model shows its answer."""
    registry = otel.registry(capture_content=True)

    @registry.on("model_call")
    async def cache(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return Success(ModelResponse(Message.assistant("from cache")))

    await Agent(TestModel(), registry=registry).run("hi")
    answer = json.loads(attrs(otel.one("chat test"))[g.OUTPUT_MESSAGES])
    assert answer[0]["parts"] == [{"type": "text", "content": "from cache"}]


async def test_a_call_stopped_before_the_model_records_why(otel: Otel) -> None:
    """A limit that fails or terminates the call before any attempt: one chat span says so."""
    registry = otel.registry(capture_content=True)

    @registry.on("model_call")
    async def limit(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        if ctx.request.messages[-1].text == "stop":
            return Failure(Terminate("limit reached"))
        return Failure(RateLimited(message="no capacity"))

    agent = Agent(TestModel(), registry=registry)
    await agent.run("fail")
    failed = otel.one("chat test")
    assert attrs(failed)["error.type"] == "RateLimited"
    assert failed.status.status_code is StatusCode.ERROR
    otel.exporter.clear()
    await agent.run("stop")
    stopped = attrs(otel.one("chat test"))
    assert stopped["fncore.terminated"] is True
    assert stopped["fncore.terminate.output"] == "limit reached"
    assert stopped["fncore.attempt"] == 0


async def test_the_stand_in_span_ignores_what_spans_only_keep(otel: Otel) -> None:
    """Status, exceptions, names and ends set on the stand-in are dropped without fuss."""
    registry = otel.registry()

    @registry.on("model_call")
    async def fussy(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        span = otel_trace.get_current_span()
        span.set_attributes({"fncore.test": "x"})
        span.set_status(StatusCode.ERROR)
        span.record_exception(ValueError("x"))
        span.update_name("renamed")
        span.end()
        return await call_next(ctx)

    await Agent(TestModel(), registry=registry).run("hi")
    chat = otel.one("chat test")
    assert attrs(chat)["fncore.test"] == "x"
    assert chat.status.status_code is StatusCode.UNSET


# -- streaming ----------------------------------------------------------------------------------


async def test_streaming_records_the_time_to_the_first_chunk(otel: Otel) -> None:
    """Streamed chat spans carry gen_ai.request.stream and the time to the first chunk."""
    agent = Agent(TestModel(chunk=2), registry=otel.registry(), tools=[add])
    outcome = await agent.stream(PROMPT).result()
    assert isinstance(outcome, Success)
    chats = otel.named("chat test")
    assert len(chats) == 2
    for chat in chats:
        found = attrs(chat)
        assert found["gen_ai.request.stream"] is True
        first = found["gen_ai.response.time_to_first_chunk"]
        assert 0 < first <= (chat.end_time - chat.start_time) / 1e9  # type: ignore[operator]
    (point,) = otel.points(g.TIME_TO_FIRST_CHUNK)
    assert point.count == 2
    assert otel.metrics()[g.TIME_TO_FIRST_CHUNK].unit == "s"


async def test_a_request_that_does_not_stream_has_no_first_chunk(otel: Otel) -> None:
    """Without streaming there is no stream attribute, time to first chunk or its metric."""
    await Agent(TestModel(), registry=otel.registry()).run("hi")
    chat = attrs(otel.one("chat test"))
    assert "gen_ai.request.stream" not in chat
    assert "gen_ai.response.time_to_first_chunk" not in chat
    assert otel.points(g.TIME_TO_FIRST_CHUNK) == ()


async def test_a_stream_that_fails_before_its_first_chunk_has_no_first_chunk(otel: Otel) -> None:
    """An error as the stream's first item: no time to first chunk, error.type set."""
    model = ScriptedModel([RateLimited(message="busy")])
    await Agent(model, registry=otel.registry()).stream("hi").result()
    chat = attrs(otel.one("chat scripted"))
    assert chat["error.type"] == "RateLimited"
    assert "gen_ai.response.time_to_first_chunk" not in chat


# -- content ------------------------------------------------------------------------------------


async def test_content_is_not_captured_by_default(otel: Otel) -> None:
    """No message, instruction, tool definition, argument or result is recorded."""
    agent = Agent(TestModel(), registry=otel.registry(), tools=[add], instructions="Be brief.")
    await agent.run(PROMPT)
    content = {
        g.INPUT_MESSAGES,
        g.OUTPUT_MESSAGES,
        g.SYSTEM_INSTRUCTIONS,
        g.TOOL_DEFINITIONS,
        g.TOOL_CALL_ARGUMENTS,
        g.TOOL_CALL_RESULT,
    }
    assert all(not content & attrs(s).keys() for s in otel.spans())
    assert all(PROMPT not in str(attrs(s)) for s in otel.spans())


async def test_captured_content_follows_the_conventions_json(otel: Otel) -> None:
    """Input, output, instructions, tool definitions, arguments and results, as JSON."""
    agent = Agent(
        TestModel(),
        registry=otel.registry(capture_content=True),
        tools=[add],
        instructions="Be brief.",
    )
    await agent.run(PROMPT)
    first, second = (attrs(c) for c in otel.named("chat test"))
    assert json.loads(first[g.INPUT_MESSAGES]) == [
        {"role": "user", "parts": [{"type": "text", "content": PROMPT}]}
    ]
    assert json.loads(first[g.SYSTEM_INSTRUCTIONS]) == [{"type": "text", "content": "Be brief."}]
    (definition,) = json.loads(first[g.TOOL_DEFINITIONS])
    assert definition["type"] == "function"
    assert definition["name"] == "add"
    assert definition["parameters"]["required"] == ["a", "b"]
    call = {"type": "tool_call", "id": "call_0_0", "name": "add", "arguments": {"a": 2, "b": 3}}
    assert json.loads(first[g.OUTPUT_MESSAGES]) == [
        {"role": "assistant", "parts": [call], "finish_reason": "tool_calls"}
    ]
    history = json.loads(second[g.INPUT_MESSAGES])
    assert history[2] == {
        "role": "tool",
        "parts": [{"type": "tool_call_response", "id": "call_0_0", "response": "5"}],
    }
    tool = attrs(otel.one("execute_tool add"))
    assert json.loads(tool[g.TOOL_CALL_ARGUMENTS]) == {"a": 2, "b": 3}
    assert tool[g.TOOL_CALL_RESULT] == "5"
    run = attrs(otel.one("invoke_agent agent"))
    assert json.loads(run[g.INPUT_MESSAGES])[0]["parts"][0]["content"] == PROMPT
    assert json.loads(run[g.OUTPUT_MESSAGES])[0]["parts"] == [{"type": "text", "content": "add: 5"}]


async def test_captured_content_is_capped_per_attribute(otel: Otel) -> None:
    """A 1.5 MB message: every text attribute stays within max_attribute_length."""
    huge = "x" * 1_500_000
    agent = Agent(
        TestModel(), registry=otel.registry(capture_content=True, max_attribute_length=200)
    )
    await agent.run(huge)
    texts = [v for s in otel.spans() for v in attrs(s).values() if isinstance(v, str)]
    assert max(len(v) for v in texts) == 200
    capped = attrs(otel.one("chat test"))[g.INPUT_MESSAGES]
    assert capped.startswith('[{"role":"user","parts":[{"type":"text","content":"xxx')
    assert capped.endswith("…[truncated]")


def test_a_bad_cap_or_name_is_refused() -> None:
    """max_attribute_length must be a whole number of at least 32; a name must be given."""
    with pytest.raises(ValueError, match="at least 32, not 31"):
        trace(max_attribute_length=31)
    with pytest.raises(ValueError, match="at least 32"):
        trace(max_attribute_length=True)
    with pytest.raises(ValueError, match="name must not be empty"):
        trace(name="")


# -- metrics ------------------------------------------------------------------------------------


async def test_metrics_have_the_conventions_names_units_and_buckets(otel: Otel) -> None:
    """Duration in s and token usage in {token}, with the conventions' explicit buckets."""
    outcome = await Agent(TestModel(), registry=otel.registry(), tools=[add]).run(PROMPT)
    usage = outcome.unwrap().usage
    metrics = otel.metrics()
    assert metrics[g.OPERATION_DURATION].unit == "s"
    assert metrics[g.TOKEN_USAGE].unit == "{token}"
    (duration,) = otel.points(g.OPERATION_DURATION)
    assert duration.count == 2
    assert list(duration.explicit_bounds) == [
        0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
    ]  # fmt: skip
    assert dict(duration.attributes or {}) == {
        "gen_ai.operation.name": "chat",
        "gen_ai.provider.name": "fncore.testing",
        "gen_ai.request.model": "test",
        "gen_ai.response.model": "test",
    }
    tokens = {dict(p.attributes or {})["gen_ai.token.type"]: p for p in otel.points(g.TOKEN_USAGE)}
    assert tokens["input"].sum == usage.input_tokens
    assert tokens["output"].sum == usage.output_tokens
    assert list(tokens["input"].explicit_bounds) == [4**i for i in range(14)]


async def test_metrics_only(otel: Otel) -> None:
    """With no tracer, metrics are still recorded and the caller's span stays current."""
    registry = Registry()
    registry.include(
        trace(tracer_provider=NoOpTracerProvider(), meter_provider=otel.meter_provider)
    )
    seen: list[object] = []

    def probe(a: int, b: int) -> int:
        """Look at the current span."""
        seen.append(otel_trace.get_current_span())
        return a + b

    caller = NonRecordingSpan(SpanContext(1, 2, is_remote=False, trace_flags=TraceFlags(1)))
    with otel_trace.use_span(caller):
        await Agent(
            ScriptedModel([tool_round("probe"), "5"]), registry=registry, tools=[probe]
        ).run("hi")
        await Agent(TestModel(), registry=registry).stream("hi").result()
    assert seen == [caller]
    assert otel.spans() == ()
    assert sum(p.count for p in otel.points(g.OPERATION_DURATION)) == 3
    assert sum(p.count for p in otel.points(g.TIME_TO_FIRST_CHUNK)) == 1


async def test_tracing_only(otel: Otel) -> None:
    """With no meter, spans are recorded and no metric is."""
    registry = Registry()
    registry.include(
        trace(tracer_provider=otel.tracer_provider, meter_provider=NoOpMeterProvider())
    )
    await Agent(TestModel(), registry=registry).run("hi")
    assert len(otel.spans()) == 2
    assert otel.metrics() == {}


# -- nesting --------------------------------------------------------------------------------------


async def test_a_run_nests_under_the_callers_current_span(otel: Otel) -> None:
    """invoke_agent is a child of whatever span the caller has open, streamed or not."""
    tracer = otel.tracer_provider.get_tracer("app")
    agent = Agent(TestModel(), registry=otel.registry())
    with tracer.start_as_current_span("handle request") as outer:
        await agent.run("hi")
        await agent.stream("hi").result()
    runs = otel.named("invoke_agent agent")
    assert len(runs) == 2
    assert {parent_of(r) for r in runs} == {outer.get_span_context().span_id}
    assert {r.context.trace_id for r in runs} == {outer.get_span_context().trace_id}  # type: ignore[union-attr]


async def test_concurrent_tool_calls_and_runs_nest_correctly(otel: Otel) -> None:
    """Spans a tool opens nest under its own execute_tool span, across concurrent runs."""
    tracer = otel.tracer_provider.get_tracer("tools")

    async def slow_add(a: int, b: int) -> int:
        """Add, slowly, in a span of its own."""
        with tracer.start_as_current_span("slow_add work"):
            await asyncio.sleep(0.01)
        return a + b

    def thread_mul(a: int, b: int) -> int:
        """Multiply in a worker thread, in a span of its own."""
        with tracer.start_as_current_span("thread_mul work"):
            return a * b

    agent = Agent(TestModel(), registry=otel.registry(), tools=[slow_add, thread_mul])
    outcomes = await asyncio.gather(*(agent.run(PROMPT) for _ in range(20)))
    assert all(isinstance(o, Success) for o in outcomes)
    spans = otel.spans()
    by_id = {span_id(s): s for s in spans}
    runs = otel.named("invoke_agent agent")
    assert len(runs) == 20
    assert len({r.context.trace_id for r in runs}) == 20  # type: ignore[union-attr]
    for work, tool in (
        ("slow_add work", "execute_tool slow_add"),
        ("thread_mul work", "execute_tool thread_mul"),
    ):
        found = otel.named(work)
        assert len(found) == 20
        for span in found:
            parent = by_id[parent_of(span)]  # type: ignore[index]
            assert parent.name == tool
            run = by_id[parent_of(parent)]  # type: ignore[index]
            assert run.name == "invoke_agent agent"
            assert run.context.trace_id == span.context.trace_id  # type: ignore[union-attr]
    for chat in otel.named("chat test"):
        assert by_id[parent_of(chat)].name == "invoke_agent agent"  # type: ignore[index]


async def test_a_thousand_concurrent_runs_give_exact_spans_and_counts(otel: Otel) -> None:
    """1,000 runs gathered on one agent: every span and measurement, each in its own trace."""
    agent = Agent(TestModel(), registry=otel.registry(), tools=[add, mul])
    outcomes = await asyncio.gather(*(agent.run(PROMPT) for _ in range(1000)))
    assert all(isinstance(o, Success) for o in outcomes)
    spans = otel.spans()
    names = [s.name for s in spans]
    assert names.count("invoke_agent agent") == 1000
    assert names.count("chat test") == 2000
    assert names.count("execute_tool add") == names.count("execute_tool mul") == 1000
    runs = {s.context.trace_id: span_id(s) for s in spans if s.parent is None}  # type: ignore[union-attr]
    assert len(runs) == 1000
    assert all(parent_of(s) == runs[s.context.trace_id] for s in spans if s.parent)  # type: ignore[union-attr]
    assert sum(p.count for p in otel.points(g.OPERATION_DURATION)) == 2000
    tokens = {dict(p.attributes or {})["gen_ai.token.type"]: p for p in otel.points(g.TOKEN_USAGE)}
    assert tokens["input"].sum == sum(o.unwrap().usage.input_tokens for o in outcomes)
    assert tokens["output"].count == 2000


async def test_spans_inside_a_model_call_nest_under_its_attempt(otel: Otel) -> None:
    """A model that opens spans (as the Anthropic SDK does) nests them under its chat span."""
    tracer = otel.tracer_provider.get_tracer("sdk")

    async def answer(request: ModelRequest) -> str:
        with tracer.start_as_current_span("sdk call"):
            return "ok"

    await Agent(FunctionModel(answer), registry=otel.registry()).run("hi")
    assert parent_of(otel.one("sdk call")) == span_id(otel.one("chat function"))


async def test_a_sampled_out_run_records_no_spans_but_its_metrics(otel: Otel) -> None:
    """Under a parent that is not sampled nothing is exported; metrics still count."""
    sampled_out = Otel(sampler=ParentBased(ALWAYS_OFF))
    registry = sampled_out.registry()

    @registry.on("model_call")
    async def cache(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        assert not otel_trace.get_current_span().is_recording()
        if ctx.request.messages[-1].text == "cached?":
            return Success(ModelResponse(Message.assistant("cached")))
        return await call_next(ctx)

    agent = Agent(TestModel(), registry=registry, tools=[add])
    await agent.run(PROMPT)
    await agent.run("cached?")
    assert sampled_out.spans() == ()
    assert sum(p.count for p in sampled_out.points(g.OPERATION_DURATION)) == 2


# -- providers ------------------------------------------------------------------------------------


async def test_without_providers_nothing_is_recorded_and_nothing_breaks() -> None:
    """The global providers unset (the API's proxies): runs, streams and tools as without it."""
    assert isinstance(otel_trace.get_tracer_provider(), ProxyTracerProvider)
    registry = Registry()
    registry.include(trace(capture_content=True))
    seen: list[object] = []

    def probe(a: int, b: int) -> int:
        """Look at the current span."""
        seen.append(otel_trace.get_current_span())
        return a + b

    traced = Agent(TestModel(), registry=registry, tools=[probe])
    bare = Agent(TestModel(), tools=[probe])
    assert (await traced.run(PROMPT)).unwrap().output == (await bare.run(PROMPT)).unwrap().output
    assert isinstance(await traced.stream(PROMPT).result(), Success)
    assert seen == [otel_trace.INVALID_SPAN] * 3


async def test_providers_set_later_are_picked_up(
    otel: Otel, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A global provider set after the build is used, RECHECK_SECONDS later at most."""
    now = [100.0]
    monkeypatch.setattr(TRACE_MODULE, "_clock", lambda: now[0])
    registry = Registry()
    registry.include(trace())
    agent = Agent(TestModel(), registry=registry)
    await agent.run("before")
    monkeypatch.setattr(otel_trace, "get_tracer_provider", lambda: otel.tracer_provider)
    now[0] += 0.5
    await agent.run("within the second: not looked up again yet")
    assert otel.spans() == ()
    now[0] += 0.5
    await agent.run("after")
    await agent.run("again")
    assert len(otel.named("invoke_agent agent")) == 2


async def test_two_traces_each_record_to_their_own_providers() -> None:
    """trace(name=...) twice, each with its own provider: both get the whole tree."""
    first, second = Otel(), Otel()
    registry = Registry()
    registry.include(first.registry())
    registry.include(second.registry(name="audit"))
    agent = Agent(TestModel(), registry=registry, tools=[add])
    assert agent.describe().positions["model_call"] == (
        "trace",
        "audit",
        "trace_chat",
        "audit_chat",
    )
    await agent.run(PROMPT)
    for otel in (first, second):
        assert sorted(s.name for s in otel.spans()) == [
            "chat test",
            "chat test",
            "execute_tool add",
            "invoke_agent agent",
        ]
    # One OpenTelemetry context: together the two make one tree (the inner one's spans
    # are the outer one's children), each span's parent in one provider or the other.
    both = [*first.spans(), *second.spans()]
    ids = {span_id(s) for s in both}
    assert [s for s in both if parent_of(s) not in ids] == [first.one("invoke_agent agent")]


# -- configuration --------------------------------------------------------------------------------


async def test_trace_from_configuration(otel: Otel, monkeypatch: pytest.MonkeyPatch) -> None:
    """Use = "trace" with its parameters; it records to the global providers."""
    monkeypatch.setattr(otel_trace, "get_tracer_provider", lambda: otel.tracer_provider)
    container = load_container(
        overrides={
            "middleware": [{"use": "trace", "capture_content": True, "max_attribute_length": 64}]
        },
        environ={},
    )
    agent = container.agent(tools=[add])
    positions = agent.describe().positions
    assert positions["run"][0] == "trace"
    assert positions["model_call"] == ("trace", "trace_chat")
    assert positions["tool_call"] == ("trace",)
    await agent.run(PROMPT)
    assert len(otel.spans()) == 4
    assert max(len(v) for s in otel.spans() for v in attrs(s).values() if isinstance(v, str)) <= 64


async def test_trace_from_a_toml_file(
    otel: Otel, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """[[middleware]] use = "trace" in a TOML file, with content capture on."""
    monkeypatch.setattr(otel_trace, "get_tracer_provider", lambda: otel.tracer_provider)
    path = tmp_path / "fncore.toml"
    path.write_text('[[middleware]]\nuse = "trace"\ncapture_content = true\n', encoding="utf-8")
    agent = load_container(path, environ={}).agent()
    await agent.run("hello there")
    assert "hello there" in attrs(otel.one("chat test"))[g.INPUT_MESSAGES]


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"max_attribute_length": 8}, "at least 32, not 8"),
        ({"capture_content": "maybe"}, "parameter 'capture_content'"),
        ({"tracer_provider": "sdk"}, "parameter 'tracer_provider'"),
        ({"sampler": "always"}, "parameter 'sampler': unknown parameter"),
    ],
)
def test_a_bad_configuration_is_one_line(entry: dict[str, Any], words: str) -> None:
    """Wrong parameters name the entry and the parameter, on one line."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"middleware": [{"use": "trace", **entry}]}, environ={}).agent()
    assert "\n" not in str(info.value)
    assert str(info.value).startswith("config key 'middleware[0]' (use = 'trace'): ")
    assert words in str(info.value)

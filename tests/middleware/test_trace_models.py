"""`trace`: what it makes once per model, and the run's span naming the model it called.

On the real OpenTelemetry SDK with in-memory exporters, as the other ``trace`` tests.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator
from typing import Any

import pytest
from otel_support import Otel, attrs
from returns.result import Result, Success

from fncore import (
    Agent,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    RunInfo,
    State,
    Tool,
    ToolCallContext,
    ToolCallPart,
    Usage,
)
from fncore.core import ModelStreamItem
from fncore.middleware import _genai as g
from fncore.middleware._trace_models import MAX_KNOWN, ModelFacts, Models
from fncore.middleware._trace_spans import Spans
from fncore.testing import FunctionModel, ScriptedModel, tool_calls


class Renamed:
    """A model whose name (and endpoint) can change between calls; it answers "ok"."""

    def __init__(self, name: str, url: str | None = None) -> None:
        self.name = name
        self.provider = "acme"
        self.endpoint = type("Endpoint", (), {"url": url})()

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Answer "ok", as the model of this name."""
        return Success(ModelResponse(Message.assistant("ok"), Usage(3, 1, requests=1), "stop", ""))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The same answer, unstreamed."""
        yield (await self.request(request)).unwrap()


@pytest.fixture
def otel() -> Otel:
    """An SDK tracer and meter provider, each exporting to memory."""
    return Otel()


def made_afresh(model: Any) -> dict[str, Any]:
    """What `ModelFacts` hold for ``model``, computed without any memo."""
    provider, name, server = g.provider_of(model), g.model_name(model), g.server_of(model)
    return {
        "chat": f"chat {name}",
        "described": {g.PROVIDER_NAME: provider, g.REQUEST_MODEL: name},
        "first": {
            g.OPERATION_NAME: g.CHAT,
            g.PROVIDER_NAME: provider,
            g.REQUEST_MODEL: name,
            g.ATTEMPT: 1,
            **dict(server),
        },
    }


def held(facts: ModelFacts) -> dict[str, Any]:
    """What ``facts`` hold, to compare with `made_afresh`."""
    return {"chat": facts.chat, "described": facts.described, "first": facts.first}


def test_a_model_is_known_again_after_it_changes() -> None:
    """The same model as it was gives the same facts; a new name or endpoint, new ones."""
    models = Models()
    model = Renamed("m-1", "https://api.acme.test/v1")
    first = models.of(model)
    assert models.of(model) is first
    assert held(first) == made_afresh(model)
    assert first.first[g.SERVER_ADDRESS] == "api.acme.test"
    model.name = "m-2"
    renamed = models.of(model)
    assert renamed is not first
    assert held(renamed) == made_afresh(model)
    model.endpoint.url = "http://127.0.0.1:8080/v1"  # type: ignore[attr-defined]
    moved = models.of(model)
    assert held(moved) == made_afresh(model)
    assert moved.first[g.SERVER_PORT] == 8080
    assert held(first) == made_afresh(Renamed("m-1", "https://api.acme.test/v1"))  # unchanged


def test_the_memo_of_models_is_bounded() -> None:
    """Past `MAX_KNOWN` models the memo starts afresh, and still gives the right facts."""
    models = Models()
    for i in range(MAX_KNOWN + 10):
        assert models.of(Renamed(f"m-{i}")).chat == f"chat m-{i}"
    assert len(models._known) <= MAX_KNOWN


def test_metric_attribute_sets_are_made_once_per_answering_model() -> None:
    """Each answering model gets its own sets; none is shared with another; bounded."""
    facts = ModelFacts("acme", "m-1", ((g.SERVER_ADDRESS, "api.acme.test"),))
    base = {
        g.OPERATION_NAME: g.CHAT,
        g.PROVIDER_NAME: "acme",
        g.REQUEST_MODEL: "m-1",
        g.SERVER_ADDRESS: "api.acme.test",
    }
    answered = facts.metrics("m-1-2026")
    assert facts.metrics("m-1-2026") is answered
    assert answered == (
        {**base, g.RESPONSE_MODEL: "m-1-2026"},
        {**base, g.RESPONSE_MODEL: "m-1-2026", g.TOKEN_TYPE: "input"},
        {**base, g.RESPONSE_MODEL: "m-1-2026", g.TOKEN_TYPE: "output"},
    )
    assert facts.metrics("")[0] == base  # no answering model named: no gen_ai.response.model
    for i in range(MAX_KNOWN + 10):
        assert facts.metrics(f"v{i}")[0][g.RESPONSE_MODEL] == f"v{i}"
    assert len(facts._metrics) <= MAX_KNOWN


async def test_a_renamed_model_gets_spans_and_metrics_under_its_new_name(otel: Otel) -> None:
    """What trace made for the old name is not reused for the new one, nor changed by the SDK."""
    model = Renamed("m-1")
    agent = Agent(model, registry=otel.registry())
    await agent.run("hi")
    model.name = "m-2"
    await agent.run("hi")
    await agent.run("hi")
    (old,) = otel.named("chat m-1")
    new = otel.named("chat m-2")
    assert len(new) == 2
    assert attrs(old)[g.REQUEST_MODEL] == "m-1"
    assert [attrs(s)[g.REQUEST_MODEL] for s in new] == ["m-2", "m-2"]
    assert [attrs(s)[g.REQUEST_MODEL] for s in otel.named("invoke_agent agent")] == [
        "m-1",
        "m-2",
        "m-2",
    ]
    counts = {
        dict(p.attributes or {})[g.REQUEST_MODEL]: p.count
        for p in otel.points(g.OPERATION_DURATION)
    }
    assert counts == {"m-1": 1, "m-2": 2}


async def test_a_cancelled_run_still_names_the_model_it_called(otel: Otel) -> None:
    """The run's provider and model, known at its first call, are on its span however it ends."""
    reached = asyncio.Event()

    async def forever(request: ModelRequest) -> str:
        """A model that never answers."""
        reached.set()
        await asyncio.Event().wait()
        return "never"  # pragma: no cover

    run = asyncio.ensure_future(Agent(FunctionModel(forever), registry=otel.registry()).run("hi"))
    await reached.wait()
    run.cancel()
    with pytest.raises(asyncio.CancelledError):
        await run
    found = attrs(otel.one("invoke_agent agent"))
    assert found[g.PROVIDER_NAME] == "fncore.testing"
    assert found[g.REQUEST_MODEL] == "function"
    assert found[g.ERROR_TYPE] == "CancelledError"


async def test_an_execute_tool_span_is_made_afresh_for_a_changed_tool(otel: Otel) -> None:
    """What is kept per tool is the current spec's: a new spec of the same name, new values.

    Each span gets its own call id; the kept part is not changed by one span for the next.
    """
    registry = otel.registry()

    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    def add_again(a: int, b: int) -> int:
        """Sum two integers."""
        return a + b

    calls = tool_calls(("add", {"a": 1, "b": 2}))
    first = Tool.from_function(add)
    second = Tool.from_function(add_again, name="add")
    for tool in (first, first, second, first):
        await Agent(ScriptedModel([calls, "done"]), registry=registry, tools=[tool]).run("hi")
    spans = otel.named("execute_tool add")
    assert [attrs(s)[g.TOOL_DESCRIPTION] for s in spans] == [
        "Add two integers.",
        "Add two integers.",
        "Sum two integers.",
        "Add two integers.",
    ]
    assert {attrs(s)[g.TOOL_CALL_ID] for s in spans} == {calls.tool_calls[0].id}
    for span in spans:
        assert set(attrs(span)) == {
            g.OPERATION_NAME,
            g.TOOL_NAME,
            g.TOOL_CALL_ID,
            g.TOOL_TYPE,
            g.TOOL_DESCRIPTION,
        }


def test_the_memo_of_tools_is_bounded() -> None:
    """Past `MAX_KNOWN` tool names the memo starts afresh, and still gives the right span."""
    spans = Spans(capture=False, limit=64)
    call = ToolCallPart("c1", "t", "{}")
    for i in range(MAX_KNOWN + 10):
        tool = Tool.from_function(nothing, name=f"t{i}")
        args = tool.check("{}")
        assert not isinstance(args, str)
        ctx = ToolCallContext(RunInfo("agent", {}, State()), call, tool, args)
        assert spans.tool(ctx) == (
            f"execute_tool t{i}",
            {
                g.OPERATION_NAME: g.EXECUTE_TOOL,
                g.TOOL_NAME: f"t{i}",
                g.TOOL_TYPE: "function",
                g.TOOL_DESCRIPTION: "Do nothing.",
                g.TOOL_CALL_ID: "c1",
            },
        )
    assert len(spans._tools) <= MAX_KNOWN


def nothing() -> None:
    """Do nothing."""


def test_a_first_attempts_attributes_are_kept_for_the_same_settings_only() -> None:
    """`ModelFacts.first_for`: the unmemoised attributes, made again when settings change.

    The same settings object (streamed or not as before) gives the same dict; other
    settings, or streaming, give their own; an ``extra`` mapping is read at every call.
    """
    facts = ModelFacts("acme", "m-1", ((g.SERVER_ADDRESS, "api.acme.test"),))

    def afresh(request: ModelRequest, streaming: bool) -> dict[str, Any]:
        return facts.started(1, g.request_attributes(request, streaming))

    plain = ModelRequest(())
    assert facts.first_for(plain, False) is facts.first
    assert facts.first_for(plain, False) == afresh(plain, False)
    warm = ModelRequest((), settings=ModelSettings(temperature=0.5, max_tokens=9))
    kept = facts.first_for(warm, False)
    assert kept == afresh(warm, False)
    assert kept[g.REQUEST_TEMPERATURE] == 0.5
    assert facts.first_for(warm, False) is kept
    assert facts.first_for(ModelRequest((), settings=warm.settings), False) is kept
    streamed = facts.first_for(warm, True)
    assert streamed == afresh(warm, True)
    assert streamed[g.REQUEST_STREAM] is True
    cooler = ModelRequest((), settings=ModelSettings(temperature=0.1, max_tokens=9))
    assert facts.first_for(cooler, False) == afresh(cooler, False)
    assert facts.first_for(cooler, False)[g.REQUEST_TEMPERATURE] == 0.1
    extra: dict[str, object] = {"top_k": 3}
    given = ModelRequest((), settings=ModelSettings(extra=extra))
    assert facts.first_for(given, False)[g.REQUEST_TOP_K] == 3
    extra["top_k"] = 5
    assert facts.first_for(given, False)[g.REQUEST_TOP_K] == 5
    assert facts.first_for(given, False) == afresh(given, False)
    assert facts.first_for(plain, False) is facts.first


async def test_chat_spans_follow_the_settings_of_each_request(otel: Otel) -> None:
    """Two agents on one model and one trace, each with its settings: each span its own."""
    registry = otel.registry()
    model = Renamed("m-1")
    warm = Agent(model, registry=registry, model_settings=ModelSettings(temperature=0.7))
    plain = Agent(model, registry=registry)
    for agent in (warm, plain, warm, plain):
        await agent.run("hi")
    temperatures = [attrs(s).get(g.REQUEST_TEMPERATURE) for s in otel.named("chat m-1")]
    assert temperatures == [0.7, None, 0.7, None]

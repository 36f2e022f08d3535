"""``cache``: model responses and tool results from a store, visible in traces."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, configured, outcome_of, seen_outside_cache
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export import SimpleSpanProcessor
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from processes import PRELUDE, run_processes
from returns.result import Success

from fncore import (
    Agent,
    ConfigError,
    DataPart,
    Message,
    MiddlewareError,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    ModelSettings,
    Outcome,
    ReasoningPart,
    RegistrationError,
    Registry,
    TextPart,
    ToolCallContext,
    ToolCallNext,
    ToolCallPart,
    ToolResult,
    ToolResultPart,
    Usage,
    load_container,
)
from fncore.errors import ProviderUnavailable
from fncore.events import StreamEvent, TextDelta, ToolCallArgsDelta, ToolCallStarted
from fncore.middleware import cache, trace
from fncore.middleware.cache import (
    HIT_ATTRIBUTE,
    decode_response,
    decode_result,
    encode_response,
    encode_result,
    request_key,
)
from fncore.testing import FunctionModel, ScriptedModel, TestModel

CALLS: list[str] = []


def lookup(city: str) -> str:
    """Look a city up (counted in CALLS)."""
    CALLS.append(city)
    return f"{city}: sunny"


def broken(city: str) -> str:
    """Always fail."""
    CALLS.append(city)
    raise RuntimeError("down")


@pytest.fixture(autouse=True)
def no_calls_yet() -> None:
    CALLS.clear()


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> str:
    """Each store the cache can keep entries in: this process's memory, and a real Redis."""
    if request.param == "memory":
        return "memory://"
    return str(request.getfixturevalue("redis_url"))


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_repeated_request_is_answered_from_the_cache(store: str, streaming: bool) -> None:
    """The same request twice: one model call; the second answer is the same, without usage."""
    registry = cache(store=store)
    model = TestModel()
    agent = Agent(model, registry=registry)
    first = (await outcome_of(agent, "hello there", streaming=streaming)).unwrap()
    second = (await outcome_of(agent, "hello there", streaming=streaming)).unwrap()
    assert len(model.requests) == 1
    assert first.output == second.output == "hello there"
    assert first.usage.total_tokens > 0
    assert second.usage == Usage()  # an answer from the cache spent nothing
    await registry.aclose()


async def test_a_hit_streams_the_answer_as_events() -> None:
    """Streaming, a kept response is replayed as its text and tool-call events."""
    answer = Message(
        "assistant",
        (ReasoningPart("thinking"), ToolCallPart("c1", "lookup", '{"city":"Oslo"}')),
    )
    model = ScriptedModel([answer, "Oslo is sunny.", answer, "unused"])
    registry = cache(tools=["lookup"])
    agent = Agent(model, registry=registry, tools=[lookup])
    await agent.run("weather?")
    events = [e async for e in agent.stream("weather?")]
    replayed = [e for e in events if isinstance(e, (TextDelta, ToolCallStarted, ToolCallArgsDelta))]
    assert replayed == [
        ToolCallStarted("c1", "lookup"),
        ToolCallArgsDelta("c1", '{"city":"Oslo"}'),
        TextDelta("Oslo is sunny."),
    ]
    assert len(model.requests) == 2
    assert CALLS == ["Oslo"]  # the tool's result came from the cache too


@pytest.mark.parametrize(
    ("settings", "sampled", "calls"),
    [
        (ModelSettings(), False, 1),
        (ModelSettings(temperature=0.0), False, 1),
        (ModelSettings(temperature=0.7), False, 2),
        (ModelSettings(temperature=0.7), True, 1),
    ],
)
async def test_sampled_requests_are_cached_only_when_asked(
    settings: ModelSettings, sampled: bool, calls: int
) -> None:
    """Temperature > 0 asks for a new answer each time: cached only with sampled=True."""
    model = TestModel()
    agent = Agent(model, registry=cache(sampled=sampled))
    for _ in range(2):
        await agent.run("hi", model_settings=settings)
    assert len(model.requests) == calls


async def test_what_shapes_the_answer_is_in_the_key() -> None:
    """Another message, setting, tool choice or model is another entry."""
    registry = cache()
    model = TestModel(name="one")
    agent = Agent(model, registry=registry, tools=[lookup])
    await agent.run("a", tool_choice="none")
    await agent.run("b", tool_choice="none")
    await agent.run("a", tool_choice="none", model_settings=ModelSettings(max_tokens=5))
    await agent.run("a", tool_choice="auto")
    other = TestModel(name="two")
    await Agent(other, registry=registry, tools=[lookup]).run("a", tool_choice="none")
    assert (len(model.requests), len(other.requests)) == (5, 1)


def test_the_key_ignores_prompt_cache_hints() -> None:
    """Prompt-cache breakpoints do not change the answer, so not the key either."""
    plain = ModelRequest((Message.user("hi"),), "Be brief.")
    hinted = ModelRequest(
        (Message("user", Message.user("hi").parts, cache=True),),
        "Be brief.",
        cache_instructions=True,
    )
    assert request_key(plain, "m") == request_key(hinted, "m")
    assert request_key(plain, "m") != request_key(plain, "n")


async def test_errors_are_never_cached() -> None:
    """A failed call, or a response that ended in error, is not kept: the next one calls."""
    replies: list[Any] = [
        ProviderUnavailable(message="down"),
        ModelResponse(Message.assistant("partial"), finish_reason="error"),
        "fine",
        "unused",
    ]
    model = ScriptedModel(replies)
    agent = Agent(model, registry=cache())
    assert isinstance((await agent.run("hi")).failure(), ProviderUnavailable)
    assert (await agent.run("hi")).unwrap().output == "partial"
    assert (await agent.run("hi")).unwrap().output == "fine"
    assert (await agent.run("hi")).unwrap().output == "fine"
    assert len(model.requests) == 3


async def test_a_termination_is_never_cached() -> None:
    """A Terminate from inside the cache is no answer to keep."""
    registry = cache()
    stops = 0

    @registry.on("model_call", name="stopper")
    async def stopper(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        nonlocal stops
        stops += 1
        from returns.result import Failure

        from fncore import Terminate

        return Failure(Terminate("stopped"))

    agent = Agent(TestModel(), registry=registry)
    for _ in range(2):
        assert (await agent.run("hi")).unwrap().stop_reason == "terminated"
    assert stops == 2


async def test_tool_results_are_cached_for_the_allowed_tools_only(store: str) -> None:
    """Allowed tools: one call per arguments; error results and other tools are not kept."""
    model = TestModel()
    registry = cache(models=False, tools=["lookup", "broken"], store=store)
    agent = Agent(model, registry=registry, tools=[lookup, broken, shout])
    await agent.run("Oslo")
    await agent.run("Oslo")
    await agent.run("Bergen")
    assert CALLS == ["Oslo", "Oslo", "Oslo", "Bergen", "Bergen"]  # lookup once per city
    assert SHOUTED == ["Oslo", "Oslo", "Bergen"]
    await registry.aclose()


SHOUTED: list[str] = []


def shout(text: str) -> str:
    """Upper-case a text (not cached)."""
    SHOUTED.append(text)
    return text.upper()


@pytest.fixture(autouse=True)
def nothing_shouted() -> None:
    SHOUTED.clear()


async def test_tool_arguments_are_keyed_as_validated() -> None:
    """Arguments that validate to the same values are one entry."""

    def square(n: int) -> int:
        """Square a number."""
        CALLS.append(str(n))
        return n * n

    model = ScriptedModel(
        [
            Message("assistant", (ToolCallPart("c1", "square", '{"n": 3}'),)),
            Message("assistant", (ToolCallPart("c2", "square", '{"n": "3"}'),)),
            "done",
        ]
    )
    await Agent(model, registry=cache(models=False, tools=["square"]), tools=[square]).run("go")
    assert CALLS == ["3"]


def test_an_unknown_tool_name_is_a_build_error() -> None:
    """A misspelt tool in tools= is refused when the agent is built."""
    with pytest.raises(RegistrationError, match="'lokup'"):
        Agent(TestModel(), registry=cache(tools=["lokup"]), tools=[lookup])


@pytest.mark.parametrize("store_kind", ["memory", "redis"])
async def test_a_thousand_concurrent_identical_runs_make_one_call(
    store_kind: str, request: pytest.FixtureRequest
) -> None:
    """Concurrent misses of one key wait for the one call: exactly one model call."""
    url = "memory://" if store_kind == "memory" else str(request.getfixturevalue("redis_url"))

    async def slow(request: ModelRequest) -> str:
        await asyncio.sleep(0.01)
        return "answer"

    model = FunctionModel(slow)
    registry = cache(store=url)
    agent = Agent(model, registry=registry)
    outcomes = await asyncio.gather(*(agent.run("same question") for _ in range(1000)))
    assert all(o.unwrap().output == "answer" for o in outcomes)
    assert len(model.requests) == 1
    await registry.aclose()


async def test_when_the_call_waited_for_fails_the_others_call_themselves() -> None:
    """A failed leader leaves nothing to share: each waiting run makes its own call."""
    calls = 0

    async def first_fails(request: ModelRequest) -> Any:
        nonlocal calls
        calls += 1
        await asyncio.sleep(0.01)
        return ProviderUnavailable(message="down") if calls == 1 else "fine"

    agent = Agent(FunctionModel(first_fails), registry=cache())
    outcomes = await asyncio.gather(*(agent.run("same") for _ in range(5)))
    assert [isinstance(o, Success) for o in outcomes] == [False, True, True, True, True]
    assert calls == 5


async def test_a_cancelled_leader_does_not_strand_the_waiting_runs() -> None:
    """Cancelling the run making the call lets the waiting runs make their own."""
    leader_in = asyncio.Event()

    async def model_fn(request: ModelRequest) -> str:
        if not leader_in.is_set():
            leader_in.set()
            await asyncio.sleep(3600)
        return "fine"

    agent = Agent(FunctionModel(model_fn), registry=cache())
    leader = asyncio.create_task(agent.run("same"))
    await leader_in.wait()
    waiter = asyncio.create_task(agent.run("same"))
    await asyncio.sleep(0)
    leader.cancel()
    assert (await waiter).unwrap().output == "fine"
    with pytest.raises(asyncio.CancelledError):
        await leader


async def test_an_entry_it_cannot_read_is_a_miss_and_is_replaced() -> None:
    """Another version (or damage) under the key: a miss; the new answer replaces it."""
    model = TestModel()
    registry = cache()
    agent = Agent(model, registry=registry)
    await agent.run("hi")
    key = f"cache:cache:model:{request_key(model.requests[0], 'test')}"
    store = registry.resources[0]
    await store.set(key, b'{"v": 99}')
    await agent.run("hi")
    await agent.run("hi")
    assert len(model.requests) == 2
    assert decode_response(await store.get(key)) is not None


async def test_entries_expire_after_their_ttl() -> None:
    """After ttl seconds an entry is gone: the next request calls the model."""
    model = TestModel()
    agent = Agent(model, registry=cache(ttl=0.1))
    await agent.run("hi")
    await asyncio.sleep(0.3)
    await agent.run("hi")
    assert len(model.requests) == 2


async def test_a_failing_store_is_a_miss_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """Redis unreachable: every call is made, the runs succeed, and the failure is logged."""
    from fake_provider import free_port

    model = TestModel()
    registry = cache(store=f"redis://127.0.0.1:{free_port()}/0")
    agent = Agent(model, registry=registry)
    with caplog.at_level(logging.WARNING, logger="fncore"):
        for _ in range(2):
            assert (await agent.run("hi")).unwrap().output == "hi"
    assert len(model.requests) == 2
    assert "failed to read (a miss)" in caplog.text
    assert "failed to write (a miss)" in caplog.text
    await registry.aclose()


@pytest.fixture
def spans() -> Iterator[tuple[Registry, InMemorySpanExporter]]:
    """A registry whose 'trace' layers put a real OpenTelemetry span around each call."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    tracer = provider.get_tracer("test")
    registry = Registry()

    @registry.on("model_call", name="trace")
    async def model_span(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        with tracer.start_as_current_span("model"):
            return await call_next(ctx)

    @registry.on("tool_call", name="trace")
    async def tool_span(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        with tracer.start_as_current_span("tool"):
            return await call_next(ctx)

    yield registry, exporter
    provider.shutdown()


async def test_hits_and_misses_are_marked_on_the_current_span(
    spans: tuple[Registry, InMemorySpanExporter],
) -> None:
    """fncore.cache.hit is set on each model and tool call's span, true or false."""
    registry, exporter = spans
    registry.include(cache(tools=["lookup"]))
    agent = Agent(TestModel(), registry=registry, tools=[lookup])
    await agent.run("Oslo")
    await agent.run("Oslo")
    marks = [(s.name, s.attributes.get(HIT_ATTRIBUTE)) for s in exporter.get_finished_spans()]
    assert marks == [
        ("model", False),
        ("tool", False),
        ("model", False),
        ("model", True),
        ("tool", True),
        ("model", True),
    ]


async def test_with_trace_a_miss_is_marked_on_the_attempts_span() -> None:
    """With the trace built-in, a miss marks the attempt's chat span false, a hit the call's."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    registry = Registry()
    registry.include(trace(tracer_provider=provider))
    registry.include(cache(tools=["lookup"]))
    agent = Agent(TestModel(), registry=registry, tools=[lookup])
    await agent.run("Oslo")
    await agent.run("Oslo")
    marks = [
        (s.name, s.attributes.get(HIT_ATTRIBUTE), s.attributes.get("fncore.attempt"))
        for s in exporter.get_finished_spans()
        if s.name != "invoke_agent agent"
    ]
    assert marks == [
        ("chat test", False, 1),
        ("execute_tool lookup", False, None),
        ("chat test", False, 1),
        ("chat test", True, 0),
        ("execute_tool lookup", True, None),
        ("chat test", True, 0),
    ]
    provider.shutdown()


async def test_a_sampled_request_is_not_marked() -> None:
    """A request the cache does not look up gets no mark at all."""
    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    with provider.get_tracer("test").start_as_current_span("run"):
        await Agent(TestModel(), registry=cache()).run(
            "hi", model_settings=ModelSettings(temperature=1.0)
        )
    (span,) = exporter.get_finished_spans()
    assert HIT_ATTRIBUTE not in (span.attributes or {})
    provider.shutdown()


async def test_a_failing_event_map_outside_fails_a_replayed_hit() -> None:
    """A replayed stream goes through the event maps outside the cache, failures included."""
    registry = Registry()

    @registry.on("model_call", name="trace")
    async def strict(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        def refuse(event: StreamEvent) -> StreamEvent | None:
            raise ValueError("no")

        if ctx.run.metadata.get("strict"):
            ctx = ctx.map_events(refuse)
        return await call_next(ctx)

    registry.include(cache())
    agent = Agent(TestModel(), registry=registry)
    await agent.run("hi")
    last: Any = None
    async for event in agent.stream("hi", metadata={"strict": True}):
        last = event
    error = last.outcome.failure()
    assert isinstance(error, MiddlewareError)
    assert "raised ValueError: no" in error.message


def test_the_json_forms_round_trip_every_part() -> None:
    """Responses and results survive encoding; anything else decodes to None."""
    response = ModelResponse(
        Message(
            "assistant",
            (
                ReasoningPart("hmm", signature="sig", redacted=None),
                ToolCallPart("c1", "lookup", '{"city":"Oslo"}'),
                DataPart(b"\x89PNG", "image/png"),
                ToolResultPart("c0", "lookup", "rain", is_error=True),
            ),
        ),
        Usage(1, 2, 3, 4, 5, 6),
        "tool_calls",
        "gpt",
    )
    assert decode_response(encode_response(response)) == response
    assert decode_result(encode_result(ToolResult("ok"))) == ToolResult("ok")
    for junk in (b"not json", b"[]", b'{"v": 1}', b'{"v": 2, "content": "x"}'):
        assert decode_response(junk) is None
        assert decode_result(junk) is None
    bad_parts = [
        {"type": "video"},
        {"type": "text", "text": 5},
        {"type": "tool_result", "call_id": "c", "name": "n", "content": "x", "is_error": "no"},
    ]
    for part in bad_parts:
        encoded = encode_response(ModelResponse(Message.assistant("x"))).replace(
            b'{"type":"text","text":"x"}', __import__("json").dumps(part).encode()
        )
        assert decode_response(encoded) is None
    wrong_usage = encode_response(response).replace(b"[1,2,3,4,5,6]", b"[1,2]")
    assert decode_response(wrong_usage) is None
    errored = encode_response(ModelResponse(Message.assistant("x"), finish_reason="error"))
    assert decode_response(errored) is None


async def test_two_processes_on_one_redis_share_one_cache(redis_url: str) -> None:
    """Two processes on one Redis: what one kept, the other reads; together one call each key."""
    script = (
        PRELUDE
        + """
from fncore import Agent
from fncore.middleware import cache
from fncore.testing import FunctionModel


async def main():
    registry = cache(store=sys.argv[1])

    async def slow(request):
        await asyncio.sleep(0.05)
        return "answer"

    model = FunctionModel(slow)
    agent = Agent(model, registry=registry)
    await wait_for_start()
    outcomes = await asyncio.gather(*(agent.run(f"question {i % 10}") for i in range(100)))
    await registry.aclose()
    assert all(o.unwrap().output == "answer" for o in outcomes)
    print(json.dumps(len(model.requests)))


asyncio.run(main())
"""
    )
    first = await run_processes(script, redis_url)  # side by side: each key at most twice
    assert 10 <= sum(first) <= 20
    assert all(calls <= 10 for calls in first)
    again = await run_processes(script, redis_url)  # everything is kept by now
    assert again == [0, 0]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"models": False}, "cache would cache nothing"),
        ({"store": "ftp://x"}, "unknown scheme 'ftp'"),
    ],
)
def test_bad_parameters_are_refused(options: dict[str, Any], words: str) -> None:
    """A cache that caches nothing, or a store it cannot use, is refused."""
    with pytest.raises((ValueError, ConfigError), match=words):
        cache(**options)


async def test_configuration_loads_it_with_use_alone() -> None:
    """Configured by name alone: model responses, an hour, in memory."""
    container = configured({"use": "cache"})
    agent = container.agent()
    assert agent.describe().positions["model_call"] == ("cache",)
    await agent.run("hi")
    await agent.run("hi")
    assert len(container.model().requests) == 1
    await container.shutdown()


async def test_configuration_from_a_toml_file_on_redis(tmp_path: Path, redis_url: str) -> None:
    """A TOML block: tools listed, a Redis store, closed by the container on shutdown."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        f"""
[[middleware]]
use = "cache"
tools = ["lookup"]
ttl = 600
store = "{redis_url}"
"""
    )
    container = load_container(path, environ={})
    agent = container.agent(tools=[lookup])
    assert agent.describe().positions["tool_call"] == ("cache",)
    for _ in range(2):
        assert (await agent.run("Oslo")).unwrap().output == "lookup: Oslo: sunny"
    assert CALLS == ["Oslo"]
    await container.shutdown()


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "cache", "ttl": 0}, "'ttl': must be a positive, finite number of seconds, not 0"),
        ({"use": "cache", "ttl": float("inf")}, "'ttl': must be a positive, finite number of"),
        ({"use": "cache", "models": False}, "cache would cache nothing"),
        ({"use": "cache", "store": "memory://?max_entries=0"}, "max_entries must be a positive"),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Wrong values and stores are one ConfigError line naming the entry."""
    assert words in config_error(entry)


class Label(str):
    """A ``str`` subclass: its JSON form reads back as a plain ``str``."""


def test_memory_keeps_a_response_as_its_json_form_reads_back_without_usage() -> None:
    """kept_response equals the decoded JSON form with no usage; unsure cases are None."""
    from fncore.middleware._cache_json import kept_response

    parts = (
        ReasoningPart("hmm", signature="sig", redacted=None),
        ToolCallPart("c1", "lookup", '{"city":"Oslo"}'),
        DataPart(b"\x89PNG", "image/png"),
        ToolResultPart("c0", "lookup", "rain", is_error=True),
    )
    for message in (Message("assistant", parts), Message("assistant", parts[:1], cache=True)):
        response = ModelResponse(message, Usage(1, 2, 3, 4, 5, 6), "tool_calls", "gpt")
        decoded = decode_response(encode_response(response))
        assert decoded is not None
        kept = kept_response(response)
        assert kept == ModelResponse(decoded.message, Usage(), "tool_calls", "gpt")
        assert kept is not None
        assert kept.message.cache is False
    odd = [
        ModelResponse(Message.assistant(Label("x"))),
        ModelResponse(Message("assistant", (DataPart(bytearray(b"x"), "image/png"),))),  # type: ignore[arg-type]
        ModelResponse(Message.assistant("x"), model_name=Label("gpt")),
        ModelResponse(Message.user("x")),
        ModelResponse(Message.assistant("x"), finish_reason="error"),
    ]
    assert [kept_response(r) for r in odd] == [None] * len(odd)


async def test_a_hit_is_the_same_response_from_every_store(store: str) -> None:
    """memory:// and Redis give back the same response: its JSON form's, without usage."""
    answer = Message("assistant", (ReasoningPart("hm", signature="s"), TextPart("4")))
    response = ModelResponse(answer, Usage(3, 1), "stop", "gpt")
    seen = await seen_outside_cache(cache(store=store), response)
    assert seen == [response, ModelResponse(answer, Usage(), "stop", "gpt")]


async def test_an_answer_memory_cannot_keep_as_a_value_is_kept_as_json() -> None:
    """A response with a str subclass in it is kept in memory as its JSON form, and hits."""
    response = ModelResponse(Message.assistant(Label("labelled")), Usage(1, 1))
    model = ScriptedModel([response, "unused"])
    registry = cache()
    agent = Agent(model, registry=registry)
    first = (await agent.run("hi")).unwrap()
    second = (await agent.run("hi")).unwrap()
    assert (first.output, second.output) == ("labelled", "labelled")
    assert type(second.messages[-1].text) is str
    assert len(model.requests) == 1
    key = f"cache:cache:model:{request_key(model.requests[0], 'scripted')}"
    assert decode_response(await registry.resources[0].get(key)) is not None

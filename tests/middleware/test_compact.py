"""``compact``: window, tool-result clearing and summaries, at compress_context or model_call."""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, configured
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from otel_support import Otel
from returns.result import Success

from fncore import (
    Agent,
    InMemorySessionStore,
    Message,
    ModelError,
    ModelRequest,
    Registry,
    RunResult,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    load_container,
)
from fncore.core import check_pairing
from fncore.errors import CallLimitExceeded
from fncore.events import Compaction
from fncore.middleware import compact, limit_calls
from fncore.middleware._compaction import approximate_tokens, groups
from fncore.middleware.compact import PLACEHOLDER, SUMMARY_HEADER, SUMMARY_PROMPT
from fncore.testing import FunctionModel, ScriptedModel, TestModel

STRATEGIES = ("clear_tool_results", "window", "summarize")


def call(i: int, *names: str) -> list[Message]:
    """An assistant turn calling ``names`` (``i`` makes the ids), then one tool message."""
    calls = tuple(ToolCallPart(f"c{i}_{k}", n, '{"x": 1}') for k, n in enumerate(names))
    results = tuple(ToolResultPart(c.id, c.name, f"result {i}.{k}") for k, c in enumerate(calls))
    return [Message("assistant", calls), Message("tool", results)]


def history(turns: int) -> list[Message]:
    """A user task, then ``turns`` tool rounds each answered, then a text answer."""
    out = [Message.user("the task")]
    for i in range(turns):
        out += call(i, "lookup")
    out.append(Message.assistant("done so far"))
    return out


def summariser(request: ModelRequest) -> str:
    """A model that summarises (when asked with the summary prompt) or answers."""
    if request.instructions == SUMMARY_PROMPT:
        body = request.messages[0].text
        return f"S({body.count(chr(10)) + 1} lines)"
    return f"answer after {len(request.messages)} messages"


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages]


def ok(outcome: Any) -> RunResult:
    assert isinstance(outcome, Success), outcome
    result: RunResult = outcome.unwrap()
    return result


# -- groups and the window ------------------------------------------------------------------


def test_groups_keep_each_assistant_turn_with_its_results() -> None:
    """A group is a non-tool message with the tool messages after it."""
    parts = groups(history(3))
    assert [len(g) for g in parts] == [1, 2, 2, 2, 1]


def test_the_approximate_counter_is_a_quarter_of_the_characters_plus_four() -> None:
    """Four characters a token, rounded up per message, plus 4 a message; 1,000 per image."""
    from fncore import DataPart

    assert approximate_tokens([Message.user("x" * 9)]) == 4 + 3
    assert approximate_tokens([Message("user", (DataPart(b"x", "image/png"),))]) == 1004
    assert approximate_tokens(call(0, "ab")) == (4 + 3) + (4 + 3)


@pytest.mark.parametrize("streaming", [False, True])
async def test_window_over_a_long_history(streaming: bool) -> None:
    """A long input history is cut to the task plus the last ``keep`` groups."""
    model = FunctionModel(summariser)
    agent = Agent(model, registry=compact(strategies=["window"], max_messages=8, keep=3))
    prompt = [*history(10), Message.user("next")]
    outcome = await _run(agent, prompt, streaming)
    assert ok(outcome).output == "answer after 5 messages"
    sent = model.requests[0].messages
    assert texts(sent)[0] == "the task"
    assert [m.role for m in sent] == ["user", "assistant", "tool", "assistant", "user"]
    assert sent[1].tool_calls[0].id == "c9_0"
    assert check_pairing(sent) is None


async def _run(agent: Agent, prompt: list[Message], streaming: bool, **options: Any) -> Any:
    if not streaming:
        return await agent.run(prompt, **options)
    last: Any = None
    async for event in agent.stream(prompt, **options):
        last = event
    return last.outcome


async def test_window_drops_more_while_the_kept_groups_are_over_the_trigger() -> None:
    """The window keeps fewer than ``keep`` groups while they are still over max_tokens."""
    model = FunctionModel(summariser)
    big = [Message.user("the task")]
    for i in range(4):
        big += [Message.assistant("y" * 400), Message.user(f"ok {i}")]
    agent = Agent(
        model, registry=compact(strategies=["window"], max_tokens=150, keep=6, keep_first=False)
    )
    await agent.run(big)
    sent = model.requests[0].messages
    assert approximate_tokens(sent) <= 150
    assert texts(sent)[::2] == ["ok 2", "ok 3"]


async def test_system_messages_and_a_summary_stay_in_the_window() -> None:
    """Leading system messages stay; without keep_first the first user message may go."""
    model = FunctionModel(summariser)
    agent = Agent(
        model, registry=compact(strategies=["window"], max_messages=3, keep=1, keep_first=False)
    )
    start = [Message.system("rules"), Message.user("a"), Message.assistant("b")]
    await agent.run([*start, Message.user("c")])
    assert texts(model.requests[0].messages) == ["rules", "c"]


# -- clearing tool results ------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
async def test_clearing_keeps_the_last_results_and_excluded_tools(streaming: bool) -> None:
    """All but the last N results become the placeholder; excluded tools keep theirs."""
    model = FunctionModel(summariser)
    registry = compact(
        strategies=["clear_tool_results"],
        max_messages=4,
        keep_tool_results=2,
        exclude_tools=["memory"],
    )
    prompt = [Message.user("the task")]
    prompt += (
        call(0, "memory") + call(1, "lookup") + call(2, "lookup", "lookup") + call(3, "lookup")
    )
    outcome = await _run(Agent(model, registry=registry), [*prompt, Message.user("go")], streaming)
    assert ok(outcome).output.startswith("answer")
    results = [r for m in model.requests[0].messages for r in m.tool_results]
    assert [r.content for r in results] == [
        "result 0.0",
        PLACEHOLDER,
        PLACEHOLDER,
        "result 2.1",
        "result 3.0",
    ]
    assert [r.call_id for r in results] == ["c0_0", "c1_0", "c2_0", "c2_1", "c3_0"]


async def test_a_cheap_strategy_that_suffices_stops_the_others() -> None:
    """Clearing brings the history under max_tokens: the window drops nothing."""
    model = FunctionModel(summariser)
    prompt = [Message.user("the task")]
    for i in range(6):
        prompt += [
            Message("assistant", (ToolCallPart(f"c{i}", "read"),)),
            Message("tool", (ToolResultPart(f"c{i}", "read", "z" * 400),)),
        ]
    registry = compact(
        strategies=["clear_tool_results", "window"], max_tokens=500, keep=1, keep_tool_results=1
    )
    await Agent(model, registry=registry).run([*prompt, Message.user("go")])
    sent = model.requests[0].messages
    assert len(sent) == len(prompt) + 1
    assert [r.content[:3] for m in sent for r in m.tool_results] == [PLACEHOLDER[:3]] * 5 + ["zzz"]


# -- summaries ------------------------------------------------------------------------------


@pytest.mark.parametrize("streaming", [False, True])
async def test_summarize_replaces_the_older_groups_with_a_marked_summary(streaming: bool) -> None:
    """The older groups become one marked user message; the recent ones stay as they were."""
    main = FunctionModel(summariser, name="main")
    cheap = FunctionModel(summariser, name="cheap")
    registry = compact(strategies=["summarize"], max_messages=6, keep=3, model=cheap)
    outcome = await _run(
        Agent(main, registry=registry), [*history(4), Message.user("go")], streaming
    )
    assert ok(outcome).output == "answer after 6 messages"
    (summary_request,) = cheap.requests
    assert summary_request.instructions == SUMMARY_PROMPT
    body = summary_request.messages[0].text
    assert body.startswith("The conversation to summarise:\nassistant called lookup")
    assert "lookup returned: result 0.0" in body
    assert "the task" not in body  # the first user message stays as it is
    sent = main.requests[0].messages
    assert texts(sent)[:2] == ["the task", f"{SUMMARY_HEADER}\nS(7 lines)"]  # 1 + 6
    assert sent[2].tool_calls[0].id == "c3_0"
    assert texts(sent)[-2:] == ["done so far", "go"]


async def test_the_next_summary_folds_the_previous_one_in() -> None:
    """Within one reply, a second compaction summarises the old summary and the newly old."""
    main = FunctionModel(summariser, name="main")
    cheap = FunctionModel(summariser, name="cheap")
    rounds = iter(
        [Message("assistant", (ToolCallPart(f"n{i}", "lookup", "{}"),)) for i in range(3)]
    )

    def scripted(request: ModelRequest) -> Any:
        return next(rounds, "final")

    main = FunctionModel(scripted, name="main")

    def lookup() -> str:
        """Look something up."""
        return "found"

    registry = compact(strategies=["summarize"], max_messages=6, keep=2, model=cheap)
    agent = Agent(main, registry=registry, tools=[lookup])
    result = ok(await agent.run([*history(3), Message.user("go")]))
    assert result.output == "final"
    assert len(cheap.requests) >= 2
    second = cheap.requests[1].messages[0].text
    assert second.startswith("The summary so far:\nS(")
    for request in main.requests:
        assert len(request.messages) <= 7
        assert sum(m.text.startswith(SUMMARY_HEADER) for m in request.messages) == 1
        assert check_pairing(request.messages) is None


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_failed_summary_keeps_the_history_and_the_run_goes_on(
    streaming: bool, caplog: pytest.LogCaptureFixture
) -> None:
    """The summary call fails: a warning, the history as it was, and an answer."""
    main = FunctionModel(summariser, name="main")
    broken = ScriptedModel([ModelError(message="down")])
    registry = compact(strategies=["summarize"], max_messages=4, keep=1, model=broken)
    prompt = [*history(3), Message.user("go")]
    with caplog.at_level(logging.WARNING, logger="fncore"):
        outcome = await _run(Agent(main, registry=registry), prompt, streaming)
    assert ok(outcome).output == f"answer after {len(prompt)} messages"
    assert "the summary call failed" in caplog.text


async def test_a_failed_summary_then_the_window_still_runs() -> None:
    """With the window after it, a failed summary still ends under the trigger."""
    main = FunctionModel(summariser, name="main")
    empty = FunctionModel(lambda request: "", name="empty")
    registry = compact(strategies=["summarize", "window"], max_messages=4, keep=1, model=empty)
    await Agent(main, registry=registry).run([*history(3), Message.user("go")])
    assert texts(main.requests[0].messages) == ["the task", "go"]


async def test_a_failed_summary_fails_the_run_when_configured() -> None:
    """on_summary_error="fail": the run fails with the summary call's error."""
    broken = ScriptedModel([ModelError(message="down")])
    registry = compact(
        strategies=["summarize"], max_messages=4, keep=1, model=broken, on_summary_error="fail"
    )
    outcome = await Agent(TestModel(), registry=registry).run([*history(3), Message.user("go")])
    error = outcome.failure()
    assert isinstance(error, ModelError)
    assert error.message == "down"


async def test_the_summary_call_goes_through_model_call_middleware(otel: Otel) -> None:
    """limit_calls counts the summary call, and trace records its chat span."""
    registry = Registry()
    registry.include(otel.registry())
    registry.include(limit_calls(model_calls_per_reply=1, exit="error"))
    registry.include(compact(strategies=["summarize"], max_messages=4, keep=1))
    model = FunctionModel(summariser, name="main")
    outcome = await Agent(model, registry=registry).run([*history(3), Message.user("go")])
    assert isinstance(outcome.failure(), CallLimitExceeded)
    assert [r.instructions for r in model.requests] == [SUMMARY_PROMPT]  # then none allowed


async def test_the_summary_call_is_traced_as_a_chat_span(otel: Otel) -> None:
    """The trace shows one chat span for the summary model and one for the agent's."""
    registry = Registry()
    registry.include(otel.registry())
    registry.include(
        compact(strategies=["summarize"], max_messages=4, keep=1, model=TestModel(name="cheap"))
    )
    agent = Agent(FunctionModel(summariser, name="main"), registry=registry)
    ok(await agent.run([*history(3), Message.user("go")]))
    assert len(otel.named("chat cheap")) == 1
    assert len(otel.named("chat main")) == 1


@pytest.fixture
def otel() -> Otel:
    """An SDK tracer and meter provider, each exporting to memory."""
    return Otel()


# -- where the result goes ------------------------------------------------------------------


async def test_history_mode_fires_the_compaction_hook() -> None:
    """At compress_context, the loop notifies compaction hooks with before and after."""
    seen: list[Compaction] = []
    registry = Registry()
    registry.include(compact(strategies=["window"], max_messages=4, keep=1))

    @registry.hook("compaction")
    async def on_compaction(event: Compaction) -> None:
        seen.append(event)

    prompt = [*history(3), Message.user("go")]
    await Agent(TestModel(), registry=registry).run(prompt)
    (event,) = seen
    assert len(event.before) == len(prompt)
    assert texts(event.after) == ["the task", "go"]


@pytest.mark.parametrize("streaming", [False, True])
async def test_request_mode_shapes_requests_and_keeps_the_history(streaming: bool) -> None:
    """apply="request": the model gets a compacted request; the session keeps every message."""
    store = InMemorySessionStore()
    main = FunctionModel(summariser, name="main")
    cheap = FunctionModel(summariser, name="cheap")
    registry = compact(
        strategies=["summarize"], max_messages=6, keep=2, model=cheap, apply="request"
    )
    seen: list[Compaction] = []

    @registry.hook("compaction")
    async def on_compaction(event: Compaction) -> None:
        seen.append(event)

    agent = Agent(main, registry=registry, sessions=store)
    for turn in range(5):
        ok(await _run(agent, [Message.user(f"turn {turn}")], streaming, session_id="s"))
    session = await store.load("s")
    assert session is not None
    assert len(session.messages) == 10
    assert seen == []
    assert texts(main.requests[-1].messages)[:2] == ["turn 0", f"{SUMMARY_HEADER}\nS(6 lines)"]
    # the summary is remembered in the session: one call per newly old group, not per request
    assert len(cheap.requests) == 2
    assert cheap.requests[1].messages[0].text.startswith("The summary so far:\nS(")


async def test_history_mode_remembers_the_summary_across_replies() -> None:
    """The session keeps its messages; the next reply reuses the summary it stored."""
    store = InMemorySessionStore()
    main = FunctionModel(summariser, name="main")
    cheap = FunctionModel(summariser, name="cheap")
    registry = compact(strategies=["summarize"], max_messages=6, keep=2, model=cheap)
    agent = Agent(main, registry=registry, sessions=store)
    for turn in range(5):
        ok(await agent.run(f"turn {turn}", session_id="s"))
    session = await store.load("s")
    assert session is not None
    assert len(session.messages) == 10
    assert len(cheap.requests) == 2  # turns 3 and 4; the second adds only the newly old
    assert cheap.requests[1].messages[0].text.startswith("The summary so far:")
    assert "turn 3" in cheap.requests[1].messages[0].text
    assert "turn 2" not in cheap.requests[1].messages[0].text


async def test_a_token_trigger_with_a_counter_of_your_own() -> None:
    """count_tokens replaces the approximate counter; it is called per group."""
    counted: list[int] = []

    def words(messages: Sequence[Message]) -> int:
        counted.append(len(messages))
        return sum(len(m.text.split()) for m in messages)

    model = FunctionModel(summariser)
    registry = compact(strategies=["window"], max_tokens=5, keep=10, count_tokens=words)
    prompt = [Message.user(f"one two {i}") for i in range(4)]
    await Agent(model, registry=registry).run(prompt)
    assert texts(model.requests[0].messages) == ["one two 0", "one two 3"]
    assert counted


async def test_the_default_trigger_is_three_quarters_of_the_context_window() -> None:
    """With no trigger: 0.75 of context_window tokens."""
    model = FunctionModel(summariser)
    registry = compact(context_window=100, keep=1)
    prompt = [Message.user("a" * 160), Message.assistant("b" * 160), Message.user("c")]
    await Agent(model, registry=registry).run(prompt)
    assert texts(model.requests[0].messages) == ["a" * 160, "c"]


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"strategies": []}, "at least one"),
        ({"strategies": ["window", "window"]}, "at most once"),
    ],
)
def test_bad_combinations_are_value_errors(options: dict[str, Any], words: str) -> None:
    """No strategy, or one twice, is a ValueError saying so."""
    with pytest.raises(ValueError, match=words):
        compact(**options)


# -- configuration --------------------------------------------------------------------------


async def test_configuration_loads_it_with_use_alone() -> None:
    """Configured by name alone: at compress_context, under the default trigger."""
    agent = configured({"use": "compact"}).agent()
    assert agent.describe().positions["compress_context"] == ("compact",)
    assert (await agent.run("hi")).unwrap().output == "hi"


async def test_configuration_from_a_toml_file_with_a_summary_preset(tmp_path: Path) -> None:
    """A [[middleware]] block naming a model preset for the summary, in request mode."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        """
[[middleware]]
use = "compact"
strategies = ["clear_tool_results", "summarize", "window"]
max_messages = 4
keep = 1
model = "cheap"
apply = "request"

[models.cheap]
kind = "test"
name = "cheap-model"
"""
    )
    container = load_container(path, environ={})
    main = FunctionModel(summariser, name="main")
    agent = container.agent(model=main)
    assert agent.describe().positions["model_call"] == ("compact",)
    ok(await agent.run([*history(3), Message.user("go")]))
    sent = main.requests[0].messages
    assert sent[1].text.startswith(SUMMARY_HEADER)  # TestModel echoed the transcript


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "compact", "keep": 0}, "greater than 0"),
        ({"use": "compact", "strategies": ["squash"]}, "parameter 'strategies.0'"),
        ({"use": "compact", "max_fraction": 1.5}, "less than or equal to 1"),
        ({"use": "compact", "apply": "both"}, "parameter 'apply'"),
        ({"use": "compact", "strategies": []}, "at least one"),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Out-of-range values and bad names are one ConfigError line naming the entry."""
    assert words in config_error(entry)


# -- concurrency ----------------------------------------------------------------------------


async def test_a_thousand_concurrent_replies_each_get_their_own_summary() -> None:
    """1,000 concurrent runs through one stack: one summary each, of their own history."""

    async def model_fn(request: ModelRequest) -> str:
        await asyncio.sleep(0)
        if request.instructions == SUMMARY_PROMPT:
            tag = request.messages[0].text.split("user: ")[1].split("\n")[0]
            return f"summary of {tag}"
        return request.messages[1].text

    model = FunctionModel(model_fn)
    agent = Agent(model, registry=compact(strategies=["summarize"], max_messages=3, keep=1))

    def prompt(i: int) -> list[Message]:
        return [
            Message.user("task"),
            Message.user(f"run {i}"),
            Message.assistant("a"),
            Message.user("go"),
        ]

    outcomes = await asyncio.gather(*(agent.run(prompt(i)) for i in range(1000)))
    assert [ok(o).output for o in outcomes] == [
        f"{SUMMARY_HEADER}\nsummary of run {i}" for i in range(1000)
    ]
    assert len(model.requests) == 2000


# -- the pairing law ------------------------------------------------------------------------


@st.composite
def histories(draw: st.DrawFn) -> list[Message]:
    """Random valid histories: text turns and assistant turns with 1-3 answered calls."""
    out: list[Message] = []
    if draw(st.booleans()):
        out.append(Message.system("rules"))
    out.append(Message.user("task"))
    for _ in range(draw(st.integers(0, 25))):
        kind = draw(st.sampled_from(["user", "assistant", "tools"]))
        if kind == "tools":
            names = draw(st.lists(st.sampled_from(["a", "b", "keep"]), min_size=1, max_size=3))
            calls = tuple(ToolCallPart(f"c{k}", n, "{}") for k, n in enumerate(names))
            results = [ToolResultPart(c.id, c.name, "r" * draw(st.integers(0, 80))) for c in calls]
            out.append(Message("assistant", (TextPart("thinking"), *calls)))
            split = draw(st.integers(0, len(results)))
            for chunk in (results[:split], results[split:]):
                if chunk:
                    out.append(Message("tool", tuple(chunk)))
        else:
            out.append(Message(kind, (TextPart("t" * draw(st.integers(0, 80))),)))  # type: ignore[arg-type]
    return out


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(
    histories(),
    st.lists(st.sampled_from(STRATEGIES), min_size=1, max_size=3, unique=True),
    st.integers(1, 5),
    st.integers(0, 3),
    st.integers(2, 12),
    st.booleans(),
    st.sampled_from(["history", "request"]),
)
def test_every_rewrite_keeps_each_call_paired(
    start: list[Message],
    chosen: list[Any],
    keep: int,
    keep_results: int,
    max_messages: int,
    keep_first: bool,
    apply: Any,
) -> None:
    """Whatever the history and the strategies, every request the model gets is paired."""
    model = FunctionModel(summariser)
    registry = compact(
        strategies=chosen,
        max_messages=max_messages,
        max_tokens=300,
        keep=keep,
        keep_tool_results=keep_results,
        keep_first=keep_first,
        exclude_tools=["keep"],
        apply=apply,
    )
    outcome = asyncio.run(Agent(model, registry=registry).run([*start, Message.user("go")]))
    assert isinstance(outcome, Success), outcome
    assert model.requests
    for request in model.requests:
        assert check_pairing(request.messages) is None
        assert request.messages[-1].text == "go" or request.instructions == SUMMARY_PROMPT

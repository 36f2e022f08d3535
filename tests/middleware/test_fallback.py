"""`fallback`: the next model on failure, what triggers it, streams, signatures, config."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from anthropic_wire import KEY, body, stream_reply, text, thinking, tool_use
from fake_provider import FakeProvider, Reply
from fncore_anthropic import AnthropicModel
from resilience_helpers import Stalling, answer, streamed
from resilience_helpers import agent_with as with_registries
from returns.result import Failure
from support import add, run_ok

from fncore import (
    Agent,
    AgentError,
    ConfigError,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Registry,
    Terminate,
    load_container,
)
from fncore.errors import (
    AuthenticationFailed,
    BadRequest,
    ModelNotFound,
    PermissionDenied,
    ProviderUnavailable,
    RateLimited,
    StreamInterrupted,
)
from fncore.events import RunEnd, TextDelta
from fncore.middleware import answered_by, fallback, retry
from fncore.testing import FunctionModel, ScriptedModel, TestModel

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])

BUSY = ProviderUnavailable(message="busy")


def recorder() -> tuple[Registry, list[Any]]:
    """A registry whose run_end hook puts answered_by of each run in the list."""
    hooks = Registry()
    answers: list[Any] = []

    @hooks.hook("run_end")
    async def record(event: RunEnd) -> None:
        answers.append(answered_by(event.run))

    return hooks, answers


def agent_with(model: Any, *registries: Registry, **options: Any) -> tuple[Agent, list[Any]]:
    """An agent on ``model`` with ``registries``; the list gets answered_by of each run."""
    hooks, answers = recorder()
    return with_registries(model, *registries, hooks, **options), answers


@MODES
async def test_a_failing_model_falls_back_to_the_next(stream: bool) -> None:
    """The primary fails, the backup answers; answered_by names it."""
    primary = ScriptedModel([BUSY], name="primary")
    backup = TestModel(name="backup")
    agent, answers = agent_with(primary, fallback(models=[backup]))
    assert run_ok(await answer(agent, "hello", stream)).output == "hello"
    assert (len(primary.requests), len(backup.requests), answers) == (1, 1, [("backup",)])
    assert backup.requests[0] == primary.requests[0]  # the same request


async def test_a_model_that_answers_keeps_the_backups_idle() -> None:
    """No failure, no fallback: answered_by names the agent's model for every call."""
    backup = ScriptedModel([], name="backup")
    agent, answers = agent_with(TestModel(name="main"), fallback(models=[backup]), tools=[add])
    assert run_ok(await agent.run("1 and 2")).output == "add: 3"
    assert (answers, backup.requests) == ([("main", "main")], [])


async def test_each_model_in_turn_until_one_answers() -> None:
    """The list is tried in order; the first answer wins."""
    first = ScriptedModel([RateLimited(message="429")], name="first")
    second = ScriptedModel(["from second"], name="second")
    third = ScriptedModel([], name="third")
    agent, answers = agent_with(
        ScriptedModel([BUSY], name="main"), fallback(models=[first, second, third])
    )
    assert run_ok(await agent.run("hi")).output == "from second"
    assert (answers, third.requests) == ([("second",)], [])


async def test_when_every_model_fails_the_last_error_is_returned() -> None:
    """Each is tried once; the run fails with the last model's error."""
    last = ModelNotFound(message="gone")
    backup = ScriptedModel([last], name="backup")
    agent, answers = agent_with(ScriptedModel([BUSY]), fallback(models=[backup]))
    assert (await agent.run("hi")).failure() == last
    assert answers == [()]


@pytest.mark.parametrize(
    ("error", "falls_back"),
    [
        (BUSY, True),
        (RateLimited(message="429"), True),
        (StreamInterrupted(message="cut"), True),
        (ModelNotFound(message="retired"), True),
        (AuthenticationFailed(message="revoked"), True),
        (PermissionDenied(message="region"), True),
        (BadRequest(message="bad field"), False),
        (ProviderUnavailable(message="no", retryable=False), False),
    ],
    ids=lambda v: type(v).__name__ if isinstance(v, AgentError) else str(v),
)
async def test_the_default_errors_that_fall_back(error: AgentError, falls_back: bool) -> None:
    """Retryable errors and those another provider may not have; not a bad request."""
    backup = ScriptedModel(["backup"], name="backup")
    agent, _ = agent_with(ScriptedModel([error]), fallback(models=[backup]))
    outcome = await agent.run("hi")
    assert (outcome.failure() if not falls_back else run_ok(outcome).output) == (
        error if not falls_back else "backup"
    )


async def test_on_chooses_the_errors_by_name_or_function() -> None:
    """on= names error types (or 'retryable'); in code it may be a function."""
    bad = BadRequest(message="context too long")
    backup = ScriptedModel(["big context", "never"], name="backup")
    agent, _ = agent_with(ScriptedModel([bad, BUSY]), fallback(models=[backup], on=["BadRequest"]))
    assert run_ok(await agent.run("hi")).output == "big context"
    assert (await agent.run("hi")).failure() == BUSY  # not named: not retried elsewhere
    only_long = fallback(models=[backup], on=lambda e: "too long" in e.message)
    other = BadRequest(message="no such field")
    agent, _ = agent_with(ScriptedModel([other, bad]), only_long)
    assert (await agent.run("hi")).failure() == other
    assert run_ok(await agent.run("hi")).output == "never"


async def test_a_termination_does_not_fall_back() -> None:
    """A deliberate stop from inside is passed on."""
    inner = Registry()

    @inner.on("model_call")
    async def stop(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return Failure(Terminate("no"))

    backup = ScriptedModel([], name="backup")
    agent, _ = agent_with(TestModel(), fallback(models=[backup]), inner)
    assert run_ok(await agent.run("hi")).stop_reason == "terminated"
    assert backup.requests == []


async def test_the_answering_model_is_named_on_the_response() -> None:
    """A fallback answer without a model_name gets the fallback model's name."""
    outer = Registry()
    names: list[str] = []

    @outer.on("model_call")
    async def observe(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        outcome = await call_next(ctx)
        names.append(outcome.unwrap().model_name)
        return outcome

    anonymous = FunctionModel(lambda r: ModelResponse(Message.assistant("x")), name="anon")
    agent, _ = agent_with(ScriptedModel([BUSY]), outer, fallback(models=[anonymous]))
    await agent.run("hi")
    agent, _ = agent_with(ScriptedModel([BUSY]), outer, fallback(models=[TestModel(name="t")]))
    await agent.run("hi")
    assert names == ["anon", "t"]


async def test_a_stream_falls_back_before_its_first_chunk() -> None:
    """An error before any chunk: the consumer sees the backup's answer only."""
    backup = TestModel(name="backup", chunk=2)
    agent, answers = agent_with(ScriptedModel([BUSY]), fallback(models=[backup]))
    text_seen, outcome = await streamed(agent, "hello")
    assert (text_seen, run_ok(outcome).output, answers) == ("hello", "hello", [("backup",)])


async def test_a_stream_that_showed_a_chunk_returns_its_error() -> None:
    """After a chunk reached the consumer, the error comes back: no second answer."""
    cut = StreamInterrupted(message="cut off")
    backup = ScriptedModel([], name="backup")
    primary = Stalling(deltas=(TextDelta("Hal"),), ending=cut)
    agent, _ = agent_with(primary, fallback(models=[backup]))
    text_seen, outcome = await streamed(agent, "hi")
    assert (text_seen, outcome.failure(), backup.requests) == ("Hal", cut, [])


async def test_retry_inside_runs_out_before_the_fallback() -> None:
    """In their places, retry tries the model again first; then fallback moves on."""
    primary = ScriptedModel([BUSY, BUSY], name="primary")
    backup = ScriptedModel(["backup"], name="backup")
    quick = retry(max_attempts=2, wait_initial=0, wait_jitter=0)
    agent, _ = agent_with(primary, quick, fallback(models=[backup]))  # listed inside out
    assert agent.describe().positions["model_call"] == ("fallback", "retry")
    assert run_ok(await agent.run("hi")).output == "backup"
    assert (len(primary.requests), len(backup.requests)) == (2, 1)


async def test_many_concurrent_runs_each_fall_back_once() -> None:
    """1,000 runs on a failing model: the backup gets exactly 1,000 requests."""
    down = FunctionModel(lambda r: BUSY, name="down")
    backup = TestModel(name="backup")
    agent, answers = agent_with(down, fallback(models=[backup]))
    outcomes = await asyncio.gather(*(agent.run(f"run {n}") for n in range(1000)))
    assert [run_ok(o).output for o in outcomes] == [f"run {n}" for n in range(1000)]
    assert (len(down.requests), len(backup.requests)) == (1000, 1000)
    assert answers == [("backup",)] * 1000


# --- signed reasoning stays with its provider: Anthropic thinking over the real SDK ---------


def claude(fake: FakeProvider, name: str) -> AnthropicModel:
    """An Anthropic model on ``fake`` without SDK retries."""
    return AnthropicModel(name, api_key=KEY, base_url=fake.url, timeout=5.0, max_retries=0)


OVERLOADED = Reply(529, {"type": "error", "error": {"type": "overloaded_error", "message": "x"}})


def answer_of(*content: dict[str, Any], stream: bool, **options: Any) -> Reply:
    """A Messages answer of ``content``, whole or streamed."""
    return stream_reply(*content, **options) if stream else Reply(body=body(*content, **options))


def signatures(request_body: dict[str, Any]) -> list[list[str]]:
    """The signatures of the thinking blocks of each assistant turn of a request."""
    return [
        [b["signature"] for b in turn["content"] if b["type"] == "thinking"]
        for turn in request_body["messages"]
        if turn["role"] == "assistant"
    ]


@MODES
async def test_a_signature_goes_only_to_the_provider_that_made_it(
    fake_provider: FakeProvider, stream: bool
) -> None:
    """Each endpoint gets only its own thinking signatures, in this reply and the next."""
    with FakeProvider() as other:
        primary, backup = claude(fake_provider, "claude-a"), claude(other, "claude-b")
        try:
            fake_provider.reply(
                answer_of(
                    thinking("plan", "sig-A"),
                    tool_use("toolu_1", "add", a=1, b=2),
                    stop_reason="tool_use",
                    stream=stream,
                ),
                OVERLOADED,
                answer_of(text("3 then 7"), stream=stream),
                answer_of(text("again"), stream=stream),
            )
            other.reply(
                answer_of(
                    thinking("more", "sig-B"),
                    tool_use("toolu_2", "add", a=3, b=4),
                    stop_reason="tool_use",
                    stream=stream,
                )
            )
            agent, answers = agent_with(primary, fallback(models=[backup]), tools=[add])
            first = await answer(agent, "add twice", stream, session_id="s")
            assert run_ok(first).output == "3 then 7"
            assert answers == [("claude-a", "claude-b", "claude-a")]
            assert signatures(other.requests[0].body) == [[]]  # sig-A not sent to claude-b
            assert signatures(fake_provider.requests[2].body) == [["sig-A"], []]  # nor sig-B home

            second = await answer(agent, "again", stream, session_id="s")  # the next reply
            assert run_ok(second).output == "again"
            assert signatures(fake_provider.requests[3].body) == [["sig-A"], [], []]
        finally:
            await primary.aclose()
            await backup.aclose()


async def test_redacted_thinking_stays_home_and_unsigned_text_goes_along() -> None:
    """Redacted thinking is dropped for another model; the reasoning text of another is kept."""
    from fncore import ReasoningPart, TextPart

    secret = Message("assistant", (ReasoningPart("", redacted="ENC"), TextPart("hi")))
    signed = Message("assistant", (ReasoningPart("why", signature="S"), TextPart("yo")))
    backup = TestModel(name="backup")
    agent, _ = agent_with(ScriptedModel([BUSY]), fallback(models=[backup]))
    history = [Message.user("a"), secret, Message.user("b"), signed, Message.user("c")]
    await agent.run(history)
    sent = [m.parts for m in backup.requests[0].messages if m.role == "assistant"]
    assert sent == [(TextPart("hi"),), (ReasoningPart("why"), TextPart("yo"))]


# --- configuration ---------------------------------------------------------------------------

PRESETS = {"cheap": {"kind": "test", "name": "cheap-model"}}


async def test_fallback_models_are_preset_names_in_configuration() -> None:
    """Preset names in models: the container builds those models."""
    container = load_container(
        overrides={"middleware": [{"use": "fallback", "models": ["cheap"]}], "models": PRESETS},
        environ={},
    )
    hooks, answers = recorder()
    registry = Registry()
    registry.include(container.registry())
    registry.include(hooks)
    agent = container.agent(model=ScriptedModel([BUSY]), registry=registry)
    assert run_ok(await agent.run("hi")).output == "hi"
    assert answers == [("cheap-model",)]


async def test_fallback_from_a_toml_file(tmp_path: Path) -> None:
    """The same from a file, with on= names."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        """
[[middleware]]
use = "fallback"
models = ["cheap", "test"]
on = ["retryable", "BadRequest"]

[models.cheap]
kind = "test"
name = "cheap-model"
"""
    )
    container = load_container(path, environ={})
    agent = container.agent(model=ScriptedModel([BadRequest(message="too long")]))
    assert run_ok(await agent.run("hi")).output == "hi"
    assert container.agent().describe().positions["model_call"] == ("fallback",)


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "fallback"}, "fallback needs models to fall back to"),
        ({"use": "fallback", "models": []}, "fallback needs models to fall back to"),
        ({"use": "fallback", "models": ["nowhere"]}, "no model preset 'nowhere'"),
        ({"use": "fallback", "models": ["cheap"], "on": ["Oops"]}, "'Oops' is not an error"),
    ],
)
def test_a_bad_fallback_entry_is_one_line(entry: dict[str, Any], words: str) -> None:
    """No models, an unknown preset or error name: one line naming the entry."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"middleware": [entry], "models": PRESETS}, environ={}).agent()
    message = str(info.value)
    assert "\n" not in message
    assert words in message


def test_fallback_in_code_needs_models() -> None:
    """Code gets the same one-line error."""
    with pytest.raises(ValueError, match="fallback needs models"):
        fallback()

"""`repair_history`: pairing, signatures and data parts repaired per model, streaming or not."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from anthropic_wire import KEY as ANTHROPIC_KEY
from anthropic_wire import body as anthropic_body
from anthropic_wire import sent, stream_reply, text
from fake_provider import FakeProvider, Reply
from fncore_anthropic import AnthropicModel
from helpers import configured, outcome_of
from openai_wire import chat_model, chat_stream, chunk, close_clients, completion
from otel_support import Otel
from returns.result import Failure
from support import add, run_ok

from fncore import (
    Agent,
    DataPart,
    InMemorySessionStore,
    InvalidHistory,
    LoopSettings,
    Message,
    ReasoningPart,
    Registry,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    load_container,
)
from fncore.events import RunEnd
from fncore.middleware import Repair, history_repairs, repair_history
from fncore.middleware.repair_history import INTERRUPTED, repair_pairing
from fncore.testing import ScriptedModel, TestModel

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])


def calls(*ids: str) -> Message:
    """An assistant turn calling ``add`` once per id."""
    return Message("assistant", tuple(ToolCallPart(i, "add", '{"a": 1, "b": 2}') for i in ids))


def results(*ids: str) -> Message:
    """A tool message answering each id with ``3``."""
    return Message("tool", tuple(ToolResultPart(i, "add", "3") for i in ids))


def recorded() -> tuple[Registry, list[tuple[Repair, ...]]]:
    """A registry whose run_end hook records each reply's repairs."""
    hooks = Registry()
    seen: list[tuple[Repair, ...]] = []

    @hooks.hook("run_end")
    async def record(event: RunEnd) -> None:
        seen.append(history_repairs(event.run))

    return hooks, seen


def agent_on(model: Any, *registries: Registry, **options: Any) -> Agent:
    """An agent on ``model`` with ``repair_history`` (default options) and ``registries``."""
    registry = Registry()
    registry.include(repair_history())
    for extra in registries:
        registry.include(extra)
    return Agent(model, registry=registry, **options)


async def outcome(agent: Agent, prompt: Any, stream: bool, **options: Any) -> Any:
    """The run's outcome, from ``run`` or from the last event of ``stream``."""
    return await outcome_of(agent, prompt, streaming=stream, **options)


DANGLING = [Message.user("add"), calls("c1"), Message.user("and now?")]


@MODES
async def test_without_it_a_dangling_call_fails_the_run(stream: bool) -> None:
    """Strict validation stays the default: the same history fails with InvalidHistory."""
    result = await outcome(Agent(TestModel()), DANGLING, stream)
    assert isinstance(result, Failure)
    assert isinstance(result.failure(), InvalidHistory)


@MODES
async def test_a_dangling_call_gets_an_interrupted_result(stream: bool) -> None:
    """The call is answered with an error result right after it; the repair is recorded."""
    model = TestModel()
    hooks, seen = recorded()
    run_ok(await outcome(agent_on(model, hooks), DANGLING, stream))
    sent_messages = model.requests[0].messages
    assert [m.role for m in sent_messages] == ["user", "assistant", "tool", "user"]
    assert sent_messages[2].parts == (ToolResultPart("c1", "add", INTERRUPTED, is_error=True),)
    assert seen == [(Repair("interrupted", 1, "add (c1)"),)]


@MODES
async def test_an_orphan_result_is_dropped(stream: bool) -> None:
    """A result that answers no call is dropped, and its emptied message with it."""
    model = TestModel()
    history = [Message.user("hi"), results("ghost"), Message.user("go")]
    hooks, seen = recorded()
    run_ok(await outcome(agent_on(model, hooks), history, stream))
    assert [m.text for m in model.requests[0].messages] == ["hi", "go"]
    assert [r.kind for r in seen[0]] == ["orphan_dropped", "message_dropped"]


async def test_duplicate_ids_are_renamed_in_call_and_result() -> None:
    """Two calls sharing an id get distinct ids; their results follow, in order."""
    model = TestModel()
    history = [Message.user("x"), calls("c", "c"), results("c", "c"), Message.user("y")]
    hooks, seen = recorded()
    run_ok(await agent_on(model, hooks).run(history))
    turn, answers = model.requests[0].messages[1:3]
    assert [c.id for c in turn.tool_calls] == ["c", "c_1"]
    assert [r.call_id for r in answers.tool_results] == ["c", "c_1"]
    assert seen == [(Repair("id_renamed", 1, "'c' -> 'c_1'"),)]


async def test_misplaced_parts_are_dropped() -> None:
    """A result inside an assistant message and a call inside a user message are dropped."""
    model = TestModel()
    stray = Message("assistant", (TextPart("ok"), ToolResultPart("c9", "add", "1")))
    user_call = Message("user", (TextPart("hey"), ToolCallPart("c8", "add")))
    run_ok(await agent_on(model).run([user_call, stray, Message.user("z")]))
    assert [m.parts for m in model.requests[0].messages] == [
        (TextPart("hey"),),
        (TextPart("ok"),),
        (TextPart("z"),),
    ]


def test_a_valid_history_is_returned_as_it_is() -> None:
    """Nothing to repair: the same messages, no repairs."""
    history = (Message.user("x"), calls("a"), results("a"))
    fixed, found = repair_pairing(history)
    assert fixed is history or fixed == history
    assert found == ()


def test_the_interrupted_result_follows_the_turns_other_results() -> None:
    """One call answered, one not: the synthetic result comes after the real one."""
    history = [calls("a", "b"), results("a"), Message.user("next")]
    fixed, _ = repair_pairing(history)
    assert [m.role for m in fixed] == ["assistant", "tool", "tool", "user"]
    assert fixed[2].tool_results[0].call_id == "b"


async def test_a_session_keeps_the_repaired_input() -> None:
    """The repaired input is what the session commits, and the next reply is valid."""
    store = InMemorySessionStore()
    model = TestModel()
    agent = agent_on(model, sessions=store)
    run_ok(await agent.run(DANGLING, session_id="s"))
    run_ok(await agent.run("again", session_id="s"))
    saved = await store.load("s")
    assert saved is not None
    assert [m.role for m in saved.messages[:4]] == ["user", "assistant", "tool", "user"]


async def test_input_answers_the_calls_a_session_left_open() -> None:
    """A session awaiting tool results: an input that does not answer them is repaired."""
    store = InMemorySessionStore()
    waiting = Agent(TestModel(), sessions=store, tools=[add], settings=LoopSettings(enabled=False))
    first = run_ok(await waiting.run("2 and 3", session_id="s"))
    assert first.stop_reason == "awaiting_tools"
    assert isinstance(
        await Agent(TestModel(), sessions=store).run("go on", session_id="s"), Failure
    )
    model = TestModel()
    run_ok(await agent_on(model, sessions=store).run("go on", session_id="s"))
    assert [m.role for m in model.requests[0].messages] == ["user", "assistant", "tool", "user"]


# --- signed reasoning and data parts --------------------------------------------------------


def claude(fake: FakeProvider) -> AnthropicModel:
    """An Anthropic model on ``fake`` without SDK retries."""
    return AnthropicModel("claude-t", api_key=ANTHROPIC_KEY, base_url=fake.url, max_retries=0)


def thinking_blocks(request_body: dict[str, Any]) -> list[dict[str, Any]]:
    """The thinking blocks of a request, every turn."""
    return [
        b
        for turn in request_body["messages"]
        if turn["role"] == "assistant"
        for b in turn["content"]
        if b["type"] in {"thinking", "redacted_thinking"}
    ]


SIGNED = Message("assistant", (ReasoningPart("why", signature="SIG"), TextPart("yes")))
HISTORY = [Message.user("q"), SIGNED, Message.user("more")]


@MODES
async def test_an_unknown_signature_is_kept_by_default(
    fake_provider: FakeProvider, stream: bool
) -> None:
    """Unknown origin, default "keep": the signature reaches Anthropic as it came."""
    model = claude(fake_provider)
    try:
        reply = stream_reply(text("ok")) if stream else Reply(body=anthropic_body(text("ok")))
        fake_provider.reply(reply)
        run_ok(await outcome(agent_on(model), HISTORY, stream))
        assert thinking_blocks(sent(fake_provider)) == [
            {"type": "thinking", "thinking": "why", "signature": "SIG"}
        ]
    finally:
        await model.aclose()


async def test_strip_drops_unknown_signatures(fake_provider: FakeProvider) -> None:
    """unknown_signatures="strip": the reasoning goes unsigned, so Anthropic gets none."""
    model = claude(fake_provider)
    registry = Registry()
    registry.include(repair_history(unknown_signatures="strip"))
    hooks, seen = recorded()
    registry.include(hooks)
    try:
        fake_provider.reply(Reply(body=anthropic_body(text("ok"))))
        run_ok(await Agent(model, registry=registry).run(HISTORY))
        assert thinking_blocks(sent(fake_provider)) == []
        assert seen == [(Repair("reasoning_unsigned", 1, "unknown"),)]
    finally:
        await model.aclose()


async def test_a_signature_recorded_elsewhere_does_not_travel(fake_provider: FakeProvider) -> None:
    """A signature made by another model (recorded in the session) is stripped; redacted dropped."""
    store = InMemorySessionStore()
    signed = Message(
        "assistant",
        (ReasoningPart("why", signature="SIG"), ReasoningPart("", redacted="ENC"), TextPart("a")),
    )
    # A model that is not the target made the signed turn: this middleware records that.
    maker = ScriptedModel([signed], name="maker")
    run_ok(await agent_on(maker, sessions=store).run("q", session_id="s"))
    model = claude(fake_provider)
    try:
        fake_provider.reply(Reply(body=anthropic_body(text("ok"))))
        run_ok(await agent_on(model, sessions=store).run("more", session_id="s"))
        assert thinking_blocks(sent(fake_provider)) == []
        assert sent(fake_provider)["messages"][1]["content"] == [{"type": "text", "text": "a"}]
    finally:
        await model.aclose()


async def test_data_a_provider_cannot_take_becomes_text(fake_provider: FakeProvider) -> None:
    """Text data is decoded; an unknown image type becomes a note; PNG stays an image."""
    model = claude(fake_provider)
    message = Message(
        "user",
        (
            TextPart("see"),
            DataPart(b"col1,col2", "text/csv"),
            DataPart(b"BM..", "image/bmp"),
            DataPart(b"\x89PNG", "image/png"),
        ),
    )
    try:
        fake_provider.reply(Reply(body=anthropic_body(text("ok"))))
        run_ok(await agent_on(model).run([message]))
        content = sent(fake_provider)["messages"][0]["content"]
        assert [b["type"] for b in content] == ["text", "text", "text", "image"]
        assert content[1]["text"] == "col1,col2"
        assert content[2]["text"].startswith("[image/bmp attachment of 4 bytes left out")
    finally:
        await model.aclose()


async def test_media_types_choose_what_any_model_takes() -> None:
    """With media_types, a test model gets images but not PDFs; without, everything."""
    model = TestModel()
    registry = Registry()
    registry.include(repair_history(media_types=["image/*"]))
    pdf, png = DataPart(b"%PDF", "application/pdf"), DataPart(b"png", "image/png")
    run_ok(await Agent(model, registry=registry).run([Message("user", (pdf, png))]))
    parts = model.requests[0].messages[0].parts
    assert [type(p).__name__ for p in parts] == ["TextPart", "DataPart"]
    plain = TestModel()
    run_ok(await agent_on(plain).run([Message("user", (pdf, png))]))
    assert plain.requests[0].messages[0].parts == (pdf, png)


# --- the provider wire ------------------------------------------------------------------------


@MODES
async def test_openai_accepts_the_repaired_history(
    fake_provider: FakeProvider, stream: bool
) -> None:
    """A broken import reaches the OpenAI server paired: every call answered, ids unique."""
    model = chat_model(fake_provider)
    history = [
        Message.user("add"),
        calls("dup", "dup", "lost"),
        results("dup", "dup"),
        results("ghost"),
        Message.user("so?"),
    ]
    reply = (
        chat_stream(chunk({"role": "assistant", "content": "done"}))
        if stream
        else completion("done")
    )
    try:
        assert isinstance((await Agent(model).run(history)), Failure)  # strict without it
        fake_provider.reply(reply)
        run_ok(await outcome(agent_on(model), history, stream))
        wire = fake_provider.requests[-1].body["messages"]
        assert [m["role"] for m in wire] == ["user", "assistant", "tool", "tool", "tool", "user"]
        assert [c["id"] for c in wire[1]["tool_calls"]] == ["dup", "dup_1", "lost"]
        assert [m["tool_call_id"] for m in wire[2:5]] == ["dup", "dup_1", "lost"]
    finally:
        await close_clients()


# --- recording, configuration, concurrency -------------------------------------------------


async def test_repairs_are_a_span_event() -> None:
    """The current span (trace's model-call span) gets a fncore.repair_history event."""
    otel = Otel()
    registry = otel.registry()
    registry.include(repair_history())
    run_ok(await Agent(TestModel(), registry=registry).run(DANGLING))
    events = [e for s in otel.spans() for e in s.events if e.name == "fncore.repair_history"]
    assert events
    assert dict(events[0].attributes or {})["fncore.repair.kinds"] == ("interrupted",)


async def test_repair_history_loads_from_configuration() -> None:
    """With use alone: both layers in place, the history repaired."""
    agent = configured({"use": "repair_history"}).agent(model=TestModel())
    assert agent.describe().positions["model_call"] == ("repair_history.model_call",)
    run_ok(await agent.run(DANGLING))


async def test_repair_history_from_a_toml_file(tmp_path: Path) -> None:
    """The same from a file, with options."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        '[[middleware]]\nuse = "repair_history"\nunknown_signatures = "strip"\n'
        'media_types = ["image/png"]\n'
    )
    agent = load_container(path, environ={}).agent(model=TestModel())
    run_ok(await agent.run(HISTORY))


def test_a_bad_option_is_refused() -> None:
    """An unknown unknown_signatures value is a one-line error."""
    with pytest.raises(Exception, match="unknown_signatures"):
        configured({"use": "repair_history", "unknown_signatures": "maybe"}).agent()


async def test_concurrent_runs_each_record_their_own_repairs() -> None:
    """1,000 concurrent runs share one stack; each reply records exactly its one repair."""
    hooks, seen = recorded()
    agent = agent_on(TestModel(), hooks)
    outcomes = await asyncio.gather(*(agent.run(DANGLING) for _ in range(1000)))
    assert all(not isinstance(o, Failure) for o in outcomes)
    assert seen == [(Repair("interrupted", 1, "add (c1)"),)] * 1000


def test_renamed_ids_avoid_the_ids_already_taken() -> None:
    """A new id never collides with another call's id in the turn."""
    fixed, _ = repair_pairing([calls("c", "c_2", "c"), results("c", "c_2", "c")])
    assert [c.id for c in fixed[0].tool_calls] == ["c", "c_2", "c_2_1"]
    assert [r.call_id for r in fixed[1].tool_results] == ["c", "c_2", "c_2_1"]


async def test_binary_text_that_is_not_utf8_becomes_a_note() -> None:
    """Text data that does not decode is described, not decoded."""
    model = TestModel()
    registry = Registry()
    registry.include(repair_history(media_types=["image/png"]))
    message = Message("user", (TextPart("see"), DataPart(b"\xff\xfe", "text/plain")))
    run_ok(await Agent(model, registry=registry).run([message]))
    assert model.requests[0].messages[0].parts[1] == TextPart(
        "[text/plain attachment of 2 bytes left out: the model cannot take it]"
    )


async def test_a_repair_seen_again_next_round_is_recorded_once() -> None:
    """Every round repairs the same imported history; the reply records each repair once."""
    model = TestModel()
    hooks, seen = recorded()
    registry = Registry()
    registry.include(repair_history(media_types=["image/png"]))
    registry.include(hooks)
    message = Message("user", (TextPart("1 + 2"), DataPart(b"a,b", "text/csv")))
    run_ok(await Agent(model, registry=registry, tools=[add]).run([message]))
    assert len(model.requests) == 2
    assert seen == [(Repair("data_converted", 0, "text/csv in a user message"),)]


async def test_a_known_signature_is_recorded_once() -> None:
    """A model that signs the same reasoning twice adds its origin to the session once."""
    store = InMemorySessionStore()
    agent = agent_on(ScriptedModel([SIGNED, SIGNED]), sessions=store)
    run_ok(await agent.run("q", session_id="s"))
    run_ok(await agent.run("again", session_id="s"))
    saved = await store.load("s")
    assert saved is not None
    assert len(saved.state["fncore.fallback.signed_by"]) == 1


async def test_a_broken_session_is_not_rewritten() -> None:
    """A session whose stored history breaks the rules still fails, as without it."""
    from fncore import Session

    class Broken(InMemorySessionStore):
        async def load(self, session_id: str) -> Session | None:
            return Session(session_id, (Message.user("x"), results("ghost")), version=1)

    outcome_ = await agent_on(TestModel(), sessions=Broken()).run("y", session_id="s")
    assert isinstance(outcome_, Failure)
    assert isinstance(outcome_.failure(), InvalidHistory)


async def test_a_failed_call_records_no_signature() -> None:
    """A model error passes through unchanged."""
    from fncore import ModelError

    outcome_ = await agent_on(ScriptedModel([ModelError(message="down")])).run("hi")
    assert isinstance(outcome_, Failure)

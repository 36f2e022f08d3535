"""`cache_prompt`: cache breakpoints and TTL for Anthropic, prompt_cache_key for OpenAI.

Against the fake provider with the real SDK adapters: what goes on the wire, and the cache
tokens the answers report, in usage and in trace's spans (real OpenTelemetry SDK).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from anthropic_wire import body as anthropic_body
from anthropic_wire import events as anthropic_events
from anthropic_wire import text, usage
from fake_provider import FakeProvider, Reply, sse
from fncore_anthropic import AnthropicModel
from helpers import config_error, configured, outcome_of
from openai_wire import (
    chat_model,
    chat_stream,
    chat_usage,
    chunk,
    close_clients,
    completed,
    completion,
    message_item,
    response,
    responses_model,
    responses_usage,
)
from otel_support import Otel, attrs
from returns.result import Success

from fncore import Agent, Message, ModelRequest, ModelSettings, Registry, load_container
from fncore.middleware import cache_prompt
from fncore.middleware.cache_prompt import cache_key, marked
from fncore.testing import FunctionModel

MODES = pytest.mark.parametrize("streaming", [False, True], ids=["run", "stream"])
INSTRUCTIONS = "You answer questions about the weather."


def weather(city: str) -> str:
    """The weather now in a city."""
    return f"sunny in {city}"


def agent_on(model: Any, *registries: Registry) -> Agent:
    """An agent with ``registries`` included, the weather tool and fixed instructions."""
    registry = Registry()
    for each in registries:
        registry.include(each)
    return Agent(
        model, registry=registry, tools=[weather], instructions=INSTRUCTIONS, name="forecaster"
    )


@pytest.fixture(name="anthropic_model")
async def anthropic_model_fixture(fake_provider: FakeProvider) -> Any:
    """An Anthropic model on the fake server, closed after the test."""
    model = AnthropicModel("claude-test", api_key="sk-ant-x", base_url=fake_provider.url)
    yield model
    await model.aclose()


def anthropic_answer(streaming: bool, **use: Any) -> Reply:
    """A text answer from the Messages API, whole or streamed, with ``usage(**use)``."""
    if streaming:
        return sse(*anthropic_events(text("Sunny."), use=usage(**use)))
    return Reply(body=anthropic_body(text("Sunny."), use=usage(**use)))


@MODES
async def test_anthropic_gets_markers_on_system_tools_and_the_last_message(
    fake_provider: FakeProvider, anthropic_model: AnthropicModel, streaming: bool
) -> None:
    """Defaults: ephemeral cache_control (no ttl) on the system prompt, tools, last message."""
    fake_provider.reply(anthropic_answer(streaming, cache_write=40))
    agent = agent_on(anthropic_model, cache_prompt())
    prompt = [Message.user("Hi"), Message.assistant("Hello."), Message.user("Weather in Oslo?")]
    outcome = await outcome_of(agent, prompt, streaming=streaming)
    assert isinstance(outcome, Success), outcome
    sent = fake_provider.requests[0].body
    marker = {"type": "ephemeral"}
    assert sent["system"] == [{"type": "text", "text": INSTRUCTIONS, "cache_control": marker}]
    assert sent["tools"][-1]["cache_control"] == marker
    *earlier, last = sent["messages"]
    assert last["content"][-1]["cache_control"] == marker
    assert all("cache_control" not in b for m in earlier for b in m["content"])
    assert outcome.unwrap().usage.cache_write_tokens == 40


@MODES
async def test_anthropic_markers_carry_a_one_hour_ttl(
    fake_provider: FakeProvider, anthropic_model: AnthropicModel, streaming: bool
) -> None:
    """ttl='1h' adds "ttl": "1h" to every marker; messages=2 marks the last two messages."""
    fake_provider.reply(anthropic_answer(streaming, cache_read=30))
    agent = agent_on(anthropic_model, cache_prompt(ttl="1h", messages=2))
    prompt = [Message.user("Hi"), Message.assistant("Hello."), Message.user("Weather in Oslo?")]
    outcome = await outcome_of(agent, prompt, streaming=streaming)
    assert isinstance(outcome, Success), outcome
    sent = fake_provider.requests[0].body
    marker = {"type": "ephemeral", "ttl": "1h"}
    assert sent["system"][0]["cache_control"] == marker
    assert sent["tools"][-1]["cache_control"] == marker
    marks = [b.get("cache_control") for m in sent["messages"] for b in m["content"]]
    assert marks == [None, marker, marker]
    assert "prompt_cache_key" not in sent
    assert outcome.unwrap().usage.cache_read_tokens == 30


async def test_anthropic_with_everything_off_sends_no_marker(
    fake_provider: FakeProvider, anthropic_model: AnthropicModel
) -> None:
    """instructions=False, tools=False, messages=0: the request carries no cache_control."""
    fake_provider.reply(anthropic_answer(False))
    agent = agent_on(anthropic_model, cache_prompt(instructions=False, tools=False, messages=0))
    assert isinstance(await agent.run("Weather?"), Success)
    assert "cache_control" not in str(fake_provider.requests[0].body)


def openai_answer(api: str, streaming: bool) -> Reply:
    """A text answer with 64 cached prompt tokens, on ``api``, whole or streamed."""
    if api == "chat":
        if streaming:
            return chat_stream(chunk({"content": "Sunny."}), usage=chat_usage(cached=64))
        return completion("Sunny.", usage=chat_usage(cached=64))
    if streaming:
        return sse(completed(message_item("Sunny."), usage=responses_usage(cached=64)))
    return response(message_item("Sunny."), usage=responses_usage(cached=64))


@MODES
@pytest.mark.parametrize("api", ["chat", "responses"])
async def test_openai_gets_a_stable_prompt_cache_key(
    fake_provider: FakeProvider, api: str, streaming: bool
) -> None:
    """Both OpenAI APIs send the derived prompt_cache_key, the same on every call, no markers."""
    build = chat_model if api == "chat" else responses_model
    try:
        agent = agent_on(build(fake_provider), cache_prompt())
        for _ in range(2):
            fake_provider.reply(openai_answer(api, streaming))
            outcome = await outcome_of(agent, "Weather?", streaming=streaming)
            assert isinstance(outcome, Success), outcome
            assert outcome.unwrap().usage.cache_read_tokens == 64
    finally:
        await close_clients()
    keys = {r.body["prompt_cache_key"] for r in fake_provider.requests}
    assert len(keys) == 1
    (key,) = keys
    assert key.startswith("forecaster-")
    assert "cache_control" not in str(fake_provider.requests[0].body)
    assert "prompt_cache_retention" not in fake_provider.requests[0].body


async def test_openai_key_and_retention_can_be_configured(fake_provider: FakeProvider) -> None:
    """key= replaces the derived key; openai_retention sends prompt_cache_retention."""
    fake_provider.reply(openai_answer("chat", False))
    try:
        agent = agent_on(chat_model(fake_provider), cache_prompt(key="t1", openai_retention="24h"))
        assert isinstance(await agent.run("Weather?"), Success)
    finally:
        await close_clients()
    sent = fake_provider.requests[0].body
    assert (sent["prompt_cache_key"], sent["prompt_cache_retention"]) == ("t1", "24h")


async def test_openai_key_off_sends_none(fake_provider: FakeProvider) -> None:
    """openai_key=False: no prompt_cache_key, for compatible servers that refuse it."""
    fake_provider.reply(openai_answer("chat", False))
    try:
        agent = agent_on(chat_model(fake_provider), cache_prompt(openai_key=False))
        assert isinstance(await agent.run("Weather?"), Success)
    finally:
        await close_clients()
    assert "prompt_cache_key" not in fake_provider.requests[0].body


async def test_a_key_already_in_settings_extra_is_kept(fake_provider: FakeProvider) -> None:
    """A prompt_cache_key the application set in settings.extra wins over the derived one."""
    fake_provider.reply(openai_answer("chat", False))
    try:
        agent = agent_on(chat_model(fake_provider), cache_prompt())
        settings = ModelSettings(extra={"prompt_cache_key": "mine"})
        assert isinstance(await agent.run("Weather?", model_settings=settings), Success)
    finally:
        await close_clients()
    assert fake_provider.requests[0].body["prompt_cache_key"] == "mine"


def test_the_key_changes_with_instructions_and_tools_only() -> None:
    """The derived key depends on the agent, instructions and tools, not on the messages."""
    base = ModelRequest((Message.user("a"),), instructions="x")
    assert cache_key("a", base) == cache_key("a", ModelRequest((Message.user("b"),), "x"))
    assert cache_key("a", base) != cache_key("a", ModelRequest((), "y"))
    assert cache_key("a", base) != cache_key("b", base)


def test_marked_skips_system_messages_and_keeps_marks() -> None:
    """System messages are not counted; a message already marked stays marked."""
    msgs = (Message.user("a"), Message("user", Message.user("b").parts, cache=True))
    out = marked((*msgs, Message.system("s")), 1)
    assert [m.cache for m in out] == [False, True, False]
    assert marked(msgs, 0) == msgs
    assert [m.cache for m in marked(msgs, 4)] == [True, True]


async def test_traced_cache_tokens_land_on_the_chat_span(
    fake_provider: FakeProvider, anthropic_model: AnthropicModel
) -> None:
    """With trace outside, the chat span records cache read and write tokens (real SDK)."""
    otel = Otel()
    fake_provider.reply(anthropic_answer(False, cache_read=25, cache_write=7))
    agent = agent_on(anthropic_model, otel.registry(), cache_prompt())
    assert isinstance(await agent.run("Weather?"), Success)
    chat = attrs(otel.one("chat claude-test"))
    assert chat["gen_ai.usage.cache_read.input_tokens"] == 25
    assert chat["gen_ai.usage.cache_creation.input_tokens"] == 7


async def test_other_models_get_the_flags_only() -> None:
    """An offline model sees the request's cache flags and ttl, and no prompt_cache_key."""
    model = FunctionModel(lambda request: "ok")
    agent = agent_on(model, cache_prompt(ttl="1h"))
    assert isinstance(await agent.run("hi"), Success)
    sent = model.requests[0]
    assert (sent.cache_instructions, sent.cache_tools, sent.cache_ttl) == (True, True, "1h")
    assert sent.messages[-1].cache
    assert "prompt_cache_key" not in sent.settings.extra


def test_too_many_breakpoints_is_refused_in_configuration() -> None:
    """Five breakpoints (system, tools, three messages) are one line naming the entry."""
    text = config_error({"use": "cache_prompt", "messages": 3})
    assert "Anthropic accepts 4" in text
    assert "ttl" in config_error({"use": "cache_prompt", "ttl": "2h"})


async def test_use_alone_loads_with_its_defaults() -> None:
    """[[middleware]] use = 'cache_prompt' alone marks the prompt for caching."""
    model = FunctionModel(lambda request: "ok")
    agent = configured({"use": "cache_prompt"}).agent(model=model)
    assert isinstance(await agent.run("hi"), Success)
    assert model.requests[0].cache_instructions
    assert model.requests[0].cache_ttl is None


async def test_loads_from_a_toml_file(tmp_path: Path) -> None:
    """A TOML [[middleware]] block sets the ttl and the message count."""
    config = tmp_path / "fncore.toml"
    config.write_text('[[middleware]]\nuse = "cache_prompt"\nttl = "1h"\nmessages = 2\n')
    model = FunctionModel(lambda request: "ok")
    agent = load_container(config, environ={}).agent(model=model)
    outcome = await agent.run([Message.user("a"), Message.assistant("b"), Message.user("hi")])
    assert isinstance(outcome, Success)
    sent = model.requests[0]
    assert sent.cache_ttl == "1h"
    assert [m.cache for m in sent.messages] == [False, True, True]

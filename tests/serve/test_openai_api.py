"""The OpenAI-compatible endpoints, through the official ``openai`` SDK and a real uvicorn."""

from __future__ import annotations

import asyncio
from collections.abc import Callable

import openai
import pytest
from openai import OpenAI
from openai.types.chat import (
    ChatCompletionMessageParam,
    ChatCompletionMessageToolCallUnionParam,
    ChatCompletionToolUnionParam,
)
from pydantic import BaseModel
from served import add
from starlette.applications import Starlette

from fncore import Agent, LoopSettings, Registry
from fncore.middleware import approve, limit_calls
from fncore.serve import ServeSettings, create_app
from fncore.testing import ScriptedModel, TestModel

Serve = Callable[[Starlette], OpenAI]
USER: list[ChatCompletionMessageParam] = [{"role": "user", "content": "add 2 and 3"}]


def test_an_answer_comes_back_with_the_whole_runs_usage(
    serve: Serve, agent: Agent, model: TestModel
) -> None:
    """The agent's tool runs on the server; the client gets the answer and the usage."""
    client = serve(create_app(agent))
    reply = client.chat.completions.create(model="fncore", messages=USER)
    assert reply.object == "chat.completion"
    assert reply.choices[0].message.content == "add: 5"
    assert reply.choices[0].finish_reason == "stop"
    assert len(model.requests) == 2  # the tool-call round, then the answer
    usage = reply.usage
    assert usage is not None
    assert usage.total_tokens == usage.prompt_tokens + usage.completion_tokens
    alone = Agent(TestModel(), registry=Registry(), tools=[add])
    expected = asyncio.run(alone.run("add 2 and 3")).unwrap().usage
    assert expected.requests == 2
    assert (usage.prompt_tokens, usage.completion_tokens) == (
        expected.input_tokens,
        expected.output_tokens,
    )


def test_the_conversation_is_the_requests_messages(serve: Serve, model: TestModel) -> None:
    """System, user and assistant messages all reach the model, in order."""
    client = serve(create_app(Agent(model, registry=Registry())))
    client.chat.completions.create(
        model="fncore",
        messages=[
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "hi"},
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": [{"type": "text", "text": "again"}]},
        ],
    )
    sent = [(m.role, m.text) for m in model.requests[0].messages]
    assert sent[-3:] == [("user", "hi"), ("assistant", "hello"), ("user", "again")]
    assert ("system", "be brief") in sent


def test_a_stream_delivers_the_answer_in_deltas_then_ends(serve: Serve) -> None:
    """The deltas concatenate to the answer; a closing chunk and a usage chunk follow."""
    agent = Agent(TestModel(chunk=2), registry=Registry(), tools=[add])
    client = serve(create_app(agent))
    stream = client.chat.completions.create(
        model="fncore",
        messages=USER,
        stream=True,
        stream_options={"include_usage": True},
    )
    chunks = list(stream)
    deltas = [c.choices[0].delta.content for c in chunks if c.choices]
    texts = [d for d in deltas if d]
    assert "".join(texts) == "add: 5"
    assert len(texts) == 3  # "ad", "d:", " 5": streamed as the model produced them
    assert [c.choices[0].finish_reason for c in chunks if c.choices][-1] == "stop"
    assert chunks[-1].choices == []
    assert chunks[-1].usage is not None
    assert chunks[-1].usage.total_tokens > 0
    assert len({c.id for c in chunks}) == 1


def test_the_stream_helper_accumulates_the_answer(serve: Serve, agent: Agent) -> None:
    """The SDK's ``.stream()`` helper (which checks each chunk's object) gets the answer."""
    client = serve(create_app(agent))
    with client.chat.completions.stream(model="fncore", messages=USER) as stream:
        final = stream.get_final_completion()
    assert final.choices[0].message.content == "add: 5"


class Sum(BaseModel):
    total: int


def test_a_structured_output_is_answered_as_json(serve: Serve) -> None:
    """An agent with an ``output_type`` answers with its validated value as JSON text."""
    agent = Agent(TestModel(), registry=Registry(), tools=[add], output_type=Sum)
    client = serve(create_app(agent))
    reply = client.chat.completions.create(model="fncore", messages=USER)
    assert Sum.model_validate_json(reply.choices[0].message.content or "") == Sum(total=2)


def test_models_lists_the_one_model(serve: Serve, agent: Agent) -> None:
    """``/v1/models`` lists the served model under its configured name, and only that."""
    client = serve(create_app(agent, ServeSettings(model_name="support-bot")))
    assert [m.id for m in client.models.list()] == ["support-bot"]
    with pytest.raises(openai.NotFoundError, match="'fncore' does not exist here") as caught:
        client.chat.completions.create(model="fncore", messages=USER)
    assert caught.value.body == {
        "message": caught.value.body["message"],  # type: ignore[index]
        "type": "invalid_request_error",
        "param": "model",
        "code": "model_not_found",
    }


def test_client_tools_are_refused_with_a_clear_400(
    serve: Serve, agent: Agent, model: TestModel
) -> None:
    """Tools belong to the server: a request's own tools, or tool messages, are a 400."""
    client = serve(create_app(agent))
    tool: ChatCompletionToolUnionParam = {"type": "function", "function": {"name": "f"}}
    with pytest.raises(openai.BadRequestError, match="client-side tools are not supported"):
        client.chat.completions.create(model="fncore", messages=USER, tools=[tool])
    call: ChatCompletionMessageToolCallUnionParam = {
        "id": "1",
        "type": "function",
        "function": {"name": "f", "arguments": "{}"},
    }
    history: list[ChatCompletionMessageParam] = [
        *USER,
        {"role": "assistant", "tool_calls": [call]},
        {"role": "tool", "tool_call_id": "1", "content": "5"},
    ]
    with pytest.raises(openai.BadRequestError, match=r"remove messages\.1\.tool_calls") as caught:
        client.chat.completions.create(model="fncore", messages=history)
    assert caught.value.body["param"] == "messages.1.tool_calls"  # type: ignore[index]
    with pytest.raises(openai.BadRequestError, match=r"remove messages\.1$") as tool_message:
        client.chat.completions.create(model="fncore", messages=history[::2])
    assert tool_message.value.body["param"] == "messages.1.role"  # type: ignore[index]
    assert model.requests == []  # nothing ran


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"model": "fncore", "messages": [{"role": "robot", "content": "hi"}]}, "messages.0.role"),
        ({"model": "fncore", "messages": []}, "messages"),
        ({"model": "fncore", "messages": [{"role": "user", "content": 3}]}, "messages.0.content"),
        ({"messages": [{"role": "user", "content": "hi"}]}, "model"),
        ({"model": "fncore", "messages": USER, "stream": "often"}, "stream"),
    ],
)
def test_a_malformed_body_gets_a_400_naming_the_field(
    serve: Serve, agent: Agent, body: dict[str, object], field: str
) -> None:
    """Pydantic validates the body; the first wrong field is in the message and ``param``."""
    client = serve(create_app(agent))
    with pytest.raises(openai.BadRequestError, match=rf"{field}[.\w]*: ") as caught:
        client.post("/chat/completions", body=body, cast_to=object)
    assert caught.value.body["param"].startswith(field)  # type: ignore[index]
    assert caught.value.body["type"] == "invalid_request_error"  # type: ignore[index]


def test_a_body_that_is_not_json_gets_a_400(serve: Serve, agent: Agent) -> None:
    """Bytes that do not parse are refused as such."""
    client = serve(create_app(agent))
    with pytest.raises(openai.BadRequestError, match="the body is not valid JSON"):
        client.post(
            "/chat/completions",
            content=b"{not json",
            cast_to=object,
            options={"headers": {"content-type": "application/json"}},
        )


def test_limits_on_messages_and_body_size(serve: Serve, agent: Agent) -> None:
    """More messages than ``max_messages`` is a 400; a body over ``max_body_bytes`` a 413."""
    client = serve(create_app(agent, ServeSettings(max_messages=2, max_body_bytes=400)))
    with pytest.raises(openai.BadRequestError, match="3 messages, more than") as caught:
        client.chat.completions.create(model="fncore", messages=USER * 3)
    assert caught.value.body["param"] == "messages"  # type: ignore[index]
    big: list[ChatCompletionMessageParam] = [{"role": "user", "content": "x" * 500}]
    with pytest.raises(openai.APIStatusError, match="larger than this server accepts") as large:
        client.chat.completions.create(model="fncore", messages=big)
    assert large.value.status_code == 413
    chunked = iter([b'{"model": "fncore", "messages": [', b" " * 400, b"]}"])
    with pytest.raises(openai.APIStatusError, match="larger than this server accepts") as streamed:
        client.post("/chat/completions", content=chunked, cast_to=object)
    assert streamed.value.status_code == 413
    reply = client.chat.completions.create(model="fncore", messages=USER)
    assert reply.choices[0].message.content == "add: 5"


def test_a_paused_run_answers_409_with_its_checkpoint_and_pending_calls(serve: Serve) -> None:
    """The 409 carries what to resume; the SDK does not retry it (the run happens once)."""
    model = TestModel()
    agent = Agent(model, registry=approve(["add"]), tools=[add])
    client = serve(create_app(agent))
    with pytest.raises(openai.ConflictError, match="paused for approval") as caught:
        client.chat.completions.create(model="fncore", messages=USER)
    body = caught.value.body
    assert isinstance(body, dict)
    assert body["code"] == "run_paused"
    assert body["pending"] == [
        {
            "call_id": "call_0_0",
            "tool": "add",
            "arguments": {"a": 2, "b": 3},
            "description": 'Run add with {"a": 2, "b": 3}?',
            "allowed": ["approve", "edit", "reject", "respond"],
        }
    ]
    assert len(model.requests) == 1  # not retried
    assert body["checkpoint_id"] in body["message"]


def test_a_paused_streamed_run_ends_its_stream_with_the_error(serve: Serve) -> None:
    """Once streaming, the status is sent: the pause arrives as the stream's error event."""
    agent = Agent(TestModel(), registry=approve(["add"]), tools=[add])
    client = serve(create_app(agent))
    stream = client.chat.completions.create(model="fncore", messages=USER, stream=True)
    with pytest.raises(openai.APIError, match="paused for approval") as caught:
        list(stream)
    assert caught.value.body["pending"][0]["tool"] == "add"  # type: ignore[index]


def test_a_failed_run_answers_with_its_message_and_no_traceback(serve: Serve) -> None:
    """A run that fails on the model is a 502 with the error's message; not retried."""
    model = ScriptedModel([])
    client = serve(create_app(Agent(model, registry=Registry())))
    with pytest.raises(openai.InternalServerError, match="has no reply left") as caught:
        client.chat.completions.create(model="fncore", messages=USER)
    assert caught.value.status_code == 502
    assert caught.value.body["type"] == "upstream_error"  # type: ignore[index]
    assert "Traceback" not in str(caught.value.body)
    assert len(model.requests) == 1
    stream = client.chat.completions.create(model="fncore", messages=USER, stream=True)
    with pytest.raises(openai.APIError, match="has no reply left"):
        list(stream)


def test_a_run_that_fails_in_the_loop_is_a_500(serve: Serve) -> None:
    """Any other failure is the server's: a 500 naming the error type."""
    agent = Agent(
        TestModel(), registry=Registry(), tools=[add], settings=LoopSettings(max_iterations=1)
    )
    client = serve(create_app(agent))
    with pytest.raises(openai.InternalServerError) as caught:
        client.chat.completions.create(model="fncore", messages=USER)
    assert caught.value.status_code == 500
    assert caught.value.body["type"] == "server_error"  # type: ignore[index]
    assert caught.value.body["code"] == "MaxIterationsReached"  # type: ignore[index]


def test_a_run_over_its_limits_is_a_429(serve: Serve) -> None:
    """A limit the agent's middleware enforces answers 429, with the error type as code."""
    registry = limit_calls(model_calls_per_reply=1, exit="error")
    client = serve(create_app(Agent(TestModel(), registry=registry, tools=[add])))
    with pytest.raises(openai.RateLimitError) as caught:
        client.chat.completions.create(model="fncore", messages=USER)
    assert caught.value.body["code"] == "CallLimitExceeded"  # type: ignore[index]
    assert caught.value.response.headers["x-should-retry"] == "false"


def test_health_and_unknown_paths(serve: Serve, agent: Agent) -> None:
    """``/healthz`` answers ok; an unknown path or method answers in OpenAI's shape."""
    client = serve(create_app(agent))
    assert client.get("/../healthz", cast_to=object) == {"status": "ok"}
    with pytest.raises(openai.NotFoundError) as missing:
        client.get("/nowhere", cast_to=object)
    assert missing.value.body == {
        "message": "Not Found",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    with pytest.raises(openai.APIStatusError) as method:
        client.get("/chat/completions", cast_to=object)
    assert method.value.status_code == 405

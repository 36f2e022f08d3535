"""``POST /ag-ui``: AG-UI events from a real uvicorn, parsed with ``ag-ui-protocol``'s types."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import threading
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx2
import pytest
from ag_ui.core import (
    BaseEvent,
    Event,
    RunErrorEvent,
    RunFinishedEvent,
    TextMessageContentEvent,
    ToolCallArgsEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
)
from pydantic import TypeAdapter
from returns.result import Success
from served import add, running
from starlette.applications import Starlette

from fncore import (
    Agent,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Registry,
    TextPart,
    ToolCallPart,
    current_metadata,
)
from fncore.middleware import approve, guard
from fncore.serve import ServeSettings, create_app
from fncore.serve._agui import agui_routes
from fncore.testing import ScriptedModel, TestModel

ROOT = Path(__file__).resolve().parents[2]
EVENT: TypeAdapter[Event] = TypeAdapter(Event)
Server = Callable[[Starlette], str]
THE_CALL = ["TOOL_CALL_START", "TOOL_CALL_ARGS", "TOOL_CALL_ARGS", "TOOL_CALL_END"]
"""The events of the call ``add(a=2, b=3)`` as the test model streams it."""
THE_ANSWER = [
    "TOOL_CALL_RESULT",
    "TEXT_MESSAGE_START",
    "TEXT_MESSAGE_CONTENT",
    "TEXT_MESSAGE_END",
    "RUN_FINISHED",
]
"""The events after the call: its result, then the answer ``add: 5`` and the end."""


@pytest.fixture
def server() -> Iterator[Server]:
    """Start an app on a real uvicorn; its ``/ag-ui`` URL."""
    with contextlib.ExitStack() as stack:

        def start(app: Starlette) -> str:
            return stack.enter_context(running(app)).removesuffix("/v1") + "/ag-ui"

        yield start


def run_input(text: str = "add 2 and 3", thread: str = "t1", **extra: Any) -> dict[str, Any]:
    """A `RunAgentInput` body: one user message on ``thread``."""
    messages = [{"id": "m1", "role": "user", "content": text}]
    return {"threadId": thread, "runId": "r1", "messages": messages, **extra}


def post(url: str, body: dict[str, Any]) -> list[BaseEvent]:
    """POST ``body`` and the AG-UI events streamed back, parsed by their ``type``."""
    with httpx2.stream("POST", url, json=body) as response:
        assert response.status_code == 200
        assert response.headers["content-type"].startswith("text/event-stream")
        lines = [line for line in response.iter_lines() if line.startswith("data: ")]
    return [EVENT.validate_json(line.removeprefix("data: ")) for line in lines]


def types(events: list[BaseEvent]) -> list[str]:
    return [event.type.value for event in events]


def test_a_text_answer_streams_in_one_message_between_start_and_finish(server: Server) -> None:
    """RUN_STARTED, one text message (start, deltas, end), then RUN_FINISHED with the result."""
    url = server(create_app(Agent(TestModel(chunk=3), registry=Registry())))
    events = post(url, run_input("hello there"))
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        *["TEXT_MESSAGE_CONTENT"] * 4,  # "hel", "lo ", "the", "re"
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert len({e.message_id for e in events[1:-1]}) == 1  # type: ignore[attr-defined]
    deltas = [e.delta for e in events if isinstance(e, TextMessageContentEvent)]
    assert "".join(deltas) == "hello there"
    finished = events[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert (finished.thread_id, finished.run_id, finished.result) == ("t1", "r1", "hello there")
    assert finished.outcome is None
    assert finished.usage is not None
    assert finished.usage[0].total_tokens


def test_a_tool_call_streams_its_start_args_end_and_result_before_the_answer(
    server: Server,
) -> None:
    """The server's tool call shows as it is made and run, then the final text follows."""
    url = server(create_app(Agent(TestModel(), registry=Registry(), tools=[add])))
    events = post(url, run_input())
    assert types(events) == [
        "RUN_STARTED",
        *THE_CALL,
        *THE_ANSWER,
    ]
    start = events[1]
    assert isinstance(start, ToolCallStartEvent)
    assert (start.tool_call_id, start.tool_call_name) == ("call_0_0", "add")
    args = "".join(e.delta for e in events if isinstance(e, ToolCallArgsEvent))
    assert args == '{"a":2,"b":3}'
    result = events[5]
    assert isinstance(result, ToolCallResultEvent)
    assert (result.tool_call_id, result.content) == ("call_0_0", "5")
    assert events[-1].result == "add: 5"  # type: ignore[attr-defined]


def test_a_pause_is_an_interrupt_carrying_the_checkpoint_and_resumes_through_resume(
    server: Server,
) -> None:
    """RUN_FINISHED ends the paused run with interrupts; resume entries finish it."""
    agent = Agent(TestModel(), registry=approve(["add"]), tools=[add])
    url = server(create_app(agent))
    events = post(url, run_input(thread="ada"))
    assert types(events) == [
        "RUN_STARTED",
        *THE_CALL,
        "RUN_FINISHED",
    ]
    finished = events[-1]
    assert isinstance(finished, RunFinishedEvent)
    assert finished.outcome is not None
    assert finished.outcome.type == "interrupt"
    [interrupt] = finished.outcome.interrupts
    checkpoint = interrupt.metadata["checkpoint_id"]  # type: ignore[index]
    assert interrupt.id == f"{checkpoint}:call_0_0"
    assert interrupt.reason == "fncore.approval"
    assert interrupt.tool_call_id == "call_0_0"
    assert interrupt.message == 'Run add with {"a": 2, "b": 3}?'
    assert interrupt.metadata == {
        "checkpoint_id": checkpoint,
        "call_id": "call_0_0",
        "tool": "add",
        "arguments": {"a": 2, "b": 3},
        "description": 'Run add with {"a": 2, "b": 3}?',
        "allowed": ["approve", "edit", "reject", "respond"],
    }
    assert interrupt.response_schema is not None
    assert interrupt.response_schema["discriminator"]["propertyName"] == "kind"

    edit = {"kind": "edit", "arguments": {"a": 4, "b": 5}}
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": edit}]
    resumed = post(url, {"threadId": "ada", "runId": "r2", "messages": [], "resume": resume})
    kinds = types(resumed)
    assert kinds[:3] == ["RUN_STARTED", "TOOL_CALL_RESULT", "TEXT_MESSAGE_START"]
    assert kinds[-2:] == ["TEXT_MESSAGE_END", "RUN_FINISHED"]
    assert set(kinds[3:-2]) == {"TEXT_MESSAGE_CONTENT"}
    assert resumed[1].content.endswith("\n9")  # type: ignore[attr-defined]
    answer = resumed[-1].result  # type: ignore[attr-defined]
    assert "9" in answer
    session = asyncio.run(agent.sessions.load("ada"))
    assert session is not None
    assert session.messages[-1].text == answer  # the resumed run committed its session


def test_a_cancelled_interrupt_rejects_its_call(server: Server) -> None:
    """A ``cancelled`` resume entry is a rejection: the call does not run."""
    url = server(create_app(Agent(TestModel(), registry=approve(["add"]), tools=[add])))
    [interrupt] = post(url, run_input())[-1].outcome.interrupts  # type: ignore[attr-defined]
    resume = [{"interruptId": interrupt.id, "status": "cancelled"}]
    resumed = post(url, {"threadId": "t1", "runId": "r2", "messages": [], "resume": resume})
    result = resumed[1]
    assert isinstance(result, ToolCallResultEvent)
    assert result.content == "The user rejected this tool call."


def test_an_answer_a_middleware_gives_without_deltas_comes_whole(server: Server) -> None:
    """A ``model_call`` middleware that answers itself: its text and calls come whole."""
    registry = Registry()
    call = ToolCallPart("c1", "add", '{"a": 1, "b": 2}')

    @registry.on("model_call")
    async def answer(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        text = "" if ctx.request.messages[-1].role == "user" else "three"
        parts = (TextPart("adding"), call) if not text else (TextPart(text),)
        return Success(ModelResponse(Message("assistant", parts)))

    url = server(create_app(Agent(TestModel(), registry=registry, tools=[add])))
    events = post(url, run_input())
    assert types(events) == [
        "RUN_STARTED",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "TOOL_CALL_START",
        "TOOL_CALL_ARGS",
        "TOOL_CALL_END",
        "TOOL_CALL_RESULT",
        "TEXT_MESSAGE_START",
        "TEXT_MESSAGE_CONTENT",
        "TEXT_MESSAGE_END",
        "RUN_FINISHED",
    ]
    assert [e.delta for e in events if isinstance(e, TextMessageContentEvent)] == [
        "adding",
        "three",
    ]
    assert events[5].delta == '{"a": 1, "b": 2}'  # type: ignore[attr-defined]
    assert events[4].parent_message_id == events[1].message_id  # type: ignore[attr-defined]


def test_a_guardrail_stops_the_shown_stream_and_closes_what_it_opened(server: Server) -> None:
    """After a guardrail trips, nothing more is shown; the open message ends, then the error."""
    model = ScriptedModel(["all fine until the secret part, which must not show"], chunk=4)
    registry = guard(deny=["secret"], window=8)
    url = server(create_app(Agent(model, registry=registry)))
    events = post(url, run_input("hi"))
    kinds = types(events)
    assert kinds[:2] == ["RUN_STARTED", "TEXT_MESSAGE_START"]
    assert kinds[-2:] == ["TEXT_MESSAGE_END", "RUN_ERROR"]
    shown = "".join(e.delta for e in events if isinstance(e, TextMessageContentEvent))
    assert "must not show" not in shown
    assert events[-1].code == "GuardBlocked"  # type: ignore[attr-defined]


def test_a_failed_run_ends_with_run_error(server: Server) -> None:
    """A run that fails ends its stream with RUN_ERROR: the message and the error type."""
    url = server(create_app(Agent(ScriptedModel([]), registry=Registry())))
    events = post(url, run_input())
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    error = events[-1]
    assert isinstance(error, RunErrorEvent)
    assert "has no reply left" in error.message
    assert error.code == "ModelError"
    assert "Traceback" not in error.message


def test_a_resume_the_checkpoint_refuses_ends_with_run_error(server: Server) -> None:
    """A decision the call does not allow is refused by the checkpoint; nothing runs."""
    registry = approve(["add"], decisions=("approve", "reject"))
    url = server(create_app(Agent(TestModel(), registry=registry, tools=[add])))
    [interrupt] = post(url, run_input())[-1].outcome.interrupts  # type: ignore[attr-defined]
    respond = {"kind": "respond", "message": "7"}
    resume = [{"interruptId": interrupt.id, "status": "resolved", "payload": respond}]
    events = post(url, {"threadId": "t1", "runId": "r2", "messages": [], "resume": resume})
    assert types(events) == ["RUN_STARTED", "RUN_ERROR"]
    assert events[-1].code == "DecisionNotAllowed"  # type: ignore[attr-defined]


@pytest.mark.parametrize(
    ("body", "param", "message"),
    [
        (b"{not json", None, "not valid JSON"),
        ({"threadId": "t", "messages": []}, "runId", "Field required"),
        (run_input(tools=[{"name": "x", "description": "", "parameters": {}}]), "tools", ""),
        ({**run_input(), "messages": [{"id": "1", "role": "mascot"}]}, "messages.0", ""),
        ({**run_input(), "messages": []}, "messages", "needs a user message"),
        (
            {
                **run_input(),
                "messages": [
                    {"id": "1", "role": "user", "content": [{"type": "image", "source": {}}]}
                ],
            },
            "messages.0",
            "",
        ),
        (
            run_input(resume=[{"interruptId": "nope", "status": "resolved"}]),
            "resume.0.interruptId",
            "not an interrupt of this server",
        ),
        (
            run_input(resume=[{"interruptId": "c:x", "status": "resolved", "payload": {}}]),
            "resume.0.payload",
            "",
        ),
        (
            run_input(
                resume=[
                    {"interruptId": "c:x", "status": "cancelled"},
                    {"interruptId": "d:y", "status": "cancelled"},
                ]
            ),
            "resume",
            "2 checkpoints",
        ),
    ],
)
def test_a_malformed_input_gets_a_400_naming_the_field(
    server: Server, body: bytes | dict[str, Any], param: str | None, message: str
) -> None:
    """Malformed input, client-side tools and unusable messages: a 400 in OpenAI's shape."""
    model = TestModel()
    url = server(create_app(Agent(model, registry=Registry(), tools=[add])))
    sent = {"content": body} if isinstance(body, bytes) else {"json": body}
    response = httpx2.post(url, **sent)
    assert response.status_code == 400
    error = response.json()["error"]
    assert error["type"] == "invalid_request_error"
    assert error["param"] is None if param is None else error["param"].startswith(param)
    assert message in error["message"]
    if param == "tools":
        assert "client-side tools are not supported" in error["message"]
    assert model.requests == []


def test_the_apps_limits_on_messages_and_body_size_hold(server: Server) -> None:
    """More messages than ``max_messages`` get a 400; a body over ``max_body_bytes`` a 413."""
    settings = ServeSettings(max_messages=2, max_body_bytes=2_000)
    url = server(create_app(Agent(TestModel(), registry=Registry()), settings))
    three = [{"id": str(i), "role": "user", "content": "hi"} for i in range(3)]
    response = httpx2.post(url, json={**run_input(), "messages": three})
    assert response.status_code == 400
    assert response.json()["error"]["param"] == "messages"
    response = httpx2.post(url, json=run_input("x" * 3_000))
    assert response.status_code == 413
    assert response.json()["error"]["code"] == "request_too_large"


def test_the_thread_is_the_session_continued_from_the_last_user_message(server: Server) -> None:
    """Two runs on one thread: the second sees the first turn; the input's history is unread."""
    model = TestModel()
    agent = Agent(model, registry=Registry())
    url = server(create_app(agent))
    post(url, run_input("first", thread="ada"))
    history = [
        {"id": "0", "role": "user", "content": "not read: the session holds the history"},
        {"id": "1", "role": "assistant", "content": "not read either"},
        {"id": "2", "role": "user", "content": [{"type": "text", "text": "second"}]},
    ]
    events = post(url, {"threadId": "ada", "runId": "r2", "messages": history})
    assert events[-1].result == "second"  # type: ignore[attr-defined]
    sent = [(m.role, m.text) for m in model.requests[-1].messages if m.role != "system"]
    assert sent == [("user", "first"), ("assistant", "first"), ("user", "second")]
    post(url, run_input("other thread", thread="bob"))
    assert [(m.role, m.text) for m in model.requests[-1].messages if m.role != "system"] == [
        ("user", "other thread")
    ]


def test_a_client_that_disconnects_cancels_the_run_and_leaves_the_session(
    server: Server,
) -> None:
    """Closing the stream mid-run cancels the running tool; the session is as it was."""
    entered, cancelled = threading.Event(), threading.Event()

    async def wait_forever(text: str) -> str:
        """Wait for an answer that never comes."""
        entered.set()
        try:
            await asyncio.Event().wait()
        except asyncio.CancelledError:
            cancelled.set()
            raise
        return text

    agent = Agent(TestModel(), registry=Registry(), tools=[wait_forever])
    url = server(create_app(agent))
    with httpx2.stream("POST", url, json=run_input("hi", thread="ada")) as response:
        for line in response.iter_lines():
            if '"TOOL_CALL_END"' in line:
                break
        assert entered.wait(30)
    assert cancelled.wait(30)
    assert httpx2.get(url.removesuffix("/ag-ui") + "/api/sessions/ada").status_code == 404


def test_runs_start_with_the_metadata_of_the_request(server: Server) -> None:
    """The route's metadata function gives each run its metadata (the tenant, with keys)."""

    def tenant() -> str:
        """Who is asking."""
        return str(current_metadata().get("tenant"))

    agent = Agent(TestModel(), registry=Registry(), tools=[tenant])

    async def body(request: Any) -> bytes:
        return bytes(await request.body())

    routes = agui_routes(agent, body, 10, lambda request: {"tenant": request.headers["x-t"]})
    url = server(Starlette(routes=routes)).removesuffix("/ag-ui")
    with httpx2.stream("POST", f"{url}/ag-ui", json=run_input(), headers={"x-t": "acme"}) as r:
        lines = [line for line in r.iter_lines() if "TOOL_CALL_RESULT" in line]
    assert '"content":"acme"' in lines[0]


def test_the_example_client_streams_a_run_and_approves_its_pause(server: Server) -> None:
    """examples/agui_client.py, run as a script against the server, prints every event."""
    url = server(create_app(Agent(TestModel(), registry=approve(["add"]), tools=[add])))
    script = ROOT / "examples" / "agui_client.py"
    base = url.removesuffix("/ag-ui")
    done = subprocess.run(
        [sys.executable, str(script), base, "add 2 and 3", "--approve"],
        capture_output=True,
        text=True,
        check=True,
    )
    kinds = [line.split(" ", 1)[0] for line in done.stdout.splitlines()]
    assert kinds == [
        "RUN_STARTED",
        *THE_CALL,
        "RUN_FINISHED",  # the pause: an interrupt
        "RUN_STARTED",
        *THE_ANSWER,
    ]
    assert '"interrupts"' in done.stdout.splitlines()[5]
    assert '"result":"add: 5"' in done.stdout.splitlines()[-1]


def test_the_serving_docs_show_the_example_client_as_it_is() -> None:
    """The client shown in docs/reference/serve.md is examples/agui_client.py, verbatim."""
    page = (ROOT / "docs" / "reference" / "serve.md").read_text(encoding="utf-8")
    source = (ROOT / "examples" / "agui_client.py").read_text(encoding="utf-8")
    assert f"```{{.python .skip}}\n{source}```" in page

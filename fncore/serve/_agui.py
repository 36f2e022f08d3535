"""``POST /ag-ui``: an agent behind the AG-UI protocol (``ag-ui-protocol``'s types).

The request is a `RunAgentInput`. Its ``threadId`` is the stored session (the caller's
tenant's, with keys, as `fncore.serve._auth.session_key` maps it): the run goes on
from the input's last user message, and the session holds the rest of the conversation (the
input's earlier messages are not read). ``state``, ``context`` and ``forwardedProps`` are
accepted and not used. Client-side ``tools`` are refused with a 400, as on chat completions:
the agent's own tools run on the server, and a tool that runs in the browser would need the
run to stop and wait for its result, which a run does not do.

The answer streams AG-UI events as server-sent events::

    RUN_STARTED
      TEXT_MESSAGE_START / TEXT_MESSAGE_CONTENT... / TEXT_MESSAGE_END   (text, as it streams)
      TOOL_CALL_START / TOOL_CALL_ARGS... / TOOL_CALL_END               (a call the model made)
      TOOL_CALL_RESULT                                                  (the call ran)
    RUN_FINISHED (its result and usage) | RUN_FINISHED (outcome "interrupt") | RUN_ERROR

A run paused for approval finishes with the protocol's interrupt outcome: one interrupt per
pending call, its id ``"<checkpoint>:<call id>"``, its metadata the checkpoint id, the tool,
the arguments and the allowed decisions. The next input answers them in ``resume`` (one
entry per interrupt, the decision in its payload) and streams the resumed run. With keys, it
decides only the caller's tenant's checkpoints: another tenant's ends as a missing one does.
"""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Mapping, Sequence
from typing import Any, TypeAlias

import pydantic
from ag_ui.core import (
    BaseEvent,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunErrorEvent,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    RunStartedEvent,
    TextMessageContentEvent,
    TextMessageEndEvent,
    TextMessageStartEvent,
    TokenUsage,
    ToolCallArgsEvent,
    ToolCallEndEvent,
    ToolCallResultEvent,
    ToolCallStartEvent,
    UserMessage,
)
from ag_ui.encoder import EventEncoder
from pydantic_core import to_jsonable_python
from returns.result import Failure
from sse_starlette import EventSourceResponse
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from fncore.core import (
    AgentError,
    Decision,
    GuardTripped,
    PendingRequest,
    Reject,
    RoundFinished,
    RoundStarted,
    RunCompleted,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallStarted,
    ToolResultReady,
)
from fncore.runtime import Agent, CheckpointStore, RunStream
from fncore.runtime._claims import _not_found, _unreadable
from fncore.serve._auth import session_key, tenant_of
from fncore.serve._runs import RunsLog
from fncore.serve._wire import (
    CLIENT_TOOLS,
    DecisionBody,
    RequestError,
    check_count,
    decision_of,
    error_body,
    location,
    pending_doc,
    validated,
)

__all__ = ["agui_routes"]

ReadBody: TypeAlias = Callable[[Request], Awaitable[bytes]]
"""Reads a request's body within the app's size limit (raising `RequestError` past it)."""

RunMetadata: TypeAlias = Callable[[Request], Mapping[str, object]]
"""The run metadata of a request (the tenant, once keys are configured)."""

_MISSING = object()

INTERRUPT_REASON = "fncore.approval"
"""The ``reason`` of an interrupt that asks for a decision on a pending call."""


_PAYLOAD: pydantic.TypeAdapter[DecisionBody] = pydantic.TypeAdapter(DecisionBody)
DECISION_SCHEMA: dict[str, Any] = _PAYLOAD.json_schema()
"""The JSON Schema of a resume entry's payload: a decision, by its ``kind``."""


def parse_input(body: bytes, max_messages: int) -> RunAgentInput:
    """The validated `RunAgentInput` in ``body``.

    Raises:
        RequestError: naming the first field that is wrong, client-side tools, or a limit.
    """
    run_input = validated(RunAgentInput, body)
    if run_input.tools:
        raise RequestError(CLIENT_TOOLS.format(field="'tools'"), param="tools")
    check_count(len(run_input.messages), max_messages)
    return run_input


def last_user_text(run_input: RunAgentInput) -> str:
    """The text of the input's last user message: the stored session's next turn.

    Raises:
        RequestError: if there is none, or it has parts other than text.
    """
    for index in range(len(run_input.messages) - 1, -1, -1):
        message = run_input.messages[index]
        if not isinstance(message, UserMessage):
            continue
        if isinstance(message.content, str):
            return message.content
        texts: list[str] = []
        for number, part in enumerate(message.content):
            if part.type != "text":
                where = f"messages.{index}.content.{number}"
                msg = f"{where}: a {part.type} part; this server takes text parts only"
                raise RequestError(msg, param=where)
            texts.append(part.text)
        return "".join(texts)
    msg = "messages: a run needs a user message (or resume entries that answer interrupts)"
    raise RequestError(msg, param="messages")


def interrupt_id(checkpoint_id: str, call_id: str) -> str:
    """The id of the interrupt asking for a decision on ``call_id``.

    Example:
        >>> interrupt_id("0f3c", "call_1")
        '0f3c:call_1'
    """
    return f"{checkpoint_id}:{call_id}"


def resume_decisions(entries: Sequence[ResumeEntry]) -> tuple[str, dict[str, Decision]]:
    """The checkpoint the resume entries answer, and a decision per call id.

    A ``"cancelled"`` entry rejects its call; a ``"resolved"`` one carries the decision in
    its payload (``{"kind": "approve"}``, ``{"kind": "edit", "arguments": {...}}``,
    ``{"kind": "reject", "message": ...}``, ``{"kind": "respond", "message": ...}``).

    Raises:
        RequestError: for an interrupt id of no fncore checkpoint, entries of two
            checkpoints, or a payload that is not a decision.
    """
    checkpoints: set[str] = set()
    decisions: dict[str, Decision] = {}
    for index, entry in enumerate(entries):
        where = f"resume.{index}"
        checkpoint_id, sep, call_id = entry.interrupt_id.partition(":")
        if not (sep and checkpoint_id and call_id):
            msg = f"{where}.interruptId: {entry.interrupt_id!r} is not an interrupt of this server"
            raise RequestError(msg, param=f"{where}.interruptId")
        checkpoints.add(checkpoint_id)
        if entry.status == "cancelled":
            decisions[call_id] = Reject()
            continue
        try:
            decisions[call_id] = decision_of(_PAYLOAD.validate_python(entry.payload))
        except pydantic.ValidationError as exc:
            first = exc.errors()[0]
            field = location((f"{where}.payload", *first["loc"]))
            raise RequestError(f"{field}: {first['msg']}", param=field) from None
    if len(checkpoints) > 1:
        msg = f"resume: the entries answer {len(checkpoints)} checkpoints; answer one per run"
        raise RequestError(msg, param="resume")
    return checkpoints.pop(), decisions


def pause_interrupts(checkpoint_id: str, requests: Sequence[PendingRequest]) -> list[Interrupt]:
    """The interrupts of a run paused at ``checkpoint_id``: one per pending request."""
    return [
        Interrupt(
            id=interrupt_id(checkpoint_id, r.call_id),
            reason=INTERRUPT_REASON,
            message=r.description or None,
            tool_call_id=r.call_id if r.tool is not None else None,
            response_schema=DECISION_SCHEMA,
            metadata={"checkpoint_id": checkpoint_id, **pending_doc(r)},
        )
        for r in requests
    ]


def _call_end(call_id: str) -> BaseEvent:
    return ToolCallEndEvent(tool_call_id=call_id)


def _new_id(prefix: str) -> str:
    return f"{prefix}_{uuid.uuid4().hex}"


class _Translation:
    """The AG-UI events of one run, made from its fncore stream events in order."""

    __slots__ = ("_calls", "_guarded", "_message", "_run_input", "_streamed", "_text_open")

    def __init__(self, run_input: RunAgentInput) -> None:
        self._run_input = run_input
        self._message = _new_id("msg")  # the round's assistant message
        self._text_open = False
        self._streamed = False  # the round's text came as deltas
        self._guarded = False  # a guardrail stopped the stream: nothing more of it is shown
        self._calls: dict[str, bool] = {}  # call id -> ended

    def _close_text(self) -> list[BaseEvent]:
        if not self._text_open:
            return []
        self._text_open = False
        return [TextMessageEndEvent(message_id=self._message)]

    def _round_end(self, round_finished: RoundFinished) -> list[BaseEvent]:
        """Close the round's text and calls; what was not streamed comes whole.

        A model or middleware may answer without deltas (a ``model_call`` middleware that
        answers itself): its text and calls are sent whole.
        """
        events = self._close_text()
        response = round_finished.response
        if response.text and not self._streamed:
            message = self._message
            events += [
                TextMessageStartEvent(message_id=message, role="assistant"),
                TextMessageContentEvent(message_id=message, delta=response.text),
                TextMessageEndEvent(message_id=message),
            ]
        for call in response.tool_calls:
            ended = self._calls.get(call.id)
            if ended:
                continue
            if ended is None:
                events.append(self._start_call(call.id, call.name))
                if call.arguments:
                    events.append(ToolCallArgsEvent(tool_call_id=call.id, delta=call.arguments))
            self._calls[call.id] = True
            events.append(_call_end(call.id))
        return events

    def _start_call(self, call_id: str, name: str) -> BaseEvent:
        self._calls[call_id] = False
        return ToolCallStartEvent(
            tool_call_id=call_id, tool_call_name=name, parent_message_id=self._message
        )

    def events(self, event: object) -> list[BaseEvent]:
        """The AG-UI events for one fncore stream event (none for most kinds)."""
        if self._guarded and not isinstance(event, RunCompleted):
            return []
        if isinstance(event, TextDelta):
            if not event.text:
                return []
            opened: list[BaseEvent] = []
            self._streamed = True
            if not self._text_open:
                self._text_open = True
                opened.append(TextMessageStartEvent(message_id=self._message, role="assistant"))
            return [*opened, TextMessageContentEvent(message_id=self._message, delta=event.text)]
        if isinstance(event, ToolCallStarted):
            return [*self._close_text(), self._start_call(event.call_id, event.name)]
        if isinstance(event, ToolCallArgsDelta):
            if not event.delta:
                return []
            return [ToolCallArgsEvent(tool_call_id=event.call_id, delta=event.delta)]
        if isinstance(event, RoundFinished):
            return self._round_end(event)
        if isinstance(event, RoundStarted):
            closed = self._close_text()
            self._message = _new_id("msg")
            self._streamed = False
            return closed
        if isinstance(event, GuardTripped):
            # Nothing more of the stream is shown; what it opened is closed.
            self._guarded = True
            open_calls = [call_id for call_id, ended in self._calls.items() if not ended]
            return [*self._close_text(), *map(_call_end, open_calls)]
        if isinstance(event, ToolResultReady):
            result = event.result
            return [
                ToolCallResultEvent(
                    message_id=_new_id("msg"),
                    tool_call_id=result.call_id,
                    content=result.content,
                    role="tool",
                )
            ]
        if isinstance(event, RunCompleted):
            return [*self._close_text(), self._finished(event)]
        return []

    def _finished(self, completed: RunCompleted[Any]) -> BaseEvent:
        thread_id, run_id = self._run_input.thread_id, self._run_input.run_id
        outcome = completed.outcome
        if isinstance(outcome, Failure):
            error = outcome.failure()
            return RunErrorEvent(message=str(error), code=type(error).__name__)
        result = outcome.unwrap()
        usage = [
            TokenUsage(
                input_tokens=result.usage.input_tokens,
                output_tokens=result.usage.output_tokens,
                total_tokens=result.usage.total_tokens,
            )
        ]
        if result.paused is not None:
            paused = result.paused
            interrupts = pause_interrupts(paused.checkpoint_id, paused.requests)
            return RunFinishedEvent(
                thread_id=thread_id,
                run_id=run_id,
                outcome=RunFinishedInterruptOutcome(interrupts=interrupts),
                usage=usage,
            )
        return RunFinishedEvent(
            thread_id=thread_id,
            run_id=run_id,
            result=to_jsonable_python(result.output),
            usage=usage,
        )


class _AgUi:
    """The ``POST /ag-ui`` endpoint of one app."""

    __slots__ = ("agent", "max_messages", "metadata_of", "read_body", "runs")

    def __init__(
        self,
        agent: Agent[Any],
        read_body: ReadBody,
        max_messages: int,
        metadata_of: RunMetadata,
        runs: RunsLog,
    ) -> None:
        self.agent = agent
        self.read_body = read_body
        self.max_messages = max_messages
        self.metadata_of = metadata_of
        self.runs = runs

    async def endpoint(self, request: Request) -> Response:
        """``POST /ag-ui``."""
        return await self.run(request, self.metadata_of(request))

    async def _refusal(
        self, checkpoint_id: str, metadata: Mapping[str, object]
    ) -> Callable[[object], Awaitable[Failure[AgentError]]] | None:
        """How a resume of another tenant's checkpoint ends: as one of a missing checkpoint.

        A checkpoint is the caller's when its run metadata holds each item of ``metadata``
        (the caller's tenant), as in the approvals API; ``None`` then, and without metadata.
        """
        store = self.agent.sessions
        if not metadata or not isinstance(store, CheckpointStore):
            return None
        error: AgentError
        try:
            checkpoint = await store.load_checkpoint(checkpoint_id)
        except Exception as exc:  # refused: the store cannot say whose checkpoint it is
            error = _unreadable(checkpoint_id, exc)
        else:
            if checkpoint is None or all(
                checkpoint.metadata.get(key, _MISSING) == value for key, value in metadata.items()
            ):
                return None
            error = _not_found(checkpoint_id)

        async def refuse(emit: object) -> Failure[AgentError]:
            return Failure(error)

        return refuse

    async def run(self, request: Request, metadata: Mapping[str, object]) -> Response:
        """Start the run ``request`` asks for, with ``metadata``; its events as SSE."""
        try:
            run_input = parse_input(await self.read_body(request), self.max_messages)
            session_id = session_key(request, run_input.thread_id, "threadId")
            if run_input.resume:
                checkpoint_id, decisions = resume_decisions(run_input.resume)
                refusal = await self._refusal(checkpoint_id, metadata)

                def start() -> RunStream[Any]:
                    if refusal is not None:
                        return RunStream(refusal)
                    return self.agent.resume_stream(checkpoint_id, decisions, metadata=metadata)
            else:
                prompt = last_user_text(run_input)

                def start() -> RunStream[Any]:
                    return self.agent.stream(prompt, metadata=metadata, session_id=session_id)
        except RequestError as error:
            body = error_body(error.message, error.kind, param=error.param, code=error.code)
            return JSONResponse(body, status_code=error.status)
        encoder = EventEncoder(accept=request.headers.get("accept", ""))

        async def frames() -> AsyncIterator[bytes]:
            # Leaving this generator (the client went away) closes the stream: the run is
            # cancelled before its commit, and its session stays as it was.
            started = RunStartedEvent(thread_id=run_input.thread_id, run_id=run_input.run_id)
            yield encoder.encode(started).encode()
            translation = _Translation(run_input)
            with self.runs.record("ag-ui", session_id, tenant_of(request)) as record:
                stream = start()  # in the block: the log takes the run's spans
                async for event in stream:
                    # The events of one fncore event in one write: fewer sends, same bytes.
                    out = translation.events(event)
                    if out:
                        yield "".join(map(encoder.encode, out)).encode()
                record.finish(await stream.result())

        return EventSourceResponse(frames(), media_type=encoder.get_content_type())


def agui_routes(
    agent: Agent[Any],
    read_body: ReadBody,
    max_messages: int,
    metadata_of: RunMetadata | None = None,
    runs: RunsLog | None = None,
) -> list[Route]:
    """The ``POST /ag-ui`` route: ``agent`` behind the AG-UI protocol.

    Args:
        agent: The agent to serve.
        read_body: Reads a request's body within the app's size limit.
        max_messages: The most messages one input may carry; more get a 400.
        metadata_of: The run metadata of a request (default: none).
        runs: The log that records each run (default: a log of its own).

    Returns:
        The routes to add to the app.
    """
    endpoint = _AgUi(
        agent,
        read_body,
        max_messages,
        metadata_of or (lambda request: {}),
        RunsLog() if runs is None else runs,
    )
    return [Route("/ag-ui", endpoint.endpoint, methods=["POST"])]

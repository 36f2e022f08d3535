"""One context type per position: what a middleware there receives.

Contexts are immutable. To change what flows inward, pass a changed copy to ``call_next``:
``await call_next(dataclasses.replace(ctx, messages=...))``.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, ParamSpec, Protocol, TypeVar, final, overload

from pydantic import BaseModel
from returns.result import Failure

from fncore.core._errors import AgentError, MiddlewareError
from fncore.core._events import STREAM_EVENT_TYPES, StreamEvent
from fncore.core._messages import Message, ToolCallPart
from fncore.core._model import Model, ModelRequest, ModelResponse, ModelSettings, ToolSpec
from fncore.core._pause import Decision
from fncore.core._position_names import MODEL_CALL, RUN, Position
from fncore.core._resume import Resume
from fncore.core._session import Session
from fncore.core._state import State
from fncore.core._tool_choice import ToolChoice
from fncore.core._tools import Tool
from fncore.core._value import value

if TYPE_CHECKING:
    from fncore.core._outcomes import Outcome

__all__ = [
    "CompressContext",
    "Emit",
    "EventMap",
    "EventMapFailed",
    "ModelCallContext",
    "ReasoningContext",
    "RunContext",
    "RunInfo",
    "SystemPromptContext",
    "ToolCallContext",
]

_T = TypeVar("_T")
_P = ParamSpec("_P")
NO_DECISIONS: Mapping[str, Decision] = MappingProxyType({})
"""The decisions of a run that is not a resume (`RunInfo.decisions`): none."""

Emit = Callable[[StreamEvent], None]
"""Sends one event to the stream's consumer."""

EventMap = Callable[[StreamEvent], StreamEvent | None]
"""Maps a streamed event to another, or to ``None`` to drop it."""

ModelCaller = Callable[
    ["RunInfo", ModelRequest, "Model | None"], Awaitable["Outcome[ModelResponse]"]
]
"""How a run calls its agent's model through the ``model_call`` onion (internal)."""


class Steps(Protocol):
    """The step boundary a durable engine gives a run (``Runner.start(..., steps=...)``).

    Exported as ``fncore.runtime.Steps``, where `fncore.runtime._steps` says what the steps
    of a run are. Steps start in the order the run reaches them, except the tool calls of
    one round: they run concurrently, so their slots are drawn in call order (`reserve`)
    before any starts. Every value a step returns pickles.
    """

    def reserve(self, count: int) -> Sequence[object]:
        """``count`` opaque step slots, drawn now, in order."""
        ...

    async def step(
        self, name: str, thunk: Callable[[], Awaitable[_T]], slot: object | None = None
    ) -> _T:
        """Run ``thunk`` as one recorded step (at ``slot`` if given); on replay, the record.

        A ``BaseException`` that is not an ``Exception`` (a cancellation, a crash)
        propagates, and nothing is recorded: the step runs again on replay.
        """
        ...


class EventMapFailed(Exception):
    """Raised out of ``emit`` when an event map raises or returns something not an event.

    The code that emits (the model stream, the loop) turns it into ``Failure(error)``, so
    the failure is blamed on the middleware that installed the map, not on the model.
    """

    def __init__(self, error: MiddlewareError) -> None:
        super().__init__(error.message)
        self.error = error
        """The error value: which map, at which position, what went wrong."""


def _map_error(fn: EventMap, position: Position, problem: str) -> EventMapFailed:
    qualname = str(getattr(fn, "__qualname__", type(fn).__name__))
    # A map defined inside a middleware (the usual way) is named after it: f.<locals>.g.
    owner = (
        qualname.rsplit(".<locals>.", 1)[0].rsplit(".", 1)[-1]
        if ".<locals>." in qualname
        else qualname
    )
    return EventMapFailed(
        MiddlewareError(
            message=f"its event map {qualname!r} {problem}",
            position=position,
            middleware=owner,
        )
    )


@final
@value
@dataclass(frozen=True, slots=True)
class RunInfo:
    """What every context of one run shares: its id, metadata, state and event sink."""

    run_id: str
    """A unique id for this run."""
    metadata: Mapping[str, object]
    """Request metadata passed to ``Agent.run(..., metadata=...)``; read-only."""
    state: State
    """Reply-scoped state (see `StateKey`): fresh for every run, dropped when it ends."""
    emit: Emit | None = None
    """Where streamed events go; ``None`` when the run is not streaming."""
    session_id: str | None = None
    """The session this run continues, if any."""
    session_state: State = field(default_factory=State)
    """Session-scoped state: loaded with the session and committed with it when the run
    succeeds. Without a session it starts empty and ends with the run."""
    agent: str = "agent"
    """The name of the agent running (``Agent(name=...)``), for traces and logs."""
    calling: str | None = None
    """Inside a middleware's own model call (`call_model`), the name it gave as ``by``;
    ``None`` for the agent's own calls. A ``model_call`` middleware that must not act on
    such calls (or would re-enter itself) passes them on: ``if ctx.run.calling: ...``."""
    decisions: Mapping[str, Decision] = field(default_factory=lambda: NO_DECISIONS)
    """In a resumed reply, the human's decisions by call id (see `decision`); empty
    otherwise."""
    _caller: ModelCaller | None = field(default=None, repr=False, compare=False)
    _resume: Resume | None = field(default=None, repr=False, compare=False)
    _steps: Steps | None = field(default=None, repr=False, compare=False)
    """A durable run's step boundary (`Steps`); ``None`` for any other run."""

    def decision(self, call_id: str) -> Decision | None:
        """The decision a human took on request ``call_id`` of a paused run, if any.

        A middleware that paused for ``call_id`` finds the answer here when the run is
        resumed (the ``approve`` built-in reads it this way).
        """
        return self.decisions.get(call_id)

    @property
    def streaming(self) -> bool:
        """Whether the run is streaming events."""
        return self.emit is not None

    async def call_model(
        self, request: ModelRequest, *, model: Model | None = None, by: str = "middleware"
    ) -> Outcome[ModelResponse]:
        """Send ``request`` through the agent's ``model_call`` middleware, then the model.

        For middleware that need a model of their own (to summarise, to emulate a tool, to
        moderate): tracing, limits, budgets and retries see the call like any other, and
        the usage of its answer adds up in the run's `RunResult.usage` (a pause keeps it).
        It streams nothing to the run's consumer, not even its usage: the stream's
        `RunCompleted` holds the total. ``model`` defaults to the agent's; ``by`` names the
        caller, and the call's contexts carry it as `calling`.

        Returns:
            The model's response, or the error value (a run without an agent, e.g. a
            context built by hand in a test, answers with an `AgentError` saying so).
        """
        caller = self._caller
        if caller is None:
            return Failure(
                AgentError(message="call_model needs a run of an Agent; this RunInfo has none")
            )
        return await caller(replace(self, calling=by), request, model)

    def map_events(self, fn: EventMap, position: Position = RUN) -> RunInfo:
        """A copy whose events pass through ``fn`` before reaching the consumer.

        Inner layers see each event first: the innermost map runs first. If ``fn`` raises,
        or returns something that is not a stream event, the run fails with a
        `MiddlewareError` naming the middleware that installed it (the function ``fn`` is
        defined in) and ``position``.
        """
        emit = self.emit
        if emit is None:
            return self

        def mapped(event: StreamEvent) -> None:
            try:
                out = fn(event)
            except Exception as exc:
                raise _map_error(fn, position, f"raised {type(exc).__name__}: {exc}") from exc
            if out is None:
                return
            if type(out) not in STREAM_EVENT_TYPES:
                problem = f"returned {type(out).__name__}, not a stream event (or None to drop it)"
                raise _map_error(fn, position, problem)
            emit(out)

        return replace(self, emit=mapped)


@final
@value
@dataclass(frozen=True, slots=True)
class RunContext:
    """Context at ``run``: one whole reply, every round and tool call."""

    run: RunInfo
    """The run."""
    messages: tuple[Message, ...]
    """This run's input messages (the session's history is in ``session``)."""
    tool_choice: ToolChoice
    """How the model may use tools."""
    settings: ModelSettings
    """Sampling settings for every model call."""
    session: Session | None = None
    """The session this run continues, as loaded (``None`` without one): its history comes
    before ``messages``, and the run commits to it. Replace it to continue another
    conversation, or to fork this one: ``Session("fork", ctx.session.messages)``."""
    _loaded: Session | None = field(default=None, repr=False, compare=False)
    """The session the agent loaded, so the loop knows whether a middleware replaced it."""

    def map_events(self, fn: EventMap) -> RunContext:
        """A copy whose streamed events (all of the run's) pass through ``fn``."""
        return replace(self, run=self.run.map_events(fn, RUN))


@final
@value
@dataclass(frozen=True, slots=True)
class ReasoningContext:
    """Context at ``reasoning``: one round's prompt assembly, model call and decoding."""

    run: RunInfo
    """The run."""
    round: int
    """The round's number, from 1."""
    messages: tuple[Message, ...]
    """The history for this round."""
    tools: tuple[Tool, ...]
    """The tools offered this round."""
    tool_choice: ToolChoice
    """How the model may use them this round; the loop follows what is sent."""
    settings: ModelSettings
    """Sampling settings."""
    _paired: tuple[Message, ...] | None = field(default=None, repr=False, compare=False)
    """The history the loop checked, so only one a middleware changed is checked again."""
    _prompt: str | None = field(default=None, repr=False, compare=False)
    """The round's system prompt if it is assembled already (for ``compress_context``)."""
    _choice: ToolChoice | None = field(default=None, repr=False, compare=False)
    """The tool choice the loop chose, so a response returns what was sent only when a
    middleware changed it."""


@final
@value
@dataclass(frozen=True, slots=True)
class ModelCallContext:
    """Context at ``model_call``: one request to the model, streaming or not."""

    run: RunInfo
    """The run."""
    request: ModelRequest
    """The request to send."""
    model: Model
    """The model that will receive it; replace it to route elsewhere."""
    _asked: ModelRequest | None = field(default=None, repr=False, compare=False)
    """The request as the round built it (its history checked); ``None`` for a
    middleware's own call."""

    def map_events(self, fn: EventMap) -> ModelCallContext:
        """A copy whose streamed chunks pass through ``fn`` (no-op when not streaming)."""
        return replace(self, run=self.run.map_events(fn, MODEL_CALL))


@final
@value
@dataclass(frozen=True, slots=True)
class ToolCallContext:
    """Context at ``tool_call``: one tool invocation with validated arguments."""

    run: RunInfo
    """The run."""
    call: ToolCallPart
    """The call as the model made it."""
    tool: Tool
    """The tool to invoke."""
    args: BaseModel
    """The validated arguments; replace them (or use `with_args`) to change what the tool
    gets."""

    def arg(self, name: str, kind: type[_T]) -> _T:
        """The validated argument ``name``, typed as ``kind`` (checked with ``isinstance``).

        Raises:
            KeyError: if the tool has no argument ``name``.
            TypeError: if the value is not a ``kind``.

        Example:
            >>> def add(a: int, b: int) -> int:
            ...     return a + b
            >>> t = Tool.from_function(add)
            >>> args = t.check('{"a": 1, "b": 2}')
            >>> ctx = ToolCallContext(None, ToolCallPart("c", "add"), t, args)
            >>> ctx.arg("a", int) + 1
            2
        """
        fields = type(self.args).model_fields
        extra = self.args.__pydantic_extra__ or {}  # an MCP tool's arguments are all extra
        if name not in fields and name not in extra:
            known = ", ".join([*fields, *extra])
            msg = f"tool {self.tool.name!r} has no argument {name!r} (it has: {known})"
            raise KeyError(msg)
        found = extra[name] if name in extra else getattr(self.args, name)
        if not isinstance(found, kind):
            msg = (
                f"argument {name!r} of tool {self.tool.name!r} is {type(found).__name__}, "
                f"not {kind.__name__}"
            )
            raise TypeError(msg)
        return found

    @overload
    def with_args(
        self, function: Callable[_P, object], /, *args: _P.args, **kwargs: _P.kwargs
    ) -> ToolCallContext: ...
    @overload
    def with_args(self, /, **changes: object) -> ToolCallContext: ...
    def with_args(
        self, function: Callable[..., object] | None = None, /, *args: object, **changes: object
    ) -> ToolCallContext:
        """A copy whose arguments have the changes applied, validated again by the tool.

        Two forms. ``ctx.with_args(add, a=1, b=5)`` names the function the tool was made
        from and passes arguments as a call to it would, so mypy checks their names and
        types (and, as for a call, asks for every required one). ``ctx.with_args(b=5)``
        changes only the named arguments, and works for any tool, also those that are no
        Python function (MCP tools, sub-agents); mypy cannot check those values: the tool's
        schema checks them when this runs. In both forms an argument not given keeps its
        current value.

        Raises:
            pydantic.ValidationError: if a changed value does not fit the tool's schema.
            ValueError: if ``function`` is not the function this call's tool was made from.
            TypeError: if the arguments do not fit ``function``'s signature.

        Example:
            >>> def add(a: int, b: int) -> int:
            ...     return a + b
            >>> t = Tool.from_function(add)
            >>> args = t.check('{"a": 1, "b": 2}')
            >>> ctx = ToolCallContext(None, ToolCallPart("c", "add"), t, args)
            >>> ctx.with_args(b=5).arg("b", int)
            5
            >>> ctx.with_args(add, a=3, b=4).args
            add_args(a=3, b=4)
        """
        if function is not None:
            if function != self.tool.function:
                name = getattr(function, "__name__", type(function).__name__)
                msg = (
                    f"with_args({name}, ...) got the arguments of {name!r}, but this call is "
                    f"to tool {self.tool.name!r}: pass the function that tool was made from, "
                    f"or register the middleware with tools=[...] naming only its tools"
                )
                raise ValueError(msg)
            changes = dict(inspect.signature(function).bind_partial(*args, **changes).arguments)
        elif args:
            msg = "with_args(...) takes the tool's function first, then its arguments"
            raise TypeError(msg)
        data = {name: getattr(self.args, name) for name in type(self.args).model_fields}
        data.update(self.args.__pydantic_extra__ or {})
        data.update(changes)
        return replace(self, args=self.tool.args_model.model_validate(data))


@final
@value
@dataclass(frozen=True, slots=True)
class CompressContext:
    """Context at ``compress_context``: the compaction decision before each round."""

    run: RunInfo
    """The run."""
    round: int
    """The round about to start."""
    messages: tuple[Message, ...]
    """The history; return a shorter one to compact it."""
    instructions: str = ""
    """This round's system prompt, assembled (the ``system_prompt`` transformers ran), so a
    compressor can count the prompt's tokens too."""
    tools: tuple[ToolSpec, ...] = ()
    """The tool definitions the round offers the model (the agent's tools, and the output
    tool of an ``output_type``), so a compressor can count their tokens too; a ``reasoning``
    middleware may still offer fewer."""


@final
@value
@dataclass(frozen=True, slots=True)
class SystemPromptContext:
    """Context at ``system_prompt``: assembling one round's system prompt."""

    run: RunInfo
    """The run."""
    round: int
    """The round being prepared."""
    messages: tuple[Message, ...]
    """The history the prompt goes with."""

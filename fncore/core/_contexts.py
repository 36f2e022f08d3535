"""One context type per position: what a middleware there receives.

Contexts are immutable. To change what flows inward, pass a changed copy to ``call_next``:
``await call_next(dataclasses.replace(ctx, messages=...))``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace
from typing import final

from pydantic import BaseModel

from fncore.core._events import StreamEvent
from fncore.core._messages import Message, ToolCallPart
from fncore.core._model import Model, ModelRequest, ModelSettings, ToolChoice
from fncore.core._state import RunState
from fncore.core._tools import Tool
from fncore.core._value import value

Emit = Callable[[StreamEvent], None]
"""Sends one event to the stream's consumer."""

EventMap = Callable[[StreamEvent], StreamEvent | None]
"""Maps a streamed event to another, or to ``None`` to drop it."""


@final
@value
@dataclass(frozen=True, slots=True)
class RunInfo:
    """What every context of one run shares: its id, metadata, state and event sink."""

    run_id: str
    """A unique id for this run."""
    metadata: Mapping[str, object]
    """Request metadata passed to ``Agent.run(..., metadata=...)``; read-only."""
    state: RunState
    """Typed per-run state (see `StateKey`)."""
    emit: Emit | None = None
    """Where streamed events go; ``None`` when the run is not streaming."""
    session_id: str | None = None
    """The session this run continues, if any."""

    @property
    def streaming(self) -> bool:
        """Whether the run is streaming events."""
        return self.emit is not None

    def map_events(self, fn: EventMap) -> RunInfo:
        """A copy whose events pass through ``fn`` before reaching the consumer.

        Inner layers see each event first: the innermost map runs first.
        """
        emit = self.emit
        if emit is None:
            return self

        def mapped(event: StreamEvent) -> None:
            out = fn(event)
            if out is not None:
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
    """The input messages, session history included."""
    tool_choice: ToolChoice
    """How the model may use tools."""
    settings: ModelSettings
    """Sampling settings for every model call."""

    def map_events(self, fn: EventMap) -> RunContext:
        """A copy whose streamed events (all of the run's) pass through ``fn``."""
        return replace(self, run=self.run.map_events(fn))


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
    """How the model may use them this round."""
    settings: ModelSettings
    """Sampling settings."""


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

    def map_events(self, fn: EventMap) -> ModelCallContext:
        """A copy whose streamed chunks pass through ``fn`` (no-op when not streaming)."""
        return replace(self, run=self.run.map_events(fn))


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
    """The validated arguments; replace them to change what the tool gets."""


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

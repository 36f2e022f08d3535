"""The model interface: requests, responses, stream deltas and the `Model` protocol."""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import Literal, Protocol, TypeAlias, final, runtime_checkable

from returns.result import Result

from fncore.core._errors import ModelError
from fncore.core._messages import Message, Part, ReasoningPart, TextPart, ToolCallPart
from fncore.core._tool_choice import ToolChoice
from fncore.core._usage import NO_USAGE, Usage
from fncore.core._value import value

__all__ = [
    "FinishReason",
    "Model",
    "ModelRequest",
    "ModelResponse",
    "ModelSettings",
    "ModelStreamItem",
    "OutputSchema",
    "ReasoningDelta",
    "ResponseAssembler",
    "StreamDelta",
    "TextDelta",
    "ToolCallArgsDelta",
    "ToolCallStarted",
    "ToolSpec",
    "UsageReported",
]

_EMPTY: Mapping[str, object] = MappingProxyType({})


@final
@dataclass(frozen=True, slots=True)
class ModelSettings:
    """Sampling and limit settings passed to the provider. ``None`` means provider default."""

    temperature: float | None = None
    """Sampling temperature."""
    max_tokens: int | None = None
    """Cap on generated tokens."""
    top_p: float | None = None
    """Nucleus sampling mass."""
    stop: tuple[str, ...] = ()
    """Stop sequences."""
    seed: int | None = None
    """Sampling seed, where the provider supports one."""
    parallel_tool_calls: bool | None = None
    """Whether the model may ask for several tool calls at once."""
    extra: Mapping[str, object] = field(default_factory=lambda: _EMPTY)
    """Provider-specific options, passed through unchanged."""


@final
@dataclass(frozen=True, slots=True)
class ToolSpec:
    """What the model sees of a tool: name, description and JSON schema of its arguments."""

    name: str
    """The tool's name."""
    description: str
    """What the tool does, for the model."""
    parameters: Mapping[str, object]
    """JSON schema of the arguments object."""
    strict: bool = False
    """Whether the schema is valid for providers' strict mode."""


@final
@dataclass(frozen=True, slots=True)
class OutputSchema:
    """The JSON schema a model's final answer must fit, for providers' native structured output.

    An agent with an ``output_type`` (and the ``native`` output strategy) sets it on each
    request; adapters send it as OpenAI's ``response_format`` / ``text.format`` or
    Anthropic's ``output_config.format``. The root is always a JSON object.

    Example:
        >>> OutputSchema("Weather", {"type": "object", "properties": {}}).name
        'Weather'
    """

    name: str
    """A name for the schema (OpenAI requires one)."""
    schema: Mapping[str, object]
    """The JSON schema of the answer: an object."""
    description: str = ""
    """What the answer is, for the model."""
    strict: bool = True
    """Ask for strict schema adherence where the provider has it (and the schema allows)."""


@final
@value
@dataclass(frozen=True, slots=True)
class ModelRequest:
    """One request to a model."""

    messages: tuple[Message, ...]
    """The conversation to send (without the system prompt)."""
    instructions: str = ""
    """The assembled system prompt; empty for none."""
    tools: tuple[ToolSpec, ...] = ()
    """The tools offered."""
    tool_choice: ToolChoice = "auto"
    """How the model may use the tools."""
    settings: ModelSettings = ModelSettings()
    """Sampling settings."""
    cache_instructions: bool = False
    """Ask the provider to cache the system prompt (a prompt-cache breakpoint after it)."""
    cache_tools: bool = False
    """Ask the provider to cache the tool definitions."""
    cache_ttl: Literal["5m", "1h"] | None = None
    """How long the provider keeps what this request's cache breakpoints mark (Anthropic's
    ``ttl``: ``"5m"`` or ``"1h"``); ``None``: the provider's default (5 minutes)."""
    output_schema: OutputSchema | None = None
    """The JSON schema the final answer must fit (native structured output); ``None``: any
    text."""


FinishReason: TypeAlias = Literal["stop", "tool_calls", "length", "content_filter", "error"]
"""Why the model stopped generating."""


@final
@value
@dataclass(frozen=True, slots=True)
class ModelResponse:
    """What a model answered.

    Example:
        >>> ModelResponse(Message.assistant("5")).text
        '5'
    """

    message: Message
    """The assistant message: text, reasoning and tool-call parts."""
    usage: Usage = NO_USAGE
    """Tokens this response cost."""
    finish_reason: FinishReason = "stop"
    """Why generation stopped."""
    model_name: str = ""
    """The model that answered, as the provider reports it."""

    @property
    def text(self) -> str:
        """The text of the answer."""
        return self.message.text

    @property
    def tool_calls(self) -> tuple[ToolCallPart, ...]:
        """The tool calls asked for, in order."""
        return self.message.tool_calls


@final
@value
@dataclass(frozen=True, slots=True)
class TextDelta:
    """A piece of answer text, streamed."""

    text: str
    """The new text."""


@final
@value
@dataclass(frozen=True, slots=True)
class ReasoningDelta:
    """A piece of reasoning text, streamed."""

    text: str
    """The new reasoning text."""


@final
@value
@dataclass(frozen=True, slots=True)
class ToolCallStarted:
    """The model began a tool call."""

    call_id: str
    """The call's id."""
    name: str
    """The tool's name."""


@final
@value
@dataclass(frozen=True, slots=True)
class ToolCallArgsDelta:
    """A fragment of a tool call's JSON arguments, streamed."""

    call_id: str
    """The call's id."""
    delta: str
    """The new fragment."""


@final
@value
@dataclass(frozen=True, slots=True)
class UsageReported:
    """Token usage, usually at the end of a stream."""

    usage: Usage
    """The usage reported."""


StreamDelta: TypeAlias = (
    TextDelta | ReasoningDelta | ToolCallStarted | ToolCallArgsDelta | UsageReported
)
"""What a model stream yields before its final response."""

STREAM_DELTA_TYPES: frozenset[type] = frozenset(
    {TextDelta, ReasoningDelta, ToolCallStarted, ToolCallArgsDelta, UsageReported}
)
"""The types of `StreamDelta`, for checking what a model streams."""

ModelStreamItem: TypeAlias = StreamDelta | ModelResponse | ModelError
"""A model stream yields deltas, then the final `ModelResponse` (or a `ModelError`)."""


@runtime_checkable
class Model(Protocol):
    """A chat model. Adapters and the offline models in `fncore.testing` implement it.

    ``request`` returns the whole response; ``stream`` yields deltas and then the same
    response ``request`` would have returned. Failures are values (`ModelError`), never
    exceptions.
    """

    @property
    def name(self) -> str:
        """The model's name, for traces and logs."""
        ...

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Send ``request`` and return the complete response."""
        ...

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Send ``request`` and yield deltas, then the final response or error."""
        ...


class ResponseAssembler:
    """Builds a `ModelResponse` from stream deltas, for models and adapters that stream.

    Example:
        >>> a = ResponseAssembler()
        >>> for d in (TextDelta("4"), TextDelta("2")):
        ...     a.add(d)
        >>> a.finish().text
        '42'
    """

    __slots__ = ("_calls", "_order", "_reasoning", "_text", "_usage")

    def __init__(self) -> None:
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[str, tuple[str, list[str]]] = {}
        self._order: list[str] = []
        self._usage = Usage()

    def add(self, delta: StreamDelta) -> None:
        """Fold one delta into the response being built."""
        if type(delta) is TextDelta:
            self._text.append(delta.text)
        elif type(delta) is ReasoningDelta:
            self._reasoning.append(delta.text)
        elif type(delta) is ToolCallStarted:
            self._calls[delta.call_id] = (delta.name, [])
            self._order.append(delta.call_id)
        elif type(delta) is ToolCallArgsDelta:
            call = self._calls.get(delta.call_id)
            if call is None:  # arguments before the start: keep them, the name stays unknown
                call = self._calls[delta.call_id] = ("", [])
                self._order.append(delta.call_id)
            call[1].append(delta.delta)
        elif type(delta) is UsageReported:
            self._usage = self._usage + delta.usage

    def finish(
        self, finish_reason: FinishReason | None = None, model_name: str = ""
    ) -> ModelResponse:
        """Return the response built so far."""
        parts: list[Part] = []
        if self._reasoning:
            parts.append(ReasoningPart("".join(self._reasoning)))
        if self._text:
            parts.append(TextPart("".join(self._text)))
        for call_id in self._order:
            name, args = self._calls[call_id]
            parts.append(ToolCallPart(call_id, name, "".join(args) or "{}"))
        reason: FinishReason = finish_reason or ("tool_calls" if self._order else "stop")
        return ModelResponse(Message("assistant", tuple(parts)), self._usage, reason, model_name)

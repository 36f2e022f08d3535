"""Decoding of a raw Messages API event stream into fncore deltas and a final response.

Events: ``message_start`` (model, input usage), ``content_block_start`` (a text, thinking,
redacted-thinking or tool-use block begins), ``content_block_delta`` (``text_delta``,
``thinking_delta``, ``signature_delta``, ``input_json_delta``), ``content_block_stop``,
``message_delta`` (stop reason, final usage), ``message_stop``. The SDK turns an ``error``
event into an exception and skips ``ping``.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field

from anthropic.types import (
    InputJSONDelta,
    RawContentBlockDeltaEvent,
    RawContentBlockStartEvent,
    RawMessageDeltaEvent,
    RawMessageStartEvent,
    RawMessageStopEvent,
    RawMessageStreamEvent,
    RedactedThinkingBlock,
    SignatureDelta,
    TextBlock,
    ThinkingBlock,
    ThinkingDelta,
    ToolUseBlock,
)
from anthropic.types import TextDelta as WireTextDelta

from fncore.adapter import (
    Endpoint,
    Message,
    ModelError,
    ModelResponse,
    Part,
    ReasoningDelta,
    StreamDelta,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    Usage,
    UsageReported,
    usable_call_id,
)
from fncore_anthropic._decode import (
    call_part,
    finish_reason,
    reasoning_part,
    redacted_part,
    text_part,
    usage_of,
)


@dataclass(slots=True)
class _Block:
    """One content block being streamed."""

    kind: str
    """``text``, ``thinking``, ``redacted_thinking``, ``tool_use`` or ``other`` (ignored)."""
    chunks: list[str] = field(default_factory=list)
    """Text, thinking text, or JSON fragments of the tool input."""
    signature: list[str] = field(default_factory=list)
    data: str = ""
    call_id: str = ""
    name: str = ""
    start_input: str = "{}"
    """The tool input of ``content_block_start``, used when no fragment follows."""

    def part(self) -> Part | None:
        text = "".join(self.chunks)
        if self.kind == "text":
            return text_part(text)
        if self.kind == "thinking":
            return reasoning_part(text, "".join(self.signature))
        if self.kind == "redacted_thinking":
            return redacted_part(self.data)
        if self.kind == "tool_use":
            return call_part(self.call_id, self.name, text if text.strip() else self.start_input)
        return None


class StreamDecoder:
    """Folds raw events into deltas and, after ``message_stop``, the final response.

    A `fncore.adapter.StreamDecoder`: `done` at ``message_stop``, the terminal event.
    """

    __slots__ = (
        "_blocks",
        "_calls",
        "_delta_usage",
        "_endpoint",
        "_model",
        "_start_usage",
        "_stop_reason",
        "done",
    )

    def __init__(self, endpoint: Endpoint) -> None:
        self._endpoint = endpoint
        self._blocks: dict[int, _Block] = {}
        self._calls = 0
        """How many ``tool_use`` blocks started: the index of the next one."""
        self._model = ""
        self._stop_reason: str | None = None
        self._start_usage: tuple[int | None, ...] = (None,) * 5
        self._delta_usage: tuple[int | None, ...] = (None,) * 5
        self.done = False
        """Whether ``message_stop`` arrived."""

    def feed(self, event: RawMessageStreamEvent) -> list[StreamDelta]:
        """Take one event; return the deltas it gives.

        Raises:
            ValueError: for an event that cannot be decoded (a delta for a block that
                never started), which `map_exception` reports as `StreamInterrupted`.
        """
        kind = event.type  # the SDK builds unknown event types as some known class
        if kind == "content_block_delta" and isinstance(event, RawContentBlockDeltaEvent):
            return self._delta(event)
        if kind == "content_block_start" and isinstance(event, RawContentBlockStartEvent):
            return self._start(event)
        if kind == "message_start" and isinstance(event, RawMessageStartEvent):
            self._model = event.message.model
            start = event.message.usage
            details = start.output_tokens_details
            self._start_usage = (
                start.input_tokens,
                start.output_tokens,
                start.cache_read_input_tokens,
                start.cache_creation_input_tokens,
                details.thinking_tokens if details is not None else None,
            )
        elif kind == "message_delta" and isinstance(event, RawMessageDeltaEvent):
            self._stop_reason = event.delta.stop_reason
            u = event.usage
            details = u.output_tokens_details
            self._delta_usage = (
                u.input_tokens,
                u.output_tokens,
                u.cache_read_input_tokens,
                u.cache_creation_input_tokens,
                details.thinking_tokens if details is not None else None,
            )
        elif kind == "message_stop" and isinstance(event, RawMessageStopEvent):
            self.done = True
            return [UsageReported(self.usage())]
        return []  # content_block_stop, and event types newer than this adapter

    def usage(self) -> Usage:
        """The usage so far: ``message_delta``'s cumulative counts over ``message_start``'s."""
        counts = [
            late if late is not None else early
            for early, late in zip(self._start_usage, self._delta_usage, strict=True)
        ]
        return usage_of(*counts)

    def finish(self) -> tuple[list[StreamDelta], ModelResponse | ModelError]:
        """The response after ``message_stop``; `StreamInterrupted` if it never came."""
        if not self.done:
            return [], self._endpoint.interrupted("the stream ended before message_stop")
        return [], self.response()

    def response(self) -> ModelResponse:
        """The complete response, the same `decode_message` gives for the same content."""
        parts = [self._blocks[i].part() for i in sorted(self._blocks)]
        kept = tuple(p for p in parts if p is not None)
        has_calls = any(isinstance(p, ToolCallPart) for p in kept)
        return ModelResponse(
            Message("assistant", kept),
            self.usage(),
            finish_reason(self._stop_reason, has_calls=has_calls),
            self._model,
        )

    def _start(self, event: RawContentBlockStartEvent) -> list[StreamDelta]:
        block = event.content_block
        kind = block.type
        if kind == "text" and isinstance(block, TextBlock):
            self._blocks[event.index] = _Block("text", [block.text])
            return [TextDelta(block.text)] if block.text else []
        if kind == "thinking" and isinstance(block, ThinkingBlock):
            self._blocks[event.index] = _Block("thinking", [block.thinking], [block.signature])
            return [ReasoningDelta(block.thinking)] if block.thinking else []
        if kind == "redacted_thinking" and isinstance(block, RedactedThinkingBlock):
            self._blocks[event.index] = _Block("redacted_thinking", data=block.data)
            return []
        if kind == "tool_use" and isinstance(block, ToolUseBlock):
            call_id = usable_call_id(getattr(block, "id", None), self._calls)
            self._calls += 1
            self._blocks[event.index] = _Block(
                "tool_use", call_id=call_id, name=block.name, start_input=json.dumps(block.input)
            )
            return [ToolCallStarted(call_id, block.name)]
        self._blocks[event.index] = _Block("other")
        return []

    def _delta(self, event: RawContentBlockDeltaEvent) -> list[StreamDelta]:
        block = self._blocks.get(event.index)
        if block is None:
            msg = f"a content_block_delta for block {event.index}, which never started"
            raise ValueError(msg)
        delta = event.delta
        if block.kind == "text" and delta.type == "text_delta" and isinstance(delta, WireTextDelta):
            block.chunks.append(delta.text)
            return [TextDelta(delta.text)] if delta.text else []
        if block.kind == "thinking":
            if delta.type == "thinking_delta" and isinstance(delta, ThinkingDelta):
                block.chunks.append(delta.thinking)
                return [ReasoningDelta(delta.thinking)] if delta.thinking else []
            if delta.type == "signature_delta" and isinstance(delta, SignatureDelta):
                block.signature.append(delta.signature)
        elif (
            block.kind == "tool_use"
            and delta.type == "input_json_delta"
            and isinstance(delta, InputJSONDelta)
        ):
            block.chunks.append(delta.partial_json)
            if delta.partial_json:
                return [ToolCallArgsDelta(block.call_id, delta.partial_json)]
        return []  # citations, and deltas of blocks fncore does not represent

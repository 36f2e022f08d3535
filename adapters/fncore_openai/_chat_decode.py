"""Decoding Chat Completions answers: whole completions and streamed chunks."""

from __future__ import annotations

from dataclasses import dataclass, field

from openai.types import CompletionUsage
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from pydantic import BaseModel

from fncore.adapter import (
    Endpoint,
    FinishReason,
    Message,
    ModelError,
    ModelResponse,
    Part,
    ReasoningDelta,
    ReasoningPart,
    StreamDelta,
    TextDelta,
    TextPart,
    ToolCallArgsDelta,
    ToolCallPart,
    ToolCallStarted,
    Usage,
    UsageReported,
    usable_call_id,
)
from fncore_openai._calls import arguments_text

_FINISH: dict[str, FinishReason] = {
    "stop": "stop",
    "length": "length",
    "tool_calls": "tool_calls",
    "function_call": "tool_calls",
    "content_filter": "content_filter",
}


def chat_usage(usage: CompletionUsage | None) -> Usage:
    """The fncore `Usage` of Chat Completions usage (one request, even when ``None``)."""
    if usage is None:
        return Usage(requests=1)
    prompt = usage.prompt_tokens_details
    completion = usage.completion_tokens_details
    return Usage(
        input_tokens=usage.prompt_tokens or 0,
        output_tokens=usage.completion_tokens or 0,
        cache_read_tokens=(prompt.cached_tokens or 0) if prompt else 0,
        cache_write_tokens=(prompt.cache_write_tokens or 0) if prompt else 0,
        reasoning_tokens=(completion.reasoning_tokens or 0) if completion else 0,
        requests=1,
    )


def finish_reason(raw: str | None, has_calls: bool) -> FinishReason:
    """The fncore finish reason; tool calls win over ``stop`` (some servers say ``stop``)."""
    reason = _FINISH.get(raw or "", "stop")
    if has_calls and reason == "stop":
        return "tool_calls"
    return reason


def reasoning_of(obj: BaseModel | None) -> str:
    """The reasoning text compatible servers add (``reasoning_content``, ``reasoning``)."""
    extra = (obj.model_extra if obj is not None else None) or {}
    for key in ("reasoning_content", "reasoning"):
        value = extra.get(key)
        if isinstance(value, str) and value:
            return value
    return ""


def decode_completion(completion: object, fallback_name: str) -> ModelResponse:
    """The `ModelResponse` for a whole completion, as the SDK parsed the body.

    Raises:
        ValueError: if ``completion`` is not a chat completion whose first choice holds a
            message (an HTML page, ``{}``, an error object sent with status 200).
    """
    if not isinstance(completion, ChatCompletion):  # the SDK gives a non-JSON body as text
        msg = f"a chat completion is a JSON object, not {type(completion).__name__}"
        raise ValueError(msg)
    choices = getattr(completion, "choices", None)  # the SDK does not check its fields
    if not isinstance(choices, list) or not choices:
        msg = "the completion holds no choices"
        raise ValueError(msg)
    choice = choices[0]
    message = getattr(choice, "message", None)
    if message is None:
        msg = "the completion's first choice holds no message"
        raise ValueError(msg)
    parts: list[Part] = []
    reasoning = reasoning_of(message)
    if reasoning:
        parts.append(ReasoningPart(reasoning))
    text = (message.content or "") + (message.refusal or "")
    if text:
        parts.append(TextPart(text))
    functions = [
        (getattr(c, "id", None), f)
        for c in message.tool_calls or ()
        if (f := getattr(c, "function", None)) is not None
    ]
    for index, (raw_id, function) in enumerate(functions):
        arguments = arguments_text(getattr(function, "arguments", None)) or "{}"
        parts.append(ToolCallPart(usable_call_id(raw_id, index), function.name, arguments))
    calls = any(type(p) is ToolCallPart for p in parts)
    return ModelResponse(
        Message("assistant", tuple(parts)),
        chat_usage(completion.usage),
        finish_reason(choice.finish_reason, calls),
        completion.model or fallback_name,
    )


@dataclass(slots=True)
class _Call:
    """A tool call being streamed: started once its id and name are known."""

    id: str = ""
    name: str = ""
    args: list[str] = field(default_factory=list)
    started: bool = False
    sent: int = 0
    """How many argument fragments went out as deltas."""


class ChatStreamDecoder:
    """Turns chunks into deltas and, at the end, the same response as a whole completion.

    A `fncore.adapter.StreamDecoder`: it reads to the end of the stream, since usage comes
    in a chunk after the one with the finish reason.
    """

    __slots__ = (
        "_calls",
        "_endpoint",
        "_finish",
        "_model",
        "_order",
        "_reasoning",
        "_text",
        "_usage",
    )

    done = False
    """Never set: usage follows the finish reason, so the stream is read to its end."""

    def __init__(self, fallback_name: str, endpoint: Endpoint) -> None:
        self._model = fallback_name
        self._endpoint = endpoint
        self._text: list[str] = []
        self._reasoning: list[str] = []
        self._calls: dict[int, _Call] = {}
        self._order: list[_Call] = []
        self._usage: CompletionUsage | None = None
        self._finish: str | None = None

    def feed(self, chunk: object) -> list[StreamDelta]:
        """The deltas one chunk carries.

        Raises:
            TypeError: if the chunk is not a chat completion chunk.
        """
        if not isinstance(chunk, ChatCompletionChunk):
            msg = f"expected a chat.completion.chunk, got {type(chunk).__name__}"
            raise TypeError(msg)
        if chunk.model:
            self._model = chunk.model
        out: list[StreamDelta] = []
        for choice in chunk.choices[:1] if chunk.choices else ():
            delta = choice.delta
            reasoning = reasoning_of(delta)
            if reasoning:
                self._reasoning.append(reasoning)
                out.append(ReasoningDelta(reasoning))
            text = (delta.content or "") + (delta.refusal or "")
            if text:
                self._text.append(text)
                out.append(TextDelta(text))
            for call in delta.tool_calls or ():
                self._call_delta(call.index, call.id, call.function, out)
            if choice.finish_reason:
                self._finish = choice.finish_reason
        if chunk.usage is not None:
            self._usage = chunk.usage
            out.append(UsageReported(chat_usage(chunk.usage)))
        return out

    def _call_delta(
        self, index: int, raw_id: object, function: object, out: list[StreamDelta]
    ) -> None:
        call_id = raw_id if isinstance(raw_id, str) else ""
        slot = self._calls.get(index)
        if slot is None or (call_id and slot.id and call_id != slot.id):
            slot = self._calls[index] = _Call()
            self._order.append(slot)
        if call_id:
            slot.id = call_id
        name = getattr(function, "name", None)
        if name:
            slot.name = name
        fragment = arguments_text(getattr(function, "arguments", None))
        if fragment:
            slot.args.append(fragment)
        if not slot.started and slot.id and slot.name:
            slot.started = True
            out.append(ToolCallStarted(slot.id, slot.name))
        if slot.started:
            self._flush(slot, out)

    @staticmethod
    def _flush(slot: _Call, out: list[StreamDelta]) -> None:
        for fragment in slot.args[slot.sent :]:
            out.append(ToolCallArgsDelta(slot.id, fragment))
        slot.sent = len(slot.args)

    def finish(self) -> tuple[list[StreamDelta], ModelResponse | ModelError]:
        """Deltas for calls never started (no usable id sent), and the final response.

        Such a call gets `fallback_call_id` of its index among the response's calls, the
        id `decode_completion` gives the same call, and is started only now: an id may
        arrive in any fragment of the call until the stream ends. A stream that ended
        without a finish reason gives `StreamInterrupted` instead.
        """
        if self._finish is None:
            return [], self._endpoint.interrupted("the stream ended without a finish reason")
        out: list[StreamDelta] = []
        parts: list[Part] = []
        if self._reasoning:
            parts.append(ReasoningPart("".join(self._reasoning)))
        if self._text:
            parts.append(TextPart("".join(self._text)))
        for n, slot in enumerate(self._order):
            if not slot.started:
                slot.id = usable_call_id(slot.id, n)
                slot.started = True
                out.append(ToolCallStarted(slot.id, slot.name))
                self._flush(slot, out)
            parts.append(ToolCallPart(slot.id, slot.name, "".join(slot.args) or "{}"))
        response = ModelResponse(
            Message("assistant", tuple(parts)),
            chat_usage(self._usage),
            finish_reason(self._finish, bool(self._order)),
            self._model,
        )
        return out, response

"""Decoding Responses API answers: whole responses and stream events."""

from __future__ import annotations

from typing import Any

from openai.types.responses import Response

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
from fncore_openai._errors import error_for_code


def responses_usage(usage: Any) -> Usage:
    """The fncore `Usage` of a Responses ``usage`` object (one request, even when ``None``)."""
    if usage is None:
        return Usage(requests=1)
    inputs = getattr(usage, "input_tokens_details", None)
    outputs = getattr(usage, "output_tokens_details", None)
    return Usage(
        input_tokens=getattr(usage, "input_tokens", 0) or 0,
        output_tokens=getattr(usage, "output_tokens", 0) or 0,
        cache_read_tokens=getattr(inputs, "cached_tokens", 0) or 0,
        cache_write_tokens=getattr(inputs, "cache_write_tokens", 0) or 0,
        reasoning_tokens=getattr(outputs, "reasoning_tokens", 0) or 0,
        requests=1,
    )


def _parts(output: list[Any]) -> list[Part]:
    """The message parts for the output items, in order; other item kinds are skipped.

    A function call without a usable ``call_id`` gets `fallback_call_id` of its index
    among the function calls, as the stream decoder gives it in its deltas.
    """
    parts: list[Part] = []
    calls = 0
    for item in output:
        kind = getattr(item, "type", None)
        if kind == "message":
            texts = []
            for content in getattr(item, "content", None) or ():
                ctype = getattr(content, "type", None)
                if ctype == "output_text":
                    texts.append(getattr(content, "text", "") or "")
                elif ctype == "refusal":
                    texts.append(getattr(content, "refusal", "") or "")
            if any(texts):
                parts.append(TextPart("".join(texts)))
        elif kind == "function_call":
            call_id = usable_call_id(getattr(item, "call_id", None), calls)
            arguments = arguments_text(getattr(item, "arguments", None)) or "{}"
            parts.append(ToolCallPart(call_id, item.name, arguments))
            calls += 1
        elif kind == "reasoning":
            summary = [getattr(s, "text", "") or "" for s in getattr(item, "summary", None) or ()]
            text = "\n\n".join(s for s in summary if s)
            signature = getattr(item, "encrypted_content", None) or None
            if text or signature:
                parts.append(ReasoningPart(text, signature=signature))
    return parts


def _finish(response: Response, has_calls: bool) -> FinishReason:
    if getattr(response, "status", None) == "incomplete":
        details = getattr(response, "incomplete_details", None)
        reason = getattr(details, "reason", None)
        if reason == "content_filter":
            return "content_filter"
        return "length"
    return "tool_calls" if has_calls else "stop"


def failure(response: Response, endpoint: Endpoint) -> ModelError:
    """The error value for a response whose status is ``failed``."""
    error = getattr(response, "error", None)
    code = getattr(error, "code", None)
    message = getattr(error, "message", None) or "the response failed without a message"
    return error_for_code(code, message, endpoint)


def decode_response(
    response: object, fallback_name: str, endpoint: Endpoint
) -> ModelResponse | ModelError:
    """The `ModelResponse` for a whole response, or the error a failed one reports.

    Raises:
        ValueError: if ``response`` is not a Responses answer, a JSON object with an
            ``output`` list (an HTML page, ``{}``, an error object sent with status 200).
    """
    if not isinstance(response, Response):  # the SDK gives a non-JSON body as text
        msg = f"a Responses answer is a JSON object, not {type(response).__name__}"
        raise ValueError(msg)
    if getattr(response, "status", None) == "failed":
        return failure(response, endpoint)
    output = getattr(response, "output", None)  # the SDK does not check its fields
    if not isinstance(output, list):
        msg = "the answer holds no output list"
        raise ValueError(msg)
    parts = _parts(output)
    calls = any(type(p) is ToolCallPart for p in parts)
    return ModelResponse(
        Message("assistant", tuple(parts)),
        responses_usage(getattr(response, "usage", None)),
        _finish(response, calls),
        getattr(response, "model", None) or fallback_name,
    )


class ResponsesStreamDecoder:
    """Turns stream events into deltas; the terminal event gives the final item.

    A `fncore.adapter.StreamDecoder`: `done` once a terminal event (``response.completed``,
    ``response.incomplete``, ``response.failed``, ``error``) arrived; later events are not read.
    """

    __slots__ = ("_calls", "_endpoint", "_model", "_started", "result")

    def __init__(self, fallback_name: str, endpoint: Endpoint) -> None:
        self._model = fallback_name
        self._endpoint = endpoint
        self._calls: dict[str, str] = {}
        """Item id (and ``#output_index``) -> call id of the function calls started."""
        self._started = 0
        """How many function calls started: the index of the next one."""
        self.result: ModelResponse | ModelError | None = None
        """The final response or error, once a terminal event arrived."""

    def feed(self, event: Any) -> list[StreamDelta]:
        """The deltas one event carries; sets `result` on a terminal event.

        Raises:
            TypeError: if the event is not a Responses stream event.
        """
        kind = getattr(event, "type", None)
        if not isinstance(kind, str):
            msg = f"expected a Responses stream event, got {type(event).__name__}"
            raise TypeError(msg)
        if kind == "response.output_text.delta" or kind == "response.refusal.delta":
            return [TextDelta(event.delta)] if event.delta else []
        if kind == "response.reasoning_summary_text.delta":
            return [ReasoningDelta(event.delta)] if event.delta else []
        if kind == "response.reasoning_summary_part.added" and event.summary_index > 0:
            return [ReasoningDelta("\n\n")]
        if kind == "response.output_item.added":
            return self._item_added(event)
        if kind == "response.function_call_arguments.delta":
            call_id = self._calls.get(event.item_id) or self._calls.get(f"#{event.output_index}")
            fragment = arguments_text(event.delta)
            if call_id is None or not fragment:
                return []
            return [ToolCallArgsDelta(call_id, fragment)]
        if kind in ("response.completed", "response.incomplete", "response.failed"):
            return self._terminal(event.response)
        if kind == "error":
            code = getattr(event, "code", None)
            self.result = error_for_code(code, getattr(event, "message", ""), self._endpoint)
        return []

    @property
    def done(self) -> bool:
        """Whether a terminal event arrived."""
        return self.result is not None

    def finish(self) -> tuple[list[StreamDelta], ModelResponse | ModelError]:
        """The terminal event's response or error; `StreamInterrupted` if none came."""
        if self.result is None:
            reason = "the stream ended before response.completed"
            return [], self._endpoint.interrupted(reason)
        return [], self.result

    def _item_added(self, event: Any) -> list[StreamDelta]:
        """Start a function call, with the id `decode_response` gives it in the final output."""
        item = event.item
        if getattr(item, "type", None) != "function_call":
            return []
        call_id = usable_call_id(getattr(item, "call_id", None), self._started)
        self._started += 1
        if getattr(item, "id", None):
            self._calls[item.id] = call_id
        self._calls[f"#{event.output_index}"] = call_id
        out: list[StreamDelta] = [ToolCallStarted(call_id, item.name)]
        arguments = arguments_text(getattr(item, "arguments", None))
        if arguments:
            out.append(ToolCallArgsDelta(call_id, arguments))
        return out

    def _terminal(self, response: Response) -> list[StreamDelta]:
        result = decode_response(response, self._model, self._endpoint)
        self.result = result
        if isinstance(result, ModelError):
            return []
        return [UsageReported(result.usage)]

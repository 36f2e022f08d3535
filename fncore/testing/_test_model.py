"""`TestModel`: calls each offered tool once, then answers from the results."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Mapping
from typing import final

from returns.result import Result, Success

from fncore.core import (
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelStreamItem,
    RequireTool,
    ToolCallPart,
    ToolSpec,
)
from fncore.core._output import FINAL_RESULT
from fncore.testing._common import dumps, stream_of, usage_for

_NUMBER = re.compile(r"-?\d+(?:\.\d+)?")


def _since_last_user(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    for i in range(len(messages) - 1, -1, -1):
        if messages[i].role == "user":
            return messages[i + 1 :]
    return messages


def _last_user_text(messages: tuple[Message, ...]) -> str:
    for m in reversed(messages):
        if m.role == "user":
            return m.text
    return ""


class _ArgumentMaker:
    """Builds schema-valid arguments, taking numbers and text from the user's message."""

    def __init__(self, text: str) -> None:
        self._text = text
        self._numbers = [float(n) for n in _NUMBER.findall(text)]
        self._next = 0

    def _number(self) -> float:
        if not self._numbers:
            return 0.0
        value = self._numbers[self._next % len(self._numbers)]
        self._next += 1
        return value

    def value(self, schema: Mapping[str, object], defs: Mapping[str, object]) -> object:
        ref = schema.get("$ref")
        if isinstance(ref, str):
            target = defs.get(ref.rsplit("/", 1)[-1])
            if isinstance(target, Mapping):
                return self.value(target, defs)
        if "default" in schema:
            return schema["default"]
        enum = schema.get("enum")
        if isinstance(enum, list) and enum:
            return enum[0]
        if "const" in schema:
            return schema["const"]
        for key in ("anyOf", "oneOf"):
            options = schema.get(key)
            if isinstance(options, list) and options and isinstance(options[0], Mapping):
                return self.value(options[0], defs)
        kind = schema.get("type")
        if kind == "integer":
            return int(self._number())
        if kind == "number":
            return self._number()
        if kind == "boolean":
            return False
        if kind == "array":
            return []
        if kind == "null":
            return None
        if kind == "object" or "properties" in schema:
            return self.object(schema, defs)
        return self._text

    def object(self, schema: Mapping[str, object], defs: Mapping[str, object]) -> dict[str, object]:
        props = schema.get("properties")
        required = schema.get("required")
        if not isinstance(props, Mapping):
            return {}
        wanted = required if isinstance(required, list) else list(props)
        return {
            name: self.value(sub, defs)
            for name, sub in props.items()
            if name in wanted and isinstance(sub, Mapping)
        }


@final
class TestModel:
    """An offline model that exercises every offered tool, then answers from the results.

    On each request it calls, all at once, every offered tool it has not called since the
    last user message, with arguments valid for the tool's schema (numbers are taken from
    the user's message in order, strings are the user's text). When none is left, or tools
    are off, it answers with text built from the tool results. Deterministic, streaming
    included; the embedded default provider.

    Structured output: with an `OutputSchema` on the request it answers with a JSON value
    made for that schema in the same way; the ``final_result`` tool it calls last, once the
    other tools have run.

    It records the requests it receives in `requests`, for tests to look at: all of them,
    or only the last ``keep_requests`` (the container's default model keeps 16, so a
    long-running default agent does not grow).

    Example:
        >>> import asyncio
        >>> from fncore import ModelRequest, Message
        >>> r = asyncio.run(TestModel().request(ModelRequest((Message.user("hi"),))))
        >>> r.unwrap().text
        'hi'
    """

    __test__ = False  # not a pytest class

    __slots__ = ("_keep", "_name", "chunk", "requests")

    native_output = True
    """It answers to `ModelRequest.output_schema` (the ``native`` output strategy)."""

    def __init__(
        self, name: str = "test", *, chunk: int = 8, keep_requests: int | None = None
    ) -> None:
        self._name = name
        self.chunk = chunk
        self._keep = keep_requests
        self.requests: list[ModelRequest] = []
        """The requests received, in order (the last ``keep_requests`` of them, if set)."""

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    def respond(self, request: ModelRequest) -> ModelResponse:
        """The response to ``request`` (what `request` and `stream` both deliver)."""
        recent = _since_last_user(request.messages)
        called = {c.name for m in recent for c in m.tool_calls}
        tools: tuple[ToolSpec, ...] = request.tools
        choice = request.tool_choice
        if isinstance(choice, RequireTool):
            tools = tuple(t for t in tools if t.name == choice.name)
        pending = [] if choice == "none" else [t for t in tools if t.name not in called]
        if choice in ("required",) or isinstance(choice, RequireTool):
            pending = list(tools)
        if len(pending) > 1:  # the final result comes last, once the other tools have run
            pending = [t for t in pending if t.name != FINAL_RESULT] or pending
        if pending:
            maker = _ArgumentMaker(_last_user_text(request.messages))
            turn = sum(1 for m in request.messages if m.role == "assistant")
            calls = tuple(
                ToolCallPart(
                    f"call_{turn}_{i}",
                    spec.name,
                    dumps(maker.object(spec.parameters, _defs(spec))),
                )
                for i, spec in enumerate(pending)
            )
            message = Message("assistant", calls)
            return ModelResponse(message, usage_for(request, message), "tool_calls", self._name)
        results = [r for m in recent for r in m.tool_results]
        schema = request.output_schema
        if schema is not None:
            maker = _ArgumentMaker(_last_user_text(request.messages))
            defs = schema.schema.get("$defs")
            answer = dumps(maker.object(schema.schema, defs if isinstance(defs, Mapping) else {}))
            message = Message.assistant(answer)
            return ModelResponse(message, usage_for(request, message), "stop", self._name)
        text = (
            "; ".join(f"{r.name}: {r.content}" for r in results)
            if results
            else _last_user_text(request.messages)
        )
        message = Message.assistant(text)
        return ModelResponse(message, usage_for(request, message), "stop", self._name)

    def _record(self, request: ModelRequest) -> None:
        requests = self.requests
        requests.append(request)
        if self._keep is not None and len(requests) > self._keep:
            del requests[: len(requests) - self._keep]

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Answer ``request``."""
        self._record(request)
        return Success(self.respond(request))

    def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Answer ``request`` as a stream of deltas, then the response."""
        self._record(request)
        return stream_of(self.respond(request), self.chunk)


def _defs(spec: ToolSpec) -> Mapping[str, object]:
    defs = spec.parameters.get("$defs")
    return defs if isinstance(defs, Mapping) else {}

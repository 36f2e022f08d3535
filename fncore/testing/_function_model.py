"""`FunctionModel` and `ScriptedModel`: offline models driven by code or a script."""

from __future__ import annotations

import inspect
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from typing import final

from returns.result import Failure, Result, Success

from fncore.core import (
    FinishReason,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    ModelStreamItem,
    ToolCallPart,
)
from fncore.testing._common import dumps, stream_of, usage_for

Reply = ModelResponse | Message | str | ModelError
"""What a scripted or function model may answer: a response, a message, text, or an error."""

ModelFunction = Callable[[ModelRequest], Reply | Awaitable[Reply]]
"""Drives a `FunctionModel`: gets each request, returns the reply (sync or async)."""


def tool_calls(*calls: tuple[str, Mapping[str, object]] | ToolCallPart) -> Message:
    """An assistant message asking for ``calls``, given as ``(name, arguments)`` pairs.

    Example:
        >>> tool_calls(("add", {"a": 1, "b": 2})).tool_calls[0].arguments
        '{"a":1,"b":2}'
    """
    parts = tuple(
        c if isinstance(c, ToolCallPart) else ToolCallPart(f"call_{i}", c[0], dumps(dict(c[1])))
        for i, c in enumerate(calls)
    )
    return Message("assistant", parts)


def _to_response(
    reply: Reply, request: ModelRequest, name: str
) -> Result[ModelResponse, ModelError]:
    if isinstance(reply, ModelError):
        return Failure(reply)
    if isinstance(reply, ModelResponse):
        return Success(reply)
    message = Message.assistant(reply) if isinstance(reply, str) else reply
    finish: FinishReason = "tool_calls" if message.tool_calls else "stop"
    return Success(ModelResponse(message, usage_for(request, message), finish, name))


async def _stream(
    outcome: Result[ModelResponse, ModelError], chunk: int
) -> AsyncIterator[ModelStreamItem]:
    if isinstance(outcome, Failure):
        yield outcome.failure()
        return
    async for item in stream_of(outcome.unwrap(), chunk):
        yield item


@final
class FunctionModel:
    """An offline model whose every reply comes from a function of the request.

    Example:
        >>> import asyncio
        >>> from fncore import ModelRequest, Message
        >>> m = FunctionModel(lambda req: f"{len(req.messages)} messages")
        >>> asyncio.run(m.request(ModelRequest((Message.user("hi"),)))).unwrap().text
        '1 messages'
    """

    __slots__ = ("_fn", "_name", "chunk", "requests")

    native_output = True
    """The function sees `ModelRequest.output_schema` (the ``native`` output strategy)."""

    def __init__(self, fn: ModelFunction, *, name: str = "function", chunk: int = 8) -> None:
        self._fn = fn
        self._name = name
        self.chunk = chunk
        self.requests: list[ModelRequest] = []
        """Every request received, in order."""

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    async def _reply(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        self.requests.append(request)
        reply = self._fn(request)
        if inspect.isawaitable(reply):
            reply = await reply
        return _to_response(reply, request, self._name)

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Answer ``request`` with the function's reply."""
        return await self._reply(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Answer ``request`` as deltas, then the response."""
        async for item in _stream(await self._reply(request), self.chunk):
            yield item


@final
class ScriptedModel:
    """An offline model that replays the given replies in order, one per request.

    Running out of replies is a `ModelError`, so a test notices an unexpected extra call.

    Example:
        >>> import asyncio
        >>> from fncore import ModelRequest, Message
        >>> m = ScriptedModel(["first", "second"])
        >>> req = ModelRequest((Message.user("hi"),))
        >>> [asyncio.run(m.request(req)).unwrap().text for _ in range(2)]
        ['first', 'second']
    """

    __slots__ = ("_name", "_replies", "chunk", "requests")

    native_output = True
    """Scripted text answers an `ModelRequest.output_schema` (the ``native`` strategy)."""

    def __init__(self, replies: Iterable[Reply], *, name: str = "scripted", chunk: int = 8) -> None:
        self._replies = list(replies)
        self._name = name
        self.chunk = chunk
        self.requests: list[ModelRequest] = []
        """Every request received, in order."""

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def remaining(self) -> int:
        """How many replies are left."""
        return len(self._replies) - len(self.requests)

    def _reply(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        index = len(self.requests)
        self.requests.append(request)
        if index >= len(self._replies):
            return Failure(
                ModelError(
                    message=(
                        f"scripted model {self._name!r} has no reply left for request "
                        f"{index + 1}; add one to the script"
                    )
                )
            )
        return _to_response(self._replies[index], request, self._name)

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """Answer ``request`` with the next scripted reply."""
        return self._reply(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Answer ``request`` with the next scripted reply, as deltas."""
        async for item in _stream(self._reply(request), self.chunk):
            yield item

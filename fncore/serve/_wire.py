"""OpenAI's chat-completions wire format: the request body, and the bodies sent back.

The request is validated with pydantic, so a malformed body is refused with the field
named. Only what an agent can honour is accepted: text messages from the system, the
developer, the user and the assistant. Tools belong to the agent and run on the server,
so a request carrying its own ``tools`` (or tool messages, or assistant tool calls) is
refused rather than silently ignored.
"""

from __future__ import annotations

import dataclasses
import time
import uuid
from collections.abc import Mapping, Sequence
from typing import Annotated, Any, Literal, TypeAlias, TypeVar

import pydantic
from pydantic import BaseModel, ConfigDict, Field
from pydantic_core import to_jsonable_python

from fncore.core import (
    Approve,
    Decision,
    Edit,
    Message,
    ModelSettings,
    PendingRequest,
    Reject,
    Respond,
    Usage,
)

__all__ = [
    "DecisionBody",
    "EditDecision",
    "decision_of",
    "ChatRequest",
    "RequestError",
    "check_count",
    "chunk",
    "completion",
    "error_body",
    "location",
    "new_id",
    "parse_request",
    "paused_body",
    "pending_doc",
    "validated",
]

_ModelT = TypeVar("_ModelT", bound=BaseModel)

CLIENT_TOOLS = (
    "this server runs the agent's own tools; a request cannot bring its own "
    "(client-side tools are not supported): remove {field}"
)
"""Why a request that carries tools (or their calls and results) is refused."""


class RequestError(Exception):
    """A request the server refuses, with the OpenAI error fields to answer with."""

    def __init__(
        self,
        message: str,
        *,
        status: int = 400,
        param: str | None = None,
        code: str | None = None,
        kind: str = "invalid_request_error",
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.param = param
        self.code = code
        self.kind = kind


class TextContent(BaseModel):
    """One text part of a message's content."""

    model_config = ConfigDict(extra="ignore")

    type: Literal["text"]
    text: str


class ChatMessage(BaseModel):
    """One message of the conversation, as the client sends it."""

    model_config = ConfigDict(extra="ignore")

    role: Literal["system", "developer", "user", "assistant", "tool", "function"]
    content: str | list[TextContent] | None = None
    tool_calls: list[object] | None = None

    def text(self) -> str:
        """The message's text, its parts joined."""
        if self.content is None:
            return ""
        if isinstance(self.content, str):
            return self.content
        return "".join(part.text for part in self.content)


class StreamOptions(BaseModel):
    """``stream_options``: whether the stream ends with a usage chunk."""

    model_config = ConfigDict(extra="ignore")

    include_usage: bool = False


class ChatRequest(BaseModel):
    """The body of ``POST /v1/chat/completions``.

    The sampling fields (``temperature``, ``top_p``, ``max_tokens`` or
    ``max_completion_tokens``, ``stop``, ``seed``) override the agent's own model settings
    for this run (`sampling`); other fields are ignored.
    """

    model_config = ConfigDict(extra="ignore")

    model: str
    messages: list[ChatMessage] = Field(min_length=1)
    stream: bool = False
    stream_options: StreamOptions | None = None
    tools: list[object] | None = None
    functions: list[object] | None = None
    temperature: float | None = Field(default=None, ge=0, le=2)
    top_p: float | None = Field(default=None, ge=0, le=1)
    max_tokens: int | None = Field(default=None, ge=1)
    max_completion_tokens: int | None = Field(default=None, ge=1)
    stop: str | list[str] | None = None
    seed: int | None = None

    def sampling(self, defaults: ModelSettings) -> ModelSettings:
        """``defaults`` (the agent's model settings) with the fields this request sets.

        Example:
            >>> body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}],'
            >>> body += b' "temperature": 0.2, "max_completion_tokens": 9, "stop": "END"}'
            >>> parse_request(body, 8).sampling(ModelSettings(seed=1))
            ModelSettings(temperature=0.2, max_tokens=9, top_p=None, stop=('END',), seed=1, \
parallel_tool_calls=None, extra=mappingproxy({}))
        """
        given: dict[str, Any] = {
            "temperature": self.temperature,
            "top_p": self.top_p,
            "max_tokens": self.max_completion_tokens or self.max_tokens,
            "seed": self.seed,
        }
        if self.stop is not None:
            given["stop"] = (self.stop,) if isinstance(self.stop, str) else tuple(self.stop)
        changes = {name: value for name, value in given.items() if value is not None}
        return dataclasses.replace(defaults, **changes) if changes else defaults

    def prompt(self) -> tuple[Message, ...]:
        """The run's input: the request's messages as fncore messages.

        Raises:
            RequestError: for tool messages or assistant tool calls (the client's tools).
        """
        messages: list[Message] = []
        for index, message in enumerate(self.messages):
            field = f"messages.{index}"
            if message.role in ("tool", "function"):
                raise RequestError(CLIENT_TOOLS.format(field=field), param=f"{field}.role")
            if message.tool_calls:
                raise RequestError(
                    CLIENT_TOOLS.format(field=f"{field}.tool_calls"), param=f"{field}.tool_calls"
                )
            if message.role in ("system", "developer"):
                messages.append(Message.system(message.text()))
            elif message.role == "user":
                messages.append(Message.user(message.text()))
            else:
                messages.append(Message.assistant(message.text()))
        return tuple(messages)

    def last_user_text(self) -> str:
        """The text of the request's last user message: a stored session's next turn.

        Raises:
            RequestError: if the request has no user message.
        """
        for message in reversed(self.messages):
            if message.role == "user":
                return message.text()
        msg = "messages: a request that continues a session needs a user message"
        raise RequestError(msg, param="messages")


def location(loc: Sequence[int | str]) -> str:
    """A validation error's location as a dotted path (``messages.0.role``)."""
    return ".".join(str(part) for part in loc)


def validated(model: type[_ModelT], body: bytes) -> _ModelT:
    """``body`` validated as ``model``.

    Raises:
        RequestError: naming the first field that is wrong, or saying the body is not JSON.
    """
    try:
        return model.model_validate_json(body)
    except pydantic.ValidationError as exc:
        first = exc.errors()[0]
        if first["type"] == "json_invalid":
            raise RequestError(f"the body is not valid JSON: {first['msg']}") from None
        where = location(first["loc"])
        raise RequestError(f"{where}: {first['msg']}", param=where or None) from None


def parse_request(body: bytes, max_messages: int) -> ChatRequest:
    """The validated request in ``body``.

    Raises:
        RequestError: naming the first field that is wrong, or the limit passed.
    """
    request = validated(ChatRequest, body)
    for field in ("tools", "functions"):
        if getattr(request, field):
            raise RequestError(CLIENT_TOOLS.format(field=f"'{field}'"), param=field)
    check_count(len(request.messages), max_messages)
    return request


def check_count(messages: int, max_messages: int) -> None:
    """Refuse a request with more than ``max_messages`` messages.

    Raises:
        RequestError: if ``messages`` is over the limit.
    """
    if messages > max_messages:
        raise RequestError(
            f"messages: {messages} messages, more than this server accepts "
            f"({max_messages}); send fewer",
            param="messages",
        )


def error_body(
    message: str,
    kind: str,
    *,
    param: str | None = None,
    code: str | None = None,
    **extra: object,
) -> dict[str, object]:
    """OpenAI's error shape, ``{"error": {"message", "type", "param", "code", ...}}``."""
    return {"error": {"message": message, "type": kind, "param": param, "code": code, **extra}}


def pending_doc(request: PendingRequest) -> dict[str, object]:
    """A pending call as JSON: its id, tool, arguments, description and allowed decisions."""
    return {
        "call_id": request.call_id,
        "tool": request.tool,
        "arguments": to_jsonable_python(request.arguments),
        "description": request.description,
        "allowed": list(request.allowed),
    }


def paused_body(checkpoint_id: str, requests: Sequence[PendingRequest]) -> dict[str, object]:
    """The error answered for a run paused for approval: its checkpoint and pending calls."""
    pending = [pending_doc(r) for r in requests]
    return error_body(
        f"the run paused for approval; decide the pending calls and resume checkpoint "
        f"{checkpoint_id}",
        "run_paused",
        code="run_paused",
        checkpoint_id=checkpoint_id,
        pending=pending,
    )


def new_id() -> str:
    """A fresh completion id."""
    return f"chatcmpl-{uuid.uuid4().hex}"


def usage_body(usage: Usage) -> dict[str, int]:
    """The run's usage in OpenAI's shape."""
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def completion(model: str, text: str, usage: Usage) -> dict[str, object]:
    """A ``chat.completion`` object with the final answer and the whole run's usage."""
    return {
        "id": new_id(),
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": text},
                "finish_reason": "stop",
                "logprobs": None,
            }
        ],
        "usage": usage_body(usage),
    }


def chunk(
    completion_id: str,
    created: int,
    model: str,
    delta: Mapping[str, object] | None,
    *,
    finish_reason: str | None = None,
    usage: Usage | None = None,
) -> dict[str, object]:
    """A ``chat.completion.chunk``: a delta, the closing one, or (no delta) the usage one."""
    body: dict[str, object] = {
        "id": completion_id,
        "object": "chat.completion.chunk",
        "created": created,
        "model": model,
        "choices": []
        if delta is None
        else [{"index": 0, "delta": dict(delta), "finish_reason": finish_reason, "logprobs": None}],
    }
    if usage is not None:
        body["usage"] = usage_body(usage)
    return body


class ApproveDecision(BaseModel):
    """Run the call as the model made it."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["approve"]


class EditDecision(BaseModel):
    """Run the call with these arguments instead."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["edit"]
    arguments: dict[str, Any]


class RejectDecision(BaseModel):
    """Do not run the call; the message (or a default) is its error result."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["reject"]
    message: str | None = None


class RespondDecision(BaseModel):
    """Do not run the call; the message is its result."""

    model_config = ConfigDict(extra="forbid")
    kind: Literal["respond"]
    message: str


AnyDecision: TypeAlias = ApproveDecision | EditDecision | RejectDecision | RespondDecision
DecisionBody = Annotated[AnyDecision, Field(discriminator="kind")]
"""A decision on one pending call as a client sends it (the approvals API, an AG-UI resume)."""


def decision_of(
    body: ApproveDecision | EditDecision | RejectDecision | RespondDecision,
) -> Decision:
    """The `Decision` a client's decision body stands for."""
    if isinstance(body, EditDecision):
        return Edit(body.arguments)
    if isinstance(body, RejectDecision):
        return Reject() if body.message is None else Reject(body.message)
    if isinstance(body, RespondDecision):
        return Respond(body.message)
    return Approve()

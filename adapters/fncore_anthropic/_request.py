"""Mapping of a fncore `ModelRequest` to the keyword arguments of ``messages.create``.

The Messages API takes the system prompt apart from the conversation, tool results as
``tool_result`` blocks in a ``user`` turn, and only alternating ``user``/``assistant`` turns;
this module does those conversions and nothing else (no I/O).
"""

from __future__ import annotations

import base64
import inspect
import json
from collections.abc import Mapping
from typing import Any, TypeAlias

from anthropic.resources.messages import AsyncMessages

from fncore.adapter import (
    DataPart,
    Message,
    ModelRequest,
    ModelSettings,
    NotExpressible,
    Part,
    ReasoningPart,
    RequireTool,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    ToolSpec,
)

Block: TypeAlias = dict[str, Any]
"""One content block of the wire format."""

IMAGE_TYPES = frozenset({"image/jpeg", "image/png", "image/gif", "image/webp"})
"""Image media types the Messages API accepts."""

RAW_ARGUMENTS_KEY = "_raw"
"""Key under which tool-call arguments that are not a JSON object are sent back."""

_CREATE_PARAMETERS = frozenset(inspect.signature(AsyncMessages.create).parameters) - {
    "self",
    "stream",
}
"""Keyword arguments ``messages.create`` accepts; other ``settings.extra`` keys go in the body."""

_NOT_CACHEABLE = frozenset({"thinking", "redacted_thinking"})
"""Blocks the API does not let carry ``cache_control``."""


def build_kwargs(request: ModelRequest, *, model: str, default_max_tokens: int) -> dict[str, Any]:
    """The keyword arguments for ``client.messages.create`` (without ``stream``).

    Args:
        request: What to send.
        model: The model name.
        default_max_tokens: ``max_tokens`` when ``request.settings`` has none (the API
            requires one).

    Raises:
        NotExpressible: for content the API cannot take (an unsupported media type, a data
            part in an assistant message, ...), so nothing is sent.
    """
    marker: Block = {"type": "ephemeral"}
    if request.cache_ttl is not None:
        marker["ttl"] = request.cache_ttl
    system = _system(request, marker)
    messages = _turns(request.messages, marker)
    tools = [_tool(spec) for spec in request.tools]
    choice = _tool_choice(request.tool_choice, request.tools, request.settings)
    if tools and request.cache_tools:
        _mark(tools, marker)
    settings = request.settings
    kwargs: dict[str, Any] = {
        "model": model,
        "max_tokens": settings.max_tokens or default_max_tokens,
        "messages": messages,
    }
    if system:
        kwargs["system"] = system
    if tools:
        kwargs["tools"] = tools
    if choice is not None:
        kwargs["tool_choice"] = choice
    if settings.stop:
        kwargs["stop_sequences"] = list(settings.stop)
    body: dict[str, Any] = {}
    if settings.temperature is not None:
        body["temperature"] = settings.temperature
    if settings.top_p is not None:
        body["top_p"] = settings.top_p
    for key, value in settings.extra.items():
        if key == "extra_body" and isinstance(value, Mapping):
            body.update(value)
        elif key in _CREATE_PARAMETERS:
            kwargs[key] = value
        elif key != "stream":
            body[key] = value
    if body:
        kwargs["extra_body"] = body
    if request.output_schema is not None:  # beside any effort settings.extra set
        config = dict(kwargs.get("output_config") or {})
        config["format"] = {
            "type": "json_schema",
            "schema": _closed(_plain(request.output_schema.schema)),
        }
        kwargs["output_config"] = config
    return kwargs


def _closed(schema: Any) -> Any:
    """``schema`` with every object that lists properties closed to others.

    Structured outputs require ``additionalProperties: false`` on each such object.

    Example:
        >>> _closed({"type": "object", "properties": {"a": {"type": "integer"}}})
        {'type': 'object', 'properties': {'a': {'type': 'integer'}}, 'additionalProperties': False}
    """
    if isinstance(schema, list):
        return [_closed(s) for s in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _closed(sub) for key, sub in schema.items()}
    if "properties" in out and "additionalProperties" not in out:
        out["additionalProperties"] = False
    return out


def tool_input(call: ToolCallPart) -> dict[str, object]:
    """The ``input`` object of a ``tool_use`` block for ``call``.

    Arguments that are not a JSON object (invalid JSON from a truncated or foreign model
    turn) are sent as ``{"_raw": <the text>}``: the API needs an object, the request must
    not fail on history, and the model still sees what it produced next to the error
    result fncore recorded for that call.

    Example:
        >>> tool_input(ToolCallPart("c1", "add", '{"a": 1'))
        {'_raw': '{"a": 1'}
    """
    text = call.arguments
    if not text.strip():
        return {}
    try:
        value = json.loads(text)
    except ValueError:
        return {RAW_ARGUMENTS_KEY: text}
    if isinstance(value, dict):
        return value
    return {RAW_ARGUMENTS_KEY: text}


def _system(request: ModelRequest, marker: Block) -> list[Block]:
    blocks: list[Block] = []
    if request.instructions:
        blocks.append({"type": "text", "text": request.instructions})
    for message in request.messages:
        if message.role != "system":
            continue
        start = len(blocks)
        for part in message.parts:
            if type(part) is not TextPart:
                msg = f"a system message can hold only text, not {type(part).__name__}"
                raise NotExpressible(msg)
            if part.text:
                blocks.append({"type": "text", "text": part.text})
        if message.cache and len(blocks) > start:
            _mark(blocks, marker)
    if blocks and request.cache_instructions:
        _mark(blocks, marker)
    return blocks


def _turns(messages: tuple[Message, ...], marker: Block) -> list[Block]:
    turns: list[Block] = []
    for message in messages:
        if message.role == "system":
            continue
        role = "assistant" if message.role == "assistant" else "user"
        blocks = [_block(part, role) for part in message.parts]
        content = [b for b in blocks if b is not None]
        if message.cache:
            _mark(content, marker)
        if not content:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(content)
        else:
            turns.append({"role": role, "content": content})
    for turn in turns:
        if turn["role"] == "user":  # tool results must lead their user turn
            turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    return turns


def _block(part: Part, role: str) -> Block | None:
    if isinstance(part, TextPart):
        return {"type": "text", "text": part.text} if part.text else None
    if role == "assistant":
        if isinstance(part, ReasoningPart):
            return _thinking(part)
        if isinstance(part, ToolCallPart):
            return {"type": "tool_use", "id": part.id, "name": part.name, "input": tool_input(part)}
    elif isinstance(part, ToolResultPart):
        return {
            "type": "tool_result",
            "tool_use_id": part.call_id,
            "content": part.content,
            "is_error": part.is_error,
        }
    elif isinstance(part, DataPart):
        return _data(part)
    who = "an assistant" if role == "assistant" else "a user or tool"
    msg = f"{who} message cannot hold a {type(part).__name__}"
    raise NotExpressible(msg)


def _thinking(part: ReasoningPart) -> Block | None:
    if part.redacted is not None:
        return {"type": "redacted_thinking", "data": part.redacted}
    if part.signature is not None:
        return {"type": "thinking", "thinking": part.text, "signature": part.signature}
    return None  # reasoning without a signature (another provider's) cannot be sent back


def _data(part: DataPart) -> Block:
    encoded = base64.b64encode(part.data).decode("ascii")
    source = {"type": "base64", "media_type": part.media_type, "data": encoded}
    if part.media_type in IMAGE_TYPES:
        return {"type": "image", "source": source}
    if part.media_type == "application/pdf":
        return {"type": "document", "source": source}
    accepted = ", ".join(sorted(IMAGE_TYPES))
    msg = f"media type {part.media_type!r} is not supported; use {accepted} or application/pdf"
    raise NotExpressible(msg)


def _mark(blocks: list[Block], marker: Block) -> None:
    """Put a cache breakpoint (``marker``, copied) on the last block that may carry one."""
    for block in reversed(blocks):
        if block.get("type") not in _NOT_CACHEABLE:
            block["cache_control"] = dict(marker)
            return


def _tool(spec: ToolSpec) -> Block:
    tool: Block = {"name": spec.name}
    if spec.description:
        tool["description"] = spec.description
    tool["input_schema"] = _plain(spec.parameters)
    if spec.strict:
        tool["strict"] = True
    return tool


def _tool_choice(
    choice: ToolChoice, tools: tuple[ToolSpec, ...], settings: ModelSettings
) -> Block | None:
    if isinstance(choice, RequireTool) and choice.name not in {t.name for t in tools}:
        msg = f"tool_choice requires the tool {choice.name!r}, which is not among the tools"
        raise NotExpressible(msg)
    if not tools:
        return None
    if choice == "none":
        return {"type": "none"}
    block: Block
    if isinstance(choice, RequireTool):
        block = {"type": "tool", "name": choice.name}
    elif choice == "required":
        block = {"type": "any"}
    else:
        block = {"type": "auto"}
    if settings.parallel_tool_calls is False:
        block["disable_parallel_tool_use"] = True
    return block


def _plain(value: object) -> Any:
    """``value`` with every mapping a dict and every sequence a list, for the JSON body."""
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    return value

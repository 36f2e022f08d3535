"""Mapping a fncore `ModelRequest` to Responses API arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from fncore.adapter import (
    DataPart,
    Message,
    ModelRequest,
    NotExpressible,
    ReasoningPart,
    RequireTool,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from fncore_openai._common import (
    apply_extra,
    data_url,
    file_name,
    json_schema_format,
    strict_parameters,
    unsupported,
)

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""The ``include`` value that returns reasoning as encrypted content to send back."""

_API = "Responses"


def responses_arguments(
    request: ModelRequest,
    *,
    model: str,
    store: bool,
    default_max_tokens: int | None,
    create: Callable[..., Any],
) -> dict[str, Any]:
    """The keyword arguments for ``responses.create`` (without ``stream``).

    Raises:
        NotExpressible: if the request holds something the Responses API cannot take.
    """
    settings = request.settings
    if settings.stop:
        msg = (
            "the Responses API has no stop sequences: drop settings.stop or use model kind "
            "'openai' (Chat Completions)"
        )
        raise NotExpressible(msg)
    items: list[dict[str, Any]] = []
    for message in request.messages:
        items.extend(_items(message))
    kwargs: dict[str, Any] = {
        "model": model,
        "input": items,
        "store": store,
        "include": [ENCRYPTED_REASONING],
    }
    if request.instructions:
        kwargs["instructions"] = request.instructions
    if request.tools:
        kwargs["tools"] = [_tool(spec) for spec in request.tools]
        kwargs["tool_choice"] = _tool_choice(request)
        if settings.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = settings.parallel_tool_calls
    elif request.tool_choice == "required" or isinstance(request.tool_choice, RequireTool):
        msg = f"tool_choice {request.tool_choice!r} needs at least one tool offered"
        raise NotExpressible(msg)
    max_tokens = settings.max_tokens if settings.max_tokens is not None else default_max_tokens
    if max_tokens is not None:
        kwargs["max_output_tokens"] = max_tokens
    if settings.temperature is not None:
        kwargs["temperature"] = settings.temperature
    if settings.top_p is not None:
        kwargs["top_p"] = settings.top_p
    apply_extra(kwargs, request, create)
    if request.output_schema is not None:  # beside any text options settings.extra set
        text = dict(kwargs.get("text") or {})
        text["format"] = {"type": "json_schema", **json_schema_format(request.output_schema)}
        kwargs["text"] = text
    return kwargs


def _tool(spec: ToolSpec) -> dict[str, Any]:
    parameters, strict = strict_parameters(spec)
    tool: dict[str, Any] = {
        "type": "function",
        "name": spec.name,
        "parameters": parameters,
        "strict": strict,
    }
    if spec.description:
        tool["description"] = spec.description
    return tool


def _tool_choice(request: ModelRequest) -> Any:
    choice = request.tool_choice
    if isinstance(choice, RequireTool):
        if choice.name not in {t.name for t in request.tools}:
            msg = f"tool_choice requires tool {choice.name!r}, which is not offered"
            raise NotExpressible(msg)
        return {"type": "function", "name": choice.name}
    return choice


def _items(message: Message) -> list[dict[str, Any]]:
    """The input items for one fncore message, in the order of its parts."""
    if message.role == "assistant":
        return _assistant_items(message)
    items: list[dict[str, Any]] = []
    content: list[dict[str, Any]] = []
    for part in message.parts:
        if type(part) is ToolResultPart:
            items.append(
                {"type": "function_call_output", "call_id": part.call_id, "output": part.content}
            )
        elif type(part) is TextPart:
            content.append({"type": "input_text", "text": part.text})
        elif type(part) is DataPart:
            content.append(_data(part))
        elif type(part) is ToolCallPart:
            msg = f"a {message.role} message cannot hold tool calls"
            raise NotExpressible(msg)
    if not content:
        return items
    if message.role == "tool":
        msg = "a tool message may hold only tool results"
        raise NotExpressible(msg)
    if message.role == "system" and any(c["type"] != "input_text" for c in content):
        msg = "a system message may hold only text"
        raise NotExpressible(msg)
    return [*items, {"type": "message", "role": message.role, "content": content}]


def _data(part: DataPart) -> dict[str, Any]:
    if part.media_type.startswith("image/"):
        return {"type": "input_image", "image_url": data_url(part), "detail": "auto"}
    if part.media_type == "application/pdf":
        return {"type": "input_file", "filename": file_name(part), "file_data": data_url(part)}
    raise unsupported(part, _API)


def _assistant_items(message: Message) -> list[dict[str, Any]]:
    """Reasoning (only when it carries encrypted content), text and calls, in order.

    Items are sent without their server ids: with ``store=False`` an id makes the API
    look the item up, and fail.
    """
    items: list[dict[str, Any]] = []
    text: list[dict[str, Any]] = []

    def flush() -> None:
        if text:
            items.append({"type": "message", "role": "assistant", "content": list(text)})
            text.clear()

    for part in message.parts:
        if type(part) is TextPart:
            text.append({"type": "output_text", "text": part.text})
            continue
        flush()
        if type(part) is ToolCallPart:
            items.append(
                {
                    "type": "function_call",
                    "call_id": part.id,
                    "name": part.name,
                    "arguments": part.arguments or "{}",
                }
            )
        elif type(part) is ReasoningPart and part.signature:
            summary = [{"type": "summary_text", "text": part.text}] if part.text else []
            items.append(
                {"type": "reasoning", "summary": summary, "encrypted_content": part.signature}
            )
        elif type(part) is ToolResultPart:
            items.append(
                {"type": "function_call_output", "call_id": part.call_id, "output": part.content}
            )
        elif type(part) is DataPart:
            msg = f"an assistant message cannot hold {part.media_type!r} data"
            raise NotExpressible(msg)
    flush()
    return items

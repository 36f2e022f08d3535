"""Mapping a fncore `ModelRequest` to Chat Completions arguments."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Literal, TypeAlias

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
)
from fncore_openai._common import (
    apply_extra,
    data_url,
    file_name,
    json_schema_format,
    strict_parameters,
    unsupported,
)

SystemRole: TypeAlias = Literal["system", "developer"]
"""The role that carries instructions: ``developer`` for OpenAI's reasoning models."""

MaxTokensParam: TypeAlias = Literal["max_completion_tokens", "max_tokens"]
"""Which argument carries the token cap: ``max_tokens`` for servers that predate the other."""

_API = "Chat Completions"


def chat_arguments(
    request: ModelRequest,
    *,
    model: str,
    system_role: SystemRole,
    max_tokens_param: MaxTokensParam,
    default_max_tokens: int | None,
    create: Callable[..., Any],
) -> dict[str, Any]:
    """The keyword arguments for ``chat.completions.create`` (without ``stream``).

    Raises:
        NotExpressible: if the request holds something Chat Completions cannot take.
    """
    messages: list[dict[str, Any]] = []
    if request.instructions:
        messages.append({"role": system_role, "content": request.instructions})
    for message in request.messages:
        messages.extend(_messages(message, system_role))
    kwargs: dict[str, Any] = {"model": model, "messages": messages}
    if request.tools:
        kwargs["tools"] = [_tool(spec) for spec in request.tools]
        kwargs["tool_choice"] = _tool_choice(request)
        if request.settings.parallel_tool_calls is not None:
            kwargs["parallel_tool_calls"] = request.settings.parallel_tool_calls
    elif request.tool_choice == "required" or isinstance(request.tool_choice, RequireTool):
        msg = f"tool_choice {request.tool_choice!r} needs at least one tool offered"
        raise NotExpressible(msg)
    settings = request.settings
    max_tokens = settings.max_tokens if settings.max_tokens is not None else default_max_tokens
    if max_tokens is not None:
        kwargs[max_tokens_param] = max_tokens
    if settings.temperature is not None:
        kwargs["temperature"] = settings.temperature
    if settings.top_p is not None:
        kwargs["top_p"] = settings.top_p
    if settings.seed is not None:
        kwargs["seed"] = settings.seed
    if settings.stop:
        kwargs["stop"] = list(settings.stop)
    if request.output_schema is not None:
        kwargs["response_format"] = {
            "type": "json_schema",
            "json_schema": json_schema_format(request.output_schema),
        }
    apply_extra(kwargs, request, create)
    return kwargs


def _tool(spec: Any) -> dict[str, Any]:
    parameters, strict = strict_parameters(spec)
    function: dict[str, Any] = {"name": spec.name, "parameters": parameters}
    if spec.description:
        function["description"] = spec.description
    if strict:
        function["strict"] = True
    return {"type": "function", "function": function}


def _tool_choice(request: ModelRequest) -> Any:
    choice = request.tool_choice
    if isinstance(choice, RequireTool):
        if choice.name not in {t.name for t in request.tools}:
            msg = f"tool_choice requires tool {choice.name!r}, which is not offered"
            raise NotExpressible(msg)
        return {"type": "function", "function": {"name": choice.name}}
    return choice


def _messages(message: Message, system_role: SystemRole) -> list[dict[str, Any]]:
    """The Chat Completions messages for one fncore message (tool results: one each)."""
    results = [p for p in message.parts if type(p) is ToolResultPart]
    rest = [p for p in message.parts if type(p) is not ToolResultPart]
    out: list[dict[str, Any]] = [
        {"role": "tool", "tool_call_id": r.call_id, "content": r.content} for r in results
    ]
    if message.role == "tool":
        if any(type(p) is not ReasoningPart for p in rest):
            msg = "a tool message may hold only tool results"
            raise NotExpressible(msg)
        return out
    if message.role == "assistant":
        return [_assistant(rest), *out]
    if not rest:
        return out
    if message.role == "system":
        content: Any = _text_only(rest, "a system message")
        return [*out, {"role": system_role, "content": content}]
    return [*out, {"role": "user", "content": _user_content(rest)}]


def _text_only(parts: list[Any], where: str) -> str:
    texts = []
    for part in parts:
        if type(part) is TextPart:
            texts.append(part.text)
        elif type(part) is not ReasoningPart:
            msg = f"{where} may hold only text for the {_API} API, not {type(part).__name__}"
            raise NotExpressible(msg)
    return "".join(texts)


def _user_content(parts: list[Any]) -> str | list[dict[str, Any]]:
    if all(type(p) is TextPart for p in parts) and len(parts) == 1:
        text: str = parts[0].text
        return text
    content: list[dict[str, Any]] = []
    for part in parts:
        if type(part) is TextPart:
            content.append({"type": "text", "text": part.text})
        elif type(part) is DataPart:
            content.append(_data(part))
        elif type(part) is ToolCallPart:
            msg = "a user message cannot hold tool calls"
            raise NotExpressible(msg)
    return content


def _data(part: DataPart) -> dict[str, Any]:
    if part.media_type.startswith("image/"):
        return {"type": "image_url", "image_url": {"url": data_url(part)}}
    if part.media_type == "application/pdf":
        return {
            "type": "file",
            "file": {"filename": file_name(part), "file_data": data_url(part)},
        }
    raise unsupported(part, _API)


def _assistant(parts: list[Any]) -> dict[str, Any]:
    """An assistant message: its text and tool calls (reasoning is not sent back)."""
    texts: list[str] = []
    calls: list[dict[str, Any]] = []
    for part in parts:
        if type(part) is TextPart:
            texts.append(part.text)
        elif type(part) is ToolCallPart:
            calls.append(
                {
                    "id": part.id,
                    "type": "function",
                    "function": {"name": part.name, "arguments": part.arguments or "{}"},
                }
            )
        elif type(part) is DataPart:
            msg = f"an assistant message cannot hold {part.media_type!r} data in the {_API} API"
            raise NotExpressible(msg)
    content = "".join(texts) if texts or not calls else None
    out: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        out["tool_calls"] = calls
    return out

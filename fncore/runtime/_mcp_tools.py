"""MCP tools as fncore tools: names, argument models, and results as text for the model.

Nothing here imports the ``mcp`` SDK: a listing arrives as plain names, descriptions and
JSON schemas, and a result as the SDK's content blocks, read by their ``type``.
"""

from __future__ import annotations

import json
import re
from collections.abc import Awaitable, Callable, Mapping, Sequence
from typing import Any, ClassVar

from pydantic import BaseModel, ConfigDict, model_validator

from fncore.core import Tool, ToolResult

_VALID_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")
_INVALID_CHARS = re.compile(r"[^A-Za-z0-9_-]")

Caller = Callable[[str, dict[str, Any]], Awaitable[ToolResult]]
"""Calls one tool of a server by its name there, with its arguments; never raises."""


def tool_name(prefix: str, name: str) -> str:
    """The name the model sees: ``prefix`` + the server's name, made valid for providers.

    Providers accept letters, digits, ``_`` and ``-``, at most 64 of them; anything else
    becomes ``_`` and a longer name is cut.

    Example:
        >>> tool_name("time_", "get.current/time")
        'time_get_current_time'
    """
    full = f"{prefix}{name}"
    if _VALID_NAME.fullmatch(full):
        return full
    return _INVALID_CHARS.sub("_", full)[:64] or "_"


class _Arguments(BaseModel):
    """Arguments of an MCP tool: any JSON object; the server checks it against its schema."""

    model_config = ConfigDict(extra="allow")
    _required: ClassVar[tuple[str, ...]] = ()

    @model_validator(mode="after")
    def _check_required(self) -> _Arguments:
        given = self.__pydantic_extra__ or {}
        missing = [name for name in self._required if name not in given]
        if missing:
            msg = f"missing required argument(s): {', '.join(missing)}"
            raise ValueError(msg)
        return self


def arguments_model(name: str, schema: Mapping[str, Any]) -> type[BaseModel]:
    """A model accepting any JSON object that has the ``required`` keys of ``schema``.

    Types are the server's to check (it knows its own schema dialect): a wrong value comes
    back as an error result the model can react to, like any invalid arguments.

    Example:
        >>> Args = arguments_model("add", {"type": "object", "required": ["a"]})
        >>> Args.model_validate({"a": 1, "b": 2}).model_dump()
        {'a': 1, 'b': 2}
    """
    required = schema.get("required")
    names = tuple(r for r in required if isinstance(r, str)) if isinstance(required, list) else ()
    model: type[_Arguments] = type(f"{name}_args", (_Arguments,), {"__module__": __name__})
    model._required = names
    return model


def mcp_tool(
    caller: Caller,
    *,
    server: str,
    remote: str,
    prefix: str,
    description: str,
    schema: Mapping[str, Any],
    timeout: float,
) -> Tool:
    """One tool of the MCP server ``server``, offered as ``prefix + remote``.

    Its schema is the server's, as given; calling it calls ``remote`` on the server.
    """
    name = tool_name(prefix, remote)

    async def call(**arguments: Any) -> ToolResult:
        return await caller(remote, arguments)

    call.__name__ = name
    tool = Tool(
        call,
        name=name,
        args_model=arguments_model(name, schema),
        description=description,
        timeout=timeout,
        source=f"mcp server {server}",
    )
    parameters = dict(schema) if schema else {"type": "object", "properties": {}}
    parameters.setdefault("type", "object")
    tool.spec = type(tool.spec)(name, description, parameters, False)
    return tool


def _data_url(mime: object, data: object) -> str:
    return f"data:{mime or 'application/octet-stream'};base64,{data}"


def block_text(block: Any) -> str:
    """One content block of a result as text (images and audio as ``data:`` URLs).

    Example:
        >>> from types import SimpleNamespace as Block
        >>> block_text(Block(type="image", mime_type="image/png", data="iVBO"))
        '[image image/png] data:image/png;base64,iVBO'
    """
    kind = getattr(block, "type", None)
    if kind == "text":
        return str(block.text)
    if kind in ("image", "audio"):
        return f"[{kind} {block.mime_type}] {_data_url(block.mime_type, block.data)}"
    if kind == "resource":
        resource = block.resource
        text = getattr(resource, "text", None)
        if isinstance(text, str):
            return text
        blob = getattr(resource, "blob", "")
        return f"[resource {resource.uri}] {_data_url(resource.mime_type, blob)}"
    if kind == "resource_link":
        about = f": {block.description}" if getattr(block, "description", None) else ""
        return f"[resource link {block.name} {block.uri}]{about}"
    return json.dumps(getattr(block, "model_dump", lambda **_: str(block))(mode="json"))


def result_of(content: Sequence[Any], structured: object, is_error: bool) -> ToolResult:
    """A tool result from an MCP ``CallToolResult``'s parts.

    Content blocks become text, one per line; a result with structured content and no
    blocks becomes that content's JSON. ``isError`` makes it an error result.

    Example:
        >>> result_of([], {"sum": 3}, False)
        ToolResult(content='{"sum": 3}', is_error=False)
    """
    if content:
        text = "\n".join(block_text(block) for block in content)
    elif structured is not None:
        text = json.dumps(structured)
    else:
        text = ""
    return ToolResult(text, is_error)

"""The cache's entries as data: versioned JSON forms of answers, and keys of requests.

What a store holds is data, never code: JSON, not pickle. An entry that is not in the
current form (another `VERSION`, or damaged) decodes to ``None``: a miss, then replaced.
"""

from __future__ import annotations

import hashlib
import json

from fncore.core import (
    Message,
    ModelRequest,
    ModelResponse,
    ToolCallContext,
    ToolResult,
    Usage,
)
from fncore.core._message_json import message_doc, part_from_doc, str_field

VERSION = 1
"""The version of the JSON form entries are kept in; another version is a miss."""


def _dumps(doc: object) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


def encode_response(response: ModelResponse) -> bytes:
    """``response`` in the cache's versioned JSON form.

    Example:
        >>> decode_response(encode_response(ModelResponse(Message.assistant("4")))).text
        '4'
    """
    usage = response.usage
    return _dumps(
        {
            "v": VERSION,
            "message": message_doc(response.message),
            "usage": [
                usage.input_tokens,
                usage.output_tokens,
                usage.cache_read_tokens,
                usage.cache_write_tokens,
                usage.reasoning_tokens,
                usage.requests,
            ],
            "finish_reason": response.finish_reason,
            "model_name": response.model_name,
        }
    )


def decode_response(data: bytes) -> ModelResponse | None:
    """The response ``data`` holds, or ``None`` if it is not one (another version, damaged)."""
    try:
        doc = json.loads(data)
        if doc["v"] != VERSION or doc["message"]["role"] != "assistant":
            return None
        parts = tuple(part_from_doc(p) for p in doc["message"]["parts"])
        counts = doc["usage"]
        if len(counts) != 6 or not all(type(n) is int for n in counts):
            return None
        reason = doc["finish_reason"]
        if reason not in ("stop", "tool_calls", "length", "content_filter"):
            return None
        return ModelResponse(
            Message("assistant", parts), Usage(*counts), reason, str_field(doc, "model_name")
        )
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def encode_result(result: ToolResult) -> bytes:
    """A tool's result in the cache's versioned JSON form."""
    return _dumps({"v": VERSION, "content": result.content})


def decode_result(data: bytes) -> ToolResult | None:
    """The tool result ``data`` holds, or ``None`` if it is not one."""
    try:
        doc = json.loads(data)
        if doc["v"] != VERSION:
            return None
        return ToolResult(str_field(doc, "content"))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None


def request_key(request: ModelRequest, model: str) -> str:
    """A digest of ``request`` to ``model``, normalised: equal requests, equal keys.

    It covers what shapes the answer (the model, instructions, messages, tools, tool choice,
    settings and output schema), not the provider's prompt-cache hints.

    Example:
        >>> a = request_key(ModelRequest((Message.user("hi"),)), "gpt")
        >>> a == request_key(ModelRequest((Message.user("hi"),)), "gpt"), len(a)
        (True, 64)
    """
    settings = request.settings
    choice = request.tool_choice
    doc: dict[str, object] = {
        "model": model,
        "instructions": request.instructions,
        "messages": [message_doc(m) for m in request.messages],
        "tools": [[t.name, t.description, t.parameters, t.strict] for t in request.tools],
        "tool_choice": choice if isinstance(choice, str) else {"name": choice.name},
        "settings": [
            settings.temperature,
            settings.max_tokens,
            settings.top_p,
            list(settings.stop),
            settings.seed,
            settings.parallel_tool_calls,
            dict(settings.extra),
        ],
    }
    output = request.output_schema
    if output is not None:  # a typed answer is not a text one (and keys without stay as they were)
        doc["output"] = [output.name, output.schema, output.description, output.strict]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def tool_key(ctx: ToolCallContext) -> str:
    """A digest of a tool call: the tool's name, description and schema, its arguments."""
    spec = ctx.tool.spec
    doc = [spec.name, spec.description, spec.parameters, ctx.args.model_dump(mode="json")]
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()

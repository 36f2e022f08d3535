"""The cache's entries as data: versioned JSON forms of answers, and keys of requests.

What a store holds is data, never code: JSON, not pickle. An entry that is not in the
current form (another `VERSION`, or damaged) decodes to ``None``: a miss, then replaced.

A key is a digest of a request's JSON text, the same in every process. What a request holds
beyond JSON (a set or bytes in ``ModelSettings.extra``, a date or an enum in a tool's
arguments) is first put in a canonical form (`canonical`); a value with none is refused
(`Unkeyable`), never keyed by its ``repr``, which may differ from one process to the next.
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
from fncore.session_stores._json import (
    canonical,
    key_text,
    message_doc,
    part_from_doc,
    str_field,
)


def _dumps(doc: object) -> bytes:
    return json.dumps(doc, separators=(",", ":"), ensure_ascii=False).encode()


VERSION = 1
"""The version of the JSON form entries are kept in; another version is a miss."""


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

    Raises:
        Unkeyable: for a value in the settings, the tools or the output schema that has no
            canonical form (see `canonical`).

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
        "tools": [
            [t.name, t.description, canonical(t.parameters, f"tool {t.name!r}'s schema"), t.strict]
            for t in request.tools
        ],
        "tool_choice": choice if isinstance(choice, str) else {"name": choice.name},
        "settings": [
            settings.temperature,
            settings.max_tokens,
            settings.top_p,
            list(settings.stop),
            settings.seed,
            settings.parallel_tool_calls,
            canonical(settings.extra, "ModelSettings.extra"),
        ],
    }
    output = request.output_schema
    if output is not None:  # a typed answer is not a text one (and keys without stay as they were)
        schema = canonical(output.schema, "the output schema")
        doc["output"] = [output.name, schema, output.description, output.strict]
    return hashlib.sha256(key_text(doc).encode()).hexdigest()


def tool_key(ctx: ToolCallContext) -> str:
    """A digest of a tool call: the tool's name, description and schema, its arguments.

    Raises:
        Unkeyable: for an argument (or a schema value) that has no canonical form.
    """
    spec = ctx.tool.spec
    doc = [
        spec.name,
        spec.description,
        canonical(spec.parameters, f"tool {spec.name!r}'s schema"),
        canonical(ctx.args.model_dump(), f"the arguments of {spec.name!r}"),
    ]
    return hashlib.sha256(key_text(doc).encode()).hexdigest()

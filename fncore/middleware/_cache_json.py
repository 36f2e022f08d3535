"""The cache's entries as data: versioned JSON forms of answers, and keys of requests.

What a store holds is data, never code: JSON, not pickle. An entry that is not in the
current form (another `VERSION`, or damaged) decodes to ``None``: a miss, then replaced.

A key is a digest of a request's JSON text, the same in every process. What a request holds
beyond JSON (a set or bytes in ``ModelSettings.extra``, a date or an enum in a tool's
arguments) is first put in a canonical form (`canonical`); a value with none is refused
(`Unkeyable`), never keyed by its ``repr``, which may differ from one process to the next.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import hashlib
import json
from collections.abc import Mapping

import pydantic_core
from pydantic import BaseModel

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


class Unkeyable(TypeError):
    """A request holds a value that has no canonical JSON form, so no key the same everywhere.

    Example:
        >>> str(Unkeyable("ModelSettings.extra['client']", object())).split(":")[0]
        "ModelSettings.extra['client'] holds a value of type 'object', which has no canonical form"
    """

    def __init__(self, where: str, value: object) -> None:
        super().__init__(
            f"{where} holds a value of type {type(value).__qualname__!r}, which has no "
            "canonical form: the cache cannot key the call on it; use JSON values there (or "
            "sets, tuples, bytes, enums, dataclasses, pydantic models, dates, decimals, "
            "UUIDs), or leave this call out of the cache"
        )
        self.where = where
        """Where in the request the value is."""


def _text(value: object) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"))


def _type_name(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def canonical(value: object, where: str = "value") -> object:
    """``value`` as JSON data that is the same in every process: what a cache key digests.

    JSON values stay as they are (tuples become lists, as JSON writes them). The others
    become objects tagged ``"$"``: a set or frozenset its items in the order of their JSON
    text, bytes as base64, a mapping with keys that are not all strings (or that start with
    ``$``) its pairs in the order of their keys' text, an enum its type and value, a
    dataclass or pydantic model its type and fields, and what pydantic writes as JSON (dates,
    times, decimals, UUIDs, paths, ...) its type and that JSON. Strings, integers and floats
    of subclasses (a ``StrEnum`` member, an ``IntEnum`` one) are their plain values, as JSON
    writes them.

    Raises:
        Unkeyable: for a value with no canonical form (``where`` says where it is).

    Example:
        >>> canonical({"tags": {"b", "a"}, "ids": (1, 2)})
        {'tags': {'$': 'set', 'items': ['a', 'b']}, 'ids': [1, 2]}
    """
    if value is None or isinstance(value, (str, int, float)):
        return value
    if isinstance(value, (list, tuple)):
        return [canonical(v, f"{where}[{i}]") for i, v in enumerate(value)]
    if isinstance(value, Mapping):
        items = [(k, canonical(v, f"{where}[{k!r}]")) for k, v in value.items()]
        if all(type(k) is str and not k.startswith("$") for k, _ in items):
            return dict(items)
        pairs = [[canonical(k, f"{where} key {k!r}"), v] for k, v in items]
        return {"$": "map", "items": sorted(pairs, key=lambda pair: _text(pair[0]))}
    if isinstance(value, (set, frozenset)):
        members = [canonical(v, f"{where} item") for v in value]
        return {"$": "set", "items": sorted(members, key=_text)}
    if isinstance(value, (bytes, bytearray)):
        return {"$": "bytes", "base64": base64.b64encode(value).decode("ascii")}
    kind = type(value)
    if isinstance(value, enum.Enum):
        return {"$": _type_name(kind), "value": canonical(value.value, where)}
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value)}
        return {"$": _type_name(kind), "fields": canonical(fields, where)}
    if isinstance(value, BaseModel):
        return {"$": _type_name(kind), "fields": canonical(dict(value), where)}
    try:
        plain = pydantic_core.to_jsonable_python(value)
    except pydantic_core.PydanticSerializationError:
        raise Unkeyable(where, value) from None
    return {"$": _type_name(kind), "value": canonical(plain, where)}


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
    return hashlib.sha256(_text(doc).encode()).hexdigest()


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
    return hashlib.sha256(_text(doc).encode()).hexdigest()

"""Request mapping shared by the Chat Completions and Responses models."""

from __future__ import annotations

import base64
import inspect
from collections.abc import Callable, Mapping
from functools import cache
from typing import Any

from fncore.adapter import DataPart, ModelRequest, NotExpressible, OutputSchema, ToolSpec

RESERVED = frozenset({"model", "messages", "input", "stream", "instructions"})
"""Arguments the adapter sets itself; ``settings.extra`` may not replace them."""


def data_url(part: DataPart) -> str:
    """``part`` as a ``data:`` URL.

    Example:
        >>> data_url(DataPart(b"hi", "text/plain"))
        'data:text/plain;base64,aGk='
    """
    return f"data:{part.media_type};base64,{base64.b64encode(part.data).decode('ascii')}"


def file_name(part: DataPart) -> str:
    """A file name for a document part (the APIs want one with inline file data)."""
    subtype = part.media_type.partition("/")[2] or "bin"
    return f"document.{subtype}"


def unsupported(part: DataPart, api: str) -> NotExpressible:
    """The error for a data part of a media type ``api`` cannot take."""
    return NotExpressible(
        f"the {api} API cannot take {part.media_type!r} data; send images (image/*) "
        "or PDF documents (application/pdf), or convert the data to text"
    )


def strict_parameters(spec: ToolSpec) -> tuple[dict[str, Any], bool]:
    """The schema to send for ``spec`` and whether to ask for strict mode.

    Strict mode needs every object in the schema to list all its properties as required
    and to forbid other properties. Objects that require all their properties but say
    nothing about others (pydantic's nested models) get ``additionalProperties: false``
    added; anything else (optional fields, free-form dicts) sends the schema unchanged
    with strict mode off.

    Example:
        >>> spec = ToolSpec("f", "", {"type": "object", "properties": {"a": {"type": "integer"}},
        ...                           "required": ["a"], "additionalProperties": False}, True)
        >>> strict_parameters(spec)[1]
        True
    """
    parameters = dict(spec.parameters)
    if not spec.strict:
        return parameters, False
    strict = _strict_schema(parameters)
    if strict is None:
        return parameters, False
    return strict, True


def json_schema_format(output: OutputSchema) -> dict[str, Any]:
    """The ``json_schema`` format both APIs take for ``output`` (strict when it can be).

    Example:
        >>> schema = {"type": "object", "properties": {"a": {"type": "integer"}},
        ...           "required": ["a"]}
        >>> json_schema_format(OutputSchema("A", schema))["strict"]
        True
    """
    schema, strict = strict_parameters(ToolSpec(output.name, "", output.schema, output.strict))
    out: dict[str, Any] = {"name": output.name, "schema": schema, "strict": strict}
    if output.description:
        out["description"] = output.description
    return out


def _strict_schema(schema: object) -> Any:
    """A copy of ``schema`` valid for strict mode, or ``None`` if it cannot be."""
    if isinstance(schema, list):
        items = [_strict_schema(s) for s in schema]
        return None if any(i is None for i in items) else items
    if not isinstance(schema, Mapping):
        return schema
    out: dict[str, Any] = {}
    for key, sub in schema.items():
        if key in ("properties", "$defs", "definitions"):
            if not isinstance(sub, Mapping):
                return None
            mapped = {name: _strict_schema(s) for name, s in sub.items()}
            if any(m is None for m in mapped.values()):
                return None
            out[key] = mapped
        elif key in ("items", "anyOf", "allOf", "prefixItems"):
            mapped_sub = _strict_schema(sub)
            if mapped_sub is None:
                return None
            out[key] = mapped_sub
        else:
            out[key] = sub
    if out.get("type") == "object" or "properties" in out:
        properties = out.get("properties")
        if not isinstance(properties, Mapping):
            return None  # a free-form object
        if set(out.get("required", ())) != set(properties):
            return None
        if out.get("additionalProperties", False) is not False:
            return None
        out["additionalProperties"] = False
    return out


@cache
def _parameter_names(create: Callable[..., Any]) -> frozenset[str]:
    return frozenset(inspect.signature(create).parameters)


def apply_extra(kwargs: dict[str, Any], request: ModelRequest, create: Callable[..., Any]) -> None:
    """Add ``request.settings.extra`` to ``kwargs``.

    Arguments ``create`` takes go as they are, anything else into ``extra_body`` (for
    compatible servers' own options).

    Raises:
        NotExpressible: if ``extra`` tries to set an argument the adapter owns.
    """
    extra = request.settings.extra
    if not extra:
        return
    clash = sorted(RESERVED.intersection(extra))
    if clash:
        msg = f"settings.extra may not set {', '.join(clash)}: the adapter sets it"
        raise NotExpressible(msg)
    known = _parameter_names(getattr(create, "__func__", create))
    body: dict[str, Any] = dict(kwargs.get("extra_body") or {})
    for key, value in extra.items():
        if key == "extra_body" and isinstance(value, Mapping):
            body.update(value)
        elif key in known:
            kwargs[key] = value
        else:
            body[key] = value
    if body:
        kwargs["extra_body"] = body

"""`patch_tool_calls`: repair the model's tool-call arguments before the loop validates them.

The loop parses a call's JSON arguments and validates them against the tool's schema when
the response comes back (an invalid call becomes an error result the model can react to).
This middleware stands at ``model_call`` and rewrites the response's `ToolCallPart`
arguments first, for the tools the request offered:

1. Arguments that are not valid JSON are repaired with the ``json-repair`` library
   (missing quotes or brackets, trailing commas, single quotes, comments, a truncated end).
   Arguments that are a JSON string holding a JSON object are decoded once more.
2. Values are coerced to the type the tool's JSON schema asks for, where they do not
   already have it (following ``$ref``, ``anyOf``/``oneOf``, ``properties``, ``items``):

   * ``integer``: a string holding an integer (``"3"``), or an integral number (``3.0``,
     ``"3.0"``), becomes that integer;
   * ``number``: a string holding a finite number becomes that number;
   * ``boolean``: ``"true"``/``"false"`` (any case) becomes the boolean;
   * ``string``: a number becomes its JSON text (``3`` -> ``"3"``);
   * ``array`` / ``object``: a string holding a JSON array / object becomes it.

Arguments that cannot be repaired into a JSON object are left as they came: the model gets
the validation message, as without this middleware.

Each patch is recorded as a `ToolCallPatch` (the arguments before and after, and what
changed) in the reply's state, read with `patched_calls`, and as a span event
``fncore.patch_tool_calls`` on the current span. When streaming, the ``ToolCallArgsDelta``
events carry the model's text as it came; the patched arguments are in the response that
the ``RoundFinished`` event carries (and in the run's messages).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any, final

import json_repair
from returns.result import Success

from fncore.core import (
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Part,
    Registry,
    RunInfo,
    StateKey,
    ToolCallPart,
)
from fncore.core._position_names import MODEL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._place import place
from fncore.runtime import register_state_type

__all__ = ["ToolCallPatch", "patch_tool_calls", "patched_calls"]

_INTEGER = re.compile(r"[+-]?\d+(\.0*)?")
_MISSING: Any = object()


@register_state_type  # kept in reply state, so in a paused run's checkpoint
@final
@dataclass(frozen=True, slots=True)
class ToolCallPatch:
    """One tool call whose arguments `patch_tool_calls` changed."""

    call_id: str
    """The call's id."""
    tool: str
    """The tool's name."""
    before: str
    """The arguments as the model sent them."""
    after: str
    """The arguments as the loop got them."""
    changes: tuple[str, ...]
    """What was done: ``"repaired JSON"``, ``"decoded JSON string"``, or one coercion per
    value, as ``"<path>: <old JSON> -> <new JSON>"`` (``"a: \\"3\\" -> 3"``)."""


_PATCHES: dict[str, StateKey[tuple[ToolCallPatch, ...]]] = {}


def _key(name: str) -> StateKey[tuple[ToolCallPatch, ...]]:
    key = _PATCHES.get(name)
    if key is None:
        key = _PATCHES[name] = StateKey(f"fncore.patch_tool_calls.{name}", default=tuple)
    return key


def patched_calls(run: RunInfo, name: str = "patch_tool_calls") -> tuple[ToolCallPatch, ...]:
    """The tool calls ``name`` patched during this reply, in order.

    Example:
        >>> from fncore.core import State
        >>> patched_calls(RunInfo("r1", {}, State()))
        ()
    """
    return run.state.get(_key(name))


# -- coercion ---------------------------------------------------------------------------------


def _types(schema: Mapping[str, Any]) -> set[str]:
    kind = schema.get("type")
    if isinstance(kind, str):
        return {kind}
    return {k for k in kind if isinstance(k, str)} if isinstance(kind, list) else set()


def _has_type(value: object, kinds: set[str]) -> bool:
    if isinstance(value, bool):
        return "boolean" in kinds
    checks = {
        "boolean": False,
        "integer": isinstance(value, int),
        "number": isinstance(value, int | float),
        "string": isinstance(value, str),
        "array": isinstance(value, list),
        "object": isinstance(value, dict),
        "null": value is None,
    }
    return any(checks.get(k, True) for k in kinds)


def _convert(value: object, kinds: set[str]) -> object:
    """``value`` as one of ``kinds``, or `_MISSING` when no rule applies."""
    if isinstance(value, str):
        text = value.strip()
        if "integer" in kinds and _INTEGER.fullmatch(text):
            return int(float(text)) if "." in text else int(text)
        if "number" in kinds:
            try:
                number = float(text)
            except ValueError:
                number = math.nan
            if math.isfinite(number):
                return int(text) if _INTEGER.fullmatch(text) and "." not in text else number
        if "boolean" in kinds and text.lower() in {"true", "false"}:
            return text.lower() == "true"
        if kinds & {"array", "object"} and text[:1] in {"[", "{"}:
            try:
                decoded = json.loads(text)
            except ValueError:
                return _MISSING
            if _has_type(decoded, kinds & {"array", "object"}):
                return decoded
        return _MISSING
    if isinstance(value, float) and not isinstance(value, bool) and "integer" in kinds:
        return int(value) if value.is_integer() else _MISSING
    if isinstance(value, int | float) and not isinstance(value, bool) and "string" in kinds:
        return json.dumps(value)
    return _MISSING


class _Coercer:
    def __init__(self, root: Mapping[str, Any]) -> None:
        self.root = root
        self.changes: list[str] = []

    def resolve(self, schema: Mapping[str, Any]) -> Mapping[str, Any]:
        seen = 0
        while isinstance(schema.get("$ref"), str) and seen < 32:
            target: Any = self.root
            for step in schema["$ref"].removeprefix("#/").split("/"):
                target = target.get(step, {}) if isinstance(target, Mapping) else {}
            schema = target if isinstance(target, Mapping) else {}
            seen += 1
        return schema

    def coerce(self, value: object, schema: Mapping[str, Any], path: str) -> object:
        schema = self.resolve(schema)
        branches = [self.resolve(b) for b in (*schema.get("anyOf", ()), *schema.get("oneOf", ()))]
        kinds = _types(schema) | {k for b in branches for k in _types(b)}
        if kinds and not _has_type(value, kinds):
            converted = _convert(value, kinds)
            if converted is not _MISSING:
                self.changes.append(
                    f"{path or '.'}: {json.dumps(value)} -> {json.dumps(converted)}"
                )
                value = converted
        for branch in [schema, *branches]:
            if isinstance(value, dict) and "object" in _types(branch):
                return self.fields(value, branch, path)
            if isinstance(value, list) and "array" in _types(branch):
                items = branch.get("items")
                if isinstance(items, Mapping):
                    return [self.coerce(v, items, f"{path}[{i}]") for i, v in enumerate(value)]
        return value

    def fields(self, value: dict[str, Any], schema: Mapping[str, Any], path: str) -> object:
        properties = schema.get("properties")
        if not isinstance(properties, Mapping):
            return value
        return {
            k: self.coerce(v, properties[k], f"{path}.{k}" if path else k)
            if isinstance(properties.get(k), Mapping)
            else v
            for k, v in value.items()
        }


def patch_arguments(arguments: str, schema: Mapping[str, Any]) -> tuple[str, tuple[str, ...]]:
    """``arguments`` repaired and coerced to ``schema``, and what changed (empty: nothing).

    Example:
        >>> schema = {"type": "object", "properties": {"a": {"type": "integer"}}}
        >>> patch_arguments("{'a': '3',}", schema)
        ('{"a": 3}', ('repaired JSON', 'a: "3" -> 3'))
    """
    changes: list[str] = []
    try:
        parsed: object = json.loads(arguments or "{}")
    except ValueError:
        parsed = json_repair.loads(arguments)
        if not isinstance(parsed, dict):
            return arguments, ()
        changes.append("repaired JSON")
    if isinstance(parsed, str):
        try:
            inner = json.loads(parsed)
        except ValueError:
            return arguments, ()
        if isinstance(inner, dict):
            parsed = inner
            changes.append("decoded JSON string")
    if not isinstance(parsed, dict):
        return arguments, ()
    coercer = _Coercer(schema)
    coerced = coercer.coerce(parsed, schema, "")
    changes.extend(coercer.changes)
    if not changes:
        return arguments, ()
    return json.dumps(coerced, ensure_ascii=False), tuple(changes)


def _record(
    run: RunInfo, key: StateKey[tuple[ToolCallPatch, ...]], new: list[ToolCallPatch]
) -> None:
    from opentelemetry import trace  # imported when used

    run.state.set(key, (*run.state.get(key), *new))
    span = trace.get_current_span()
    for patch in new:
        span.add_event(
            "fncore.patch_tool_calls",
            {
                "gen_ai.tool.call.id": patch.call_id,
                "gen_ai.tool.name": patch.tool,
                "fncore.patch.changes": list(patch.changes),
            },
        )


@checked
def patch_tool_calls(*, name: str = "patch_tool_calls") -> Registry:
    """Repair malformed tool-call JSON and coerce argument types, before validation.

    See the module's rules. Place: inside `retry` and `rate_limit`, outside `timeout` and
    `emulate_tools` (so emulated calls are patched too).

    Args:
        name: The middleware's name, to tell two instances apart (and for `patched_calls`).

    Example:
        >>> registry = Registry()
        >>> registry.include(patch_tool_calls())
        >>> [m.name for m in registry.middleware]
        ['patch_tool_calls']
    """
    key = _key(name)
    registry = Registry()

    @registry.on(MODEL_CALL, name=name, **place("patch_tool_calls"))
    async def patching(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        outcome = await call_next(ctx)
        if type(outcome) is not Success:
            return outcome
        response: ModelResponse = outcome.unwrap()
        message = response.message
        if not any(type(p) is ToolCallPart for p in message.parts):
            return outcome
        schemas = {spec.name: spec.parameters for spec in ctx.request.tools}
        parts: list[Part] = []
        patches: list[ToolCallPatch] = []
        for part in message.parts:
            if type(part) is ToolCallPart and part.name in schemas:
                after, changes = patch_arguments(part.arguments, schemas[part.name])
                if changes:
                    patches.append(
                        ToolCallPatch(part.id, part.name, part.arguments, after, changes)
                    )
                    part = replace(part, arguments=after)
            parts.append(part)
        if not patches:
            return outcome
        _record(ctx.run, key, patches)
        return Success(replace(response, message=replace(message, parts=tuple(parts))))

    return registry

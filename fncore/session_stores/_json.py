"""fncore's values as JSON data: the one codec of stored records, cache entries and cache keys.

* A message is ``{"role": ..., "parts": [...]}``, each part tagged ``type`` (``text``,
  ``reasoning``, ``tool_call``, ``tool_result``, ``data``, its data as base64); a store adds
  ``"cache": true`` for the prompt-cache flag (a cache key must not depend on it).
* A stored value (`value_doc`: session state, a paused run's state, arguments) is exact:
  JSON's own types as they are, and tagged ``"$"`` what JSON cannot say (tuples, bytes,
  sets, frozensets, floats that are not finite, dicts whose keys are not all strings, and
  registered dataclasses by ``module:qualname`` and ``init`` fields). Types match exactly
  (a ``str`` subclass is not a ``str``), so what is read back is what was written.
* A key's value (`canonical`) is normalised instead: the same in every process.
* A checkpoint (`checkpoint_doc`) is its fields, its values in the stored form.

Readers raise on a damaged document (`Unreadable`, `TypeError`, `LookupError`). Stored data
never chooses code: a document naming a class not registered (`register_state_type`) is
`Unregistered`, and nothing is imported or built. Writers raise `TypeError` saying where a
value without a form is. Stores add format versions and errors; the cache versions, digests.
"""

from __future__ import annotations

import base64
import dataclasses
import enum
import json
import math
import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, TypeVar

import pydantic_core
from pydantic import BaseModel

from fncore.core import (
    ALL_DECISIONS,
    Approve,
    Checkpoint,
    DataPart,
    Decision,
    Edit,
    Message,
    ModelSettings,
    Part,
    Paused,
    PendingRequest,
    ReasoningPart,
    Reject,
    RequireTool,
    Respond,
    ResumePoint,
    RunResult,
    TextPart,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    Usage,
)
from fncore.core._result import StopReason
from fncore.session_stores._state_types import state_type, state_type_name

_D = TypeVar("_D")

dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode
"""JSON text of a form: ASCII (any string survives any database's text type), compact."""


class Unreadable(ValueError):
    """A document that does not decode."""


class Unregistered(Unreadable):
    """A document naming a class that is not registered for stored state."""


def _b64(data: bytes | bytearray) -> str:
    return base64.b64encode(data).decode("ascii")


# Parts and messages -----------------------------------------------------------------------

_ROLES: frozenset[str] = frozenset({"system", "user", "assistant", "tool"})


def part_doc(part: object) -> dict[str, Any]:
    """``part`` as JSON data.

    Raises:
        TypeError: if ``part`` is not one of fncore's part types.

    Example:
        >>> part_doc(TextPart("hi"))
        {'type': 'text', 'text': 'hi'}
    """
    kind = type(part)
    p: Any = part
    if kind is TextPart:
        return {"type": "text", "text": p.text}
    if kind is ReasoningPart:
        return {
            "type": "reasoning",
            "text": p.text,
            "signature": p.signature,
            "redacted": p.redacted,
        }
    if kind is ToolCallPart:
        return {"type": "tool_call", "id": p.id, "name": p.name, "arguments": p.arguments}
    if kind is ToolResultPart:
        return {
            "type": "tool_result",
            "call_id": p.call_id,
            "name": p.name,
            "content": p.content,
            "is_error": p.is_error,
        }
    if kind is DataPart:
        return {"type": "data", "media_type": p.media_type, "data": _b64(p.data)}
    msg = f"a message part of type {kind.__qualname__} is not one of fncore's part types"
    raise TypeError(msg)


def str_field(doc: Mapping[str, Any], key: str) -> str:
    """``doc[key]``, checked to be a ``str`` (`KeyError`, `TypeError` if not)."""
    value = doc[key]
    if type(value) is not str:
        msg = f"{key} is {type(value).__name__}, not str"
        raise TypeError(msg)
    return value


def _optional_str(doc: Mapping[str, Any], key: str) -> str | None:
    return None if doc.get(key) is None else str_field(doc, key)


def part_from_doc(doc: Mapping[str, Any]) -> Part:
    """The part ``doc`` describes.

    Raises:
        ValueError, TypeError, KeyError: if ``doc`` is not a part's JSON data.

    Example:
        >>> part_from_doc({"type": "text", "text": "hi"})
        TextPart(text='hi')
    """
    kind = doc["type"]
    if kind == "text":
        return TextPart(str_field(doc, "text"))
    if kind == "reasoning":
        signature, redacted = _optional_str(doc, "signature"), _optional_str(doc, "redacted")
        return ReasoningPart(str_field(doc, "text"), signature, redacted)
    if kind == "tool_call":
        return ToolCallPart(
            str_field(doc, "id"), str_field(doc, "name"), str_field(doc, "arguments")
        )
    if kind == "tool_result":
        if type(doc["is_error"]) is not bool:
            msg = "is_error is not a bool"
            raise TypeError(msg)
        call_id, name = str_field(doc, "call_id"), str_field(doc, "name")
        return ToolResultPart(call_id, name, str_field(doc, "content"), doc["is_error"])
    if kind == "data":
        data = base64.b64decode(str_field(doc, "data"), validate=True)
        return DataPart(data, str_field(doc, "media_type"))
    msg = f"unknown part type {kind!r}"
    raise Unreadable(msg)


def message_doc(message: Message, flag: bool = False) -> dict[str, Any]:
    """``message`` as JSON data; its prompt-cache flag only when ``flag`` (and it is set).

    Raises:
        TypeError: if a part is not one of fncore's part types.

    Example:
        >>> message_doc(Message.user("hi"))
        {'role': 'user', 'parts': [{'type': 'text', 'text': 'hi'}]}
    """
    parts = [part_doc(p) for p in message.parts]
    if flag and message.cache:
        return {"role": message.role, "parts": parts, "cache": True}
    return {"role": message.role, "parts": parts}


def message_from_doc(doc: Mapping[str, Any]) -> Message:
    """The message ``doc`` describes, with its prompt-cache flag if it has one.

    Raises:
        ValueError, TypeError, KeyError: if ``doc`` is not a message's JSON data.

    Example:
        >>> message_from_doc(message_doc(Message.assistant("hello"))).text
        'hello'
    """
    role = doc["role"]
    if role not in _ROLES:
        msg = f"unknown role {role!r}"
        raise Unreadable(msg)
    parts = tuple([part_from_doc(p) for p in doc["parts"]])
    return Message(role, parts, doc.get("cache", False) is True)


# Stored values: exact, registered dataclasses only ----------------------------------------


def value_doc(value: object, where: str) -> Any:
    """``value`` in the stored form, read back exactly by `value_from_doc`.

    Raises:
        TypeError: naming ``where`` (and the place in it) for a value that cannot be stored.

    Example:
        >>> value_doc({"seen": ("a", b"b")}, "state")
        {'seen': {'$': 'tuple', 'items': ['a', {'$': 'bytes', 'base64': 'Yg=='}]}}
    """
    kind = type(value)
    v: Any = value
    if v is None or kind is bool or kind is int or kind is str:
        return v
    if kind is float:
        return v if math.isfinite(v) else {"$": "float", "value": repr(v)}
    if kind is list:
        return [value_doc(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if kind is dict:
        if "$" not in v and all(type(k) is str for k in v):
            return {k: value_doc(x, f"{where}[{k!r}]") for k, x in v.items()}
        pairs = [
            [value_doc(k, f"{where} key {k!r}"), value_doc(x, f"{where}[{k!r}]")]
            for k, x in v.items()
        ]
        return {"$": "dict", "items": pairs}
    if kind is tuple or kind is set or kind is frozenset:
        items = [value_doc(x, f"{where}[{i}]") for i, x in enumerate(v)]
        return {"$": kind.__name__, "items": items}
    if kind is bytes:
        return {"$": "bytes", "base64": _b64(v)}
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = state_type_name(kind)
        if name is None:
            msg = (
                f"{where} holds a {kind.__qualname__}, a dataclass not registered for stored "
                "state: define it at module level and register it there with "
                f"fncore.register_state_type({kind.__name__}) (or as a class decorator)"
            )
            raise TypeError(msg)
        fields = {
            f.name: value_doc(getattr(value, f.name), f"{where}.{f.name}")
            for f in dataclasses.fields(value)
            if f.init
        }
        return {"$": "dataclass", "type": name, "fields": fields}
    msg = (
        f"{where} holds a {kind.__module__}.{kind.__qualname__}, which cannot "
        "be stored: keep None, bool, int, float, str, bytes, list, tuple, set, frozenset, "
        "dict, or registered dataclasses of those (fncore.register_state_type)"
    )
    raise TypeError(msg)


_COLLECTIONS: dict[str, type] = {"tuple": tuple, "set": set, "frozenset": frozenset}


def _tagged_from_doc(doc: dict[str, Any]) -> object:
    tag = doc["$"]
    if tag == "tuple" or tag == "set" or tag == "frozenset":
        return _COLLECTIONS[tag]([value_from_doc(v) for v in doc["items"]])
    if tag == "dict":
        return {value_from_doc(k): value_from_doc(v) for k, v in doc["items"]}
    if tag == "bytes":
        return base64.b64decode(doc["base64"], validate=True)
    if tag == "float":
        return float(doc["value"])
    if tag == "dataclass":
        name = doc["type"]
        cls: Any = state_type(name) if type(name) is str else None
        if cls is None:
            msg = (
                f"it names the type {name!r}, which is not registered for stored state: "
                "register it with fncore.register_state_type where it is defined"
            )
            raise Unregistered(msg)
        return cls(**{field: value_from_doc(v) for field, v in doc["fields"].items()})
    msg = f"unknown tag {tag!r}"
    raise Unreadable(msg)


def value_from_doc(doc: Any) -> object:
    """The value a `value_doc` form holds (only registered dataclasses are built).

    Raises:
        Unregistered: if it names a class that is not registered.
        ValueError, TypeError, KeyError: if it is damaged.
    """
    kind = type(doc)
    if kind is list:
        return [value_from_doc(v) for v in doc]
    if kind is dict:
        if "$" in doc:
            return _tagged_from_doc(doc)
        return {k: value_from_doc(v) for k, v in doc.items()}
    return doc


def values_doc(values: Mapping[str, object], what: str) -> dict[str, Any]:
    """The stored form of each value of ``values`` (``what`` names them in errors)."""
    return {key: value_doc(v, f"{what} {key!r}") for key, v in values.items()}


def _values(doc: Any) -> MappingProxyType[str, object]:
    return MappingProxyType({key: value_from_doc(v) for key, v in doc.items()})


# Checkpoints ------------------------------------------------------------------------------


def _messages(docs: Any) -> tuple[Message, ...]:
    return tuple([message_from_doc(d) for d in docs])


def _choice(choice: ToolChoice) -> Any:
    return {"tool": choice.name} if type(choice) is RequireTool else choice


def _read_choice(doc: Any) -> ToolChoice:
    if type(doc) is dict:
        return RequireTool(str(doc["tool"]))
    if doc not in ("auto", "none", "required"):
        msg = f"unknown tool choice {doc!r}"
        raise Unreadable(msg)
    return doc  # type: ignore[no-any-return]


_NAMES: dict[type, tuple[str, ...]] = {}


def _names(cls: Any) -> tuple[str, ...]:
    """The names of the dataclass ``cls``'s ``init`` fields (all of fncore's are)."""
    if cls not in _NAMES:
        _NAMES[cls] = tuple(f.name for f in dataclasses.fields(cls) if f.init)
    return _NAMES[cls]


def _fields(value: Any, **forms: Any) -> dict[str, Any]:
    """The dataclass ``value``'s fields by name, those in ``forms`` in the form given there."""
    return {n: forms[n] if n in forms else getattr(value, n) for n in _names(type(value))}


def _build(cls: type[_D], doc: Mapping[str, Any], **readers: Callable[[Any], object]) -> _D:
    """The dataclass ``cls`` from its fields in ``doc``, those in ``readers`` read by them."""
    return cls(**{n: readers[n](doc[n]) if n in readers else doc[n] for n in _names(cls)})


def _optional(read: Callable[[Any], object]) -> Callable[[Any], object]:
    return lambda doc: None if doc is None else read(doc)


def _request(r: PendingRequest) -> dict[str, Any]:
    return _fields(r, arguments=values_doc(r.arguments, "request argument"), allowed=[*r.allowed])


def _read_request(doc: Any) -> PendingRequest:
    allowed = tuple(doc["allowed"])
    if not set(allowed) <= set(ALL_DECISIONS):
        msg = f"unknown decisions in {allowed!r}"
        raise Unreadable(msg)
    return _build(PendingRequest, doc, arguments=_values, allowed=tuple)


def _decision(decision: Decision) -> dict[str, Any]:
    if type(decision) is Edit:
        return {"kind": "edit", "arguments": values_doc(decision.arguments, "edited argument")}
    if type(decision) is Reject or type(decision) is Respond:
        return {"kind": decision.kind, "message": decision.message}
    return {"kind": "approve"}


def _read_decision(doc: Any) -> Decision:
    kind = doc["kind"]
    if kind == "approve":
        return Approve()
    if kind == "edit":
        return Edit(_values(doc["arguments"]))
    if kind == "reject" or kind == "respond":
        return (Reject if kind == "reject" else Respond)(str(doc["message"]))
    msg = f"unknown decision {kind!r}"
    raise Unreadable(msg)


def _point(point: ResumePoint) -> dict[str, Any]:
    calls = point.calls
    return _fields(
        point,
        history=[message_doc(m, True) for m in point.history],
        new=[message_doc(m, True) for m in point.new],
        usage=_fields(point.usage),
        calls=None
        if calls is None
        else [[part_doc(c), None if r is None else part_doc(r)] for c, r in calls],
        choice=_choice(point.choice),
    )


def _slot(doc: Any) -> tuple[ToolCallPart, ToolResultPart | None]:
    call = part_from_doc(doc[0])
    result = None if doc[1] is None else part_from_doc(doc[1])
    if type(call) is not ToolCallPart or (
        result is not None and type(result) is not ToolResultPart
    ):
        msg = "a checkpoint's call slot holds other parts than a call and its result"
        raise Unreadable(msg)
    return call, result


def _read_point(doc: Any) -> ResumePoint:
    return _build(
        ResumePoint,
        doc,
        history=_messages,
        new=_messages,
        usage=_usage,
        calls=_optional(lambda calls: tuple(_slot(c) for c in calls)),
        choice=_read_choice,
    )


def _result(result: RunResult) -> dict[str, Any]:
    paused = result.paused
    return _fields(
        result,
        messages=[message_doc(m, True) for m in result.messages],
        usage=_fields(result.usage),
        paused=None
        if paused is None
        else {
            "checkpoint_id": paused.checkpoint_id,
            "requests": [_request(r) for r in paused.requests],
        },
    )


def _usage(doc: Any) -> Usage:
    return Usage(**doc)


def _read_paused(doc: Any) -> Paused:
    return Paused(str(doc["checkpoint_id"]), tuple(_read_request(r) for r in doc["requests"]))


def _read_result(doc: Any) -> RunResult:
    if doc["stop_reason"] not in typing.get_args(StopReason):
        msg = f"unknown stop reason {doc['stop_reason']!r}"
        raise Unreadable(msg)
    return _build(RunResult, doc, messages=_messages, usage=_usage, paused=_optional(_read_paused))


def _read_time(doc: Any) -> float:
    """A time as `value_doc` wrote it (tagged if infinite: a checkpoint never expires)."""
    value = value_from_doc(doc)
    if type(value) is not float and type(value) is not int:
        msg = f"a time must be a number, not {value!r}"
        raise Unreadable(msg)
    return float(value)


def checkpoint_doc(c: Checkpoint) -> dict[str, Any]:
    """``c`` as JSON data, all but its claim (which stores keep in columns).

    Raises:
        TypeError: naming what in its state, metadata or settings cannot be stored.
    """
    settings = c.model_settings
    doc = _fields(
        c,
        created=value_doc(c.created, "created"),
        expires=value_doc(c.expires, "expires"),
        input=[message_doc(m, True) for m in c.input],
        point=_point(c.point),
        requests=[_request(r) for r in c.requests],
        tool_choice=_choice(c.tool_choice),
        model_settings=_fields(
            settings, stop=[*settings.stop], extra=values_doc(settings.extra, "model setting")
        ),
        metadata=values_doc(c.metadata, "request metadata"),
        state=values_doc(c.state, "reply state"),
        session_state=values_doc(c.session_state, "session state"),
        decisions={k: _decision(d) for k, d in c.decisions.items()},
        outcome=None if c.outcome is None else _result(c.outcome),
    )
    del doc["claim"], doc["claim_until"]
    return doc


def checkpoint_from_doc(r: dict[str, Any], claim: str, claim_until: float) -> Checkpoint:
    """The checkpoint `checkpoint_doc` wrote, with its claim.

    Raises:
        Unregistered: if its state names a class that is not registered.
        ValueError, TypeError, LookupError: if it is damaged.
    """
    stage = r["stage"]
    if stage not in ("paused", "decided", "done"):
        msg = f"unknown checkpoint stage {stage!r}"
        raise Unreadable(msg)
    settings = _build(ModelSettings, r["model_settings"], stop=tuple, extra=_values)
    return _build(
        Checkpoint,
        {**r, "claim": claim, "claim_until": claim_until},
        created=_read_time,
        expires=_read_time,
        input=_messages,
        point=_read_point,
        requests=lambda requests: tuple(_read_request(q) for q in requests),
        tool_choice=_read_choice,
        model_settings=lambda _: settings,
        metadata=_values,
        state=_values,
        session_state=_values,
        decisions=lambda d: MappingProxyType({k: _read_decision(v) for k, v in d.items()}),
        outcome=_optional(_read_result),
    )


# Keys: canonical, not exact ---------------------------------------------------------------


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


def key_text(doc: object) -> str:
    """The JSON text a key digests: keys sorted, compact, ASCII."""
    return json.dumps(doc, sort_keys=True, separators=(",", ":"))


def _qualified(kind: type) -> str:
    return f"{kind.__module__}.{kind.__qualname__}"


def canonical(value: object, where: str = "value") -> object:
    """``value`` as JSON data that is the same in every process: what a cache key digests.

    JSON values stay as they are (tuples become lists, as JSON writes them). The others
    become objects tagged ``"$"``: a set or frozenset its items in the order of their JSON
    text, bytes as base64, a mapping with keys that are not all strings (or that start with
    ``$``) its pairs in the order of their keys' text, an enum its type and value, a
    dataclass (the fields its equality compares) or pydantic model its type and fields, and
    what pydantic writes as JSON (dates, times, decimals, UUIDs, paths, ...) its type and
    that JSON. Strings, integers and floats of subclasses (a ``StrEnum`` member, an
    ``IntEnum`` one) are their plain values, as JSON writes them.

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
        return {"$": "map", "items": sorted(pairs, key=lambda pair: key_text(pair[0]))}
    if isinstance(value, (set, frozenset)):
        members = [canonical(v, f"{where} item") for v in value]
        return {"$": "set", "items": sorted(members, key=key_text)}
    if isinstance(value, (bytes, bytearray)):
        return {"$": "bytes", "base64": _b64(value)}
    kind = type(value)
    if isinstance(value, enum.Enum):
        return {"$": _qualified(kind), "value": canonical(value.value, where)}
    if dataclasses.is_dataclass(value):
        fields = {f.name: getattr(value, f.name) for f in dataclasses.fields(value) if f.compare}
        return {"$": _qualified(kind), "fields": canonical(fields, where)}
    if isinstance(value, BaseModel):
        return {"$": _qualified(kind), "fields": canonical(dict(value), where)}
    try:
        plain = pydantic_core.to_jsonable_python(value)
    except pydantic_core.PydanticSerializationError:
        raise Unkeyable(where, value) from None
    return {"$": _qualified(kind), "value": canonical(plain, where)}

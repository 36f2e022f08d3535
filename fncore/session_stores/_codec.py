"""How messages and session state are written to a store, and read back exactly.

Both are JSON text (ASCII, so any string survives any database's text type), and each
record carries its format version (``"v"``): a record from a newer fncore is refused, not
misread.

A message is ``{"v": 1, "role": ..., "parts": [...], "cache": true}`` (``cache`` only when
set), its role and parts in the form the cache uses too (``fncore.core._message_json``).

Session state is ``{"v": 1, "values": {name: value}}``. JSON's own types are written as
they are; what JSON cannot say is an object tagged ``"$"``: tuples, bytes, sets and
frozensets, floats that are not finite, dicts whose keys are not all strings, and
instances of registered dataclasses (`register_state_type`), by ``module:qualname`` and
their ``init`` fields, rebuilt by calling the class. Types are matched exactly (a ``str``
subclass is not a ``str``), so what is read back is what was written. Anything else raises
`NotSerializable` at save time, naming the state key and where in the value it is.

Stored data never chooses code: a record naming a class that is not registered is
`SessionStoreCorrupt`, and nothing is imported or built.
"""

from __future__ import annotations

import base64
import binascii
import dataclasses
import json
import math
import typing
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any

from fncore.core import (
    ALL_DECISIONS,
    Approve,
    Checkpoint,
    Decision,
    Edit,
    Message,
    ModelSettings,
    Paused,
    PendingRequest,
    Reject,
    RequireTool,
    Respond,
    ResumePoint,
    RunResult,
    ToolCallPart,
    ToolChoice,
    ToolResultPart,
    Usage,
)
from fncore.core._message_json import message_doc, message_from_doc, part_doc, part_from_doc
from fncore.core._result import StopReason
from fncore.session_stores._errors import (
    NotSerializable,
    SessionStoreCorrupt,
    written_by_newer,
)
from fncore.session_stores._state_types import state_type, state_type_name

MESSAGE_FORMAT = 1
"""The format version of message records this fncore writes and reads."""
STATE_FORMAT = 1
"""The format version of state records this fncore writes and reads."""

_dumps = json.JSONEncoder(ensure_ascii=True, separators=(",", ":"), allow_nan=False).encode


class _Unreadable(ValueError):
    """A record that does not decode (turned into `SessionStoreCorrupt` by the caller)."""


class _Unregistered(_Unreadable):
    """A record naming a class that is not registered for stored state."""


def _b64(data: bytes) -> str:
    return base64.b64encode(data).decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.b64decode(text, validate=True)


def encode_message(message: Message) -> str:
    """The JSON record of ``message``.

    Raises:
        NotSerializable: if a part is not one of fncore's part types.

    Example:
        >>> encode_message(Message.user("hi"))
        '{"v":1,"role":"user","parts":[{"type":"text","text":"hi"}]}'
    """
    try:
        record = {"v": MESSAGE_FORMAT, **message_doc(message)}
    except TypeError as exc:
        raise NotSerializable(str(exc)) from None
    if message.cache:
        record["cache"] = True
    return _dumps(record)


def _record(text: str | bytes, what: str, known: int) -> dict[str, Any]:
    """The JSON object in ``text`` at a format version this fncore reads."""
    record = json.loads(text)
    if type(record) is not dict:
        msg = f"a {what} record must be a JSON object"
        raise _Unreadable(msg)
    version = record.get("v")
    if type(version) is not int:
        msg = f"a {what} record has no format version"
        raise _Unreadable(msg)
    if version > known:
        raise written_by_newer(f"a stored {what} record", version, known)
    return record


def _corrupt(what: str, exc: Exception) -> SessionStoreCorrupt:
    if isinstance(exc, _Unregistered):
        msg = f"a stored {what} cannot be read: {exc}"
    else:
        msg = f"a stored {what} cannot be read ({type(exc).__name__}: {exc}); restore the store"
    return SessionStoreCorrupt(msg)


def decode_message(text: str | bytes) -> Message:
    """The message a record written by `encode_message` holds.

    Raises:
        SessionStoreCorrupt: if the record is not a message record.
        SessionSchemaTooNew: if a newer fncore wrote it.

    Example:
        >>> decode_message(encode_message(Message.assistant("hello"))).text
        'hello'
    """
    try:
        record = _record(text, "message", MESSAGE_FORMAT)
        return message_from_doc(record, record.get("cache", False) is True)
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise _corrupt("message", exc) from None


# Session state --------------------------------------------------------------------------


def _resolve(name: object) -> type:
    """The registered dataclass ``name`` stands for; nothing is imported."""
    found = state_type(name) if type(name) is str else None
    if found is None:
        msg = (
            f"it names the type {name!r}, which is not registered for stored state: "
            "register it with fncore.register_state_type where it is defined"
        )
        raise _Unregistered(msg)
    return found


def _type_name(cls: type, where: str) -> str:
    """``module:qualname`` of the dataclass ``cls``, which must be registered."""
    name = state_type_name(cls)
    if name is None:
        msg = (
            f"{where} holds a {cls.__qualname__}, a dataclass not registered for stored "
            "state: define it at module level and register it there with "
            f"fncore.register_state_type({cls.__name__}) (or as a class decorator)"
        )
        raise NotSerializable(msg)
    return name


def _tagged(tag: str, **fields: Any) -> dict[str, Any]:
    return {"$": tag, **fields}


def _encode_value(value: object, where: str) -> Any:
    kind = type(value)
    v: Any = value
    if v is None or kind is bool or kind is int or kind is str:
        return v
    if kind is float:
        return v if math.isfinite(v) else _tagged("float", value=repr(v))
    if kind is list:
        return [_encode_value(x, f"{where}[{i}]") for i, x in enumerate(v)]
    if kind is dict:
        if "$" not in v and all(type(k) is str for k in v):
            return {k: _encode_value(x, f"{where}[{k!r}]") for k, x in v.items()}
        pairs = [
            [_encode_value(k, f"{where} key {k!r}"), _encode_value(x, f"{where}[{k!r}]")]
            for k, x in v.items()
        ]
        return _tagged("dict", items=pairs)
    if kind is tuple or kind is set or kind is frozenset:
        encoded = [_encode_value(x, f"{where}[{i}]") for i, x in enumerate(v)]
        return _tagged(kind.__name__, items=encoded)
    if kind is bytes:
        return _tagged("bytes", base64=_b64(v))
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        name = _type_name(kind, where)
        fields = {
            f.name: _encode_value(getattr(value, f.name), f"{where}.{f.name}")
            for f in dataclasses.fields(value)
            if f.init
        }
        return _tagged("dataclass", type=name, fields=fields)
    msg = (
        f"{where} holds a {kind.__module__}.{kind.__qualname__}, which cannot "
        "be stored: keep None, bool, int, float, str, bytes, list, tuple, set, frozenset, "
        "dict, or registered dataclasses of those (fncore.register_state_type)"
    )
    raise NotSerializable(msg)


def _decode_tagged(record: dict[str, Any]) -> object:
    tag = record["$"]
    if tag == "tuple":
        return tuple([_decode_value(v) for v in record["items"]])
    if tag == "set":
        return {_decode_value(v) for v in record["items"]}
    if tag == "frozenset":
        return frozenset([_decode_value(v) for v in record["items"]])
    if tag == "dict":
        return {_decode_value(k): _decode_value(v) for k, v in record["items"]}
    if tag == "bytes":
        return _unb64(record["base64"])
    if tag == "float":
        return float(record["value"])
    if tag == "dataclass":
        cls: Callable[..., object] = _resolve(record["type"])
        fields = {name: _decode_value(v) for name, v in record["fields"].items()}
        return cls(**fields)
    msg = f"unknown tag {tag!r}"
    raise _Unreadable(msg)


def _decode_value(value: Any) -> object:
    kind = type(value)
    if kind is list:
        return [_decode_value(v) for v in value]
    if kind is dict:
        if "$" in value:
            return _decode_tagged(value)
        return {k: _decode_value(v) for k, v in value.items()}
    return value


def encode_state(state: Mapping[str, object]) -> str:
    """The JSON record of a session's state.

    Raises:
        NotSerializable: naming the key and the place in its value that cannot be stored.

    Example:
        >>> encode_state({"seen": ("a", "b")})
        '{"v":1,"values":{"seen":{"$":"tuple","items":["a","b"]}}}'
    """
    try:
        values = {key: _encode_value(v, f"session state {key!r}") for key, v in state.items()}
    except RecursionError:
        msg = "session state is nested too deeply (or holds a value that contains itself)"
        raise NotSerializable(msg) from None
    return _dumps({"v": STATE_FORMAT, "values": values})


def decode_state(text: str | bytes) -> dict[str, object]:
    """The state a record written by `encode_state` holds.

    Raises:
        SessionStoreCorrupt: if the record does not decode (or names a class that is gone).
        SessionSchemaTooNew: if a newer fncore wrote it.

    Example:
        >>> decode_state(encode_state({"seen": ("a", "b"), "n": 2}))
        {'seen': ('a', 'b'), 'n': 2}
    """
    try:
        record = _record(text, "state", STATE_FORMAT)
        values = record["values"]
        if type(values) is not dict:
            msg = "the state's values must be a JSON object"
            raise _Unreadable(msg)
        return {key: _decode_value(value) for key, value in values.items()}
    except (
        ValueError,
        KeyError,
        TypeError,
        AttributeError,
        RecursionError,
        binascii.Error,
    ) as exc:
        raise _corrupt("session state", exc) from None


# Checkpoints ------------------------------------------------------------------------------

CHECKPOINT_FORMAT = 1
"""The format version of checkpoint records this fncore writes and reads."""


def _message(message: Message) -> dict[str, Any]:
    doc = message_doc(message)
    if message.cache:
        doc["cache"] = True
    return doc


def _messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    return [_message(m) for m in messages]


def _read_messages(docs: Any) -> tuple[Message, ...]:
    return tuple(message_from_doc(d, d.get("cache", False) is True) for d in docs)


def _values(values: Mapping[str, object], what: str) -> dict[str, Any]:
    return {key: _encode_value(v, f"{what} {key!r}") for key, v in values.items()}


def _read_values(doc: Any) -> MappingProxyType[str, object]:
    return MappingProxyType({key: _decode_value(v) for key, v in doc.items()})


def _choice(choice: ToolChoice) -> Any:
    return {"tool": choice.name} if type(choice) is RequireTool else choice


def _read_choice(doc: Any) -> ToolChoice:
    if type(doc) is dict:
        return RequireTool(str(doc["tool"]))
    if doc not in ("auto", "none", "required"):
        msg = f"unknown tool choice {doc!r}"
        raise _Unreadable(msg)
    return doc  # type: ignore[no-any-return]


def _usage(usage: Usage) -> dict[str, int]:
    return {f.name: getattr(usage, f.name) for f in dataclasses.fields(usage)}


def _settings(settings: ModelSettings) -> dict[str, Any]:
    return {
        "temperature": settings.temperature,
        "max_tokens": settings.max_tokens,
        "top_p": settings.top_p,
        "stop": list(settings.stop),
        "seed": settings.seed,
        "parallel_tool_calls": settings.parallel_tool_calls,
        "extra": _values(settings.extra, "model setting"),
    }


def _read_settings(doc: Any) -> ModelSettings:
    return ModelSettings(
        temperature=doc["temperature"],
        max_tokens=doc["max_tokens"],
        top_p=doc["top_p"],
        stop=tuple(doc["stop"]),
        seed=doc["seed"],
        parallel_tool_calls=doc["parallel_tool_calls"],
        extra=_read_values(doc["extra"]),
    )


def _request(request: PendingRequest) -> dict[str, Any]:
    return {
        "call_id": request.call_id,
        "tool": request.tool,
        "arguments": _values(request.arguments, "request argument"),
        "description": request.description,
        "allowed": list(request.allowed),
        "middleware": request.middleware,
    }


def _read_request(doc: Any) -> PendingRequest:
    allowed = tuple(doc["allowed"])
    if not set(allowed) <= set(ALL_DECISIONS):
        msg = f"unknown decisions in {allowed!r}"
        raise _Unreadable(msg)
    return PendingRequest(
        str(doc["call_id"]),
        None if doc["tool"] is None else str(doc["tool"]),
        _read_values(doc["arguments"]),
        str(doc["description"]),
        allowed,
        str(doc["middleware"]),
    )


def _decision(decision: Decision) -> dict[str, Any]:
    if type(decision) is Edit:
        return {"kind": "edit", "arguments": _values(decision.arguments, "edited argument")}
    if type(decision) is Reject or type(decision) is Respond:
        return {"kind": decision.kind, "message": decision.message}
    return {"kind": "approve"}


def _read_decision(doc: Any) -> Decision:
    kind = doc["kind"]
    if kind == "approve":
        return Approve()
    if kind == "edit":
        return Edit(_read_values(doc["arguments"]))
    if kind == "reject":
        return Reject(str(doc["message"]))
    if kind == "respond":
        return Respond(str(doc["message"]))
    msg = f"unknown decision {kind!r}"
    raise _Unreadable(msg)


def _point(point: ResumePoint) -> dict[str, Any]:
    calls = None
    if point.calls is not None:
        calls = [[part_doc(c), None if r is None else part_doc(r)] for c, r in point.calls]
    return {
        "history": _messages(point.history),
        "new": _messages(point.new),
        "round": point.round,
        "errors_in_a_row": point.errors_in_a_row,
        "usage": _usage(point.usage),
        "calls": calls,
        "choice": _choice(point.choice),
    }


def _slot(doc: Any) -> tuple[ToolCallPart, ToolResultPart | None]:
    call = part_from_doc(doc[0])
    result = None if doc[1] is None else part_from_doc(doc[1])
    if type(call) is not ToolCallPart or (
        result is not None and type(result) is not ToolResultPart
    ):
        msg = "a checkpoint's call slot holds other parts than a call and its result"
        raise _Unreadable(msg)
    return call, result


def _read_point(doc: Any) -> ResumePoint:
    calls = doc["calls"]
    return ResumePoint(
        _read_messages(doc["history"]),
        _read_messages(doc["new"]),
        int(doc["round"]),
        int(doc["errors_in_a_row"]),
        Usage(**doc["usage"]),
        None if calls is None else tuple(_slot(c) for c in calls),
        _read_choice(doc["choice"]),
    )


def _result(result: RunResult) -> dict[str, Any]:
    paused = result.paused
    return {
        "output": result.output,
        "messages": _messages(result.messages),
        "usage": _usage(result.usage),
        "rounds": result.rounds,
        "stop_reason": result.stop_reason,
        "paused": None
        if paused is None
        else {
            "checkpoint_id": paused.checkpoint_id,
            "requests": [_request(r) for r in paused.requests],
        },
    }


def _read_result(doc: Any) -> RunResult:
    paused = doc["paused"]
    if doc["stop_reason"] not in typing.get_args(StopReason):
        msg = f"unknown stop reason {doc['stop_reason']!r}"
        raise _Unreadable(msg)
    return RunResult(
        str(doc["output"]),
        _read_messages(doc["messages"]),
        Usage(**doc["usage"]),
        int(doc["rounds"]),
        doc["stop_reason"],
        None
        if paused is None
        else Paused(
            str(paused["checkpoint_id"]), tuple(_read_request(r) for r in paused["requests"])
        ),
    )


def _read_time(doc: Any) -> float:
    """A time as ``_encode_value`` wrote it (tagged if infinite: a checkpoint never expires)."""
    value = _decode_value(doc)
    if type(value) is not float and type(value) is not int:
        msg = f"a time must be a number, not {value!r}"
        raise _Unreadable(msg)
    return float(value)


def encode_checkpoint(checkpoint: Checkpoint) -> str:
    """The JSON record of ``checkpoint`` (all but its claim, which stores keep in columns).

    Raises:
        NotSerializable: naming what in the checkpoint's state, metadata or settings
            cannot be stored.
    """
    c = checkpoint
    try:
        record = {
            "v": CHECKPOINT_FORMAT,
            "id": c.id,
            "run_id": c.run_id,
            "agent": c.agent,
            "config": c.config,
            "created": _encode_value(c.created, "created"),
            "expires": _encode_value(c.expires, "expires"),
            "session_id": c.session_id,
            "session_version": c.session_version,
            "input": _messages(c.input),
            "point": _point(c.point),
            "requests": [_request(r) for r in c.requests],
            "tool_choice": _choice(c.tool_choice),
            "model_settings": _settings(c.model_settings),
            "metadata": _values(c.metadata, "request metadata"),
            "state": _values(c.state, "reply state"),
            "session_state": _values(c.session_state, "session state"),
            "stage": c.stage,
            "decisions": {k: _decision(d) for k, d in c.decisions.items()},
            "key": c.key,
            "outcome": None if c.outcome is None else _result(c.outcome),
        }
        return _dumps(record)
    except (TypeError, ValueError) as exc:  # ValueError: a setting that is NaN or infinite
        raise NotSerializable(f"a checkpoint cannot be stored: {exc}") from None
    except RecursionError:
        msg = "a checkpoint's state is nested too deeply (or holds a value that contains itself)"
        raise NotSerializable(msg) from None


def decode_checkpoint(text: str | bytes, claim: str, claim_until: float) -> Checkpoint:
    """The checkpoint a record written by `encode_checkpoint` holds, with its claim.

    Raises:
        SessionStoreCorrupt: if the record does not decode.
        SessionSchemaTooNew: if a newer fncore wrote it.
    """
    try:
        r = _record(text, "checkpoint", CHECKPOINT_FORMAT)
        stage = r["stage"]
        if stage not in ("paused", "decided", "done"):
            msg = f"unknown checkpoint stage {stage!r}"
            raise _Unreadable(msg)
        return Checkpoint(
            id=str(r["id"]),
            run_id=str(r["run_id"]),
            agent=str(r["agent"]),
            config=str(r["config"]),
            created=_read_time(r["created"]),
            expires=_read_time(r["expires"]),
            session_id=None if r["session_id"] is None else str(r["session_id"]),
            session_version=int(r["session_version"]),
            input=_read_messages(r["input"]),
            point=_read_point(r["point"]),
            requests=tuple(_read_request(q) for q in r["requests"]),
            tool_choice=_read_choice(r["tool_choice"]),
            model_settings=_read_settings(r["model_settings"]),
            metadata=_read_values(r["metadata"]),
            state=_read_values(r["state"]),
            session_state=_read_values(r["session_state"]),
            stage=stage,
            decisions=MappingProxyType({k: _read_decision(d) for k, d in r["decisions"].items()}),
            key=str(r["key"]),
            outcome=None if r["outcome"] is None else _read_result(r["outcome"]),
            claim=claim,
            claim_until=claim_until,
        )
    except (
        ValueError,
        LookupError,  # KeyError, and IndexError for a short list
        TypeError,
        AttributeError,
        RecursionError,
        binascii.Error,
    ) as exc:
        raise _corrupt("checkpoint", exc) from None

"""Checkpoints round-trip exactly; newer or damaged records and unstorable state are refused."""

from __future__ import annotations

import dataclasses
import json
import math
import typing
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from codec_strategies import Point, a_checkpoint, calls, canon, messages, results, text, values
from conftest import Planted
from hypothesis import given, settings
from hypothesis import strategies as st

from fncore import (
    Approve,
    Checkpoint,
    Edit,
    Message,
    ModelSettings,
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
    Usage,
)
from fncore.core import ALL_DECISIONS
from fncore.core._result import StopReason
from fncore.errors import NotSerializable, SessionSchemaTooNew, SessionStoreCorrupt
from fncore.middleware import Repair, ToolCallPatch
from fncore.session_stores._codec import (
    CHECKPOINT_FORMAT,
    decode_checkpoint,
    encode_checkpoint,
)

history = st.lists(messages, max_size=3).map(tuple)
mapping = st.dictionaries(text, values, max_size=3)
"""A mapping of names to any value state may hold (state, metadata, arguments, extra)."""
finite = st.floats(allow_nan=False, allow_infinity=False)
times = finite | st.just(math.inf)  # a checkpoint that never expires
counts = st.integers(0, 2**53)

usages = st.builds(Usage, counts, counts, counts, counts, counts, counts)
choices = st.sampled_from(["auto", "none", "required"]) | st.builds(RequireTool, text)
model_settings = st.builds(
    ModelSettings,
    temperature=st.none() | finite,
    max_tokens=st.none() | st.integers(),
    top_p=st.none() | finite,
    stop=st.lists(text, max_size=3).map(tuple),
    seed=st.none() | st.integers(),
    parallel_tool_calls=st.none() | st.booleans(),
    extra=mapping,
)
requests = st.builds(
    PendingRequest,
    text,
    st.none() | text,
    mapping,
    text,
    st.lists(st.sampled_from(ALL_DECISIONS), unique=True).map(tuple),
    text,
)
decisions = st.one_of(
    st.builds(Approve),
    st.builds(Edit, mapping),
    st.builds(Reject, text),
    st.builds(Respond, text),
)
slots = st.lists(st.tuples(calls, st.none() | results), max_size=4).map(tuple)
"""A round's calls: all waiting, some with results, or none at all (an empty round)."""
points = st.builds(
    ResumePoint,
    history,
    history,
    st.integers(0, 10**6),
    st.integers(0, 10**6),
    usages,
    st.none() | slots,  # None: paused before the round's response
    choices,
)
outcomes = st.builds(
    RunResult,
    text,
    history,
    usages,
    st.integers(0, 10**6),
    st.sampled_from(typing.get_args(StopReason)),
    st.none() | st.builds(Paused, text, st.lists(requests, max_size=2).map(tuple)),
)
checkpoints = st.builds(
    Checkpoint,
    id=text,
    run_id=text,
    agent=text,
    config=text,
    created=finite,
    expires=times,
    session_id=st.none() | text,
    session_version=st.integers(0, 2**62),
    input=history,
    point=points,
    requests=st.lists(requests, max_size=3).map(tuple),
    tool_choice=choices,
    model_settings=model_settings,
    metadata=mapping,
    state=mapping,
    session_state=mapping,
    stage=st.sampled_from(["paused", "decided", "done"]),
    decisions=st.dictionaries(text, decisions, max_size=3),
    key=text,
    outcome=st.none() | outcomes,
    claim=text,
    claim_until=finite,
)
"""Every field of a checkpoint, each with every kind of value it may hold."""


@settings(max_examples=150, deadline=None)
@given(checkpoints)
def test_every_checkpoint_round_trips_exactly(checkpoint: Checkpoint) -> None:
    """Any checkpoint reads back equal, field by field and type by type (as ASCII JSON)."""
    record = encode_checkpoint(checkpoint)
    assert record.isascii()
    json.loads(record)  # strict JSON: no NaN or Infinity literals
    decoded = decode_checkpoint(record, checkpoint.claim, checkpoint.claim_until)
    assert canon(decoded) == canon(checkpoint)


def finished() -> Checkpoint:
    """A checkpoint whose resumed reply ended: with its decisions and outcome."""
    return a_checkpoint(
        stage="done",
        decisions={"call_1": Approve()},
        key="k3y",
        outcome=RunResult("3", (Message.assistant("3"),), stop_reason="completed"),
    )


def test_a_record_from_a_newer_fncore_is_refused() -> None:
    """A higher format version is `SessionSchemaTooNew`, not misread."""
    record = json.loads(encode_checkpoint(a_checkpoint()))
    record["v"] = CHECKPOINT_FORMAT + 1
    with pytest.raises(SessionSchemaTooNew, match="upgrade fncore") as raised:
        decode_checkpoint(json.dumps(record), "", 0.0)
    assert (raised.value.found, raised.value.known) == (CHECKPOINT_FORMAT + 1, CHECKPOINT_FORMAT)


def set_in(path: str, value: object) -> Callable[[dict[str, Any]], None]:
    """Sets the field at ``path`` (dotted; numbers index lists) of a record to ``value``."""

    def change(record: dict[str, Any]) -> None:
        *parents, last = path.split(".")
        target: Any = record
        for name in parents:
            target = target[int(name)] if name.isdigit() else target[name]
        target[int(last) if last.isdigit() else last] = value

    return change


def dropped(name: str) -> Callable[[dict[str, Any]], None]:
    return lambda record: record.pop(name)


@pytest.mark.parametrize(
    "damage",
    [
        set_in("v", "1"),
        dropped("point"),
        set_in("stage", "finished"),
        set_in("tool_choice", "sometimes"),
        set_in("tool_choice", {"name": "add"}),
        set_in("point.calls", [[{"type": "text", "text": "not a call"}, None]]),
        set_in("point.calls", [[{"type": "tool_call", "id": "c", "name": "n", "arguments": ""}]]),
        set_in("point.usage", {"tokens": 1}),
        set_in("point.history", [{"role": "robot", "parts": []}]),
        set_in("requests.0.allowed", ["approve", "maybe"]),
        set_in("decisions", {"call_1": {"kind": "ignore"}}),
        set_in("outcome.stop_reason", "bored"),
        set_in("state", {"k": {"$": "bytes", "base64": "!!"}}),
        set_in("state", {"k": {"$": "dataclass", "type": "no.such.module:X", "fields": {}}}),
        set_in("expires", "tomorrow"),
        set_in("model_settings.stop", 3),
    ],
)
def test_a_damaged_record_is_corrupt(damage: Callable[[dict[str, Any]], None]) -> None:
    """A record that does not decode as a checkpoint is `SessionStoreCorrupt`."""
    record = json.loads(encode_checkpoint(finished()))
    damage(record)
    with pytest.raises(SessionStoreCorrupt, match="a stored checkpoint cannot be read"):
        decode_checkpoint(json.dumps(record), "", 0.0)


@pytest.mark.parametrize("record", ["not json", "[]", "{}", b"\xff"])
def test_a_record_that_is_no_checkpoint_at_all_is_corrupt(record: str | bytes) -> None:
    """Not JSON, not an object, no version: `SessionStoreCorrupt`."""
    with pytest.raises(SessionStoreCorrupt, match="restore the store"):
        decode_checkpoint(record, "", 0.0)


@pytest.mark.parametrize(
    ("changes", "where"),
    [
        ({"state": {"k": [object()]}}, "reply state 'k'[0] holds a builtins.object"),
        ({"session_state": {"k": {1: print}}}, "session state 'k'[1] holds a builtins."),
        ({"metadata": {"user": range(2)}}, "request metadata 'user' holds a builtins.range"),
        (
            {"model_settings": ModelSettings(extra={"p": Point(1.0, object())})},  # type: ignore[arg-type]
            "model setting 'p'.label holds a builtins.object",
        ),
        (
            {"requests": (PendingRequest("c", "t", {"a": {1, 2, object()}}),)},
            "request argument 'a'",
        ),
        ({"decisions": {"c": Edit({"a": object()})}}, "edited argument 'a' holds"),
        ({"model_settings": ModelSettings(temperature=math.nan)}, "not JSON compliant"),
    ],
)
def test_what_cannot_be_stored_is_named(changes: dict[str, Any], where: str) -> None:
    """`NotSerializable`, saying which value of which part of the checkpoint cannot be stored."""
    with pytest.raises(NotSerializable) as raised:
        encode_checkpoint(a_checkpoint(**changes))
    assert str(raised.value).startswith("a checkpoint cannot be stored: ")
    assert where in str(raised.value)
    assert str(raised.value).count("session state") <= 1  # said once, where it applies


def test_a_state_that_contains_itself_is_not_serializable() -> None:
    """A cycle in a checkpoint's state is reported, not a crash."""
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(NotSerializable, match="contains itself"):
        encode_checkpoint(a_checkpoint(state={"k": loop}))


def test_a_checkpoint_naming_an_unregistered_type_imports_nothing(planted: Planted) -> None:
    """Checkpoints decode stored values the same way: a forged type name imports nothing."""
    forged = {"$": "dataclass", "type": planted.type_name, "fields": {"note": "x"}}
    for field in ("state", "session_state", "metadata", "requests.0.arguments"):
        record = json.loads(encode_checkpoint(a_checkpoint()))
        set_in(field, {"k": forged})(record)
        with pytest.raises(SessionStoreCorrupt, match="not registered for stored state"):
            decode_checkpoint(json.dumps(record), "", 0.0)
    assert not planted.imported


@dataclasses.dataclass(frozen=True)
class Unregistered:
    """A dataclass nobody registered for stored state."""

    n: int


def test_a_checkpoint_holding_an_unregistered_dataclass_is_not_serializable() -> None:
    """Saving a paused run whose state holds an unregistered dataclass fails, saying why."""
    with pytest.raises(NotSerializable, match=r"register_state_type\(Unregistered\)"):
        encode_checkpoint(a_checkpoint(state={"k": Unregistered(1)}))


def test_a_checkpoint_written_by_the_previous_release_still_reads() -> None:
    """A record in the current format, with built-ins' records in its state, decodes."""
    repairs = (Repair("interrupted", 1, "call c1"),)
    patches = (ToolCallPatch("c1", "add", "{a:1}", '{"a":1}', ("repaired JSON",)),)
    history = (
        Message.user("hi"),
        Message(
            "assistant",
            (ReasoningPart("think", "sig"), TextPart("ok"), ToolCallPart("c1", "add", '{"a":1}')),
        ),
    )
    expected = a_checkpoint(
        stage="done",
        decisions={"call_1": Approve()},
        key="k3y",
        outcome=RunResult("3", (Message.assistant("3"),), stop_reason="completed"),
        state={
            "fncore.repair_history.repair_history": repairs,
            "fncore.patch_tool_calls.patch_tool_calls": patches,
        },
        session_state={"history": history, "usage": Usage(1, 2, 3, 4, 5, 6)},
        metadata={"choice": RequireTool("add")},
        claim="me",
        claim_until=5.0,
    )
    record = (Path(__file__).parent / "records" / "checkpoint-v1.json").read_text()
    assert canon(decode_checkpoint(record, "me", 5.0)) == canon(expected)

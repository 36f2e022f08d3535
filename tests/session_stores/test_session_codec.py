"""Messages and session state round-trip exactly; what cannot be stored fails at save time."""

from __future__ import annotations

import dataclasses
import json
import re
import socket
from pathlib import Path

import pytest
from codec_strategies import Box, Point, canon, messages, text, values
from conftest import Planted
from hypothesis import given, settings
from hypothesis import strategies as st

from fncore import (
    Approve,
    DataPart,
    Message,
    ReasoningPart,
    RegistrationError,
    Reject,
    RequireTool,
    Respond,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
    register_state_type,
)
from fncore.errors import NotSerializable, SessionSchemaTooNew, SessionStoreCorrupt
from fncore.middleware import Repair, ToolCallPatch
from fncore.session_stores._codec import (
    decode_message,
    decode_state,
    encode_message,
    encode_state,
)


@settings(max_examples=300)
@given(messages)
def test_every_message_round_trips_exactly(message: Message) -> None:
    """Any message, with any parts and any text, reads back equal (as ASCII JSON)."""
    record = encode_message(message)
    assert record.isascii()
    assert decode_message(record) == message


@settings(max_examples=300)
@given(st.dictionaries(text, values, max_size=5))
def test_every_state_round_trips_exactly(state: dict[str, object]) -> None:
    """Any state of supported values reads back with the same values of the same types."""
    record = encode_state(state)
    assert record.isascii()
    json.loads(record)  # strict JSON: no NaN or Infinity literals
    assert canon(decode_state(record)) == canon(state)


@given(st.lists(messages, max_size=3))
def test_messages_in_state_round_trip(history: list[Message]) -> None:
    """Messages (dataclasses) may be kept in state too."""
    assert decode_state(encode_state({"h": tuple(history)})) == {"h": tuple(history)}


def local_class() -> type:
    @dataclasses.dataclass
    class Local:
        x: int

    return Local


@pytest.mark.parametrize(
    ("value", "where", "what"),
    [
        (socket.socket, "'k'", "builtins.type"),
        ({"a": [1, {"b": object()}]}, "'k'['a'][1]['b']", "builtins.object"),
        ((1, 2, range(3)), "'k'[2]", "builtins.range"),
        (Box([Point(1.0), lambda: 1]), "'k'.items[1]", "function"),
        (local_class()(1), "'k'", "define it at module level"),
        (type("MyStr", (str,), {})("x"), "'k'", "MyStr"),
    ],
)
def test_unserialisable_state_names_the_key_and_place(value: object, where: str, what: str) -> None:
    """A value that cannot be stored raises `NotSerializable` naming where it is."""
    with pytest.raises(NotSerializable) as raised:
        encode_state({"k": value})
    assert f"session state {where} holds" in str(raised.value)
    assert what in str(raised.value)


def test_a_state_that_contains_itself_is_not_serializable() -> None:
    """A cycle is reported, not a crash."""
    loop: list[object] = []
    loop.append(loop)
    with pytest.raises(NotSerializable, match="contains itself"):
        encode_state({"k": loop})


def test_records_from_a_newer_fncore_are_refused() -> None:
    """A record with a higher format version is `SessionSchemaTooNew`, not misread."""
    with pytest.raises(SessionSchemaTooNew, match="has version 2") as raised:
        decode_message('{"v":2,"role":"user","parts":[]}')
    assert (raised.value.found, raised.value.known) == (2, 1)
    with pytest.raises(SessionSchemaTooNew):
        decode_state('{"v":9,"values":{}}')


@pytest.mark.parametrize(
    "record",
    [
        "not json",
        "[]",
        '{"role":"user","parts":[]}',
        '{"v":1,"role":"robot","parts":[]}',
        '{"v":1,"role":"user","parts":[{"type":"video"}]}',
        '{"v":1,"role":"user","parts":[{"type":"text","text":3}]}',
        '{"v":1,"role":"user","parts":[{"type":"data","media_type":"x","data":"!!"}]}',
        '{"v":1,"role":"user"}',
    ],
)
def test_a_damaged_message_record_is_corrupt(record: str) -> None:
    """A record that is not a message is `SessionStoreCorrupt`."""
    with pytest.raises(SessionStoreCorrupt, match="a stored message cannot be read"):
        decode_message(record)


@pytest.mark.parametrize(
    "record",
    [
        '{"v":1,"values":[]}',
        '{"v":1,"values":{"k":{"$":"mystery"}}}',
        '{"v":1,"values":{"k":{"$":"dataclass","type":"no.such.module:X","fields":{}}}}',
        '{"v":1,"values":{"k":{"$":"dataclass","type":"json:dumps","fields":{}}}}',
        '{"v":1,"values":{"k":{"$":"dict","items":[[[1],2]]}}}',
    ],
)
def test_a_damaged_state_record_is_corrupt(record: str) -> None:
    """A state record that does not decode (or names a class that is gone) is corrupt."""
    with pytest.raises(SessionStoreCorrupt, match="a stored session state cannot be read"):
        decode_state(record)


def test_a_message_part_of_another_type_is_not_serializable() -> None:
    """Only fncore's part types can be stored."""
    with pytest.raises(NotSerializable, match="not one of fncore's part types"):
        encode_message(Message("user", ("just a string",)))  # type: ignore[arg-type]


RECORDS = Path(__file__).parent / "records"


@dataclasses.dataclass
class Tripwire:
    """A dataclass nobody registered, whose construction would be visible."""

    note: str

    def __post_init__(self) -> None:
        BUILT.append(self.note)


BUILT: list[str] = []


def a_record_naming(type_name: str) -> str:
    """A state record holding one dataclass of the class ``type_name`` names."""
    value = {"$": "dataclass", "type": type_name, "fields": {"note": "pwned"}}
    return json.dumps({"v": 1, "values": {"k": value}})


def test_a_record_naming_an_unregistered_module_imports_nothing(planted: Planted) -> None:
    """Whoever writes the database cannot make a loading process import a module."""
    with pytest.raises(SessionStoreCorrupt, match="not registered for stored state"):
        decode_state(a_record_naming(planted.type_name))
    assert not planted.imported


def test_an_unregistered_dataclass_is_neither_built_nor_stored() -> None:
    """A record naming an importable but unregistered dataclass runs none of its code."""
    name = f"{Tripwire.__module__}:{Tripwire.__qualname__}"
    with pytest.raises(SessionStoreCorrupt, match=re.escape(repr(name))):
        decode_state(a_record_naming(name))
    assert BUILT == []
    with pytest.raises(NotSerializable, match=r"register_state_type\(Tripwire\)"):
        encode_state({"k": Tripwire("mine")})


def test_a_registered_dataclass_round_trips() -> None:
    """Registering a class lets state hold it; registering it again changes nothing."""
    assert register_state_type(Point) is Point
    state = {"p": Point(1.5, "x"), "box": Box([Point(2.0)], Point(3.0))}
    assert decode_state(encode_state(state)) == state


def test_only_module_level_dataclasses_can_be_registered() -> None:
    """Registration refuses what is not a dataclass, and a class made inside a function."""
    with pytest.raises(RegistrationError, match="takes a dataclass"):
        register_state_type(socket.socket)
    with pytest.raises(RegistrationError, match="define it at module level"):
        register_state_type(local_class())


def test_state_written_by_the_previous_release_still_reads() -> None:
    """A record in the current format, naming fncore's own types, decodes as it was written."""
    state = decode_state((RECORDS / "state-v1.json").read_text())
    assert state == {
        "history": (
            Message.user("hi"),
            Message(
                "assistant",
                (
                    ReasoningPart("think", "sig"),
                    TextPart("ok"),
                    ToolCallPart("c1", "add", '{"a":1}'),
                ),
            ),
            Message("tool", (ToolResultPart("c1", "add", "2", False),)),
            Message("user", (DataPart(b"\x89PNG", "image/png"),)),
        ),
        "usage": Usage(1, 2, 3, 4, 5, 6),
        "repairs": (Repair("interrupted", 1, "call c1"),),
        "patches": (ToolCallPatch("c1", "add", "{a:1}", '{"a":1}', ("repaired JSON",)),),
        "choice": RequireTool("add"),
        "decisions": (Approve(), Reject("no"), Respond("later")),
    }

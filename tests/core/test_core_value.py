"""The fast construction of value objects (`fncore.core._value`): same objects, same rules."""

from __future__ import annotations

import copy
import dataclasses
import inspect
import pickle
from dataclasses import dataclass, field
from typing import final

import pytest
from returns.primitives.exceptions import ImmutableStateError
from returns.result import Success

from fncore import Message, ModelResponse
from fncore.core import ModelRequest, RunInfo, State, TextPart
from fncore.core._value import maker, success, value


@final
@value
@dataclass(frozen=True, slots=True)
class Sample:
    """A value with every kind of field `value` handles."""

    name: str
    items: list[int] = field(default_factory=list)
    size: int = 3
    seen: tuple[str, ...] = field(default=(), init=False)
    doubled: int = field(default=0, init=False)
    tag: str | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        object.__setattr__(self, "doubled", self.size * 2)


def test_an_instance_is_of_the_value_class_itself() -> None:
    """What the class builds is exactly of that class: the private builder never escapes."""
    for made in (Sample("a"), Message.user("hi"), ModelRequest((Message.user("hi"),))):
        assert type(made).__name__ in {"Sample", "Message", "ModelRequest"}
        assert type(made) in (Sample, Message, ModelRequest)


def test_fields_defaults_factories_and_post_init() -> None:
    """Arguments, defaults, a fresh factory value per instance, init=False fields, __post_init__."""
    one, two = Sample("a"), Sample("b", [1], 5, tag="t")
    assert (one.name, one.items, one.size, one.seen, one.doubled, one.tag) == (
        "a",
        [],
        3,
        (),
        6,
        None,
    )
    assert (two.items, two.size, two.doubled, two.tag) == ([1], 5, 10, "t")
    assert one.items is not Sample("c").items


def test_an_instance_stays_frozen() -> None:
    """Assigning or deleting a field raises, as for any frozen dataclass."""
    made = Message.user("hi")
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.role = "assistant"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        del made.parts


def test_equality_hash_repr_and_replace_are_the_dataclass_ones() -> None:
    """Built fast or not, two equal values compare, hash and print as dataclasses do."""
    a, b = Message.user("hi"), Message("user", (TextPart("hi"),))
    assert a == b
    assert hash(a) == hash(b)
    assert repr(a) == "Message(role='user', parts=(TextPart(text='hi'),), cache=False)"
    assert dataclasses.replace(a, role="assistant") == Message.assistant("hi")
    assert dataclasses.replace(Sample("a", size=4)).doubled == 8


def test_copy_deepcopy_and_pickle_give_equal_values() -> None:
    """A value copies, deep-copies and pickles round trip to an equal value of its class."""
    response = ModelResponse(Message.assistant("5"), model_name="m")
    for made in (Message.user("hi"), response, Sample("a", [1, 2], tag="x")):
        for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
            assert again == made
            assert type(again) is type(made)
    assert copy.deepcopy(Sample("a", [1])).items is not Sample("a", [1]).items


def test_no_arguments_or_only_defaults_are_type_errors() -> None:
    """No argument at all, or only optional ones, is missing the required ones."""
    with pytest.raises(TypeError, match="'message'"):
        ModelResponse()  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'role', 'parts'"):
        Message(cache=False)  # type: ignore[call-arg]


def test_copies_keep_fields_set_after_construction() -> None:
    """A copy restores the fields as they were: no default or ``__post_init__`` re-applied."""
    made = Sample("a", [1, 2], tag="x")
    object.__setattr__(made, "doubled", 99)  # as a __post_init__ of its own would
    for again in (copy.copy(made), copy.deepcopy(made), pickle.loads(pickle.dumps(made))):
        assert (again.name, again.items, again.size, again.tag) == ("a", [1, 2], 3, "x")
        assert again.doubled == 99


def test_missing_or_wrong_arguments_are_type_errors() -> None:
    """A required argument missing, one too many or an unknown keyword raise TypeError."""
    with pytest.raises(TypeError, match="'parts'"):
        Message("user")  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'role', 'parts'"):
        Message(cache=True)  # type: ignore[call-arg]
    with pytest.raises(TypeError, match="'metadata', 'state'"):
        RunInfo("r")  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Message("user", (), False, 1)  # type: ignore[call-arg]
    with pytest.raises(TypeError):
        Message("user", (), rol="x")  # type: ignore[call-arg]


def test_the_signature_is_the_dataclass_init() -> None:
    """`inspect.signature` of a value class lists its fields as its ``__init__`` would."""
    assert list(inspect.signature(Message).parameters) == ["role", "parts", "cache"]
    parameters = inspect.signature(Sample).parameters
    assert list(parameters) == ["name", "items", "size", "tag"]
    assert parameters["tag"].kind is inspect.Parameter.KEYWORD_ONLY
    assert RunInfo("r", {}, State()).decisions == {}


def test_success_is_a_plain_success() -> None:
    """`success(x)` is ``Success(x)``: equal, same type and hash, immutable, maps."""
    made = success(3)
    assert made == Success(3)
    assert type(made) is Success
    assert hash(made) == hash(Success(3))
    assert made.unwrap() == 3
    assert made.map(lambda x: x + 1) == Success(4)
    with pytest.raises(ImmutableStateError):
        made._inner_value = 4
    assert pickle.loads(pickle.dumps(made)) == made


def test_a_maker_builds_what_the_class_builds() -> None:
    """`maker(cls)` takes the class's arguments and gives an equal instance of the class."""
    make = maker(Sample)
    made = make("b", [1], 5, tag="t")
    assert type(made) is Sample
    assert made == Sample("b", [1], 5, tag="t")
    assert (made.doubled, made.seen) == (10, ())  # __post_init__ and init=False fields
    assert make("a").items is not make("a").items
    with pytest.raises(dataclasses.FrozenInstanceError):
        made.size = 1  # type: ignore[misc]
    with pytest.raises(TypeError, match="'name'"):
        make()  # type: ignore[call-arg]
    assert maker(Message)("user", (TextPart("hi"),)) == Message.user("hi")

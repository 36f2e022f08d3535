"""A resume's decisions, checked against its checkpoint and keyed, with no agent and no store."""

from __future__ import annotations

from typing import Any

import pytest

from fncore.core import (
    Approve,
    Checkpoint,
    Decision,
    DecisionMissing,
    DecisionNotAllowed,
    Edit,
    Message,
    PendingRequest,
    Reject,
    Respond,
    ResumePoint,
    Tool,
    ToolCallPart,
    UnknownRequest,
)
from fncore.core._decisions import decision_doc, decision_key, decisions_for


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


TOOLS = {"add": Tool.from_function(add)}


def waiting(*requests: PendingRequest) -> Checkpoint:
    """A checkpoint waiting for ``requests``."""
    call = ToolCallPart("c1", "add", "{}")
    turn = Message("assistant", (call,))
    return Checkpoint(
        id="cp",
        run_id="r",
        agent="agent",
        config="c",
        created=0.0,
        expires=1.0,
        session_id=None,
        session_version=0,
        input=(),
        point=ResumePoint((turn,), (turn,), 1),
        requests=requests,
    )


C1 = PendingRequest("c1", "add", {"a": 1, "b": 2})
C2 = PendingRequest("c2", None, {}, allowed=("respond",))


def test_one_decision_applies_to_every_waiting_call() -> None:
    """A single decision becomes that decision for each call the checkpoint waits for."""
    c3 = PendingRequest("c3", "add", {})
    assert decisions_for(waiting(C1, c3), Reject(), TOOLS) == {"c1": Reject(), "c3": Reject()}


def test_decisions_by_call_id_are_kept() -> None:
    """A mapping of decisions comes back as a dict, unchanged."""
    decided: dict[str, Decision] = {"c1": Approve(), "c2": Respond("Paris")}
    assert decisions_for(waiting(C1, C2), decided, TOOLS) == decided


@pytest.mark.parametrize(
    ("decisions", "error", "call_id"),
    [
        ({"c9": Approve()}, UnknownRequest, "c9"),
        ({"c1": "yes"}, DecisionNotAllowed, "c1"),
        ({"c1": Approve(), "c2": Approve()}, DecisionNotAllowed, "c2"),
        ({"c1": Edit({"a": "one"}), "c2": Respond("x")}, DecisionNotAllowed, "c1"),
        ({"c1": Edit({"a": object()}), "c2": Respond("x")}, DecisionNotAllowed, "c1"),
        ({"c1": Approve()}, DecisionMissing, "c2"),
    ],
    ids=["unknown call", "not a decision", "not allowed", "edit misfits", "not json", "missing"],
)
def test_wrong_decisions_are_typed_errors(decisions: Any, error: type, call_id: str) -> None:
    """Each wrong decision is an error value naming the checkpoint and the call."""
    found = decisions_for(waiting(C1, C2), decisions, TOOLS)
    assert type(found) is error
    assert (found.checkpoint_id, found.call_id) == ("cp", call_id)  # type: ignore[union-attr]


def test_an_edit_for_a_tool_the_agent_lacks_is_not_checked() -> None:
    """Edited arguments are checked only against a tool the agent has."""
    decided = {"c1": Edit({"anything": True})}
    assert decisions_for(waiting(C1), decided, {}) == decided


def test_decision_documents_say_what_each_carries() -> None:
    """Each kind of decision becomes a JSON document of its kind and payload."""
    assert decision_doc(Approve()) == {"kind": "approve"}
    assert decision_doc(Edit({"a": 1})) == {"kind": "edit", "arguments": {"a": 1}}
    assert decision_doc(Reject("no")) == {"kind": "reject", "message": "no"}
    assert decision_doc(Respond("yes")) == {"kind": "respond", "message": "yes"}


def test_equal_decisions_have_equal_keys_whatever_their_order() -> None:
    """The key depends on the decisions, not on the mapping's order or identity."""
    one = decision_key({"a": Edit({"x": 1, "y": 2}), "b": Approve()})
    other = decision_key({"b": Approve(), "a": Edit({"y": 2, "x": 1})})
    assert one == other
    assert one != decision_key({"a": Edit({"x": 1, "y": 3}), "b": Approve()})
    assert one != decision_key({"a": Edit({"x": 1, "y": 2}), "b": Reject()})

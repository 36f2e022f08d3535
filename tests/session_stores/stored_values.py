"""What the store files in ``stored/`` hold: written by earlier fncore, read by this one.

``make_stored.py`` wrote each file by running fncore as it was at a past commit (see there);
the tests in ``test_stored_files.py`` open copies of them with today's stores and compare
what they read with the values here. Only names that every one of those releases has are
used, so the generator and the tests share this one description.
"""

from __future__ import annotations

import math
from typing import Any

from fncore import (
    DataPart,
    Message,
    ReasoningPart,
    RequireTool,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    Usage,
)

FILES = {
    "schema-1.db": "209ef30",
    "schema-2.db": "235f494",
    "schema-2-registered.db": "8c268be",
}
"""Each stored file and the commit of fncore that wrote it: the last one at schema version 1,
the first at version 2 (checkpoints), and the last before the one codec (issue 17), whose
stored dataclasses must be registered."""

ADA = (
    Message.system("be brief"),
    Message.user("add 1 and 2, then divide 1 by 0"),
    Message(
        "assistant",
        (
            ReasoningPart("two calls", "sig-1"),
            ReasoningPart("", None, "opaque=="),
            TextPart("calling"),
            ToolCallPart("c1", "add", '{"a":1,"b":2}'),
            ToolCallPart("c2", "div", '{"a":1,"b":0}'),
        ),
    ),
    Message(
        "tool",
        (ToolResultPart("c1", "add", "3"), ToolResultPart("c2", "div", "division by zero", True)),
    ),
    Message("user", (TextPart("and this? ✓"), DataPart(b"\x89PNG\r\n\x00", "image/png")), True),
    Message.assistant("3, and a picture: café"),
)
"""The messages of session ``ada``: every kind of part, a prompt-cache flag, non-ASCII text."""

ADA_STATE: dict[str, object] = {
    "seen": ("add", "div"),
    "blob": b"\x00\xff",
    "tags": {"a", "b"},
    "frozen": frozenset({1, 2}),
    "limits": {"hi": math.inf, "lo": -math.inf, "x": 0.5},
    "by_key": {1: "one", (2, 3): "pair", None: "none"},
    "dollar": {"$": "not a tag"},
    "nested": [{"k": [1, 2.5, None, True, False]}, []],
    "text": "café ✓",
    "big": 2**70,
    "usage": Usage(1, 2, 3, 4, 5, 6),
    "last": Message.user("hi"),
    "choice": RequireTool("add"),
}
"""The state of session ``ada``: every kind of value stored state may hold."""

BOB_FIRST = (Message.user("one"), Message.assistant("1"), Message.user("two"))
BOB = (Message.user("one"), Message.assistant("1"), Message.user("deux"), Message.assistant("2"))
"""Session ``bob`` is committed twice; the second commit keeps two messages of the first."""
BOB_STATE: dict[str, object] = {"turns": 2}

FAR = 4102444800.0
"""2100-01-01: a checkpoint that expires then outlives the tests."""


def checkpoints(registered: bool) -> dict[str, Any]:
    """The checkpoints a schema-2 file holds, by id (``registered``: the latest writer's too).

    Imported here, not at the top: the schema-1 writer has no checkpoints.
    """
    from fncore import (
        Approve,
        Checkpoint,
        Edit,
        ModelSettings,
        Paused,
        PendingRequest,
        Reject,
        Respond,
        ResumePoint,
        RunResult,
    )

    call = ToolCallPart("c1", "add", '{"a":1,"b":2}')
    turn = Message("assistant", (TextPart("calling"), call))
    ask = PendingRequest("c1", "add", {"a": 1, "b": 2}, "Add?", ("approve", "edit"), "approve")
    question = PendingRequest("q1", None, {}, "Which city?", ("respond",), "ask")
    point = ResumePoint(
        ADA[:2], (turn,), 2, 1, Usage(10, 20, 0, 0, 5, 2), ((call, None),), RequireTool("add")
    )
    settings = ModelSettings(
        temperature=0.5,
        max_tokens=100,
        stop=("END",),
        seed=7,
        parallel_tool_calls=False,
        extra={"tags": ("x",), "deep": {"n": 1}},
    )
    paused = Checkpoint(
        id="cp-paused",
        run_id="run-1",
        agent="agent",
        config="c0nf",
        created=1700000000.25,
        expires=FAR,
        session_id="ada",
        session_version=1,
        input=(Message.user("add 1 and 2"),),
        point=point,
        requests=(ask, question),
        tool_choice=RequireTool("add"),
        model_settings=settings,
        metadata={"user": "ada", "n": 3},
        state={"usage": Usage(1, 1), "seen": ("add",), "blob": b"\x01"},
        session_state=ADA_STATE,
    )
    result = ToolResultPart("c1", "add", "3")
    again = Paused("cp-next", (question,))
    done = Checkpoint(
        id="cp-done",
        run_id="run-2",
        agent="agent",
        config="c0nf",
        created=1700000001.0,
        expires=FAR,
        session_id=None,
        session_version=0,
        input=(Message.user("go"),),
        point=ResumePoint((), (turn,), 1, 0, Usage(), ((call, result),), "required"),
        requests=(ask,),
        tool_choice="none",
        stage="done",
        decisions={
            "c1": Approve(),
            "c2": Edit({"a": 2, "list": [1, 2]}),
            "c3": Reject("no"),
            "c4": Respond("later"),
        },
        key="k3y",
        outcome=RunResult("", (turn,), Usage(3, 4), 1, "paused", again),
        claim="worker-1",
        claim_until=1700000100.5,
    )
    made = {c.id: c for c in (paused, done)}
    if registered:
        never = Checkpoint(
            id="cp-never",
            run_id="run-3",
            agent="agent",
            config="c0nf",
            created=1700000002.0,
            expires=math.inf,
            session_id="bob",
            session_version=2,
            input=(),
            point=ResumePoint((), (), 0),
            requests=(question,),
            stage="decided",
            decisions={"q1": Respond("Paris")},
            key="k",
            outcome=RunResult("Paris", (Message.assistant("Paris"),)),
        )
        made[never.id] = never
    return made

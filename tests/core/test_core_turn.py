"""A finished turn as a session update: what is kept, appended and left open (pure)."""

from __future__ import annotations

import dataclasses

from fncore.core import (
    InvalidHistory,
    Message,
    RunResult,
    Session,
    ToolCallPart,
    ToolResultPart,
    Usage,
)
from fncore.core._turn import session_update, vouch

HI = (Message.user("hi"),)
CALL = Message("assistant", (ToolCallPart("c1", "add", "{}"),))
RESULT = Message("tool", (ToolResultPart("c1", "add", "3"),))


def done(*messages: Message, stop: str = "completed") -> RunResult:
    """A result whose transcript is ``messages``."""
    return RunResult("ok", messages, Usage(), 1, stop)  # type: ignore[arg-type]


def test_a_new_session_is_written_whole_with_its_state() -> None:
    """Version 0: the forked history, the input and the reply, from the start."""
    forked = Session("s", (Message.user("before"), Message.assistant("yes")))
    update, pending = session_update(forked, HI, done(Message.assistant("ok")), {"n": 1})  # type: ignore[misc]
    assert (update.session_id, update.version, update.keep) == ("s", 0, 0)
    assert [m.text for m in update.append] == ["before", "yes", "hi", "ok"]
    assert update.state == {"n": 1}
    assert pending == ()


def test_a_stored_session_gets_the_turn_appended() -> None:
    """A stored session keeps its history; only the input and the reply are appended."""
    stored = Session("s", (Message.user("a"), Message.assistant("b")), version=3)
    update, _ = session_update(stored, HI, done(Message.assistant("ok")), {})  # type: ignore[misc]
    assert (update.version, update.keep, len(update.append)) == (3, 2, 2)


def test_calls_left_open_are_kept_only_when_awaiting_tools() -> None:
    """An unanswered call is the turn's end only for a run that stopped awaiting tools."""
    update, pending = session_update(Session("s"), HI, done(CALL, stop="awaiting_tools"), {})  # type: ignore[misc]
    assert [c.id for c in pending] == ["c1"]
    assert update.append[-1] == CALL
    refused = session_update(Session("s"), HI, done(CALL), {})
    assert type(refused) is InvalidHistory
    assert refused.message.startswith("the run's transcript was not saved to its session:")


def test_answered_calls_leave_nothing_open() -> None:
    """A call with its result in the transcript is not pending."""
    _, pending = session_update(Session("s"), HI, done(CALL, RESULT, Message.assistant("3")), {})  # type: ignore[misc]
    assert pending == ()


def test_a_vouched_transcript_gives_the_update_the_scan_gives() -> None:
    """What the loop vouches for equals what the commit's scan finds, answered or awaiting."""
    stored = Session("s", (Message.user("a"), Message.assistant("b")), version=2)
    for result in (done(CALL, RESULT, Message.assistant("3")), done(CALL, stop="awaiting_tools")):
        scanned = session_update(stored, HI, result, {})
        vouch(result)
        assert result._open is not None
        assert session_update(stored, HI, result, {}, checked=True) == scanned
    assert [c.id for c in result._open or ()] == ["c1"]  # awaiting: the last response's calls


def test_a_response_holding_a_tool_result_is_not_vouched_for() -> None:
    """What the loop does not build itself is left to the scan, which refuses it."""
    odd = Message("assistant", (ToolResultPart("c1", "add", "3"),))
    result = done(CALL, RESULT, odd)
    vouch(result)
    assert result._open is None
    refused = session_update(Session("s"), HI, result, {}, checked=True)
    assert type(refused) is InvalidHistory
    assert "a tool result is inside an assistant message" in refused.message


def test_a_vouch_holds_only_where_the_loop_checked_the_input() -> None:
    """Unchecked (a run middleware ran no loop), the input is scanned even if vouched for."""
    waiting = Session("s", (Message.user("a"), CALL), version=1)
    result = done(Message.assistant("ok"))
    vouch(result)
    refused = session_update(waiting, HI, result, {})
    assert type(refused) is InvalidHistory
    assert "an assistant turn starts while tool calls" in refused.message


def test_a_changed_result_drops_the_vouch() -> None:
    """``dataclasses.replace`` (how a middleware changes a result) forgets it."""
    result = done(Message.assistant("ok"))
    vouch(result)
    assert result._open == ()
    assert dataclasses.replace(result, messages=(CALL,))._open is None

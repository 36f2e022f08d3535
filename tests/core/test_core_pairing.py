"""The pairing rule, by position: what providers accept, and the loop's id assignment."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fncore.core import (
    InvalidHistory,
    Message,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    check_pairing,
    fallback_call_id,
    open_calls,
    with_unique_call_ids,
)
from fncore.core._pairing import PairedHistories

USER = Message.user("go")


def calls(*ids: str) -> Message:
    return Message("assistant", tuple(ToolCallPart(i, f"t{i}") for i in ids))


def results(*ids: str) -> Message:
    return Message("tool", tuple(ToolResultPart(i, f"t{i}", "ok") for i in ids))


def test_paired_turns_are_valid() -> None:
    """Each turn's calls answered before the next assistant turn: no error, nothing open."""
    history = (USER, calls("a", "b"), results("b", "a"), Message.assistant("done"))
    assert check_pairing(history) is None
    assert open_calls(history) == ()


def test_ids_reused_across_rounds_are_valid() -> None:
    """Servers that send call_0 every round stay valid: ids need only be unique per turn."""
    history = (USER, calls("call_0"), results("call_0"), calls("call_0"), results("call_0"))
    assert check_pairing(history) is None


def test_trailing_calls_are_open_not_invalid() -> None:
    """The last turn's unanswered calls are returned as open; check_pairing reports them."""
    history = (USER, calls("a", "b"), results("a"))
    assert open_calls(history) == (ToolCallPart("b", "tb"),)
    error = check_pairing(history)
    assert isinstance(error, InvalidHistory)
    assert error.message.startswith("tool calls without a result: tb (b)")


@pytest.mark.parametrize(
    ("history", "index", "words"),
    [
        ((USER, calls("a"), Message.assistant("x"), results("a")), 2, "an assistant turn starts"),
        ((USER, results("a"), calls("a")), 1, "orphan result"),
        ((USER, calls("a"), results("a"), results("b")), 3, "answers no call"),
        ((USER, calls("a"), results("a", "a")), 2, "answered a second time"),
        ((USER, calls("a", "a"), results("a")), 1, "share the id 'a'"),
        ((USER, calls(""), results("")), 1, "empty id"),
        ((USER, Message("assistant", (ToolResultPart("a", "t", "1"),))), 1, "inside an assistant"),
        ((Message("user", (ToolCallPart("a", "t"),)),), 0, "inside a 'user' message"),
        ((USER, calls("a"), results("a"), calls("a"), Message.user("?")), None, "without a result"),
    ],
)
def test_each_break_is_named_with_its_message(
    history: tuple[Message, ...], index: int | None, words: str
) -> None:
    """Dangling, orphan, duplicate and misplaced parts are each an InvalidHistory saying so."""
    error = check_pairing(history)
    assert isinstance(error, InvalidHistory)
    assert words in error.message
    if index is not None:
        assert error.message.startswith(f"message {index}: ")


def test_a_dangling_call_with_reused_ids_is_still_caught() -> None:
    """A later result with a reused id does not hide an earlier unanswered call."""
    history = (USER, calls("call_0"), calls("call_0"), results("call_0"))
    error = check_pairing(history)
    assert isinstance(error, InvalidHistory)
    assert "an assistant turn starts" in error.message


def test_not_a_message_is_invalid() -> None:
    """Something that is not a Message in the history is named, not crashed on."""
    error = check_pairing((USER, "hello"))  # type: ignore[arg-type]
    assert isinstance(error, InvalidHistory)
    assert error.message.startswith("message 1: str is not a Message")


def test_scan_continues_from_pending_calls() -> None:
    """A scan of new messages continues from a previous scan's open calls (incremental)."""
    first = open_calls((USER, calls("a")))
    assert first == (ToolCallPart("a", "ta"),)
    assert open_calls((results("a"),), first, offset=2) == ()
    error = open_calls((Message.assistant("x"),), first, offset=2)
    assert isinstance(error, InvalidHistory)
    assert error.message.startswith("message 2: ")


def test_unique_ids_keep_good_ids_and_rename_the_rest_deterministically() -> None:
    """Empty and repeated ids get call_<index>, avoiding every id kept in the message."""
    message = Message(
        "assistant",
        (
            TextPart("let me"),
            ToolCallPart("call_1", "a"),
            ToolCallPart("", "b"),
            ToolCallPart("call_1", "c"),
            ToolCallPart("x", "d"),
        ),
    )
    fixed = with_unique_call_ids(message)
    assert [c.id for c in fixed.tool_calls] == ["call_1", "call_1_1", "call_2", "x"]
    assert fixed.parts[0] == TextPart("let me")
    assert with_unique_call_ids(fixed) is fixed
    assert with_unique_call_ids(message) == fixed  # the same input, the same ids


def test_unique_ids_leave_a_good_message_alone() -> None:
    """A message whose ids are fine comes back as the same object."""
    message = calls("a", "b")
    assert with_unique_call_ids(message) is message
    assert fallback_call_id(3) == "call_3"


_PIECES = (
    USER,
    Message.assistant("ok"),
    calls("a"),
    calls("a", "b"),
    results("a"),
    results("b"),
    results("a", "b"),
    Message("user", (ToolResultPart("a", "ta", "stray"),)),
)


@settings(max_examples=400)
@given(
    turns=st.integers(min_value=0, max_value=12),
    edits=st.lists(
        st.tuples(st.integers(min_value=0, max_value=60), st.sampled_from(_PIECES)), max_size=3
    ),
    cut=st.integers(min_value=0, max_value=60),
)
def test_a_changed_history_is_judged_as_a_full_scan_judges_it(
    turns: int, edits: list[tuple[int, Message]], cut: int
) -> None:
    """Scanning only past the shared start gives check_pairing's very answer, error included."""
    checked = (USER, *[m for i in range(turns) for m in (calls(f"c{i}"), results(f"c{i}"))])
    assert check_pairing(checked) is None
    changed = list(checked[: max(cut, 1)])
    for where, piece in edits:
        changed.insert(min(where, len(changed)), piece)
    assert PairedHistories().check(changed, checked) == check_pairing(changed)
    assert PairedHistories().check(checked, checked) is None


def test_a_broken_turn_past_the_shared_start_is_named_by_its_place() -> None:
    """The error of a scan that starts late names the message by its place in the whole."""
    checked = (USER, calls("a"), results("a"), calls("b"), results("b"))
    changed = (*checked[:4], results("a"))
    broken = PairedHistories().check(changed, checked)
    assert broken is not None
    assert broken == check_pairing(changed)
    assert broken.message.startswith("message 4:")


@settings(max_examples=200)
@given(
    steps=st.lists(
        st.tuples(st.integers(min_value=0, max_value=30), st.lists(st.sampled_from(_PIECES))),
        min_size=1,
        max_size=8,
    ),
    size=st.integers(min_value=1, max_value=4),
)
def test_remembered_histories_never_change_the_answer(
    steps: list[tuple[int, list[Message]]], size: int
) -> None:
    """Histories cut back and extended, one memo for all: always check_pairing's answer."""
    paired = PairedHistories(size)
    history: tuple[Message, ...] = (USER, calls("a"), results("a"))
    for keep, added in steps:
        history = (*history[: max(keep, 1)], *added)
        assert paired.check(history) == check_pairing(history)


def test_a_rewritten_history_going_on_from_one_that_passed_gets_the_same_answer() -> None:
    """Sharing nothing with the loop's history, it goes on from a remembered one."""
    first = (Message.user("odd"), calls("a"), results("a"))
    paired = PairedHistories()
    assert paired.check(first) is None
    longer = (*first, calls("b"), results("b"))
    unrelated = (USER, calls("z"), results("z"), calls("b"), results("b"))
    assert paired.check(longer, unrelated) is None
    broken = (*longer, results("a"))
    assert paired.check(broken, unrelated) == check_pairing(broken) is not None


def test_a_question_asked_anew_after_a_history_that_passed_gets_the_same_answer() -> None:
    """What came before a last message that answers no call is remembered as passed."""
    before = (USER, calls("a"), results("a"))
    paired = PairedHistories()
    assert paired.check((*before, Message.user("first try"))) is None
    assert paired.check((*before, Message.user("second try"))) is None
    cut = (USER, calls("a"))
    assert paired.check((*cut, results("a"), results("a"))) == check_pairing(
        (*cut, results("a"), results("a"))
    )
    answered = (*before, calls("b"), results("b"))
    assert paired.check(answered) is None
    assert paired.check(answered[:-1]) == check_pairing(answered[:-1]) is not None


def test_a_history_checked_again_is_kept_while_others_come_and_go() -> None:
    """Past its size the memo forgets the least recently used histories, and only half.

    One session's history is checked between every three others': with room for eight,
    it is still remembered each time, though far more than eight came after it.
    """
    paired = PairedHistories(8)
    mine = (USER, calls("a"), results("a"))
    assert paired.check(mine) is None
    for turn in range(20):
        for other in range(3):
            theirs = (Message.user(f"turn {turn}, session {other}"), calls("b"), results("b"))
            assert paired.check(theirs) is None
        assert (id(mine[-1]), len(mine)) in paired._known
        assert paired.check(mine) is None
        assert len(paired._known) <= 8

"""The memos a conversation's turns go through keep no long history they no longer need.

A long tuple a memo keeps alive is walked by every garbage collection until it is
forgotten, so that a turn's cost would grow with the conversation. The token tallies keep
two histories per conversation, `redact_pii`'s conversations a few branches per history,
and the starts that memos keep or make are shared, so that `begins` compares a request to
them once. Each fast path gives what the slow one gives, and a changed message is
counted or redacted again.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from hypothesis import given
from hypothesis import strategies as st

from fncore import Message, ModelRequest, ToolCallPart, ToolResultPart
from fncore.middleware import _memo
from fncore.middleware._compaction import approximate_tokens
from fncore.middleware._memo import PREFIXES, begins, joined, prefix
from fncore.middleware._pii import BUILTIN
from fncore.middleware._redact_memo import _BRANCHES, Memo
from fncore.middleware._redactor import Rules
from fncore.middleware._tally import Tally

DETECTORS = tuple(BUILTIN.values())
RULES = Rules(DETECTORS, {d.name: "redact" for d in DETECTORS}, None)


def past(n: int) -> tuple[Message, ...]:
    """The four messages of turn ``n``: a question with an e-mail, a call, its result, an answer."""
    call = ToolCallPart(f"c{n}", "add", f'{{"a": {n}}}')
    return (
        Message.user(f"Turn {n}: write to ann{n}@example.org. What is {n} + 2?"),
        Message("assistant", (call,)),
        Message("tool", (ToolResultPart(call.id, "add", str(n + 2)),)),
        Message.assistant(f"{n} + 2 = {n + 2}."),
    )


HISTORY = tuple(m for n in range(30) for m in past(n))


def logged(log: list[Message]) -> Callable[[Sequence[Message]], int]:
    """The approximate counter, noting every message it counts."""

    def count(messages: Sequence[Message]) -> int:
        log.extend(messages)
        return approximate_tokens(messages)

    return count


def cold(messages: Sequence[Message]) -> int:
    """The count made from nothing: every message counted on its own."""
    return sum(approximate_tokens((m,)) for m in messages)


def rounds(
    history: tuple[Message, ...], turn: tuple[Message, ...]
) -> tuple[tuple[Message, ...], ...]:
    """The two requests of ``turn`` after ``history``: its question, then with the result."""
    return (*history, turn[0]), (*history, *turn[:3])


def test_prefix_is_the_slice_and_the_same_tuple_for_each_memo_asking() -> None:
    """``prefix`` gives ``items[:size]``, one tuple however many ask; at most PREFIXES held."""
    assert prefix(HISTORY, 10) == HISTORY[:10]
    assert prefix(HISTORY, 10) is prefix(HISTORY, 10)
    assert prefix(HISTORY, len(HISTORY)) is HISTORY
    for size in range(3 * PREFIXES):
        assert prefix(HISTORY, size) == HISTORY[:size]
        assert len(_memo._prefixes) <= PREFIXES


@given(st.integers(0, 20), st.integers(0, 5))
def test_joined_is_the_concatenation_and_begins_with_its_start(size: int, more: int) -> None:
    """A joined history equals ``start + more`` and begins with ``start``, as compared."""
    start, rest = HISTORY[:size], HISTORY[size : size + more]
    items = joined(start, rest)
    assert items == start + rest
    assert begins(items, start)
    assert begins(items, tuple(start))  # a copy: compared, the same answer


def test_a_tally_keeps_two_histories_however_long_the_conversation() -> None:
    """However long the conversation, a tally keeps two histories (and equals a cold count).

    Turn after turn, two rounds each: the turn's start and its latest round are kept.
    """
    log: list[Message] = []
    tally = Tally(logged(log), messages=1)
    history = HISTORY
    for n in range(30, 60):  # longer than a tally looks back for a history it went on from
        turn = past(n)
        for request in rounds(history, turn):
            assert tally.history(request) == cold(request)
            assert tally.remembered[1] <= 3
        history = (*history, *turn)
    log.clear()
    again = (*history[:-1], Message.assistant("Another answer."))  # the last answer, again
    assert tally.history(again) == cold(again)
    assert log == [again[-1]]  # counted from the round before it, not message by message


def test_turns_asked_anew_from_one_start_keep_no_old_branch() -> None:
    """Turns asked anew from one history count only their new messages; old branches go."""
    log: list[Message] = []
    tally = Tally(logged(log), messages=1)
    for n in range(40):
        first, second = rounds(HISTORY, past(100 + n))
        assert tally.history(first) == cold(first)
        if n:
            assert log == [first[-1]]  # the start is kept: only the question is new
        assert tally.history(second) == cold(second)
        assert tally.remembered[1] <= 3
        log.clear()
    earlier = rounds(HISTORY, past(100))[1]  # a branch forgotten: counted from the start kept
    assert tally.history(earlier) == cold(earlier)
    assert log == list(earlier[len(HISTORY) :])


def test_a_changed_message_is_counted_again_after_a_round_is_forgotten() -> None:
    """A history with a message edited in place of one counted is counted afresh."""
    log: list[Message] = []
    tally = Tally(logged(log), messages=1)
    first, second = rounds(HISTORY, past(30))
    assert tally.history(first) == cold(first)
    assert tally.history(second) == cold(second)
    edited = (*second[:5], Message.user("edited: bob@example.org"), *second[6:])
    log.clear()
    assert tally.history(edited) == cold(edited)
    assert edited[5] in log


def test_redacted_requests_are_noted_to_go_on_from_the_last_one() -> None:
    """A round's redacted request, made from the last one's, is noted to begin with it.

    `begins` answers without a comparison, and the request is what a cold scan gives.
    """
    memo = Memo(1_000_000)
    first, second = rounds(HISTORY, past(30))
    out1 = RULES.inward(None, memo).request(ModelRequest(first)).messages
    out2 = RULES.inward(None, memo).request(ModelRequest(second)).messages
    assert out2 == RULES.inward(None).request(ModelRequest(second)).messages
    assert (id(out2), id(out1)) in _memo._starts
    assert begins(out2, out1)


def test_turns_asked_anew_keep_a_few_branches_of_a_history() -> None:
    """Turns asked anew from one history keep only the latest few branches findable.

    Each is redacted as a cold scan would; no long tuple is kept for the older branches.
    """
    memo = Memo(10_000_000)
    for n in range(3 * _BRANCHES):
        for request in rounds(HISTORY, past(100 + n)):
            out = RULES.inward(None, memo).request(ModelRequest(request)).messages
            assert out == RULES.inward(None).request(ModelRequest(request)).messages
        assert len(memo.conversations._by_last) <= _BRANCHES + 1
    edited = (*HISTORY[:5], Message.user("now carl@example.org"), *HISTORY[6:])
    request = rounds(edited, past(200))[0]
    out = RULES.inward(None, memo).request(ModelRequest(request)).messages
    assert out[5].text == "now [EMAIL]"
    assert out == RULES.inward(None).request(ModelRequest(request)).messages

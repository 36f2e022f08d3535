"""`_memo.begins`: whether a history goes on from another, asked once per pair of tuples."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fncore import Message
from fncore.middleware import _memo
from fncore.middleware._memo import STARTS, begins

POOL = tuple(Message.user(f"m{i}") for i in range(3))


@given(st.lists(st.integers(0, 2), max_size=12), st.lists(st.integers(0, 2), max_size=12))
def test_the_answer_is_a_comparison_of_the_start(items: list[int], start: list[int]) -> None:
    """Asked once or again, of the same tuples or of copies, it is ``items[:n] == start``."""
    a = tuple(POOL[i] for i in items)
    b = tuple(POOL[i] for i in start)
    expected = a[: len(b)] == b and len(b) <= len(a)
    assert begins(a, b) is expected
    assert begins(a, b) is expected
    assert begins(tuple(a), tuple(b)) is expected


def test_a_changed_message_is_compared_again() -> None:
    """A history with one message replaced is another tuple: it is compared afresh."""
    history = tuple(Message.user(f"message {i}") for i in range(20))
    longer = (*history, Message.user("next"))
    assert begins(longer, history)
    changed = (*history[:5], Message.user("edited"), *history[6:], Message.user("next"))
    assert not begins(changed, history)
    assert begins(changed, history[:5])


def test_what_is_remembered_is_bounded_and_ids_used_again_are_not_mistaken() -> None:
    """At most STARTS answers are held; a forgotten pair's ids may come back, rightly answered."""
    ids: set[int] = set()
    reused = 0
    for n in range(3 * STARTS):
        start = (Message.user(f"start {n}"),)
        items = (*start, Message.user("more")) if n % 2 else (Message.user("other"), *start)
        reused += id(items) in ids
        ids.add(id(items))
        assert begins(items, start) is bool(n % 2)
        assert len(_memo._starts) <= STARTS
        del items, start
    assert reused  # the allocator gave a forgotten tuple's id to a new one

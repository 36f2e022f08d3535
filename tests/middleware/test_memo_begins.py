"""`_memo.begins`: whether a history goes on from another, asked once per pair of tuples.

The starts memos keep come from `prefix` (one tuple for each memo that asks) and a history
made by adding to one from `joined` (noted to begin with it), so `begins` compares once.
"""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from fncore import Message
from fncore.middleware import _memo
from fncore.middleware._memo import PREFIXES, STARTS, begins, joined, prefix

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


HISTORY = tuple(Message.user(f"message {i}") for i in range(40))


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

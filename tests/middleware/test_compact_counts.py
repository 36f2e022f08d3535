"""``compact``'s token counts: remembered per message, per tool and per history; tools count."""

from __future__ import annotations

import dataclasses
from collections.abc import Callable, Sequence
from typing import Any

import pytest
from hypothesis import given
from hypothesis import strategies as st
from returns.result import Success

from fncore import (
    Agent,
    CompressContext,
    Message,
    ModelRequest,
    Outcome,
    Registry,
    RunInfo,
    TextPart,
    Tool,
    ToolCallPart,
    ToolResultPart,
)
from fncore.core import State, ToolSpec
from fncore.middleware import compact
from fncore.middleware._compaction import (
    ClearToolResults,
    approximate_tokens,
    groups,
    head_end,
    is_summary_at,
    window,
)
from fncore.middleware._tally import Tally, definition
from fncore.testing import FunctionModel


def texts(messages: Sequence[Message]) -> list[str]:
    return [m.text for m in messages]


def answer(request: ModelRequest) -> str:
    return f"answer after {len(request.messages)} messages"


def lookup(city: str) -> str:
    """Look up everything that is known about a city: its weather, people and history."""
    return city


def logged(log: list[Message]) -> Callable[[Sequence[Message]], int]:
    """The approximate counter, noting every message it counts."""

    def count(messages: Sequence[Message]) -> int:
        log.extend(messages)
        return approximate_tokens(messages)

    return count


def cold(messages: Sequence[Message]) -> int:
    """The count made from nothing: every message counted on its own."""
    return sum(approximate_tokens((m,)) for m in messages)


async def _unchanged(ctx: CompressContext) -> Outcome[tuple[Message, ...]]:
    return Success(ctx.messages)


def compressor(registry: Registry) -> Callable[[CompressContext], Any]:
    """The ``compress_context`` middleware of ``registry``, called with the end that keeps."""
    (registration,) = registry.middleware
    function = registration.function
    return lambda ctx: function(ctx, _unchanged)


# -- tool definitions count toward the trigger ---------------------------------------------


@pytest.mark.parametrize("apply", ["history", "request"])
async def test_tool_definitions_push_the_history_over_the_token_trigger(apply: Any) -> None:
    """A history under max_tokens alone is compacted once the tools' definitions are added."""
    prompt = [Message.user(f"question {i}") for i in range(4)]
    spec = Tool.from_function(lookup).spec
    alone = cold(prompt)
    with_tools = alone + approximate_tokens((definition(spec),))
    limit = alone + 5
    assert with_tools > limit
    model = FunctionModel(answer)
    registry = compact(strategies=["window"], max_tokens=limit, apply=apply)
    await Agent(model, registry=registry, tools=[lookup]).run(prompt)
    assert texts(model.requests[0].messages) == ["question 0", "question 3"]

    without = FunctionModel(answer)  # the same history with no tools stays whole
    await Agent(without, registry=compact(strategies=["window"], max_tokens=limit)).run(prompt)
    assert len(without.requests[0].messages) == 4


async def test_compress_context_sees_the_tools_and_the_output_tool() -> None:
    """ctx.tools holds the agent's tool definitions and, with output_strategy="tool", its own."""
    from pydantic import BaseModel

    class City(BaseModel):
        name: str

    seen: list[tuple[str, ...]] = []
    registry = Registry()

    @registry.on("compress_context")
    async def note(ctx: CompressContext, call_next: Any) -> Outcome[tuple[Message, ...]]:
        seen.append(tuple(t.name for t in ctx.tools))
        return await call_next(ctx)  # type: ignore[no-any-return]

    await Agent(FunctionModel(answer), registry=registry, tools=[lookup]).run("hi")
    agent = Agent(
        FunctionModel(answer),
        registry=registry,
        tools=[lookup],
        output_type=City,
        output_strategy="tool",
    )
    await agent.run("hi")
    assert seen[0] == ("lookup",)
    assert seen[1][0] == "lookup"
    assert len(seen[1]) == 2


# -- counted once, recounted when changed ---------------------------------------------------


def grow(history: tuple[Message, ...], turn: int) -> tuple[Message, ...]:
    """A round's worth of new messages: a tool call and its result."""
    call = ToolCallPart(f"c{turn}", "lookup", f'{{"city": "{turn}"}}')
    result = ToolResultPart(call.id, "lookup", f"result {turn} " * 5)
    return (*history, Message("assistant", (call,)), Message("tool", (result,)))


async def test_each_message_is_counted_once_as_the_history_grows() -> None:
    """Round after round, the counter sees only the new messages; the totals are exact."""
    log: list[Message] = []
    run = RunInfo("r", {}, State())
    compress = compressor(compact(max_tokens=10**9, count_tokens=logged(log)))
    history: tuple[Message, ...] = (Message.user("the task"),)
    for turn in range(30):
        history = grow(history, turn)
        compressed = await compress(CompressContext(run, turn, history, "Be brief."))
        assert compressed.unwrap() is history
    counted = [m for m in log if m.role != "system"]
    assert counted == list(history)  # each message once, in order


async def test_a_changed_message_is_counted_again() -> None:
    """A message replaced in the history (a new object) is counted; the others are not."""
    log: list[Message] = []
    tally = Tally(logged(log))
    history = grow(grow((Message.user("the task"),), 0), 1)
    assert tally.history(history) == cold(history)
    log.clear()
    changed = dataclasses.replace(history[2], parts=(ToolResultPart("c0", "lookup", "short"),))
    edited = (*history[:2], changed, *history[3:])
    assert tally.history(edited) == cold(edited) != cold(history)
    assert log == [changed]


def test_counts_are_per_counter() -> None:
    """Two counters never share a count: each tally belongs to one counter."""
    history = grow((Message.user("the task"),), 0)
    double = Tally(lambda ms: 2 * approximate_tokens(ms))
    single = Tally(approximate_tokens)
    assert double.history(history) == 2 * single.history(history) == 2 * cold(history)


ops = st.lists(
    st.one_of(
        st.tuples(st.just("grow"), st.integers(1, 80)),
        st.tuples(st.just("edit"), st.integers(0, 10_000)),
        st.tuples(st.just("cut"), st.integers(0, 10_000)),
        st.tuples(st.just("copy"), st.just(0)),
    ),
    max_size=40,
)


@given(ops, st.integers(1, 50), st.integers(1, 8))
def test_remembered_totals_equal_a_cold_recount(
    steps: list[tuple[str, int]], messages: int, histories: int
) -> None:
    """Whatever happens to the history (grown, edited, cut, copied), the count is exact."""
    tally = Tally(approximate_tokens, messages=messages, histories=histories)
    history: tuple[Message, ...] = (Message.user("the task"),)
    made = 0
    for op, n in steps:
        if op == "grow":
            for _ in range(n):
                made += 1
                history = (*history, Message.user("x" * (made % 13)))
        elif op == "edit":
            at = n % len(history)
            edited = Message(history[at].role, (TextPart(f"edited {n}"),))
            history = (*history[:at], edited, *history[at + 1 :])
        elif op == "cut":
            history = history[: max(1, n % (len(history) + 1))]
        else:
            history = tuple(dataclasses.replace(m) for m in history)
        assert tally.history(history) == cold(history)
        assert tally.remembered[0] <= messages
        assert tally.remembered[1] <= histories


def test_the_memos_are_bounded_and_an_id_used_again_is_not_mistaken() -> None:
    """With room for one message, ids of forgotten messages come back and count afresh."""
    tally = Tally(approximate_tokens, messages=1, histories=1)
    ids: set[int] = set()
    reused = 0
    for i in range(200):
        message = Message.user("y" * (40 * (i % 7)))
        reused += id(message) in ids
        ids.add(id(message))
        assert tally.messages((message,)) == approximate_tokens((message,))
        assert tally.history((message,)) == approximate_tokens((message,))
        assert tally.remembered == (1, 1)
        del message
    assert reused  # the allocator did give a forgotten message's id to a new one


def test_tool_definitions_and_prompts_are_counted_once() -> None:
    """A tool definition and a system prompt are counted once each, as system messages.

    No prompt, no history and no tools count nothing.
    """
    log: list[Message] = []
    tally = Tally(logged(log))
    specs = (ToolSpec("a", "Does a.", {"type": "object"}), ToolSpec("b", "Does b.", {}))
    expected = sum(approximate_tokens((definition(s),)) for s in specs)
    for _ in range(3):
        assert tally.tools(specs) == expected
        assert tally.tools((*specs,)) == expected  # another tuple of the same definitions
        assert tally.prompt("Be brief.") == approximate_tokens((Message.system("Be brief."),))
    assert len(log) == 3
    assert tally.prompt("") == tally.history(()) == tally.tools(()) == 0


# -- the window, found from the end ---------------------------------------------------------


def reference_window(
    messages: tuple[Message, ...], keep_first: bool, keep: int, fits: Callable[[int, int], bool]
) -> tuple[Message, ...]:
    """The window as it was computed before, over the list of every group."""
    parts = groups(messages)
    head = 0
    while head < len(parts) and parts[head][0].role == "system":
        head += 1
    first = head < len(parts) and parts[head][0].role == "user"
    if keep_first and first and not is_summary_at(parts[head], 0):
        head += 1
    if head < len(parts) and is_summary_at(parts[head], 0):
        head += 1
    tokens = [approximate_tokens(g) for g in parts]
    start = max(head, len(parts) - keep)
    count = sum(len(g) for g in parts[:head]) + sum(len(g) for g in parts[start:])
    total = sum(tokens[:head]) + sum(tokens[start:])
    while start < len(parts) - 1 and not fits(count, total):
        count -= len(parts[start])
        total -= tokens[start]
        start += 1
    return tuple(m for g in parts[:head] + parts[start:] for m in g)


roles = st.sampled_from(["system", "user", "assistant", "tool", "summary"])


@given(
    st.lists(st.tuples(roles, st.integers(0, 60)), max_size=30),
    st.booleans(),
    st.integers(1, 6),
    st.integers(1, 12),
    st.integers(10, 300),
)
def test_the_window_equals_the_one_over_every_group(
    shape: list[tuple[str, int]], keep_first: bool, keep: int, most: int, tokens: int
) -> None:
    """Looking only at the groups that may stay gives the window the full walk gave."""
    messages = tuple(
        Message("user", (TextPart(f"[Summary of the earlier conversation]\n{'s' * n}"),))
        if role == "summary"
        else Message(role, (TextPart("t" * n),))  # type: ignore[arg-type]
        for role, n in shape
    )

    def fits(count: int, total: int) -> bool:
        return count <= most and total <= tokens

    head = head_end(messages, keep_first)
    if is_summary_at(messages, head):
        head += 1
    got = window(messages, head, keep, cold, fits)
    assert got == reference_window(messages, keep_first, keep, fits)


# -- clearing, remembered -------------------------------------------------------------------


def reference_clearing(
    messages: tuple[Message, ...], keep: int, placeholder: str, exclude: frozenset[str]
) -> tuple[Message, ...]:
    """Clearing as it was done before, result by result from the end, remembering nothing."""
    seen = 0
    out = list(messages)
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if message.role != "tool":
            continue
        parts = list(message.parts)
        for at in range(len(parts) - 1, -1, -1):
            part = parts[at]
            if type(part) is not ToolResultPart or part.name in exclude:
                continue
            seen += 1
            if seen > keep and part.content != placeholder:
                parts[at] = ToolResultPart(part.call_id, part.name, placeholder)
        out[index] = Message("tool", tuple(parts), message.cache)
    return tuple(out)


results = st.lists(
    st.tuples(st.sampled_from(["a", "b", "keep"]), st.sampled_from(["r", "rr", "CLEARED"])),
    min_size=1,
    max_size=3,
)


@given(
    st.lists(st.one_of(results, st.just([])), max_size=20),
    st.lists(st.integers(0, 5), min_size=1, max_size=4),
    st.integers(1, 6),
)
def test_remembered_clearing_equals_clearing_afresh(
    shape: list[list[tuple[str, str]]], keeps: list[int], size: int
) -> None:
    """Cleared once or again, with any keep, the history is what clearing afresh gives."""
    messages: list[Message] = [Message.user("task")]
    for i, found in enumerate(shape):
        if not found:
            messages.append(Message.assistant(f"text {i}"))
            continue
        calls = tuple(ToolCallPart(f"c{i}_{k}", name, "{}") for k, (name, _) in enumerate(found))
        messages.append(Message("assistant", calls))
        messages.append(
            Message(
                "tool",
                tuple(
                    ToolResultPart(c.id, c.name, content)
                    for c, (_, content) in zip(calls, found, strict=True)
                ),
                cache=i % 2 == 0,
            )
        )
    history = tuple(messages)
    exclude = frozenset({"keep"})
    clearing = ClearToolResults("CLEARED", exclude, size=size)
    for keep in [*keeps, *keeps]:
        expected = reference_clearing(history, keep, "CLEARED", exclude)
        got = clearing(history, keep)
        assert got == expected
        assert (got is history) == (expected == history)
        assert clearing.remembered <= size


def test_a_changed_tool_message_is_cleared_afresh() -> None:
    """A tool message replaced by another (a new object) is cleared from its own results."""
    exclude: frozenset[str] = frozenset()
    clearing = ClearToolResults("CLEARED", exclude)
    history = grow(grow((Message.user("the task"),), 0), 1)
    first = clearing(history, 0)
    assert [r.content for m in first for r in m.tool_results] == ["CLEARED", "CLEARED"]
    changed = Message("tool", (ToolResultPart("c0", "other", "new"),))
    edited = (*history[:2], changed, *history[3:])
    again = clearing(edited, 0)
    assert again[2].tool_results == (ToolResultPart("c0", "other", "CLEARED"),)
    assert again == reference_clearing(edited, 0, "CLEARED", exclude)


def test_a_turn_asked_anew_from_the_same_point_counts_only_its_new_message() -> None:
    """A history counted whole also remembers the history before its last message.

    The tally remembers one message's count at most here, so only a remembered history's
    total can spare counting the 100 messages again.
    """
    log: list[Message] = []
    tally = Tally(logged(log), messages=1)
    before = tuple(Message.user(f"message {i}") for i in range(100))
    first = (*before, Message.user("first try"))
    assert tally.history(first) == cold(first)
    log.clear()
    again = (*before, Message.user("second try, worded otherwise"))
    assert tally.history(again) == cold(again)
    assert log == [again[-1]]


def test_a_history_used_again_is_kept_while_other_sessions_come_and_go() -> None:
    """The histories' totals forget the least recently used first, not the oldest.

    One session's history is asked for between three other sessions' turns (each leaves
    two totals): with room for sixteen, it is never counted again, though far more than
    sixteen came after it.
    """
    log: list[Message] = []
    tally = Tally(logged(log), messages=1, histories=16)
    mine = tuple(Message.user(f"mine {i}") for i in range(50))
    assert tally.history(mine) == cold(mine)
    for turn in range(20):
        for other in range(3):
            theirs = tuple(Message.user(f"theirs {turn} {other} {i}") for i in range(5))
            assert tally.history(theirs) == cold(theirs)
        log.clear()
        assert tally.history(mine) == cold(mine)
        assert log == []
        assert tally.remembered[1] <= 16


def test_a_forgotten_total_counts_only_the_messages_forgotten_too() -> None:
    """A history whose total is gone recounts just the messages whose counts are gone."""
    log: list[Message] = []
    tally = Tally(logged(log), messages=150, histories=1)
    history = tuple(Message.user(f"message {i}" * (1 + i % 4)) for i in range(100))
    assert tally.history(history) == cold(history)
    others = tuple(Message.user(f"other {i}") for i in range(60))
    assert tally.history(others) == cold(others)  # pushes out older counts and the total
    log.clear()
    longer = (*history, Message.user("one more"))
    assert tally.history(longer) == cold(longer)
    assert 1 < len(log) < len(longer)
    assert log[-1] is longer[-1]
    assert all(m in history for m in log[:-1])


def past(n: int) -> tuple[Message, ...]:
    """The four messages of turn ``n``: a question, a call, its result, an answer."""
    call = ToolCallPart(f"c{n}", "add", f'{{"a": {n}}}')
    return (
        Message.user(f"Turn {n}: what is {n} + 2?"),
        Message("assistant", (call,)),
        Message("tool", (ToolResultPart(call.id, "add", str(n + 2)),)),
        Message.assistant(f"{n} + 2 = {n + 2}."),
    )


def rounds(
    history: tuple[Message, ...], turn: tuple[Message, ...]
) -> tuple[tuple[Message, ...], ...]:
    """The two requests of ``turn`` after ``history``: its question, then with the result."""
    return (*history, turn[0]), (*history, *turn[:3])


HISTORY = tuple(m for n in range(30) for m in past(n))


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

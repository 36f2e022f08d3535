"""The tool-call/result pairing rule, checked by position, the way providers check it.

An assistant turn's tool calls carry unique, non-empty ids; each is answered by exactly one
`ToolResultPart` in the messages after that turn and before the next assistant turn. Ids
only need to be unique within a turn: many OpenAI-compatible servers send ``call_0`` every
round, and matching by position keeps those conversations valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace
from itertools import islice

from fncore.core._errors import InvalidHistory
from fncore.core._messages import (
    Message,
    Part,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    fallback_call_id,
)

__all__ = ["check_pairing", "open_calls", "with_unique_call_ids"]


def _invalid(index: int, problem: str, fix: str) -> InvalidHistory:
    return InvalidHistory(message=f"message {index}: {problem}; {fix}")


def _names(calls: Sequence[ToolCallPart]) -> str:
    return ", ".join(f"{c.name} ({c.id})" for c in calls)


def open_calls(
    messages: Sequence[Message],
    pending: Sequence[ToolCallPart] = (),
    *,
    offset: int = 0,
) -> tuple[ToolCallPart, ...] | InvalidHistory:
    """Scan ``messages`` and return the calls of the last assistant turn still unanswered.

    Args:
        messages: The messages to scan, in order.
        pending: Calls left unanswered by the messages before these (a previous scan's
            result), so a long history is scanned once and then only extended.
        offset: The index of ``messages[0]`` in the whole conversation, for error messages.

    Returns:
        The calls still waiting for a result at the end (empty when every call is
        answered), or an `InvalidHistory` naming the first message that breaks the rule.

    Example:
        >>> call = Message("assistant", (ToolCallPart("c1", "add"),))
        >>> open_calls([Message.user("hi"), call])
        (ToolCallPart(id='c1', name='add', arguments='{}'),)
        >>> open_calls([call, Message("tool", (ToolResultPart("c1", "add", "3"),))])
        ()
    """
    waiting: dict[str, ToolCallPart] = {c.id: c for c in pending} if pending else {}
    answered: set[str] | None = None
    items: Sequence[object] = messages
    for index, item in enumerate(items, offset):
        if type(item) is not Message:
            return _invalid(
                index, f"{type(item).__name__} is not a Message", "pass Message objects only"
            )
        message = item
        if message.role == "assistant":
            if waiting:
                return _invalid(
                    index,
                    f"an assistant turn starts while tool calls of the previous one have no "
                    f"result: {_names(tuple(waiting.values()))}",
                    "answer each call with a ToolResultPart before the next assistant message, "
                    "or drop the calls",
                )
            answered = None
            for part in message.parts:
                kind = type(part)
                if kind is ToolCallPart:
                    call_id = part.id  # type: ignore[union-attr]
                    if not call_id:
                        return _invalid(
                            index,
                            f"tool call {part.name!r} has an empty id",  # type: ignore[union-attr]
                            "give every call a unique id",
                        )
                    if call_id in waiting:
                        return _invalid(
                            index,
                            f"two tool calls in one turn share the id {call_id!r}",
                            "give every call of a turn its own id",
                        )
                    waiting[call_id] = part  # type: ignore[assignment]
                elif kind is ToolResultPart:
                    return _invalid(
                        index,
                        "a tool result is inside an assistant message",
                        "put tool results in a 'tool' message after the call",
                    )
            continue
        for part in message.parts:
            kind = type(part)
            if kind is TextPart:
                continue
            if kind is ToolResultPart:
                call_id = part.call_id  # type: ignore[union-attr]
                if waiting.pop(call_id, None) is None:
                    problem = (
                        f"tool call {call_id!r} is answered a second time"
                        if answered is not None and call_id in answered
                        else f"tool result for {call_id!r} answers no call of the assistant turn "
                        "before it (an orphan result, or a result before its call)"
                    )
                    return _invalid(index, problem, "drop the result or add its call first")
                if answered is None:
                    answered = set()
                answered.add(call_id)
            elif kind is ToolCallPart:
                return _invalid(
                    index,
                    f"a tool call is inside a {message.role!r} message",
                    "only assistant messages may hold tool calls",
                )
    return tuple(waiting.values()) if waiting else ()


def check_pairing(messages: Sequence[Message]) -> InvalidHistory | None:
    """An `InvalidHistory` unless every tool call in ``messages`` is answered, by position.

    This is what a provider requires of every request.

    Example:
        >>> call = Message("assistant", (ToolCallPart("c1", "add"),))
        >>> check_pairing([Message.user("hi"), call]).message.split(";")[0]
        'tool calls without a result: add (c1)'
    """
    found = open_calls(messages)
    if type(found) is InvalidHistory:
        return found
    if found:
        return unanswered(found)  # type: ignore[arg-type]
    return None


class PairedHistories:
    """`check_pairing` with the histories that passed remembered (at most ``size``).

    The histories used most recently are kept longest, so an agent serving many sessions
    at once still finds each session's history when its next turn comes.

    A request a middleware rewrote (a redaction, say) differs from the history the loop
    checked, often from its first messages on; but a middleware that rewrites the same
    way each round hands back the same objects, so this round's request goes on from last
    round's, which passed. Only what follows the last assistant turn shared with a history
    that passed is scanned: before an assistant turn of such a history no call is waiting,
    so the scan may start there afresh, and the answer is `check_pairing`'s. The remembered
    histories are looked at first; the start shared with the loop's history is sought (by
    halving) only when none of them is found.

    Example:
        >>> call = Message("assistant", (ToolCallPart("c1", "add"),))
        >>> result = Message("tool", (ToolResultPart("c1", "add", "3"),))
        >>> history = (Message.user("hi"), call, result, call, result)
        >>> paired = PairedHistories()
        >>> paired.check(history[:4], history) is None
        False
        >>> paired.check(history) is None
        True
    """

    __slots__ = ("_known", "_size")

    def __init__(self, size: int = 256) -> None:
        self._known: dict[tuple[int, int], tuple[Message, ...]] = {}
        self._size = size

    def check(
        self, messages: Sequence[Message], checked: Sequence[Message] = ()
    ) -> InvalidHistory | None:
        """`check_pairing` of ``messages``, given that ``checked`` (if any) passed it."""
        history = messages if type(messages) is tuple else tuple(messages)
        count = len(history)
        known = self._known
        start = 0
        for end in range(count, max(count - _REACH, 0), -1):
            last = history[end - 1]
            if type(last) is not Message:
                break
            key = (id(last), end)
            earlier = known.get(key)
            if earlier is not None and (earlier is history or history[:end] == earlier):
                del known[key]  # used again: put back, to be forgotten last
                known[key] = earlier
                start = end
                break
        found = whole = start > 0  # ``history`` begins with a remembered history
        if not found:  # else no need to look for the start it shares with ``checked``
            start = _shared_start(history, tuple(checked)) if checked else 0
            whole = start == len(checked)
        if start == count and whole:
            return None
        turn = start - 1
        while turn > 0 and history[turn].role != "assistant":
            turn -= 1
        if turn <= 0:
            broken = check_pairing(history)
        else:
            calls = open_calls(history[turn:], offset=turn)
            broken = (
                calls if type(calls) is InvalidHistory else (unanswered(calls) if calls else None)  # type: ignore[arg-type]
            )
        if broken is None and count:
            if len(known) >= self._size:  # forget the older half: it is only scanned again
                for key in list(islice(known, max(len(known) // 2, 1))):
                    del known[key]
            known[(id(history[-1]), count)] = history  # holds its last message: id not reused
            last = history[-1]
            if (
                count > 1
                and not (found and start == count - 1)  # that one is remembered already
                and (
                    last.role == "assistant"
                    or not any(type(p) is ToolResultPart for p in last.parts)
                )
            ):  # it answers no call, so all before it passed too: a turn asked anew from there
                known[(id(history[-2]), count - 1)] = history[:-1]
        return broken


_REACH = 8
"""How many of a history's last messages may have ended one that passed (a round adds a
call and its results; a turn an answer and a question)."""


def _shared_start(messages: tuple[Message, ...], other: tuple[Message, ...]) -> int:
    """How many leading messages ``messages`` and ``other`` have equal (halving, in C)."""
    low, high = 0, min(len(messages), len(other))
    if messages[:high] == other[:high]:  # tuples compare by identity first, then by value
        return high
    while high - low > 1:  # messages[:low] equal, messages[:high] not
        middle = (low + high) // 2
        if messages[low:middle] == other[low:middle]:
            low = middle
        else:
            high = middle
    return low


def unanswered(calls: Sequence[ToolCallPart]) -> InvalidHistory:
    """The error for a conversation ending with ``calls`` unanswered."""
    return InvalidHistory(
        message=(
            f"tool calls without a result: {_names(calls)}; add a tool message with a "
            "ToolResultPart for each call, or drop the calls"
        )
    )


def with_unique_call_ids(message: Message) -> Message:
    """``message`` with every empty or repeated tool-call id replaced, deterministically.

    A call keeps its id unless the id is empty or an earlier call of the message has it.
    Such a call gets `fallback_call_id` of its index among the message's calls (``call_2``),
    or ``call_2_1``, ``call_2_2``, ... when that is taken. A message whose ids are fine is
    returned as it is.

    Example:
        >>> twice = Message("assistant", (ToolCallPart("a", "f"), ToolCallPart("a", "g")))
        >>> [c.id for c in with_unique_call_ids(twice).tool_calls]
        ['a', 'call_1']
    """
    parts = message.parts
    kept: set[str] = set()
    renamed = False
    for part in parts:
        if type(part) is ToolCallPart:
            if not part.id or part.id in kept:
                renamed = True
            else:
                kept.add(part.id)
    if not renamed:
        return message
    seen: set[str] = set()
    out: list[Part] = []
    index = 0
    for part in parts:
        if type(part) is ToolCallPart:
            if part.id and part.id not in seen:
                seen.add(part.id)
            else:
                base = candidate = fallback_call_id(index)
                n = 0
                while candidate in kept:
                    n += 1
                    candidate = f"{base}_{n}"
                kept.add(candidate)
                part = replace(part, id=candidate)
            index += 1
        out.append(part)
    return replace(message, parts=tuple(out))

"""A finished turn as a session update: what a run commits to its session (pure)."""

from __future__ import annotations

from collections.abc import Mapping

from fncore.core._errors import InvalidHistory
from fncore.core._messages import Message, ToolCallPart, ToolResultPart
from fncore.core._pairing import open_calls, unanswered
from fncore.core._result import RunResult
from fncore.core._session import Session, SessionUpdate, pending_calls
from fncore.core._value import maker

_update = maker(SessionUpdate)


def session_update(
    session: Session,
    new_input: tuple[Message, ...],
    done: RunResult,
    state: Mapping[str, object],
    checked: bool = False,
) -> tuple[SessionUpdate, tuple[ToolCallPart, ...]] | InvalidHistory:
    """The update committing a finished turn to ``session``, and the calls it leaves open.

    Args:
        session: The session as the run loaded it.
        new_input: The run's input messages.
        done: The run's result (its messages follow the input).
        state: The session-scoped state as the run left it.
        checked: Whether the agent loop ran with ``session`` and ``new_input`` (so it
            checked that the input answers what the session leaves open): then ``done``'s
            messages, if the loop vouched for them (`vouch`), are not scanned again.

    Returns:
        The update and the tool calls its history leaves unanswered (only a run that
        stopped ``awaiting_tools`` may leave any), or why the transcript cannot be saved.

    Example:
        >>> from fncore.core._usage import Usage
        >>> done = RunResult("hi", (Message.assistant("hi"),), Usage(), 1, "completed")
        >>> update, pending = session_update(Session("s"), (Message.user("hello"),), done, {})
        >>> update.keep, len(update.append), pending
        (0, 2, ())
    """
    if session.version:  # the store has the history: append to it
        keep, append = len(session.messages), new_input + done.messages
        pending = pending_calls(session)
    else:  # a new session (perhaps forked with a history): write it all
        keep, append, pending = 0, session.messages + new_input + done.messages, ()
    found: object
    if type(pending) is InvalidHistory:
        found = pending
    elif checked and done._open is not None:  # the input left nothing open: the loop's
        found = done._open  # messages leave what it vouched for
    else:
        found = open_calls(append, pending, offset=keep)  # type: ignore[arg-type]
    if type(found) is InvalidHistory:
        return _not_saved(found)
    if found and done.stop_reason != "awaiting_tools":
        return _not_saved(unanswered(found))  # type: ignore[arg-type]
    return _update(session.id, session.version, keep, append, state), found  # type: ignore[return-value]


def vouch(done: RunResult) -> None:
    """Remember on ``done`` the calls its messages leave open, as the agent loop made them.

    For the result of a loop that started fresh (no resume, no output type) and finished
    on a text answer or after a tool round: every call of its responses has a unique id
    and a result in the tool message after it, but a response left unanswered by a run
    that stops ``awaiting_tools``. What the loop does not build itself is checked here: a
    response holding a tool result (a model or a middleware may return one) leaves the
    messages for the commit to scan, and to refuse.
    """
    messages = done.messages
    for message in messages:
        if message.role == "assistant":
            for part in message.parts:
                if type(part) is ToolResultPart:
                    return
    calls: tuple[ToolCallPart, ...] = ()
    if done.stop_reason == "awaiting_tools":
        calls = tuple([p for p in messages[-1].parts if type(p) is ToolCallPart])
    object.__setattr__(done, "_open", calls)


def _not_saved(error: InvalidHistory) -> InvalidHistory:
    return InvalidHistory(
        message=f"the run's transcript was not saved to its session: {error.message}",
        position="run",
    )

"""A finished turn as a session update: what a run commits to its session (pure)."""

from __future__ import annotations

from collections.abc import Mapping

from fncore.core._errors import InvalidHistory
from fncore.core._messages import Message, ToolCallPart
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
) -> tuple[SessionUpdate, tuple[ToolCallPart, ...]] | InvalidHistory:
    """The update committing a finished turn to ``session``, and the calls it leaves open.

    Args:
        session: The session as the run loaded it.
        new_input: The run's input messages.
        done: The run's result (its messages follow the input).
        state: The session-scoped state as the run left it.

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
    found = (
        pending if type(pending) is InvalidHistory else open_calls(append, pending, offset=keep)  # type: ignore[arg-type]
    )
    if type(found) is InvalidHistory:
        return _not_saved(found)
    if found and done.stop_reason != "awaiting_tools":
        return _not_saved(unanswered(found))  # type: ignore[arg-type]
    return _update(session.id, session.version, keep, append, state), found  # type: ignore[return-value]


def _not_saved(error: InvalidHistory) -> InvalidHistory:
    return InvalidHistory(
        message=f"the run's transcript was not saved to its session: {error.message}",
        position="run",
    )

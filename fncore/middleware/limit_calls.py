"""``limit_calls``: at most so many model calls and tool calls, per reply and per session.

Counts live in the run's state, never on the middleware: reply counts in ``ctx.run.state``
(fresh for every reply, whatever the previous reply ended with) and session counts in
``ctx.run.session_state`` (committed with the session when a run succeeds), or with
``session_counts="store"`` in a store, under the session's id: shared at once by every run
of the session in every process using the store, whose rounds take turns (a lock in the
store), so concurrent runs of a session never make more calls than its limit.

What happens at a limit is ``exit``:

* ``end`` (default): the reply ends gracefully with an answer from the model. The round
  that must be the last (one model call left, or no tool call left) is told to answer
  without tools and offered none; tool calls over the limit get an error result. If the
  model calls a tool anyway, the run stops before the next model call with ``message``
  (``stop_reason == "terminated"``).
* ``error``: the call over the limit is not made and the run fails with `CallLimitExceeded`.
* ``continue``: a tool call over a tool limit gets an error result telling the model not
  to call that tool again, and the reply goes on; a model-call limit still ends the reply as
  with ``end`` (there is no going on without a model call).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Literal, cast

from pydantic import Field
from returns.result import Failure, Success

from fncore.core import (
    CallLimitExceeded,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    ReasoningContext,
    Registry,
    RunInfo,
    State,
    StateKey,
    Terminate,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._fold import checks_itself, raised
from fncore.core._position_names import MODEL_CALL, TOOL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._place import place
from fncore.middleware._scopes import Verdict, register_last_round, require_scopes, session_turns
from fncore.shared_stores import SharedStore, open_store

__all__ = ["limit_calls"]

HINT = "You have reached your call limit. Answer now, with what you have, without calling tools."
"""What the last round of a reply is told, by default."""

MESSAGE = "Stopped: the call limit was reached before the model gave a final answer."
"""The output of a reply stopped by ``exit="end"`` when the model would not stop calling tools."""

Count = Annotated[int, Field(ge=0)]
"""A number of calls: 0 or more."""


def _counters(
    name: str, *limits: tuple[str, Literal["reply", "session"], int | None]
) -> list[_Counter]:
    """The counters of the limits that are set, each under its own key in its scope."""
    return [
        _Counter(limit, scope, allowed, StateKey(f"{name}.{limit}", default=int, shared=True))
        for limit, scope, allowed in limits
        if allowed is not None
    ]


def _in_store(counters: list[_Counter], store: SharedStore) -> list[_Counter]:
    """``counters``, the per-session ones counting in ``store`` (``session_counts="store"``)."""
    return [replace(c, store=store) if c.scope == "session" else c for c in counters]


@dataclass(frozen=True, slots=True)
class _Counter:
    """One configured limit: what set it, where it counts, how many calls it allows."""

    limit: str
    scope: Literal["reply", "session"]
    allowed: int
    key: StateKey[int]
    store: SharedStore | None = None
    """Where it counts, under the session's id, if not in the run's state."""

    def stored_key(self, run: RunInfo) -> str:
        """Its key in the store, for ``run``'s session."""
        return f"{self.key.name}:{run.session_id}"

    def state(self, run: RunInfo) -> State:
        """The state this limit counts in (for a limit that counts in a store: unused)."""
        return run.state if self.scope == "reply" else run.session_state

    async def stored(self, run: RunInfo) -> int:
        """How many calls ``run``'s session has made, for a limit that counts in a store."""
        return int(await cast("SharedStore", self.store).incr(self.stored_key(run), 0.0))


def _count_here(counters: list[_Counter], run: RunInfo) -> _Counter | None:
    """Count one call in every counter in the run's state, or return the first that is full.

    Checked and counted with no await in between: exact however many runs are concurrent.
    """
    for counter in counters:  # `_Counter.state` inline, here and below
        if counter.store is None:
            state = run.state if counter.scope == "reply" else run.session_state
            if state.get(counter.key) >= counter.allowed:
                return counter
    for counter in counters:
        if counter.store is None:
            state = run.state if counter.scope == "reply" else run.session_state
            state.set(counter.key, state.get(counter.key) + 1)
    return None


async def _count_stored(counters: list[_Counter], run: RunInfo) -> _Counter | None:
    """Count one call in every counter in a store, once `_count_here` counted the others.

    Each counts the call atomically (an increment, taken back if that went over the limit,
    as are the others' counts then): exact however many runs are concurrent, in however
    many processes. ``None``, or the first counter that was full.
    """
    counted: list[tuple[SharedStore, str]] = []
    for counter in counters:
        if counter.store is None:
            continue
        where = (counter.store, counter.stored_key(run))
        counted.append(where)
        if await counter.store.incr(where[1], 1.0) > counter.allowed:
            for taken in counters:
                if taken.store is None:
                    state = taken.state(run)
                    state.set(taken.key, state.get(taken.key) - 1)
            for store, key in counted:
                await store.incr(key, -1.0)
            return counter
    return None


def _exceeded(
    counter: _Counter, what: str, name: str, position: Literal["model_call", "tool_call"]
) -> CallLimitExceeded:
    return CallLimitExceeded(
        message=(
            f"{what} would exceed {counter.limit}={counter.allowed} in this {counter.scope}: "
            f"raise the limit, or use exit='end' to finish the reply with an answer"
        ),
        position=position,
        middleware=name,
        limit=counter.limit,
        scope=counter.scope,
        allowed=counter.allowed,
    )


@checked
def limit_calls(
    *,
    model_calls_per_reply: Count | None = 20,
    model_calls_per_session: Count | None = None,
    tool_calls_per_reply: Count | None = None,
    tool_calls_per_session: Count | None = None,
    tools: Sequence[str] | None = None,
    exit: Literal["end", "error", "continue"] = "end",
    hint: str = HINT,
    message: str = MESSAGE,
    session_counts: Literal["state", "store"] = "state",
    store: str = "memory://",
    name: str = "limit_calls",
) -> Registry:
    """Limit the model calls and tool calls of each reply, and of each session.

    Args:
        model_calls_per_reply: Model calls one reply may make (``None``: no limit).
        model_calls_per_session: Model calls one session may make over all its replies.
        tool_calls_per_reply: Tool calls one reply may make.
        tool_calls_per_session: Tool calls one session may make.
        tools: Count only the calls of these tools, together (``None``: every tool). A name
            that is not a tool of the agent is a build error.
        exit: At a limit, ``"end"`` the reply with a final answer, fail with an ``"error"``
            (`CallLimitExceeded`), or ``"continue"``: tool calls over a tool limit get an
            error result and the reply goes on (a model-call limit still ends it).
        hint: What the last round of a reply is told (``exit="end"``).
        message: The output when the model calls tools even in its last round.
        session_counts: Where per-session calls are counted: ``"state"``, the session's
            state, committed with it when a run succeeds; or ``"store"``, in ``store``
            under the session's id, shared at once by every run of the session in every
            process using it (failed runs' calls included), whose rounds take turns.
        store: Where per-session calls are counted with ``session_counts="store"``:
            ``memory://`` (this process) or ``redis://host:port/db`` (every process using
            it).
        name: The middleware's name at each position (to use two instances).

    Returns:
        A registry with the middleware: at ``model_call`` and ``tool_call`` to count, at
        ``reasoning`` for the last round (and the session's turn, with
        ``session_counts="store"``), at ``run`` to require a session if needed.

    Raises:
        ValueError: for no limit at all, ``tools`` without a tool limit, or
            ``session_counts="store"`` without a per-session limit.

    Example:
        >>> registry = limit_calls(model_calls_per_reply=10, tool_calls_per_reply=3)
        >>> sorted({r.position for r in registry.middleware})
        ['model_call', 'reasoning', 'tool_call']
    """
    model = _counters(
        name,
        ("model_calls_per_reply", "reply", model_calls_per_reply),
        ("model_calls_per_session", "session", model_calls_per_session),
    )
    tool = _counters(
        name,
        ("tool_calls_per_reply", "reply", tool_calls_per_reply),
        ("tool_calls_per_session", "session", tool_calls_per_session),
    )
    if not model and not tool:
        msg = "limit_calls needs a limit: set model_calls_per_reply, tool_calls_per_reply, ..."
        raise ValueError(msg)
    if tools is not None and (not tool or not tools):
        msg = "limit_calls: tools= names the tools a tool-call limit counts; set one, and a tool"
        raise ValueError(msg)
    per_session = [c.limit for c in (*model, *tool) if c.scope == "session"]
    if session_counts == "store" and not per_session:
        msg = (
            "limit_calls: session_counts='store' counts per-session limits only: set "
            "model_calls_per_session or tool_calls_per_session, or drop session_counts"
        )
        raise ValueError(msg)
    registry = Registry()
    turn = None
    if session_counts == "store":
        kept = registry.own(open_store(store))
        model, tool = _in_store(model, kept), _in_store(tool, kept)
        # a session's rounds take turns, in every process, so the check before each round
        # sees what every earlier round of the session counted
        turn = session_turns(kept, name)
    if per_session:
        require_scopes(registry, "limit_calls", name, session=per_session)
    ending = tool if exit == "end" else []  # tool limits that end the reply
    if exit != "error" and (model or ending):

        async def verdict(ctx: ReasoningContext) -> Verdict:
            run = ctx.run
            for c in model:
                used = c.state(run).get(c.key) if c.store is None else await c.stored(run)
                if c.allowed - used <= 1:
                    return "last"
            for c in ending:
                used = c.state(run).get(c.key) if c.store is None else await c.stored(run)
                if used >= c.allowed:
                    return "last"
            return "go"

        def verdict_here(ctx: ReasoningContext) -> Verdict:
            run = ctx.run  # `verdict` with every counter in the run's state: no await
            for c in model:
                state = run.state if c.scope == "reply" else run.session_state
                if c.allowed - state.get(c.key) <= 1:
                    return "last"
            for c in ending:
                state = run.state if c.scope == "reply" else run.session_state
                if state.get(c.key) >= c.allowed:
                    return "last"
            return "go"

        stored = any(c.store is not None for c in (*model, *ending))
        decide = verdict if stored else verdict_here
        register_last_round(registry, "limit_calls", name, decide, hint, message, turn)
    if model:
        _register_model_calls(registry, model, exit, message, name)
    if tool:
        _register_tool_calls(registry, tool, tools, exit, name)
    return registry


def _register_model_calls(
    registry: Registry, counters: list[_Counter], exit: str, message: str, name: str
) -> None:
    in_store = any(c.store is not None for c in counters)

    @registry.on(MODEL_CALL, name=name, **place("limit_calls"))
    @checks_itself(MODEL_CALL, name)
    async def limit_model_calls(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        try:
            full = _count_here(counters, ctx.run)
            if full is None and in_store:
                full = await _count_stored(counters, ctx.run)
            if full is None:
                return await call_next(ctx)
            if exit == "error":
                return Failure(_exceeded(full, "a model call", name, MODEL_CALL))
            return Failure(Terminate(message))
        except Exception as exc:
            return raised(MODEL_CALL, name, exc)


def _register_tool_calls(
    registry: Registry,
    counters: list[_Counter],
    tools: Sequence[str] | None,
    exit: str,
    name: str,
) -> None:
    which = "any tool" if tools is None else " or ".join(repr(t) for t in tools)
    in_store = any(c.store is not None for c in counters)

    @registry.on(
        TOOL_CALL,
        name=name,
        tools=None if tools is None else list(tools),
        **place("limit_calls"),
    )
    async def limit_tool_calls(
        ctx: ToolCallContext, call_next: ToolCallNext
    ) -> Outcome[ToolResult]:
        full = _count_here(counters, ctx.run)
        if full is None and in_store:
            full = await _count_stored(counters, ctx.run)
        if full is None:
            return await call_next(ctx)
        if exit == "error":
            return Failure(_exceeded(full, f"a call of {ctx.call.name!r}", name, TOOL_CALL))
        return Success(
            ToolResult(
                f"Not run: the limit of {full.allowed} tool calls per {full.scope} is "
                f"reached. Do not call {which} again.",
                is_error=True,
            )
        )

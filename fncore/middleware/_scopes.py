"""What the limit built-ins share: the reply's last round, and runs without a needed scope.

Both `limit_calls` and `budget` end a reply gracefully the same way: the round that must be
the last is told to answer and offered no tools; a round after it (the model called a tool
anyway) ends the run with a configured message instead of calling the model again. Both fail
a run early when a limit is counted per session and the run has no session.
"""

from __future__ import annotations

from dataclasses import replace

from returns.result import Failure

from fncore.core import (
    Message,
    Outcome,
    ReasoningContext,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    ScopeRequired,
    StateKey,
    Terminate,
)
from fncore.middleware._place import place


def last_round(
    ctx: ReasoningContext, wrapped: StateKey[bool], hint: str, message: str
) -> ReasoningContext | Terminate:
    """``ctx`` as the reply's last round, or the termination if it already had one.

    The last round gets ``hint`` as a final user message (in this round's request only; the
    transcript does not keep it), no tools and ``tool_choice="none"``.
    """
    state = ctx.run.state
    if state.get(wrapped):
        return Terminate(message)
    state.set(wrapped, True)
    return replace(ctx, messages=(*ctx.messages, Message.user(hint)), tools=(), tool_choice="none")


def require_session(registry: Registry, builtin: str, name: str, limits: list[str]) -> None:
    """Register a ``run`` middleware failing runs without a session, for per-session ``limits``.

    A session is chosen per run (``run(..., session_id=...)``), so whether a run has one is
    known at the earliest when it starts: at the ``run`` position, before any model call.
    """
    needed = " and ".join(limits)

    @registry.on("run", name=name, **place(builtin))
    async def session_required(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        if ctx.session is None:
            return Failure(
                ScopeRequired(
                    message=(
                        f"{needed} counts per session, and this run has none: pass "
                        "session_id= to run() or stream(), or drop the per-session limit"
                    ),
                    position="run",
                    middleware=name,
                    limit=limits[0],
                    scope="session",
                )
            )
        return await call_next(ctx)

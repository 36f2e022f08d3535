"""What the limit built-ins share: the reply's last round, runs without a needed scope, turns.

Both `limit_calls` and `budget` end a reply gracefully the same way: the round that must be
the last is told to answer and offered no tools; a round after it (the model called a tool
anyway) ends the run with a configured message instead of calling the model again. Both fail
a run early when a limit is counted per session (or per tenant) and the run has none. And
both can count a session in a shared store, where the session's rounds take turns.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from contextlib import AbstractAsyncContextManager, asynccontextmanager
from contextvars import ContextVar
from dataclasses import replace
from typing import Literal, TypeAlias

from returns.result import Failure

from fncore.core import (
    Message,
    ModelResponse,
    Outcome,
    ReasoningContext,
    ReasoningNext,
    Registry,
    RunContext,
    RunInfo,
    RunNext,
    RunResult,
    ScopeRequired,
    StateKey,
    Terminate,
)
from fncore.core._fold import checks_itself, raised
from fncore.core._position_names import REASONING, RUN
from fncore.middleware._place import place
from fncore.shared_stores import SharedStore

Verdict = Literal["go", "last", "stop"]
"""Before a round: go on as usual, make it the reply's last, or stop without a model call."""

Turn: TypeAlias = Callable[[RunInfo], AbstractAsyncContextManager[None]]
"""Something a round runs inside, verdict included: a session's turn among its runs."""

_TURNS: ContextVar[frozenset[str]] = ContextVar("fncore_session_turns", default=frozenset())
"""The session turns the current task holds (a nested model call must not wait for itself)."""


def session_turns(store: SharedStore, name: str) -> Turn:
    """A session's turn for its rounds, held in ``store`` by every process using it.

    Counting a session in a store (``budget(session_spend="store")``,
    ``limit_calls(session_counts="store")``), each round of the session's runs, from the
    check before it to what its model call counts, holds the turn: so the check sees what
    every earlier round of the session counted, wherever it ran. ``name`` (the middleware's)
    keeps two middleware's turns apart.
    """

    @asynccontextmanager
    async def turn(run: RunInfo) -> AsyncIterator[None]:
        key = f"{name}.turn:{run.session_id}"
        held = _TURNS.get()
        if key in held:
            yield
            return
        async with store.lock(key):
            token = _TURNS.set(held | {key})
            try:
                yield
            finally:
                _TURNS.reset(token)

    return turn


def register_last_round(
    registry: Registry,
    builtin: str,
    name: str,
    verdict: Callable[[ReasoningContext], Verdict | Awaitable[Verdict]],
    hint: str,
    message: str,
    turn: Turn | None = None,
) -> None:
    """Register a ``reasoning`` middleware that ends the reply as ``verdict`` says.

    The last round gets ``hint`` as a final user message (in its request only; the transcript
    does not keep it), no tools and ``tool_choice="none"``. A round after it, or one whose
    verdict is ``stop``, ends the run with ``message`` (`Terminate`) without a model call.
    With ``turn``, each round, its verdict included, runs inside ``turn(ctx.run)``.
    ``verdict`` may answer at once (a limit counted in the run's state needs no await).
    """
    wrapped = StateKey(f"{name}.last_round", default=bool)

    @checks_itself(REASONING, name)
    async def decide(ctx: ReasoningContext, call_next: ReasoningNext) -> Outcome[ModelResponse]:
        try:
            said = verdict(ctx)
            if not isinstance(said, str):
                said = await said
            if said != "go":
                state = ctx.run.state
                if said == "stop" or state.get(wrapped):
                    return Failure(Terminate(message))
                state.set(wrapped, True)
                hinted = (*ctx.messages, Message.user(hint))
                ctx = replace(ctx, messages=hinted, tools=(), tool_choice="none")
            return await call_next(ctx)
        except Exception as exc:
            return raised(REASONING, name, exc)

    if turn is None:
        registry.on(REASONING, name=name, **place(builtin))(decide)
        return

    @registry.on(REASONING, name=name, **place(builtin))
    async def last_round(ctx: ReasoningContext, call_next: ReasoningNext) -> Outcome[ModelResponse]:
        async with turn(ctx.run):
            return await decide(ctx, call_next)


def tenant_of(run: RunInfo, tenant_key: str) -> str | None:
    """The tenant ``run``'s metadata names under ``tenant_key`` (a non-empty str or int)."""
    tenant = run.metadata.get(tenant_key)
    if isinstance(tenant, (str, int)) and not isinstance(tenant, bool) and str(tenant):
        return str(tenant)
    return None


def _missing(
    run: RunContext, session: Sequence[str], shared: Sequence[str], tenant_key: str
) -> ScopeRequired | None:
    """Why ``run`` cannot be counted in the scopes these limits need, if it cannot."""
    if session and run.session is None:
        return ScopeRequired(
            message=(
                f"{' and '.join(session)} counts per session, and this run has none: pass "
                "session_id= to run() or stream(), or drop the per-session limit"
            ),
            limit=session[0],
            scope="session",
        )
    if shared and tenant_of(run.run, tenant_key) is None:
        return ScopeRequired(
            message=(
                f"{' and '.join(shared)} counts per tenant, and this run names none: pass "
                f"metadata={{{tenant_key!r}: ...}} (a non-empty str) to run() or stream(), "
                "or drop the per-tenant limit"
            ),
            limit=shared[0],
            scope="shared",
        )
    return None


def require_scopes(
    registry: Registry,
    builtin: str,
    name: str,
    *,
    session: Sequence[str] = (),
    shared: Sequence[str] = (),
    tenant_key: str = "",
) -> None:
    """Register a ``run`` middleware failing runs that lack a scope some limit counts in.

    ``session`` names the limits counted per session, ``shared`` those counted per tenant
    (named by ``metadata[tenant_key]``). Sessions and metadata are chosen per run
    (``run(..., session_id=..., metadata=...)``) and one agent serves runs with and without
    them, so whether a run has them is known at the earliest when it starts: at the ``run``
    position, before any model call.
    """

    @registry.on(RUN, name=name, **place(builtin))
    async def scope_required(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        missing = _missing(ctx, session, shared, tenant_key)
        if missing is not None:
            return Failure(replace(missing, position=RUN, middleware=name))
        return await call_next(ctx)

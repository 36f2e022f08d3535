"""`Agent`: runs the loop through a stack built once from a registry and a container."""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, final

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Emit,
    ErrorRaised,
    InvalidHistory,
    Message,
    Model,
    ModelSettings,
    Registry,
    RunEnd,
    RunInfo,
    RunOutcome,
    RunResult,
    RunStart,
    Session,
    SessionConflict,
    SessionError,
    SessionUpdate,
    State,
    Terminate,
    Tool,
    ToolChoice,
    ToolFunction,
    open_calls,
)
from fncore.core._contexts import RunRecord
from fncore.core._fold import short_repr
from fncore.core._loop import LoopSettings, terminated_after
from fncore.core._pairing import unanswered
from fncore.core._registry import default_registry
from fncore.core._session import pending_calls, remember_pending
from fncore.runtime._engine import session_state
from fncore.runtime._finish import finish
from fncore.runtime._hooks import notify
from fncore.runtime._scope import _CURRENT
from fncore.runtime._sessions import InMemorySessionStore, SessionStore
from fncore.runtime._stack import StackDescription, build_engine
from fncore.runtime._stream import RunStream

if TYPE_CHECKING:
    from dependency_injector import containers

Prompt = str | Message | Sequence[Message]
"""What a run starts from: a user's text, one message, or several."""

_EMPTY: Mapping[str, object] = MappingProxyType({})
_RUN_PREFIX = os.urandom(4).hex()
_run_ids = itertools.count(1)


def _as_messages(prompt: Prompt) -> tuple[Message, ...]:
    if isinstance(prompt, str):
        return (Message.user(prompt),)
    if isinstance(prompt, Message):
        return (prompt,)
    return tuple(prompt)


def _store_name(store: object) -> str:
    return type(store).__name__


@final
class Agent:
    """An LLM agent whose every step passes through the registered middleware.

    The stack is built once, here: ordering hints are resolved, dependencies injected,
    each position folded into one handler. ``run`` and ``stream`` then only call those
    handlers. The agent takes what it uses as arguments; a container builds agents from
    configuration with ``container.agent(...)``.

    Args:
        model: The model to call.
        registry: Where the middleware, hooks and tools come from (default: the module-level
            default registry that `on`, `hook` and `tool` write to).
        tools: Tools offered to the model, besides the registry's.
        additional_tools: Tools the agent can run but does not offer to the model.
        instructions: The base system prompt, before ``system_prompt`` transformers.
        settings: The loop's limits and timeouts (default: ``LoopSettings()``).
        tool_choice: Default tool choice of each run.
        model_settings: Default sampling settings of each run.
        sessions: Where sessions live (default: a new `InMemorySessionStore`).
        name: The agent's name, for traces and logs (``ctx.run.agent``).
        container: Where ``Provide[...]`` parameters of middleware, hooks and tool sources
            are resolved from, once, here; nothing else is taken from it.

    Raises:
        RegistrationError: if the registry holds a mistake; the message says what to fix.

    Example:
        >>> import asyncio
        >>> from fncore import Agent, Registry
        >>> from fncore.testing import TestModel
        >>> def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> agent = Agent(TestModel(), registry=Registry(), tools=[add])
        >>> asyncio.run(agent.run("add please")).unwrap().output
        'add: 0'
    """

    __slots__ = (
        "_default_choice",
        "_default_settings",
        "_description",
        "_engine",
        "_owned",
        "_sessions",
        "name",
    )

    def __init__(
        self,
        model: Model,
        *,
        registry: Registry | None = None,
        tools: Iterable[Tool | ToolFunction] = (),
        additional_tools: Iterable[Tool | ToolFunction] = (),
        instructions: str = "",
        settings: LoopSettings | None = None,
        tool_choice: ToolChoice = "auto",
        model_settings: ModelSettings | None = None,
        sessions: SessionStore | None = None,
        container: containers.Container | None = None,
        name: str = "agent",
    ) -> None:
        self.name = name
        """The agent's name, for traces and logs."""
        self._owned: list[object] = []
        """What the agent made itself, and so closes in `aclose`."""
        if sessions is None:
            sessions = InMemorySessionStore()
            self._owned.append(sessions)
        self._engine, self._description = build_engine(
            default_registry if registry is None else registry,
            model=model,
            container=container,
            tools=tools,
            additional_tools=additional_tools,
            instructions=instructions,
            settings=LoopSettings() if settings is None else settings,
        )
        self._default_choice: ToolChoice = tool_choice
        self._default_settings = model_settings or ModelSettings()
        self._sessions: SessionStore = sessions

    @property
    def model(self) -> Model:
        """The model this agent calls."""
        return self._engine.model

    @property
    def settings(self) -> LoopSettings:
        """The loop settings."""
        return self._engine.settings

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Every tool the agent can run, by name."""
        return self._engine.tools

    @property
    def sessions(self) -> SessionStore:
        """Where this agent's sessions live."""
        return self._sessions

    async def aclose(self) -> None:
        """Release what the agent created itself (its default session store, say).

        What it was given stays open: the model belongs to whoever made it (a container
        closes the models it built in ``await container.shutdown()``; a model you built,
        you close with ``await model.aclose()``), so closing one agent never breaks
        another that shares the model.
        """
        owned, self._owned = self._owned, []
        for resource in reversed(owned):
            close = getattr(resource, "aclose", None)
            if close is not None:
                await close()

    def describe(self) -> StackDescription:
        """The built stack: each position's middleware, outermost first; ``str()`` it."""
        return self._description

    async def run(
        self,
        prompt: Prompt,
        *,
        metadata: Mapping[str, object] | None = None,
        session_id: str | None = None,
        tool_choice: ToolChoice | None = None,
        model_settings: ModelSettings | None = None,
    ) -> RunOutcome:
        """Run the agent to its final answer.

        Args:
            prompt: The user's text, a message, or several messages.
            metadata: Request metadata, visible to every middleware of this run (through
                ``ctx.run.metadata`` and `current_metadata`) and to no other run.
            session_id: Continue this session: its history comes before ``prompt`` and its
                session-scoped state is restored; the run commits both back only if it
                succeeds (see "Sessions" in the loop docs for the commit point).
            tool_choice: This run's tool choice (default: the agent's).
            model_settings: This run's sampling settings (default: the agent's).

        Returns:
            ``Success(RunResult)``, or ``Failure(AgentError)``. Nothing raises except
            cancellation (and a ``KeyboardInterrupt`` or ``SystemExit`` raised inside,
            which propagates unchanged). A ``CancelledError`` means the turn was not
            committed.
        """
        return await self._execute(prompt, metadata, session_id, tool_choice, model_settings, None)

    def stream(
        self,
        prompt: Prompt,
        *,
        metadata: Mapping[str, object] | None = None,
        session_id: str | None = None,
        tool_choice: ToolChoice | None = None,
        model_settings: ModelSettings | None = None,
    ) -> RunStream:
        """Run the agent, streaming events; the same arguments as `run`.

        Nothing starts until the stream is iterated. The last event is `RunCompleted`,
        holding the same outcome `run` would have returned.
        """

        def start(emit: Emit) -> Any:
            return self._execute(prompt, metadata, session_id, tool_choice, model_settings, emit)

        return RunStream(start)

    async def _execute(
        self,
        prompt: Prompt,
        metadata: Mapping[str, object] | None,
        session_id: str | None,
        tool_choice: ToolChoice | None,
        model_settings: ModelSettings | None,
        emit: Emit | None,
    ) -> RunOutcome:
        engine = self._engine
        hooks = engine.hooks
        new_input = _as_messages(prompt)
        session: Session | None = None
        if session_id is not None:
            loaded = await self._load(session_id)
            if type(loaded) is not Session:
                return Failure(loaded)
            session = loaded
        meta = _EMPTY if not metadata else MappingProxyType(dict(metadata))
        run = RunInfo(
            f"{_RUN_PREFIX}-{next(_run_ids)}",
            meta,
            State(),
            emit,
            session_id,
            State() if session is None else session_state(session),
            self.name,
            _caller=engine.call_model,
        )
        token = _CURRENT.set(run)
        try:
            if hooks.run_start:
                history = () if session is None else session.messages
                await notify(hooks.run_start, RunStart(run, (*history, *new_input)))
            record = RunRecord() if engine.has_run_layers else None
            if record is not None:
                record.session = session
            outcome = await engine.run(
                run,
                new_input,
                session,
                tool_choice if tool_choice is not None else self._default_choice,
                model_settings if model_settings is not None else self._default_settings,
                record,
            )
            if type(outcome) is Failure:
                halt = outcome.failure()
                if type(halt) is Terminate:
                    inner = None if record is None else record.outcome
                    outcome = Success(terminated_after(halt, inner))
            result: RunOutcome = outcome  # type: ignore[assignment]
            if record is not None and record.run is not None:
                session, new_input, run = record.session, record.input, record.run
            if session is not None and type(result) is Success:
                failed = await self._commit(session, new_input, result.unwrap(), run)
                if failed is not None:
                    result = Failure(failed)
            if hooks.run_end or (hooks.error and type(result) is Failure):
                await self._after(run, result)
            return result
        finally:
            _CURRENT.reset(token)

    async def _load(self, session_id: str) -> Session | SessionError:
        store = self._sessions
        try:
            loaded = await store.load(session_id)
        except Exception as exc:
            return SessionError(
                message=(
                    f"the session store could not load session {session_id!r}: "
                    f"{type(exc).__name__}: {exc}; nothing ran"
                ),
                session_id=session_id,
            )
        if loaded is None:
            return Session(session_id)
        found: object = loaded
        if type(found) is not Session or type(found.messages) is not tuple:
            return SessionError(
                message=(
                    f"session store {_store_name(store)} returned {short_repr(loaded)} from "
                    f"load({session_id!r}); it must return a Session (with a tuple of "
                    "messages) or None"
                ),
                session_id=session_id,
            )
        return loaded

    async def _commit(
        self, session: Session, new_input: tuple[Message, ...], done: RunResult, run: RunInfo
    ) -> AgentError | None:
        """Commit the turn: the commit point of a run with a session.

        Before it, a failure or a cancellation leaves the session as it was. The commit
        itself runs to its end even if the run is cancelled meanwhile; a cancellation then
        propagates only if nothing was committed, so a ``CancelledError`` always means
        "not committed".

        Returns:
            ``None`` once committed; otherwise the error (nothing was saved).
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
        state = run.session_state.snapshot()
        update = SessionUpdate(session.id, session.version, keep, append, state)
        store = self._sessions
        saved, raised, cancels = await finish(store.commit(update))
        error = _commit_error(store, session, saved, raised)
        if error is None:
            if len(saved.messages) == keep + len(append):  # type: ignore[union-attr]
                remember_pending(saved, found)  # type: ignore[arg-type]
            _absorb(cancels)
            return None
        if cancels:
            raise asyncio.CancelledError
        return error

    async def _after(self, run: RunInfo, result: RunOutcome) -> None:
        """Run the ``error`` and ``run_end`` hooks: after the commit, nothing undoes it.

        A cancellation that arrives now cuts the hooks short; the run still returns its
        (committed) outcome.
        """
        hooks = self._engine.hooks
        try:
            if hooks.error and type(result) is Failure:
                await notify(hooks.error, ErrorRaised(run, result.failure()))
            if hooks.run_end:
                await notify(hooks.run_end, RunEnd(run, result))
        except asyncio.CancelledError:
            _absorb(1)


def _absorb(cancels: int) -> None:
    """Withdraw ``cancels`` cancellation requests of the current task: the run returns."""
    task = asyncio.current_task()
    if task is not None:
        for _ in range(cancels):
            task.uncancel()


def _commit_error(
    store: SessionStore, session: Session, saved: object, raised: Exception | None
) -> SessionError | None:
    """Why a commit did not apply (``None`` if it did): it raised, conflicted or misbehaved."""
    if raised is not None:
        return SessionError(
            message=(
                f"the session store could not commit session {session.id!r}: "
                f"{type(raised).__name__}: {raised}; the session is unchanged"
            ),
            session_id=session.id,
        )
    if saved is None:
        return SessionConflict(
            message=(
                f"session {session.id!r} changed since this run loaded it at version "
                f"{session.version}; nothing was saved: run the turn again"
            ),
            session_id=session.id,
            version=session.version,
        )
    if type(saved) is not Session:
        return SessionError(
            message=(
                f"session store {_store_name(store)} returned {short_repr(saved)} from "
                "commit(); it must return the new Session, or None on a conflict"
            ),
            session_id=session.id,
        )
    return None


def _not_saved(error: InvalidHistory) -> InvalidHistory:
    return InvalidHistory(
        message=f"the run's transcript was not saved to its session: {error.message}",
        position="run",
    )

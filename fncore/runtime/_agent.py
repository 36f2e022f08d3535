"""`Agent`: runs the loop through a stack built once from a registry and a container."""

from __future__ import annotations

import itertools
import os
from collections.abc import Coroutine, Iterable, Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, final

from returns.result import Failure, Result, Success

from fncore.core import (
    AgentError,
    Emit,
    ErrorRaised,
    Message,
    Model,
    ModelSettings,
    Registry,
    RunEnd,
    RunInfo,
    RunResult,
    RunStart,
    RunState,
    Terminate,
    Tool,
    ToolChoice,
    ToolFunction,
)
from fncore.core._loop import LoopSettings, terminated
from fncore.core._registry import default_registry
from fncore.runtime._hooks import notify
from fncore.runtime._scope import _CURRENT
from fncore.runtime._sessions import InMemorySessionStore, Session, SessionStore
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


@final
class Agent:
    """An LLM agent whose every step passes through the registered middleware.

    The stack is built once, here: ordering hints are resolved, dependencies injected
    from the container, each position folded into one handler. ``run`` and ``stream``
    then only call those handlers.

    Args:
        model: The model to call; by default the container's (configuration ``model.kind``).
        registry: Where the middleware, hooks and tools come from; by default the
            container's registry, which is the module-level default registry.
        container: The dependency-injection container that middleware parameters are
            injected from, and the source of every default above. ``container.agent()``
            builds an agent from it.
        tools: Tools offered to the model, besides the registry's.
        additional_tools: Tools the agent can run but does not offer to the model.
        instructions: The base system prompt, before ``system_prompt`` transformers.
        settings: Loop settings; by default from the container's ``loop`` configuration.
        tool_choice: Default tool choice of each run.
        model_settings: Default sampling settings of each run.
        sessions: Where sessions live; by default the container's store.

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
        "_sessions",
        "container",
    )

    def __init__(
        self,
        model: Model | None = None,
        *,
        registry: Registry | None = None,
        container: containers.Container | None = None,
        tools: Iterable[Tool | ToolFunction] = (),
        additional_tools: Iterable[Tool | ToolFunction] = (),
        instructions: str | None = None,
        settings: LoopSettings | None = None,
        tool_choice: ToolChoice = "auto",
        model_settings: ModelSettings | None = None,
        sessions: SessionStore | None = None,
    ) -> None:
        c: Any = container
        has = getattr(c, "providers", {}) if container is not None else {}
        self.container = container
        if model is None:
            model = c.model() if "model" in has else None
            if model is None:
                msg = (
                    "Agent needs a model: pass Agent(model), or build the agent from a "
                    "container, e.g. load_container().agent(), to use the configured one"
                )
                raise TypeError(msg)
        if registry is None:
            registry = c.registry() if "registry" in has else default_registry
        if settings is None:
            settings = c.loop_settings() if "loop_settings" in has else LoopSettings()
        if instructions is None:
            instructions = c.config.agent.instructions() if "config" in has else ""
        if sessions is None:
            sessions = c.sessions() if "sessions" in has else InMemorySessionStore()
        self._engine, self._description = build_engine(
            registry,
            model=model,
            container=container,
            tools=tools,
            additional_tools=additional_tools,
            instructions=instructions or "",
            settings=settings,
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

    async def aclose(self) -> None:
        """Release the model's connections, if it holds any (it has an ``aclose``).

        Provider models keep an HTTP connection pool open for the agent's lifetime; call
        this (or ``await model.aclose()``) when the agent is done, e.g. before the event
        loop closes. Offline models hold nothing and need no closing.
        """
        close = getattr(self._engine.model, "aclose", None)
        if close is not None:
            await close()

    def describe(self) -> StackDescription:
        """The built stack: each position's middleware, outermost first; ``str()`` it."""
        return self._description

    def run(
        self,
        prompt: Prompt,
        *,
        metadata: Mapping[str, object] | None = None,
        session_id: str | None = None,
        tool_choice: ToolChoice | None = None,
        model_settings: ModelSettings | None = None,
    ) -> Coroutine[Any, Any, Result[RunResult, AgentError]]:
        """Run the agent to its final answer: ``outcome = await agent.run(...)``.

        Args:
            prompt: The user's text, a message, or several messages.
            metadata: Request metadata, visible to every middleware of this run (through
                ``ctx.run.metadata`` and `current_metadata`) and to no other run.
            session_id: Continue this session: its history is prepended and its state
                restored; both are saved back only if the run succeeds.
            tool_choice: This run's tool choice (default: the agent's).
            model_settings: This run's sampling settings (default: the agent's).

        Returns:
            ``Success(RunResult)``, or ``Failure(AgentError)``. Nothing raises except
            cancellation.
        """
        return self._execute(prompt, metadata, session_id, tool_choice, model_settings, None)

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
    ) -> Result[RunResult, AgentError]:
        engine = self._engine
        hooks = engine.hooks
        new_input = _as_messages(prompt)
        history: tuple[Message, ...] = ()
        state = RunState()
        if session_id is not None:
            try:
                saved = await self._sessions.load(session_id)
            except Exception as exc:
                return Failure(_store_error("load", session_id, exc))
            if saved is not None:
                history = saved.messages
                state = RunState(saved.state)
        meta = _EMPTY if not metadata else MappingProxyType(dict(metadata))
        run = RunInfo(f"{_RUN_PREFIX}-{next(_run_ids)}", meta, state, emit, session_id)
        messages = (*history, *new_input) if history else new_input
        token = _CURRENT.set(run)
        try:
            if hooks.run_start:
                await notify(hooks.run_start, RunStart(run, messages))
            outcome = await engine.run(
                run,
                messages,
                tool_choice if tool_choice is not None else self._default_choice,
                model_settings if model_settings is not None else self._default_settings,
            )
            if type(outcome) is Failure:
                halt = outcome.failure()
                if type(halt) is Terminate:
                    outcome = Success(terminated(halt))
            result: Result[RunResult, AgentError] = outcome  # type: ignore[assignment]
            if session_id is not None and type(result) is Success:
                done = result.unwrap()
                try:
                    await self._sessions.save(
                        session_id, Session((*messages, *done.messages), state.snapshot())
                    )
                except Exception as exc:
                    result = Failure(_store_error("save", session_id, exc))
            if hooks.error and type(result) is Failure:
                await notify(hooks.error, ErrorRaised(run, result.failure()))
            if hooks.run_end:
                await notify(hooks.run_end, RunEnd(run, result))
            return result
        finally:
            _CURRENT.reset(token)


def _store_error(action: str, session_id: str, exc: Exception) -> AgentError:
    return AgentError(
        message=(
            f"the session store could not {action} session {session_id!r}: "
            f"{type(exc).__name__}: {exc}; the session is unchanged"
        )
    )

"""`Agent`: runs the loop through a stack built once from a registry and a container."""

from __future__ import annotations

import asyncio
import contextlib
import functools
import hashlib
import itertools
import json
import os
import time
import uuid
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from dataclasses import replace
from types import MappingProxyType, TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, final

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Approve,
    Checkpoint,
    CheckpointBusy,
    CheckpointChange,
    CheckpointError,
    CheckpointExpired,
    CheckpointMismatch,
    CheckpointNotFound,
    Decision,
    DecisionConflict,
    DecisionError,
    DecisionMissing,
    DecisionNotAllowed,
    Edit,
    Emit,
    ErrorRaised,
    InvalidHistory,
    InvalidPrompt,
    Message,
    MiddlewareError,
    Model,
    ModelSettings,
    Pause,
    Paused,
    RegistrationError,
    Registry,
    Reject,
    Respond,
    Resume,
    RunEnd,
    RunInfo,
    RunOutcome,
    RunPaused,
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
    ToolsUnavailable,
    UnknownRequest,
    open_calls,
)
from fncore.core._checks import timeout_problem
from fncore.core._fold import short_repr
from fncore.core._loop import LoopSettings, terminated_after
from fncore.core._output import OutputStrategy, OutputT
from fncore.core._pairing import unanswered
from fncore.core._registry import default_registry
from fncore.core._session import pending_calls, remember_pending
from fncore.core._usage import NO_USAGE
from fncore.runtime._call_usage import with_later_calls
from fncore.runtime._engine import Engine, session_state
from fncore.runtime._finish import finish
from fncore.runtime._handlers import take_record
from fncore.runtime._hooks import notify
from fncore.runtime._mcp import MCPServer, MCPServerError, MCPTools
from fncore.runtime._output import output_spec, typed
from fncore.runtime._scope import _CURRENT
from fncore.runtime._sessions import CheckpointStore, InMemorySessionStore, SessionStore
from fncore.runtime._stack import StackDescription, build_engine
from fncore.runtime._stream import RunStream
from fncore.runtime._subagent import agent_tool

if TYPE_CHECKING:
    from dependency_injector import containers
    from returns.result import Result

Prompt = str | Message | Sequence[Message]
"""What a run starts from: a user's text, one message, or several."""

_EMPTY: Mapping[str, object] = MappingProxyType({})
_DAY = 86_400.0
_DECISION_TYPES: tuple[type, ...] = (Approve, Edit, Reject, Respond)
_RUN_PREFIX = os.urandom(4).hex()
_run_ids = itertools.count(1)


def _as_messages(prompt: object) -> tuple[Message, ...] | InvalidPrompt:
    """The run's input messages, or why ``prompt`` is not a `Prompt`."""
    if isinstance(prompt, str):
        return (Message.user(prompt),)
    if isinstance(prompt, Message):
        return (prompt,)
    if isinstance(prompt, Sequence) and not isinstance(prompt, bytes | bytearray):
        messages = tuple(prompt)
        wrong = [m for m in messages if not isinstance(m, Message)]
        if not wrong:
            return messages
        found = f"a sequence holding {short_repr(wrong[0])} ({type(wrong[0]).__name__})"
    else:
        found = f"{short_repr(prompt)} ({type(prompt).__name__})"
    return InvalidPrompt(
        message=(
            f"the prompt is {found}; give the user's text (a str), a Message, or a "
            "sequence of Messages; nothing ran"
        )
    )


def _store_name(store: object) -> str:
    return type(store).__name__


def _config_hash(
    description: StackDescription, instructions: str, engine: Engine, output: object
) -> str:
    """What a checkpoint must match to be resumed: the stack, instructions, settings, output."""
    fingerprint = f"{description}\n{instructions}\n{engine.settings!r}"
    if output is not None:
        fingerprint += f"\n{output!r}"
    return hashlib.sha256(fingerprint.encode()).hexdigest()[:32]


@final
class Agent(Generic[OutputT]):
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
        checkpoint_ttl: Seconds a paused run's checkpoint can be resumed (default: 7 days).
        resume_lease: Seconds a resume holds its checkpoint without renewing its claim; a
            process that dies while resuming frees the checkpoint after this long.
        container: Where ``Provide[...]`` parameters of middleware, hooks and tool sources
            are resolved from, once, here; nothing else is taken from it.
        output_type: The type of ``result.output``: ``str`` (the answer's text, the
            default), or a pydantic model, dataclass, TypedDict or other type pydantic
            describes, which the model is asked for and its answer validated as
            (``Agent[T]``; see "Structured output").
        output_strategy: How the model is asked for ``output_type``: ``"native"`` (the
            provider's JSON-schema output), ``"tool"`` (a ``final_result`` tool) or
            ``"auto"`` (native when the model has it).
        output_retries: How many invalid answers go back to the model, with the
            validation errors, before the run fails with `OutputValidationFailed`.
        mcp_servers: MCP servers whose tools are offered too. They start at the first run
            (or `connect`, or on entering ``async with agent:``), are listed again at the
            start of each run, and stop in `aclose` (see "MCP tools").

    Raises:
        RegistrationError: if the registry holds a mistake, or pydantic cannot describe
            ``output_type``; the message says what to fix.
        ValueError: if ``checkpoint_ttl`` or ``resume_lease`` is not a positive, finite
            number of seconds.

    An agent is also an async context manager: ``async with Agent(...) as agent:`` connects
    it on entering (`connect`: its MCP servers start) and closes it on leaving (`aclose`:
    they stop), whether the block ends or raises. Blocks may nest, or overlap in concurrent
    tasks: the agent is closed when the last one ends. A closed agent can be entered (or
    run) again: its servers start again.

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
        "_checkpoint_ttl",
        "_commits",
        "_config",
        "_default_choice",
        "_default_settings",
        "_description",
        "_engine",
        "_entered",
        "_mcp",
        "_mcp_offered",
        "_output",
        "_owned",
        "_rebuild",
        "_resume_lease",
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
        checkpoint_ttl: float = 7 * _DAY,
        resume_lease: float = 60.0,
        output_type: type[OutputT] = str,  # type: ignore[assignment]
        output_strategy: OutputStrategy = "auto",
        output_retries: int = 1,
        mcp_servers: Iterable[MCPServer] = (),
    ) -> None:
        for setting, seconds in (
            ("checkpoint_ttl", checkpoint_ttl),
            ("resume_lease", resume_lease),
        ):
            problem = timeout_problem(seconds, setting)
            if problem is not None:
                raise ValueError(problem)
        self.name = name
        """The agent's name, for traces and logs."""
        self._owned: list[object] = []
        """What the agent made itself, and so closes in `aclose`."""
        self._entered = 0
        """How many ``async with agent:`` blocks are open (the last one out closes it)."""
        if sessions is None:
            sessions = InMemorySessionStore()
            self._owned.append(sessions)
        servers = tuple(mcp_servers)
        self._mcp = MCPTools(servers) if servers else None
        self._mcp_offered: tuple[Tool, ...] = ()
        """The MCP tools the engine was built with."""
        given, extra = tuple(tools), tuple(additional_tools)
        build = functools.partial(
            build_engine,
            default_registry if registry is None else registry,
            model=model,
            container=container,
            additional_tools=extra,
            instructions=instructions,
            settings=LoopSettings() if settings is None else settings,
        )

        def rebuild(mcp_tools: tuple[Tool, ...]) -> None:
            self._engine, self._description = build(tools=(*given, *mcp_tools))
            if self._output is not None:
                self._engine.output = self._output
            self._config = _config_hash(self._description, instructions, self._engine, self._output)
            self._mcp_offered = mcp_tools

        self._rebuild = rebuild
        self._engine, self._description = build(tools=given, lenient_filters=bool(servers))
        self._default_choice: ToolChoice = tool_choice
        self._default_settings = model_settings or ModelSettings()
        self._sessions: SessionStore = sessions
        # A store written to the protocol before commit(update) fails each run with a session.
        self._commits = callable(getattr(sessions, "commit", None))
        self._checkpoint_ttl = checkpoint_ttl
        self._resume_lease = resume_lease
        self._output = output_spec(model, output_type, output_strategy, output_retries)
        if self._output is not None:
            self._engine.output = self._output
        self._config = _config_hash(self._description, instructions, self._engine, self._output)

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
        if self._mcp is not None:
            await self._mcp.aclose()

    async def connect(self) -> None:
        """Start the MCP servers and offer their tools now, rather than at the first run.

        Each run lists the servers' tools again; this is for finding a server that cannot
        start before anything runs, and for `tools` and `describe` to show MCP tools.

        Raises:
            MCPServerError: one line naming a server that cannot start, be reached or be
                listed.
            RegistrationError: if a tool's name clashes with another's (both sources
                named), or a ``tool_call`` middleware filters on a tool nobody offers.
        """
        if self._mcp is not None:
            await self._mcp.refresh()
            if self._mcp.tools is not self._mcp_offered:
                self._rebuild(self._mcp.tools)

    async def __aenter__(self) -> Self:
        """Connect (`connect`: start the MCP servers, offer their tools); the agent itself.

        Raises:
            MCPServerError: if a server cannot start, be reached or be listed (the servers
                that did start are stopped again, unless another block holds them).
            RegistrationError: if a tool's name clashes with another's.
        """
        self._entered += 1
        try:
            await self.connect()
        except BaseException:
            await self.__aexit__(None, None, None)
            raise
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """`aclose` the agent, once the last open ``async with`` block ends."""
        self._entered -= 1
        if not self._entered:
            await self.aclose()

    async def _gather_tools(self) -> ToolsUnavailable | None:
        """`connect`, with what stops it as an error value."""
        try:
            await self.connect()
        except MCPServerError as exc:
            return ToolsUnavailable(message=str(exc), source=f"mcp server {exc.server}")
        except RegistrationError as exc:
            return ToolsUnavailable(message=str(exc))
        return None

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
    ) -> Result[RunResult[OutputT], AgentError]:
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
            ``Success(RunResult)`` (its ``output`` of the agent's ``output_type``), or
            ``Failure(AgentError)``. Nothing raises except
            cancellation (and a ``KeyboardInterrupt`` or ``SystemExit`` raised inside,
            which propagates unchanged). A ``CancelledError`` means the turn was not
            committed.
        """
        outcome = await self._execute(
            prompt, metadata, session_id, tool_choice, model_settings, None
        )
        if self._output is None:
            return outcome  # type: ignore[return-value]
        return typed(self._output, outcome)

    def stream(
        self,
        prompt: Prompt,
        *,
        metadata: Mapping[str, object] | None = None,
        session_id: str | None = None,
        tool_choice: ToolChoice | None = None,
        model_settings: ModelSettings | None = None,
    ) -> RunStream[OutputT]:
        """Run the agent, streaming events; the same arguments as `run`.

        Nothing starts until the stream is iterated. The last event is `RunCompleted`,
        holding the same outcome `run` would have returned.
        """

        def start(emit: Emit) -> Any:
            outcome = self._execute(prompt, metadata, session_id, tool_choice, model_settings, emit)
            return outcome if self._output is None else self._typed(outcome)

        return RunStream(start)

    def as_tool(
        self,
        *,
        name: str | None = None,
        description: str | None = None,
        share_limits: bool = True,
        max_depth: int = 5,
        timeout: float | None = None,
    ) -> Tool:
        """This agent as a tool another agent can call: a sub-agent.

        The tool takes one argument, ``prompt``, and answers with this agent's output
        text. What the child inherits from its caller is in "Sub-agents" in the docs: it
        runs its own stack, inside the caller's ``tool_call`` middleware, with the caller's
        metadata and trace context; its usage adds up into the caller's, it draws on the
        caller's reply limits and budgets, its events reach the caller's stream as
        `SubagentEvent`, and if it pauses, the caller pauses (and resumes it).

        Args:
            name: The tool's name (default: the agent's name).
            description: What the tool does, for the calling model (default: a sentence
                naming the agent).
            share_limits: Count the child's ``limit_calls`` and ``budget`` in the caller's
                reply state (default), so one limit holds for the whole reply; ``False``
                gives the child counters of its own.
            max_depth: The most sub-agents running inside one another, this one included;
                deeper fails the run with `SubagentDepthExceeded`.
            timeout: Seconds the child may take (default: the caller's ``tool_timeout``).

        Raises:
            RegistrationError: if ``name`` is not a valid tool name, ``max_depth`` is not
                at least 1, or ``timeout`` is not a positive number of seconds.
        """
        return agent_tool(
            self,
            name=self.name if name is None else name,
            description=description,
            share_limits=share_limits,
            max_depth=max_depth,
            timeout=timeout,
        )

    async def resume(
        self,
        checkpoint_id: str,
        decisions: Mapping[str, Decision] | Decision,
        *,
        metadata: Mapping[str, object] | None = None,
    ) -> Result[RunResult[OutputT], AgentError]:
        """Go on with a paused run from its checkpoint, in this process or any other.

        The waiting calls go through their ``tool_call`` middleware again, where the
        middleware that paused find the decisions (``ctx.run.decision(call_id)``); then the
        reply goes on as if it had never paused, and commits to its session when it ends.

        A decision is applied once. The checkpoint records the decisions and the results
        of the calls they ran atomically, before the reply goes on, and the reply's end
        with its session commit: resuming again with the same decisions runs no call
        twice, and returns the stored outcome once the reply ended. Another process's
        resume of the same checkpoint meanwhile gets `CheckpointBusy`.

        Args:
            checkpoint_id: ``result.paused.checkpoint_id`` of the paused run.
            decisions: A decision per waiting call id, or one decision for every one.
            metadata: The request metadata of the resumed reply (default: the paused
                run's).

        Returns:
            ``Success(RunResult)`` (maybe paused again, with a new checkpoint), or
            ``Failure(AgentError)``: a `CheckpointError` (unknown, expired, busy,
            mismatched) or a `DecisionError` (unknown call, missing or disallowed
            decision, other decisions than the first resume's) leaves the checkpoint as
            it was and runs nothing.
        """
        outcome = await self._resume(checkpoint_id, decisions, metadata, None)
        if self._output is None:
            return outcome  # type: ignore[return-value]
        return typed(self._output, outcome)

    def resume_stream(
        self,
        checkpoint_id: str,
        decisions: Mapping[str, Decision] | Decision,
        *,
        metadata: Mapping[str, object] | None = None,
    ) -> RunStream[OutputT]:
        """`resume`, streaming the resumed reply's events; the last is `RunCompleted`."""

        def start(emit: Emit) -> Any:
            outcome = self._resume(checkpoint_id, decisions, metadata, emit)
            return outcome if self._output is None else self._typed(outcome)

        return RunStream(start)

    async def _typed(self, outcome: Awaitable[RunOutcome]) -> Any:
        return typed(self._output, await outcome)  # type: ignore[arg-type]

    async def _resume(
        self,
        checkpoint_id: str,
        decisions: Mapping[str, Decision] | Decision,
        metadata: Mapping[str, object] | None,
        emit: Emit | None,
        shared: State | None = None,
    ) -> RunOutcome:
        if self._mcp is not None:
            unavailable = await self._gather_tools()
            if unavailable is not None:
                return Failure(unavailable)
        store = self._sessions
        if not isinstance(store, CheckpointStore):
            return Failure(_no_checkpoints(store, checkpoint_id))
        try:
            checkpoint = await store.load_checkpoint(checkpoint_id)
        except Exception as exc:
            return Failure(_unreadable(checkpoint_id, exc))
        checked = self._check(checkpoint_id, checkpoint, decisions)
        if not isinstance(checked, tuple):
            return checked
        checkpoint, decided, key = checked
        if checkpoint.stage == "done":
            return _replay(checkpoint, key)
        claim = uuid.uuid4().hex
        now = time.time()
        try:
            claimed = await store.claim_checkpoint(
                checkpoint_id, claim, now + self._resume_lease, now
            )
        except Exception as exc:
            return Failure(_unreadable(checkpoint_id, exc))
        if claimed is None:
            return Failure(_not_found(checkpoint_id))
        if claimed.claim != claim:
            if claimed.stage == "done":
                return _replay(claimed, key)
            return Failure(
                CheckpointBusy(
                    message=(
                        f"checkpoint {checkpoint_id!r} is being resumed by another caller "
                        "right now; try again once it is done"
                    ),
                    checkpoint_id=checkpoint_id,
                )
            )
        held = _Held(store, claimed, claim, self._resume_lease)
        if claimed.stage == "decided" and claimed.key != key:
            await held.release()
            return Failure(_conflict(claimed))
        renewing = asyncio.ensure_future(held.renew())
        try:
            result = await self._go_on(held, decided, key, metadata, emit, shared)
        except BaseException:
            renewing.cancel()
            await finish(held.release())
            raise
        renewing.cancel()
        return result

    def _check(
        self,
        checkpoint_id: str,
        checkpoint: Checkpoint | None,
        decisions: Mapping[str, Decision] | Decision,
    ) -> tuple[Checkpoint, dict[str, Decision], str] | Failure[AgentError]:
        """The checkpoint, the decisions by call id and their key; or why not to resume."""
        if checkpoint is None:
            return Failure(_not_found(checkpoint_id))
        if checkpoint.expires < time.time():
            return Failure(
                CheckpointExpired(
                    message=(
                        f"checkpoint {checkpoint_id!r} expired (checkpoints live "
                        "checkpoint_ttl seconds); the paused run cannot go on: run it again"
                    ),
                    checkpoint_id=checkpoint_id,
                )
            )
        if checkpoint.config != self._config:
            return Failure(
                CheckpointMismatch(
                    message=(
                        f"checkpoint {checkpoint_id!r} was written by agent "
                        f"{checkpoint.agent!r} with another stack (middleware, tools, "
                        "instructions or loop settings); resume it with an agent built "
                        "the same way"
                    ),
                    checkpoint_id=checkpoint_id,
                )
            )
        decided = _decisions(checkpoint, decisions, self._engine.tools)
        if type(decided) is not dict:
            return Failure(decided)  # type: ignore[arg-type]
        return checkpoint, decided, _decision_key(decided)

    async def _go_on(
        self,
        held: _Held,
        decided: dict[str, Decision],
        key: str,
        metadata: Mapping[str, object] | None,
        emit: Emit | None,
        shared: State | None = None,
    ) -> RunOutcome:
        """Run the rest of a claimed checkpoint's reply, and settle the checkpoint."""
        checkpoint = held.current
        session: Session | None = None
        if checkpoint.session_id is not None:
            loaded = await self._load(checkpoint.session_id)
            if type(loaded) is not Session:
                await held.release()
                return Failure(loaded)
            if loaded.version != checkpoint.session_version:
                await held.release()
                return Failure(
                    SessionConflict(
                        message=(
                            f"session {loaded.id!r} moved on since the run paused (version "
                            f"{checkpoint.session_version}, now {loaded.version}); the "
                            "paused reply cannot be committed to it: nothing ran"
                        ),
                        session_id=loaded.id,
                        version=checkpoint.session_version,
                    )
                )
            session = loaded
        meta = checkpoint.metadata if metadata is None else MappingProxyType(dict(metadata))

        async def after_tools(point: Any, run: RunInfo) -> AgentError | None:
            return await held.write(
                replace(
                    held.current,
                    stage="decided",
                    decisions=MappingProxyType(decided),
                    key=key,
                    point=point,
                    state=run.state.snapshot(),
                    session_state=run.session_state.snapshot(),
                )
            )

        run = RunInfo(
            checkpoint.run_id,
            meta,
            State(dict(checkpoint.state), parent=shared),
            emit,
            checkpoint.session_id,
            State(dict(checkpoint.session_state)),
            self.name,
            decisions=MappingProxyType(decided),
            _caller=self._engine.call_model,
            _resume=Resume(checkpoint.point, after_tools if checkpoint.stage == "paused" else None),
        )
        token = _CURRENT.set(run)
        try:
            result, session, new_input, run = await self._drive(
                run, session, checkpoint.input, checkpoint.tool_choice, checkpoint.model_settings
            )
            result = await self._settle(held, result, run, session, new_input, decided, key)
            hooks = self._engine.hooks
            if hooks.run_end or (hooks.error and type(result) is Failure):
                await self._after(run, result)
            return result
        finally:
            _CURRENT.reset(token)

    async def _settle(
        self,
        held: _Held,
        result: RunOutcome,
        run: RunInfo,
        session: Session | None,
        new_input: tuple[Message, ...],
        decided: dict[str, Decision],
        key: str,
    ) -> RunOutcome:
        """End a resumed reply's checkpoint.

        It is marked done with the session commit (or with the next checkpoint, if the
        reply paused again); a failed reply frees it for another try.
        """
        if type(result) is not Success:
            await held.release()
            return result
        done: RunResult = result.unwrap()
        follow: Checkpoint | None = None
        update = None
        if done.stop_reason == "paused":
            checkpoint = held.current
            follow = self._checkpoint(
                run, session, new_input, done, checkpoint.tool_choice, checkpoint.model_settings
            )
            done = _announce(None, done, follow)
        elif session is not None:
            planned = _session_update(session, new_input, done, run)
            if type(planned) is InvalidHistory:
                await held.release()
                return Failure(planned)
            update = planned[0]  # type: ignore[index]
        ended = replace(
            held.current,
            stage="done",
            decisions=MappingProxyType(decided),
            key=key,
            outcome=done,
            claim="",
            claim_until=0.0,
        )
        error = await held.write(ended, session=update, follow=follow)
        if error is not None:
            await held.release()
            return Failure(error)
        if follow is not None:
            _announce(run, done, follow)
        return Success(done)

    async def _execute(
        self,
        prompt: Prompt,
        metadata: Mapping[str, object] | None,
        session_id: str | None,
        tool_choice: ToolChoice | None,
        model_settings: ModelSettings | None,
        emit: Emit | None,
        shared: State | None = None,
    ) -> RunOutcome:
        if self._mcp is not None:
            unavailable = await self._gather_tools()
            if unavailable is not None:
                return Failure(unavailable)
        engine = self._engine
        new_input = _as_messages(prompt)
        if isinstance(new_input, InvalidPrompt):
            return Failure(new_input)
        session: Session | None = None
        if session_id is None:
            kept = State()
        else:
            loaded = await self._load(session_id)
            if type(loaded) is not Session:
                return Failure(loaded)
            session = loaded
            copied = session_state(session, self._sessions)
            if type(copied) is not State:
                return Failure(copied)
            kept = copied
        meta = _EMPTY if not metadata else MappingProxyType(dict(metadata))
        run = RunInfo(
            f"{_RUN_PREFIX}-{next(_run_ids)}",
            meta,
            State(parent=shared),
            emit,
            session_id,
            kept,
            self.name,
            _caller=engine.call_model,
        )
        choice = tool_choice if tool_choice is not None else self._default_choice
        settings = model_settings if model_settings is not None else self._default_settings
        token = _CURRENT.set(run)
        try:
            result, session, new_input, run = await self._drive(
                run, session, new_input, choice, settings
            )
            if type(result) is Success:
                done: RunResult = result.unwrap()
                if done.stop_reason == "paused":
                    result = await self._pause(run, session, new_input, done, choice, settings)
                elif session is not None:
                    failed = await self._commit(session, new_input, done, run)
                    if failed is not None:
                        result = Failure(failed)
            if engine.hooks.run_end or (engine.hooks.error and type(result) is Failure):
                await self._after(run, result)
            return result
        finally:
            _CURRENT.reset(token)

    async def _drive(
        self,
        run: RunInfo,
        session: Session | None,
        new_input: tuple[Message, ...],
        choice: ToolChoice,
        settings: ModelSettings,
    ) -> tuple[RunOutcome, Session | None, tuple[Message, ...], RunInfo]:
        """Run the ``run_start`` hooks and the stack.

        Returns the outcome, and the session, input and run the loop ran with (``run``
        middleware may have changed them).
        """
        engine = self._engine
        hooks = engine.hooks
        if hooks.run_start:
            history = () if session is None else session.messages
            await notify(hooks.run_start, RunStart(run, (*history, *new_input)))
        outcome = await engine.run(run, new_input, session, choice, settings)
        ran = take_record(run.state)  # under run middleware: what the loop ran with
        if type(outcome) is Failure:
            halt = outcome.failure()
            if type(halt) is Terminate:
                inner = None if ran is None else ran.outcome
                outcome = Success(terminated_after(halt, inner))
            elif type(halt) is Pause:
                outcome = Failure(
                    MiddlewareError(
                        message=(
                            "returned Pause, which a run middleware cannot: pause at "
                            "tool_call, or at a position inside a round"
                        ),
                        position="run",
                    )
                )
        result: RunOutcome = outcome  # type: ignore[assignment]
        if type(result) is Success:  # what middleware's own calls spent outside the loop
            done = result.unwrap()
            whole = with_later_calls(run, done, NO_USAGE if ran is None else ran.counted)
            if whole is not done:
                result = Success(whole)
        if type(result) is Success and result.unwrap().stop_reason == "paused":
            paused = result.unwrap().paused
            if paused is None or paused._point is None:
                result = Failure(
                    MiddlewareError(
                        message=(
                            "a run middleware replaced a paused run's result with one that "
                            "cannot be resumed; pass the paused result on (dataclasses."
                            "replace keeps what a resume needs)"
                        ),
                        position="run",
                    )
                )
        if ran is not None:
            session, new_input, run = ran.session, ran.input, ran.run
        return result, session, new_input, run

    def _checkpoint(
        self,
        run: RunInfo,
        session: Session | None,
        new_input: tuple[Message, ...],
        done: RunResult,
        choice: ToolChoice,
        settings: ModelSettings,
    ) -> Checkpoint:
        """The checkpoint of a run that paused with ``done``."""
        paused: Paused = done.paused  # type: ignore[assignment]
        now = time.time()
        return Checkpoint(
            id=uuid.uuid4().hex,
            run_id=run.run_id,
            agent=self.name,
            config=self._config,
            created=now,
            expires=now + self._checkpoint_ttl,
            session_id=None if session is None else session.id,
            session_version=0 if session is None else session.version,
            input=new_input,
            point=paused._point,  # type: ignore[arg-type]
            requests=paused.requests,
            tool_choice=choice,
            model_settings=settings,
            metadata=run.metadata,
            state=run.state.snapshot(),
            session_state=run.session_state.snapshot(),
        )

    async def _pause(
        self,
        run: RunInfo,
        session: Session | None,
        new_input: tuple[Message, ...],
        done: RunResult,
        choice: ToolChoice,
        settings: ModelSettings,
    ) -> RunOutcome:
        """Save the checkpoint of a paused run; the result naming it (the session waits)."""
        store = self._sessions
        if not isinstance(store, CheckpointStore):
            return Failure(_no_checkpoints(store, ""))
        checkpoint = self._checkpoint(run, session, new_input, done, choice, settings)
        _, raised, cancels = await finish(store.save_checkpoint(checkpoint))
        if raised is not None:
            if cancels:
                raise asyncio.CancelledError
            return Failure(
                CheckpointError(
                    message=(
                        f"the run paused, and the session store could not save its "
                        f"checkpoint: {type(raised).__name__}: {raised}; nothing was saved"
                    ),
                    checkpoint_id=checkpoint.id,
                )
            )
        _absorb(cancels)
        return Success(_announce(run, done, checkpoint))

    async def _load(self, session_id: str) -> Session | SessionError:
        store = self._sessions
        if not self._commits:  # checked before anything runs
            return _no_commit(store, session_id, "nothing ran")
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
        planned = _session_update(session, new_input, done, run)
        if type(planned) is InvalidHistory:
            return planned
        update, found = planned  # type: ignore[misc]
        store = self._sessions
        if not self._commits:
            return _no_commit(store, session.id, "the session is unchanged")
        saved, raised, cancels = await finish(_committed(store, update))
        error = _commit_error(store, session, saved, raised)
        if error is None:
            if len(saved.messages) == update.keep + len(update.append):  # type: ignore[union-attr]
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


def _no_commit(store: object, session_id: str, outcome: str) -> SessionError:
    """The error of a store without ``commit`` (written to the protocol before it)."""
    return SessionError(
        message=(
            f"session store {_store_name(store)} has no commit(update) method; a store "
            "implements SessionStore: async load(session_id) and async commit(update) (one "
            f"written for the older save(session) must change); {outcome}"
        ),
        session_id=session_id,
    )


async def _committed(store: SessionStore, update: SessionUpdate) -> Session | None:
    """``store.commit(update)``; a store that raises at once, or returns no awaitable, raises here.

    So `finish` gets what went wrong as the commit's exception, not as one that escapes.
    """
    return await store.commit(update)


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


class _Held:
    """A checkpoint this process claimed: every write goes through it, one at a time."""

    __slots__ = ("claim", "current", "lease", "lock", "store")

    def __init__(
        self, store: CheckpointStore, current: Checkpoint, claim: str, lease: float
    ) -> None:
        self.store = store
        self.current = current
        self.claim = claim
        self.lease = lease
        self.lock = asyncio.Lock()

    async def write(
        self,
        checkpoint: Checkpoint,
        *,
        session: SessionUpdate | None = None,
        follow: Checkpoint | None = None,
    ) -> AgentError | None:
        """Store ``checkpoint`` (with the session commit, the next checkpoint) under the claim.

        The write runs to its end even if cancelled meanwhile. Returns the error, if it did
        not apply.
        """
        cid = checkpoint.id
        async with self.lock:
            if checkpoint.stage != "done":
                checkpoint = replace(checkpoint, claim_until=time.time() + self.lease)
            change = CheckpointChange(checkpoint, self.claim, session, follow)
            outcome, raised, cancels = await finish(self.store.change_checkpoint(change))
            if outcome == "ok":
                self.current = checkpoint
                _absorb(cancels)
                return None
        if cancels:
            raise asyncio.CancelledError
        if raised is not None:
            return CheckpointError(
                message=(
                    f"the session store could not write checkpoint {cid!r}: "
                    f"{type(raised).__name__}: {raised}; it is as it was"
                ),
                checkpoint_id=cid,
            )
        if outcome == "conflict" and session is not None:
            return SessionConflict(
                message=(
                    f"session {session.session_id!r} changed while the paused run was "
                    "resumed; nothing was saved: resume it again"
                ),
                session_id=session.session_id,
                version=session.version,
            )
        return CheckpointBusy(
            message=(
                f"checkpoint {cid!r} was claimed by another resume while this one ran (it "
                "did not renew its claim in time); nothing of this resume was saved"
            ),
            checkpoint_id=cid,
        )

    async def renew(self) -> None:
        """Extend the claim every third of the lease, for as long as the resume runs."""
        while True:
            await asyncio.sleep(self.lease / 3)
            if await self.write(self.current) is not None:
                return

    async def release(self) -> None:
        """Give the claim up (best effort), so the checkpoint can be resumed again at once."""
        async with self.lock:
            released = replace(self.current, claim="", claim_until=0.0)
            change = CheckpointChange(released, self.claim)
            with contextlib.suppress(Exception):
                if await self.store.change_checkpoint(change) == "ok":
                    self.current = released


def _announce(run: RunInfo | None, done: RunResult, checkpoint: Checkpoint) -> RunResult:
    """``done`` naming its saved ``checkpoint``; streamed as `RunPaused` to ``run``'s consumer."""
    paused = Paused(checkpoint.id, checkpoint.requests)
    if run is not None and run.emit is not None:
        with contextlib.suppress(Exception):
            run.emit(RunPaused(paused))
    return replace(done, paused=paused)


def _session_update(
    session: Session, new_input: tuple[Message, ...], done: RunResult, run: RunInfo
) -> tuple[SessionUpdate, tuple[Any, ...]] | InvalidHistory:
    """The update committing a finished turn to ``session``, and the calls it leaves open."""
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
    return SessionUpdate(session.id, session.version, keep, append, state), found  # type: ignore[return-value]


def _no_checkpoints(store: object, checkpoint_id: str) -> CheckpointError:
    return CheckpointError(
        message=(
            f"session store {_store_name(store)} keeps no checkpoints, so a run cannot "
            "pause; use one of fncore's stores (memory://, sqlite:///, postgresql://) or "
            "implement CheckpointStore"
        ),
        checkpoint_id=checkpoint_id,
    )


def _not_found(checkpoint_id: str) -> CheckpointNotFound:
    return CheckpointNotFound(
        message=(
            f"no checkpoint {checkpoint_id!r} in this agent's session store; check the id "
            "and that the agent uses the store the run paused in"
        ),
        checkpoint_id=checkpoint_id,
    )


def _unreadable(checkpoint_id: str, exc: Exception) -> CheckpointError:
    return CheckpointError(
        message=(
            f"the session store could not read checkpoint {checkpoint_id!r}: "
            f"{type(exc).__name__}: {exc}; nothing ran"
        ),
        checkpoint_id=checkpoint_id,
    )


def _conflict(checkpoint: Checkpoint) -> DecisionConflict:
    return DecisionConflict(
        message=(
            f"checkpoint {checkpoint.id!r} was already resumed with other decisions; a "
            "decision is taken once: resume it with the same decisions"
        ),
        checkpoint_id=checkpoint.id,
    )


def _replay(checkpoint: Checkpoint, key: str) -> RunOutcome:
    """The stored outcome of a finished resume, for the same decisions only."""
    if checkpoint.key != key or checkpoint.outcome is None:
        return Failure(_conflict(checkpoint))
    return Success(checkpoint.outcome)


def _decision_doc(decision: Decision) -> dict[str, object]:
    if type(decision) is Edit:
        return {"kind": "edit", "arguments": dict(decision.arguments)}
    if type(decision) is Reject or type(decision) is Respond:
        return {"kind": decision.kind, "message": decision.message}
    return {"kind": decision.kind}


def _decision_key(decided: Mapping[str, Decision]) -> str:
    """The idempotency key of a set of decisions: equal decisions, equal keys."""
    doc = {call_id: _decision_doc(d) for call_id, d in decided.items()}
    text = json.dumps(doc, sort_keys=True, separators=(",", ":"), default=repr)
    return hashlib.sha256(text.encode()).hexdigest()


def _decisions(
    checkpoint: Checkpoint,
    decisions: Mapping[str, Decision] | Decision,
    tools: Mapping[str, Tool],
) -> dict[str, Decision] | DecisionError:
    """``decisions`` by call id, checked against what ``checkpoint`` waits for."""
    cid = checkpoint.id
    requests = {r.call_id: r for r in checkpoint.requests}
    waiting = ", ".join(map(repr, requests)) or "none"
    if isinstance(decisions, Mapping):
        decided: dict[str, Decision] = dict(decisions)
    else:
        decided = dict.fromkeys(requests, decisions)
    for call_id, decision in decided.items():
        request = requests.get(call_id)
        if request is None:
            return UnknownRequest(
                message=(
                    f"checkpoint {cid!r} does not wait for call {call_id!r} (it waits for: "
                    f"{waiting})"
                ),
                checkpoint_id=cid,
                call_id=call_id,
            )
        if not isinstance(decision, _DECISION_TYPES):
            return DecisionNotAllowed(
                message=(
                    f"the decision for call {call_id!r} is a {type(decision).__name__}; "
                    "decide with Approve(), Edit(arguments), Reject(message) or "
                    "Respond(message)"
                ),
                checkpoint_id=cid,
                call_id=call_id,
            )
        if decision.kind not in request.allowed:
            return DecisionNotAllowed(
                message=(
                    f"call {call_id!r} allows {', '.join(request.allowed)}, not {decision.kind}"
                ),
                checkpoint_id=cid,
                call_id=call_id,
            )
        if type(decision) is Edit and request.tool is not None:
            tool = tools.get(request.tool)
            problem = None
            if tool is not None:
                try:
                    checked = tool.check(json.dumps(dict(decision.arguments)))
                except (TypeError, ValueError) as exc:
                    checked = f"they are not JSON values ({exc})"
                problem = checked if type(checked) is str else None
            if problem is not None:
                return DecisionNotAllowed(
                    message=(
                        f"the edited arguments of call {call_id!r} do not fit tool "
                        f"{request.tool!r}: {problem}"
                    ),
                    checkpoint_id=cid,
                    call_id=call_id,
                )
    missing = [call_id for call_id in requests if call_id not in decided]
    if missing:
        return DecisionMissing(
            message=(
                f"checkpoint {cid!r} waits for a decision on {', '.join(map(repr, missing))} "
                "too; decide every request (or pass one decision for all)"
            ),
            checkpoint_id=cid,
            call_id=missing[0],
        )
    return decided

"""`Agent`: runs the loop through a stack built once from a registry and a container.

The agent is a facade: its stack is an `AgentStack` (rebuilt when its MCP servers offer
other tools), its replies run in a `Runner` (sessions in `_commit`, checkpoints in
`_checkpoints` and `_claims`), and what it owns is in an `Owned`.
"""

from __future__ import annotations

import functools
from collections.abc import Awaitable, Iterable, Mapping, Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any, Generic, Self, final

from fncore.core import (
    AgentError,
    Decision,
    Emit,
    Message,
    Model,
    ModelSettings,
    Registry,
    RunOutcome,
    RunResult,
    Tool,
    ToolChoice,
    ToolFunction,
)
from fncore.core._checks import timeout_problem
from fncore.core._loop import LoopSettings
from fncore.core._output import OutputStrategy, OutputT
from fncore.core._owned import Owned
from fncore.core._registry import default_registry
from fncore.runtime._agent_stack import AgentStack
from fncore.runtime._commit import SessionIO
from fncore.runtime._mcp import MCPServer, MCPTools
from fncore.runtime._output import output_spec, typed
from fncore.runtime._runner import Runner
from fncore.runtime._stack import StackDescription, build_engine
from fncore.runtime._stream import RunStream
from fncore.runtime._subagent import agent_tool
from fncore.session_stores._memory import InMemorySessionStore
from fncore.session_stores._protocols import SessionStore

if TYPE_CHECKING:
    from dependency_injector import containers
    from returns.result import Result

Prompt = str | Message | Sequence[Message]
"""What a run starts from: a user's text, one message, or several."""

_DAY = 86_400.0


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

    __slots__ = ("_entered", "_owned", "_runner")

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
        self._owned = Owned()
        """What the agent made itself, and so closes in `aclose`, the last made first."""
        self._entered = 0
        """How many ``async with agent:`` blocks are open (the last one out closes it)."""
        servers = tuple(mcp_servers)
        mcp = self._owned.keep(MCPTools(servers)) if servers else None
        if sessions is None:
            sessions = self._owned.keep(InMemorySessionStore())
        build = functools.partial(
            build_engine,
            default_registry if registry is None else registry,
            model=model,
            container=container,
            additional_tools=tuple(additional_tools),
            instructions=instructions,
            settings=LoopSettings() if settings is None else settings,
        )
        output = functools.partial(output_spec, model, output_type, output_strategy, output_retries)
        self._runner = Runner(
            AgentStack(build, tuple(tools), instructions, mcp, output),
            SessionIO(sessions),
            name=name,
            tool_choice=tool_choice,
            model_settings=model_settings or ModelSettings(),
            checkpoint_ttl=checkpoint_ttl,
            resume_lease=resume_lease,
        )

    @property
    def model(self) -> Model:
        """The model this agent calls."""
        return self._runner.stack.engine.model

    @property
    def settings(self) -> LoopSettings:
        """The loop settings."""
        return self._runner.stack.engine.settings

    @property
    def model_settings(self) -> ModelSettings:
        """The sampling settings each run uses unless it is given its own."""
        return self._runner.default_settings

    @property
    def tools(self) -> Mapping[str, Tool]:
        """Every tool the agent can run, by name."""
        return self._runner.stack.engine.tools

    @property
    def sessions(self) -> SessionStore:
        """Where this agent's sessions live."""
        return self._runner.sessions.store

    @property
    def name(self) -> str:
        """The agent's name, for traces and logs."""
        return self._runner.name

    @name.setter
    def name(self, name: str) -> None:
        self._runner.name = name

    async def aclose(self) -> None:
        """Release what the agent created itself (its default session store, say).

        What it was given stays open: the model belongs to whoever made it (a container
        closes the models it built in ``await container.shutdown()``; a model you built,
        you close with ``await model.aclose()``), so closing one agent never breaks
        another that shares the model.
        """
        await self._owned.close()
        mcp = self._runner.stack.mcp
        if mcp is not None:  # its servers start again at the next run: owned again
            self._owned.add(mcp)

    async def connect(self) -> None:
        """Start the MCP servers and offer their tools now, rather than at the first run.

        A run lists a server's tools again only when its listing no longer stands (see
        `MCPServer`'s ``tools_ttl``); this is for finding a server that cannot start before
        anything runs, and for `tools` and `describe` to show MCP tools.

        Raises:
            MCPServerError: one line naming a server that cannot start, be reached or be
                listed.
            RegistrationError: if a tool's name clashes with another's (both sources
                named), or a ``tool_call`` middleware filters on a tool nobody offers.
        """
        await self._runner.stack.connect()

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

    def describe(self) -> StackDescription:
        """The built stack: each position's middleware, outermost first; ``str()`` it."""
        return self._runner.stack.description

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
        runner = self._runner
        outcome = await runner.start(
            prompt, metadata, session_id, tool_choice, model_settings, None
        )
        output = runner.stack.output
        return outcome if output is None else typed(output, outcome)  # type: ignore[return-value]

    def _output_of(self, outcome: RunOutcome) -> RunOutcome[OutputT]:
        """``outcome`` with its output parsed into the agent's output type, if it has one."""
        output = self._runner.stack.output
        if output is None:
            return outcome  # type: ignore[return-value]
        return typed(output, outcome)

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
            runner = self._runner
            outcome = runner.start(prompt, metadata, session_id, tool_choice, model_settings, emit)
            return outcome if runner.stack.output is None else self._typed(outcome)

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
            self.run,
            self._runner,
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
        return self._output_of(await self._runner.go_on(checkpoint_id, decisions, metadata, None))

    def resume_stream(
        self,
        checkpoint_id: str,
        decisions: Mapping[str, Decision] | Decision,
        *,
        metadata: Mapping[str, object] | None = None,
    ) -> RunStream[OutputT]:
        """`resume`, streaming the resumed reply's events; the last is `RunCompleted`."""

        def start(emit: Emit) -> Any:
            outcome = self._runner.go_on(checkpoint_id, decisions, metadata, emit)
            return outcome if self._runner.stack.output is None else self._typed(outcome)

        return RunStream(start)

    async def _typed(self, outcome: Awaitable[RunOutcome]) -> Any:
        return typed(self._runner.stack.output, await outcome)  # type: ignore[arg-type]

"""Agents as tools: one agent runs another for a tool call (``Agent.as_tool``).

The inheritance rule, in one place:

* the child runs its own stack (middleware, hooks, tools, model, session store);
* the caller's ``tool_call`` middleware wrap the call, like any tool's;
* the child's run gets the caller's request metadata, and runs in the caller's context, so
  its trace spans nest under the caller's tool span;
* the child's usage adds up into the caller's `RunResult` usage;
* the child's reply state draws on the caller's for ``shared`` keys (the counters of
  ``limit_calls`` and ``budget``), unless ``share_limits=False``;
* cancelling the caller cancels the child; a child that fails, times out or is cancelled
  gives the caller an error result;
* the child's stream events reach the caller's stream as `SubagentEvent`;
* a child that pauses pauses the caller (its requests, ids prefixed with the call's id,
  join the caller's); resuming the caller resumes the child from its own checkpoint, whose
  id the caller's reply state keeps.
"""

from __future__ import annotations

import re
from contextvars import ContextVar
from dataclasses import replace
from typing import TYPE_CHECKING, Any, Protocol, final

import pydantic_core
from pydantic import ConfigDict, Field, create_model
from returns.result import Failure

from fncore.core import (
    AgentError,
    Pause,
    RegistrationError,
    RunInfo,
    StateKey,
    StreamEvent,
    SubagentCycle,
    SubagentDepthExceeded,
    SubagentEnd,
    SubagentError,
    SubagentEvent,
    SubagentStart,
    Tool,
    ToolCallPart,
    ToolResult,
    Usage,
)
from fncore.runtime._hooks import HookEntry, notify

if TYPE_CHECKING:
    from collections.abc import Awaitable, Callable, Mapping

    from fncore.core import Decision, Emit, ModelSettings, RunOutcome, State, ToolChoice


class Replies(Protocol):
    """What a sub-agent tool needs of the agent it runs: start a reply, go on with one.

    The agent's own runner is one. A protocol, so this module (which the engine imports)
    need not import the agent.
    """

    def start(
        self,
        prompt: str,
        metadata: Mapping[str, object] | None,
        session_id: str | None,
        tool_choice: ToolChoice | None,
        model_settings: ModelSettings | None,
        emit: Emit | None,
        shared: State | None = None,
    ) -> Awaitable[RunOutcome]:
        """Run a reply to ``prompt`` (``Agent.run``, before its output is typed)."""
        ...

    def go_on(
        self,
        checkpoint_id: str,
        decisions: Mapping[str, Decision] | Decision,
        metadata: Mapping[str, object] | None,
        emit: Emit | None,
        shared: State | None = None,
    ) -> Awaitable[RunOutcome]:
        """Resume a paused reply (``Agent.resume``, before its output is typed)."""
        ...


USAGE: StateKey[dict[str, tuple[int, ...]]] = StateKey("fncore.subagents.usage", default=dict)
"""A run's sub-agent usage so far, per call id (a resumed child's replaces its paused one)."""

PAUSED: StateKey[dict[str, str]] = StateKey("fncore.subagents.paused", default=dict)
"""The calls whose child paused, and the child's checkpoint id, per call id."""

_CHAIN: ContextVar[tuple[tuple[int, str], ...]] = ContextVar("fncore_subagents", default=())
"""The sub-agents running in this context, outermost first: (id of the agent, tool name)."""

_NAME = re.compile(r"[A-Za-z0-9_-]{1,64}")


def children_usage(run: RunInfo) -> Usage | None:
    """What ``run``'s sub-agents spent (``None`` if none ran)."""
    spent = run.state.get(USAGE)
    if not spent:
        return None
    total = Usage()
    for counts in spent.values():
        total = total + Usage(*counts)
    return total


@final
class Delegate:
    """The function behind a sub-agent's tool: runs the agent for one call (internal).

    The tool runner calls `call` with the calling run and the call; called directly, it
    runs the agent on its own and returns its answer.
    """

    __slots__ = ("max_depth", "name", "replies", "run", "share_limits")

    def __init__(
        self,
        run: Callable[[str], Awaitable[RunOutcome[Any]]],
        replies: Replies,
        name: str,
        share_limits: bool,
        max_depth: int,
    ) -> None:
        self.run = run
        """The agent's ``run``."""
        self.replies = replies
        """The agent's replies (its identity, too, for finding cycles)."""
        self.name = name
        self.share_limits = share_limits
        self.max_depth = max_depth

    async def __call__(self, prompt: str) -> str:
        """Run the agent alone on ``prompt``; its answer, or `RuntimeError` with its error."""
        outcome = await self.run(prompt)
        if type(outcome) is Failure:
            raise RuntimeError(outcome.failure().message)
        return as_text(outcome.unwrap().output)

    def _chain(self, caller: str) -> tuple[tuple[int, str], ...]:
        """The agents running down to ``caller``: the root, then the sub-agents (by id)."""
        chain = _CHAIN.get()
        if not chain or chain[-1][1] != caller:  # the root, or a hop no sub-agent tool made
            chain = (*chain, (0, caller))
        return chain

    def _refused(self, chain: tuple[tuple[int, str], ...]) -> SubagentError | None:
        names = (*(name for _, name in chain), self.name)
        if any(agent_id == id(self.replies) for agent_id, _ in chain):
            return SubagentCycle(
                message=(
                    f"sub-agent {self.name!r} is already running further up the chain "
                    f"({' -> '.join(names)}); an agent cannot call itself through others"
                ),
                position="tool_call",
                agent=self.name,
                chain=names,
            )
        depth = sum(1 for agent_id, _ in chain if agent_id)
        if depth >= self.max_depth:
            return SubagentDepthExceeded(
                message=(
                    f"sub-agent {self.name!r} would run {depth + 1} sub-agents deep "
                    f"({' -> '.join(names)}), deeper than its max_depth={self.max_depth}; "
                    "raise max_depth in as_tool(...) if the chain is meant to be this deep"
                ),
                position="tool_call",
                agent=self.name,
                chain=names,
                max_depth=self.max_depth,
            )
        return None

    async def call(
        self,
        parent: RunInfo,
        call: ToolCallPart,
        prompt: str,
        hooks: tuple[tuple[HookEntry, ...], tuple[HookEntry, ...]],
    ) -> ToolResult | Pause | AgentError:
        """Run (or resume) the agent for ``call`` of ``parent``; what the call comes to."""
        chain = self._chain(parent.agent)
        refused = self._refused(chain)
        if refused is not None:
            return refused
        name, replies, state = self.name, self.replies, parent.state
        waiting = state.get(PAUSED).get(call.id)
        start, end = hooks
        if start:
            await notify(start, SubagentStart(parent, name, call, "" if waiting else prompt))
        emit: Emit | None = None
        outer = parent.emit
        if outer is not None:
            call_id = call.id

            def emit(event: StreamEvent) -> None:
                outer(SubagentEvent(name, call_id, event))

        shared = state if self.share_limits else None
        token = _CHAIN.set((*chain, (id(replies), name)))
        try:
            if waiting is None:
                outcome = await replies.start(
                    prompt, parent.metadata, None, None, None, emit, shared
                )
            else:
                prefix = f"{call.id}/"
                decisions = {
                    key[len(prefix) :]: decision
                    for key, decision in parent.decisions.items()
                    if key.startswith(prefix)
                }
                outcome = await replies.go_on(waiting, decisions, parent.metadata, emit, shared)
        finally:
            _CHAIN.reset(token)
        if end:
            await notify(end, SubagentEnd(parent, name, call, outcome))
        if type(outcome) is Failure:
            error = outcome.failure()
            if isinstance(error, SubagentError):
                return error
            return ToolResult(f"Sub-agent {name!r} failed: {error.message}", is_error=True)
        done = outcome.unwrap()
        before: dict[str, tuple[int, ...]] = state.get(USAGE)
        spent = dict(before)
        u = done.usage
        spent[call.id] = (
            u.input_tokens,
            u.output_tokens,
            u.cache_read_tokens,
            u.cache_write_tokens,
            u.reasoning_tokens,
            u.requests,
        )
        state.set(USAGE, spent)
        paused = state.get(PAUSED)
        if done.paused is not None:
            state.set(PAUSED, {**paused, call.id: done.paused.checkpoint_id})
            return Pause(
                tuple(
                    replace(request, call_id=f"{call.id}/{request.call_id}")
                    for request in done.paused.requests
                )
            )
        if waiting is not None:
            state.set(PAUSED, {key: cid for key, cid in paused.items() if key != call.id})
        return ToolResult(as_text(done.output))


def as_text(output: object) -> str:
    """A child's output as the caller's tool result: its text, or a typed output as JSON."""
    return output if type(output) is str else pydantic_core.to_json(output).decode()


def agent_tool(
    run: Callable[[str], Awaitable[RunOutcome[Any]]],
    replies: Replies,
    *,
    name: str,
    description: str | None,
    share_limits: bool,
    max_depth: int,
    timeout: float | None,
) -> Tool:
    """The tool that runs an agent (``Agent.as_tool``: its ``run`` and replies); see there."""
    if not _NAME.fullmatch(name):
        msg = f"sub-agent tool name {name!r} is not valid; use letters, digits, '_' or '-'"
        raise RegistrationError(msg)
    if type(max_depth) is not int or max_depth < 1:
        msg = f"sub-agent {name!r}: max_depth must be an int of 1 or more, not {max_depth!r}"
        raise RegistrationError(msg)
    args = create_model(
        f"{name}_args",
        __config__=ConfigDict(extra="forbid"),
        prompt=(
            str,
            Field(description="The task or question for the agent, complete on its own."),
        ),
    )
    return Tool(
        Delegate(run, replies, name, share_limits, max_depth),
        name=name,
        args_model=args,
        description=(
            description
            if description is not None
            else f"Ask the {name} agent; it answers with text."
        ),
        timeout=timeout,
        source=f"sub-agent {name}",
    )

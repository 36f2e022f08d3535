"""What runs an agent's replies: a new one (`Runner.start`) or a paused one's rest (`go_on`).

Both load the session, run the ``run_start`` hooks and the stack, then reach their end: a
run commits its turn to the session or, paused, saves its checkpoint (`_checkpoints`); a
resume claims the checkpoint first (`_claims`) and settles it last. The ``error`` and
``run_end`` hooks run after that, when nothing can undo it.
"""

from __future__ import annotations

import asyncio
import itertools
import os
from collections.abc import Mapping, Sequence
from dataclasses import replace
from functools import partial
from types import MappingProxyType
from typing import final

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Checkpoint,
    Decision,
    Emit,
    ErrorRaised,
    InvalidPrompt,
    Message,
    MiddlewareError,
    ModelSettings,
    Outcome,
    Pause,
    Resume,
    ResumePoint,
    RunEnd,
    RunInfo,
    RunOutcome,
    RunResult,
    RunStart,
    Session,
    SessionConflict,
    State,
    Terminate,
    TextPart,
    ToolChoice,
)
from fncore.core._contexts import NO_DECISIONS
from fncore.core._fold import short_repr
from fncore.core._loop import terminated_after
from fncore.core._resume import ResumedRun
from fncore.core._usage import NO_USAGE
from fncore.core._value import maker
from fncore.runtime._agent_stack import AgentStack
from fncore.runtime._call_usage import with_later_calls
from fncore.runtime._checkpoints import new_checkpoint, no_checkpoints, save_paused, settle
from fncore.runtime._claims import ClaimedCheckpoint, claim
from fncore.runtime._commit import SessionIO
from fncore.runtime._finish import absorb
from fncore.runtime._handlers import take_record
from fncore.runtime._hooks import notify
from fncore.runtime._scope import _CURRENT
from fncore.runtime._session_state import session_state
from fncore.runtime._steps import Steps
from fncore.session_stores._protocols import CheckpointStore

_EMPTY: Mapping[str, object] = MappingProxyType({})
_RUN_PREFIX = os.urandom(4).hex()
_run_ids = itertools.count(1)
_message = maker(Message)
_text = maker(TextPart)
_run_info = maker(RunInfo)


def as_messages(prompt: object) -> tuple[Message, ...] | InvalidPrompt:
    """The run's input messages, or why ``prompt`` is not a `Prompt`."""
    if isinstance(prompt, str):
        return (_message("user", (_text(prompt),)),)
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


@final
class Runner:
    """Runs an agent's replies through its stack, with its sessions and checkpoints (internal).

    The agent's `Replies` for a sub-agent tool, too.
    """

    __slots__ = (
        "checkpoint_ttl",
        "default_choice",
        "default_settings",
        "name",
        "resume_lease",
        "sessions",
        "stack",
    )

    def __init__(
        self,
        stack: AgentStack,
        sessions: SessionIO,
        *,
        name: str,
        tool_choice: ToolChoice,
        model_settings: ModelSettings,
        checkpoint_ttl: float,
        resume_lease: float,
    ) -> None:
        self.stack = stack
        """The built stack."""
        self.sessions = sessions
        """The session store, as runs load and commit sessions."""
        self.name = name
        """The agent's name."""
        self.default_choice = tool_choice
        """Each run's tool choice unless the run says otherwise."""
        self.default_settings = model_settings
        """Each run's sampling settings unless the run says otherwise."""
        self.checkpoint_ttl = checkpoint_ttl
        """Seconds a paused run's checkpoint can be resumed."""
        self.resume_lease = resume_lease
        """Seconds a resume holds its checkpoint without renewing its claim."""

    async def start(
        self,
        prompt: object,
        metadata: Mapping[str, object] | None,
        session_id: str | None,
        tool_choice: ToolChoice | None,
        model_settings: ModelSettings | None,
        emit: Emit | None,
        shared: State | None = None,
        *,
        steps: Steps | None = None,
        run_id: str | None = None,
    ) -> RunOutcome:
        """Run a reply to ``prompt``: `Agent.run`, before its output is typed.

        A durable engine passes ``steps``, through which the run's effects pass as steps
        (see `fncore.runtime._steps`), and ``run_id``, the run's id (its workflow's).
        """
        stack = self.stack
        if stack.mcp is not None:
            unavailable = await stack.gather_tools()
            if unavailable is not None:
                return Failure(unavailable)
        engine = stack.engine
        new_input = as_messages(prompt)
        if isinstance(new_input, InvalidPrompt):
            return Failure(new_input)
        session: Session | None = None
        if session_id is None:
            kept = State()
        else:
            loaded = await (
                self.sessions.load(session_id)
                if steps is None
                else steps.step("session.load", partial(self.sessions.load, session_id, True))
            )
            if type(loaded) is not Session:
                return Failure(loaded)
            session = loaded
            copied = session_state(session, self.sessions.store)
            if type(copied) is not State:
                return Failure(copied)
            kept = copied
        meta = _EMPTY if not metadata else MappingProxyType(dict(metadata))
        # Every field given in order (no keyword, no default's factory): mypy checks each
        # one's type; of neighbours, only `agent` and `calling` (both text) could swap unseen.
        run = _run_info(
            f"{_RUN_PREFIX}-{next(_run_ids)}" if run_id is None else run_id,
            meta,  # metadata
            State() if shared is None else State(parent=shared),  # no keyword: 1,000 instructions
            emit,
            session_id,
            kept,  # session_state
            self.name,  # agent
            None,  # calling
            NO_DECISIONS,  # decisions
            engine.call_model,  # _caller
            None,  # _resume
            steps,  # _steps
        )
        choice = tool_choice if tool_choice is not None else self.default_choice
        settings = model_settings if model_settings is not None else self.default_settings
        token = _CURRENT.set(run)
        try:
            if engine.hooks.run_start:
                await self._run_start(run, session, new_input)
            outcome = await engine.run(run, new_input, session, choice, settings)
            if type(outcome) is Success and not engine.wrapped and not run.state._values:
                result: RunOutcome = outcome  # nothing to settle: no run middleware, no usage
            else:  # of middleware's own model calls to add
                result, session, new_input, run = self._settled(run, outcome, session, new_input)
            if type(result) is Success:
                done: RunResult = result.unwrap()
                if done.stop_reason == "paused":
                    pause = partial(self._pause, run, session, new_input, done, choice, settings)
                    result = await (
                        pause() if steps is None else steps.step("checkpoint.save", pause)
                    )
                elif session is not None:
                    checked = not engine.wrapped
                    if steps is None:
                        failed = await self.sessions.commit(session, new_input, done, run, checked)
                    else:
                        commit = partial(
                            self.sessions.commit, session, new_input, done, run, checked
                        )
                        failed = await steps.step("session.commit", commit)
                    if failed is not None:
                        result = Failure(failed)
            if engine.hooks.run_end or (engine.hooks.error and type(result) is Failure):
                await self._after(run, result)
            return result
        finally:
            _CURRENT.reset(token)

    async def go_on(
        self,
        checkpoint_id: str,
        decisions: Mapping[str, Decision] | Decision,
        metadata: Mapping[str, object] | None,
        emit: Emit | None,
        shared: State | None = None,
        *,
        steps: Steps | None = None,
        run_id: str | None = None,
    ) -> RunOutcome:
        """Resume a paused reply: `Agent.resume`, before its output is typed.

        ``steps`` and ``run_id`` as for `start` (without ``run_id`` the resumed run keeps
        the id of the run that paused). A durable resume claims the checkpoint under its
        ``run_id``, so that its replay after a crash holds the claim again: give each
        resume (each checkpoint and decisions) an id of its own.
        """
        stack = self.stack
        if stack.mcp is not None:
            unavailable = await stack.gather_tools()
            if unavailable is not None:
                return Failure(unavailable)
        store = self.sessions.store
        if not isinstance(store, CheckpointStore):
            return Failure(no_checkpoints(store, checkpoint_id))
        claimed = await claim(
            store,
            checkpoint_id,
            decisions,
            config=stack.config,
            tools=stack.engine.tools,
            lease=self.resume_lease,
            token=None if steps is None else run_id,
        )
        if not isinstance(claimed, tuple):
            return claimed
        held, decided, key = claimed
        resumed = self._resumed(held, decided, key, metadata, emit, shared, steps, run_id)
        return await held.renewing(resumed)

    async def _resumed(
        self,
        held: ClaimedCheckpoint,
        decided: dict[str, Decision],
        key: str,
        metadata: Mapping[str, object] | None,
        emit: Emit | None,
        shared: State | None = None,
        steps: Steps | None = None,
        run_id: str | None = None,
    ) -> RunOutcome:
        """Run the rest of a claimed checkpoint's reply, and settle the checkpoint."""
        checkpoint = held.current
        if steps is not None:  # a replay goes on from the checkpoint as first claimed

            async def claimed() -> Checkpoint:
                return held.current

            checkpoint = await steps.step("checkpoint.claim", claimed)
        session: Session | None = None
        if checkpoint.session_id is not None:
            load = partial(self.sessions.load, checkpoint.session_id, steps is not None)
            loaded = await (load() if steps is None else steps.step("session.load", load))
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

        async def after_tools(point: ResumePoint, run: ResumedRun) -> AgentError | None:
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
            checkpoint.run_id if run_id is None else run_id,
            meta,
            State(dict(checkpoint.state), parent=shared),
            emit,
            checkpoint.session_id,
            State(dict(checkpoint.session_state)),
            self.name,
            decisions=MappingProxyType(decided),
            _caller=self.stack.engine.call_model,
            _resume=Resume(checkpoint.point, after_tools if checkpoint.stage == "paused" else None),
            _steps=steps,
        )
        token = _CURRENT.set(run)
        try:
            engine = self.stack.engine
            new_input = checkpoint.input
            if engine.hooks.run_start:
                await self._run_start(run, session, new_input)
            outcome = await engine.run(
                run, new_input, session, checkpoint.tool_choice, checkpoint.model_settings
            )
            result, session, new_input, run = self._settled(run, outcome, session, new_input)
            follow: Checkpoint | None = None
            if type(result) is Success and result.unwrap().stop_reason == "paused":
                follow = self._checkpoint(
                    run,
                    session,
                    new_input,
                    result.unwrap(),
                    checkpoint.tool_choice,
                    checkpoint.model_settings,
                )
            end = partial(settle, held, result, run, session, new_input, decided, key, follow)
            if steps is None:
                result = await end()
            else:  # the checkpoint's end (and the session's commit) is one step
                result = await steps.step(
                    "session.commit" if follow is None else "checkpoint.save", end
                )
            hooks = self.stack.engine.hooks
            if hooks.run_end or (hooks.error and type(result) is Failure):
                await self._after(run, result)
            return result
        finally:
            _CURRENT.reset(token)

    async def _run_start(
        self, run: RunInfo, session: Session | None, new_input: tuple[Message, ...]
    ) -> None:
        """Run the ``run_start`` hooks (the caller checked that there are some)."""
        history = () if session is None else session.messages
        await notify(self.stack.engine.hooks.run_start, RunStart(run, (*history, *new_input)))

    def _settled(
        self,
        run: RunInfo,
        outcome: Outcome[RunResult],
        session: Session | None,
        new_input: tuple[Message, ...],
    ) -> tuple[RunOutcome, Session | None, tuple[Message, ...], RunInfo]:
        """The reply's outcome from what the stack returned.

        Returns it, and the session, input and run the loop ran with (``run`` middleware
        may have changed them).
        """
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
        if type(result) is Success:
            done = result.unwrap()
            # what middleware's own calls spent outside the loop
            whole = with_later_calls(run, done, NO_USAGE if ran is None else ran.counted)
            if whole is not done:
                result = Success(whole)
            if whole.stop_reason == "paused" and (
                whole.paused is None or whole.paused._point is None
            ):
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
        return new_checkpoint(
            run,
            session,
            new_input,
            done,
            choice,
            settings,
            agent=self.name,
            config=self.stack.config,
            ttl=self.checkpoint_ttl,
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
        store = self.sessions.store
        if not isinstance(store, CheckpointStore):
            return Failure(no_checkpoints(store, ""))
        checkpoint = self._checkpoint(run, session, new_input, done, choice, settings)
        return await save_paused(store, run, done, checkpoint)

    async def _after(self, run: RunInfo, result: RunOutcome) -> None:
        """Run the ``error`` and ``run_end`` hooks: after the commit, nothing undoes it.

        A cancellation that arrives now cuts the hooks short; the run still returns its
        (committed) outcome.
        """
        hooks = self.stack.engine.hooks
        try:
            if hooks.error and type(result) is Failure:
                await notify(hooks.error, ErrorRaised(run, result.failure()))
            if hooks.run_end:
                await notify(hooks.run_end, RunEnd(run, result))
        except asyncio.CancelledError:
            absorb(1)

"""`DurableRuntime`: the one owner of the process's DBOS, and how durable runs start.

Entering it launches DBOS on the running event loop (so runs share the loop that owns the
agents' clients), which recovers this worker's pending runs of this very stack, registers
the queue from `DurableSettings`, and lists the runs it must not recover (`blocked`).
Leaving it stops taking runs, lets the runs in flight finish for up to ``drain_timeout``
seconds, and tears DBOS down (keeping fncore's workflow registered, for the next launch).
"""

from __future__ import annotations

import asyncio
import math
import os
import uuid
from collections.abc import Mapping, Sequence
from concurrent.futures import Executor, ThreadPoolExecutor
from types import TracebackType
from typing import Any, Generic, Self, final

from dbos import DBOS, DBOSConfig, Queue, SetWorkflowID, WorkflowHandleAsync
from dbos import error as dbos_error
from returns.result import Failure, Result

from fncore.core import AgentError, Decision, RunOutcome, RunResult
from fncore.core._decisions import decision_key
from fncore.core._output import OutputT
from fncore.durable._config import APP_NAME, app_version, durable_url, executor_id
from fncore.durable._errors import (
    DurableError,
    DurableUnavailableError,
    StackChanged,
    UnknownRun,
    guarded,
    stack_changed,
    unavailable,
)
from fncore.durable._runs import DurableRunInfo, RunsView
from fncore.durable._sqlite import engine_kwargs
from fncore.durable._workflow import Resume, Served, Start, fncore_run, serve, unserve
from fncore.runtime import Agent, Prompt
from fncore.settings import DurableSettings

__all__ = ["DurableRun", "DurableRuntime"]


@final
class DurableRun(Generic[OutputT]):
    """A durable run under way: its ``id``, and its outcome once it ends (`result`)."""

    __slots__ = ("_agent", "_handle", "_url", "id")

    def __init__(
        self, handle: WorkflowHandleAsync[RunOutcome], agent: Agent[OutputT], url: str
    ) -> None:
        self._handle = handle
        self._agent = agent
        self._url = url
        self.id: str = handle.workflow_id
        """The run id (DBOS's workflow id)."""

    async def result(self) -> Result[RunResult[OutputT], AgentError]:
        """Wait for the run's outcome, as `Agent.run` returns it.

        Returns:
            The outcome; a `DurableError` if the run was cancelled, a `DurableUnavailable`
            if the database cannot be used.
        """
        try:
            outcome = await guarded(self._url, self._handle.get_result())
        except dbos_error.DBOSAwaitedWorkflowCancelledError:
            return Failure(DurableError(message=f"durable run {self.id} was cancelled"))
        except DurableUnavailableError as exc:
            return Failure(exc.error)
        return self._agent._output_of(outcome)


@final
class DurableRuntime:
    """Runs agents durably on DBOS: each model call and tool call is a step, recorded once.

    Use it as an async context manager, once per process (DBOS allows one), inside the
    event loop that runs the agents::

        async with DurableRuntime([agent]) as durable:
            result = await durable.run(agent, "hello", session_id="s1")

    Args:
        agents: Every agent whose runs this process runs (and recovers), by their distinct
            names; their stacks make the application version.
        settings: The ``[durable]`` settings (default: `DurableSettings()`: SQLite in
            fncore's data directory).
        executor_id: This worker's identity (default: ``settings.executor_id``, else the
            one kept in fncore's data directory).

    Raises:
        ValueError: if two agents have the same name.
    """

    __slots__ = (
        "_agents",
        "_executor",
        "_queue",
        "_served",
        "_taken",
        "_url",
        "_view",
        "app_version",
        "blocked",
        "executor_id",
        "settings",
    )

    def __init__(
        self,
        agents: Sequence[Agent[Any]],
        settings: DurableSettings | None = None,
        *,
        executor_id: str | None = None,
    ) -> None:
        by_name: dict[str, Agent[Any]] = {}
        for agent in agents:
            if agent.name in by_name:
                msg = f"two agents are named {agent.name!r}: give each a distinct name"
                raise ValueError(msg)
            by_name[agent.name] = agent
        self._agents: Mapping[str, Agent[Any]] = by_name
        self.settings = DurableSettings() if settings is None else settings
        """The ``[durable]`` settings."""
        self.executor_id = executor_id or _executor_id(self.settings)
        """This worker's identity: the runs it recovers at launch are its own."""
        self.app_version = app_version({n: a._runner.stack.config for n, a in by_name.items()})
        """``fncore-`` and the hash of the agents' stacks: DBOS runs only runs of this one."""
        self.blocked: tuple[StackChanged, ...] = ()
        """Runs of these agents found at launch that started with another stack."""
        self._url = durable_url(self.settings, os.environ)
        self._view = RunsView(lambda: DBOS, self._url)  # type: ignore[arg-type, return-value]
        self._served: Served | None = None
        self._queue: Queue | None = None
        self._executor: Executor | None = None
        self._taken: set[str] = set()

    async def __aenter__(self) -> Self:
        """Launch DBOS on this loop: recover this worker's runs, register the queue.

        Raises:
            DurableUnavailableError: if the database cannot be reached or used (one line,
                no password).
            RuntimeError: if another `DurableRuntime` is entered in this process.
        """
        served = Served(self._agents)
        serve(served)
        # DBOS makes its own thread pool the loop's default executor, and shuts it down
        # when destroyed: the loop gets its own back then (`_restore_executor`).
        self._executor = getattr(asyncio.get_running_loop(), "_default_executor", None)
        config: DBOSConfig = {
            "name": APP_NAME,
            "system_database_url": self._url,
            "application_version": self.app_version,
            "executor_id": self.executor_id,
            "log_level": "WARNING",
            "db_engine_kwargs": engine_kwargs(self._url),
        }
        try:
            DBOS(config=config)
            DBOS.launch()  # blocks the loop briefly: DBOS must record this loop as its own
            settings = self.settings
            limit = settings.rate_limit
            self._queue = await DBOS.register_queue_async(
                settings.queue,
                worker_concurrency=settings.worker_concurrency,
                global_concurrency=settings.global_concurrency,
                limiter=None if limit is None else {"limit": limit.limit, "period": limit.period},
                polling_interval_sec=settings.polling_interval,
                on_conflict="always_update",
            )
            self.blocked = await self._blocked()
        except BaseException as exc:
            DBOS.destroy()
            unserve()
            self._restore_executor()
            if isinstance(exc, Exception) and not isinstance(exc, DurableUnavailableError):
                raise DurableUnavailableError(unavailable(self._url, exc)) from None
            raise
        self._served = served
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        traceback: TracebackType | None,
    ) -> None:
        """Stop taking runs, let those in flight end (up to ``drain_timeout``), tear down."""
        served, self._served = self._served, None
        try:
            if served is not None and served.running:
                wait = math.ceil(self.settings.drain_timeout)
                # in a thread: it stops dequeuing, then waits while this loop runs the runs
                await asyncio.to_thread(DBOS.destroy, workflow_completion_timeout_sec=wait)
            else:
                DBOS.destroy()
        finally:
            unserve()
            self._restore_executor()

    def _restore_executor(self) -> None:
        executor, self._executor = self._executor, None
        loop = asyncio.get_running_loop()
        loop.set_default_executor(ThreadPoolExecutor() if executor is None else executor)

    def _entered(self) -> None:
        if self._served is None:
            msg = "enter the DurableRuntime first: async with DurableRuntime([...]) as durable"
            raise RuntimeError(msg)

    def _config_of(self, agent: Agent[Any]) -> str:
        self._entered()
        if self._agents.get(agent.name) is not agent:
            msg = f"agent {agent.name!r} is not one this DurableRuntime was given"
            raise ValueError(msg)
        return agent._runner.stack.config

    def _start(
        self, agent: Agent[Any], prompt: Prompt, metadata: Mapping[str, object] | None
    ) -> tuple[str, Start]:
        """The stack's config hash, and the request of a new run."""
        return self._config_of(agent), Start(prompt, None if metadata is None else dict(metadata))

    async def start(
        self,
        agent: Agent[OutputT],
        prompt: Prompt,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, object] | None = None,
        run_id: str | None = None,
    ) -> DurableRun[OutputT]:
        """Start a durable run of ``agent`` in this process; `DurableRun.result` awaits it.

        Args:
            agent: One of the runtime's agents.
            prompt: The user's text, a message, or several messages.
            session_id: Continue this session (committed once, at the end).
            metadata: Request metadata (it must pickle: it is the run's recorded input).
            run_id: The run id (default: a new UUID); an id already started gives that run.

        Raises:
            ValueError: if ``agent`` is not one of the runtime's.
            DurableUnavailableError: if the database cannot be used.
        """
        config, request = self._start(agent, prompt, metadata)
        with SetWorkflowID(run_id or str(uuid.uuid4())):
            started = DBOS.start_workflow_async(fncore_run, agent.name, config, session_id, request)
            handle = await guarded(self._url, started)
        return DurableRun(handle, agent, self._url)

    async def run(
        self,
        agent: Agent[OutputT],
        prompt: Prompt,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, object] | None = None,
        run_id: str | None = None,
    ) -> Result[RunResult[OutputT], AgentError]:
        """Run ``agent`` durably to its final answer: `start`, then its result.

        Returns:
            What `Agent.run` returns; a `DurableUnavailable` if the database cannot be used.
        """
        try:
            started = await self.start(
                agent, prompt, session_id=session_id, metadata=metadata, run_id=run_id
            )
        except DurableUnavailableError as exc:
            return Failure(exc.error)
        return await started.result()

    async def enqueue(
        self,
        agent: Agent[Any],
        prompt: Prompt,
        *,
        session_id: str | None = None,
        metadata: Mapping[str, object] | None = None,
        run_id: str | None = None,
    ) -> str:
        """Put a run on the queue, for any worker of this stack to take; its run id.

        Raises:
            ValueError: if ``agent`` is not one of the runtime's.
            DurableUnavailableError: if the database cannot be used.
        """
        config, request = self._start(agent, prompt, metadata)
        queue: Queue = self._queue  # type: ignore[assignment]  # set while entered
        with SetWorkflowID(run_id or str(uuid.uuid4())):
            queued = queue.enqueue_async(fncore_run, agent.name, config, session_id, request)
            handle = await guarded(self._url, queued)
        return handle.workflow_id

    async def resume(
        self,
        agent: Agent[OutputT],
        checkpoint_id: str,
        decisions: Mapping[str, Decision] | Decision,
        *,
        metadata: Mapping[str, object] | None = None,
    ) -> Result[RunResult[OutputT], AgentError]:
        """Go on with a paused run, durably: a new run, ``resume:<checkpoint>:<decisions>``.

        The same decisions give the same run id, so resuming twice runs the rest once.
        """
        config = self._config_of(agent)
        given = dict(decisions) if isinstance(decisions, Mapping) else {"*": decisions}
        request = Resume(
            checkpoint_id,
            given if isinstance(decisions, Mapping) else decisions,
            None if metadata is None else dict(metadata),
        )
        run_id = f"resume:{checkpoint_id}:{decision_key(given)[:16]}"
        with SetWorkflowID(run_id):
            started = DBOS.start_workflow_async(fncore_run, agent.name, config, None, request)
            try:
                handle = await guarded(self._url, started)
            except DurableUnavailableError as exc:
                return Failure(exc.error)
        return await DurableRun(handle, agent, self._url).result()

    async def take_over(self, executor_ids: Sequence[str]) -> tuple[str, ...]:
        """Recover the pending runs of these (dead) workers, of this stack; their run ids.

        Raises:
            DurableUnavailableError: if the database cannot be used.
        """
        self._entered()
        recover = asyncio.to_thread(DBOS._recover_pending_workflows, list(executor_ids))
        handles = await guarded(self._url, recover)
        taken = tuple(h.workflow_id for h in handles)
        self._taken.update(taken)
        return taken

    async def wait_idle(self) -> None:
        """Wait until no run of this stack is pending or enqueued for this worker.

        Its own runs (recovered at launch, or started here) and those it took over.
        """
        self._entered()
        pause = min(self.settings.polling_interval, 0.2)
        while True:
            left = await self._view.statuses(
                status=["PENDING", "ENQUEUED"], app_version=self.app_version, load_input=False
            )
            if not any(
                s.executor_id == self.executor_id or s.workflow_id in self._taken for s in left
            ):
                return
            await asyncio.sleep(pause)

    async def runs(
        self, *, status: str | None = None, limit: int = 50
    ) -> tuple[DurableRunInfo, ...]:
        """The durable runs of fncore in the database, the newest first (steps not included)."""
        self._entered()
        return await self._view.runs(status=status, limit=limit)

    async def show(self, run_id: str) -> DurableRunInfo | UnknownRun:
        """Run ``run_id``, with its steps; `UnknownRun` if there is none."""
        self._entered()
        return await self._view.show(run_id)

    async def cancel(self, run_id: str) -> UnknownRun | None:
        """Cancel run ``run_id``; `UnknownRun` if there is none."""
        self._entered()
        return await self._view.cancel(run_id)

    async def _blocked(self) -> tuple[StackChanged, ...]:
        """The pending and enqueued runs of these agents that started with another stack."""
        found = await self._view.statuses(status=["PENDING", "ENQUEUED"], load_input=True)
        blocked = []
        for status in found:
            args = () if status.input is None else tuple(status.input.get("args", ()))
            if status.app_version == self.app_version or len(args) < 2:
                continue
            name, config = args[0], args[1]
            agent = self._agents.get(name) if isinstance(name, str) else None
            if agent is None:
                continue
            now = agent._runner.stack.config
            started, current = (
                (config, now) if config != now else (status.app_version, self.app_version)
            )
            blocked.append(stack_changed(status.workflow_id, agent.name, str(started), current))
        return tuple(blocked)


def _executor_id(settings: DurableSettings) -> str:
    return executor_id(settings, os.environ)

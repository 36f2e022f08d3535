"""`retry` and `retry_tools`: send a failed model call, or tool call, again.

Both wait between attempts with exponential backoff and jitter, computed by stamina, stop after
``max_attempts`` attempts and schedule no retry once ``max_time`` seconds have passed. A
wait the error asks for (``retry_after`` of `RateLimited` or `RateLimitExceeded`) replaces
the backoff; longer than ``max_retry_after``, or ending after ``max_time``, it is not
waited: the error is returned at once, for an outer `fallback` to act on.

Outcomes are values, so each attempt's outcome is judged inside stamina's retry block: one
worth retrying is raised there as a private exception, and the last one raised is turned
back into the outcome it carries.

Each retry scheduled is one line on the ``fncore.retry`` logger, at ``WARNING``: what
failed, on which attempt of how many, why, and how long until the next attempt. It is
written by a hook fncore adds to stamina's instrumentation hooks (next to stamina's own,
which still run) whenever a retry sequence starts without it.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, replace
from typing import Annotated, Any, Generic, TypeVar

import stamina
import stamina.instrumentation
from pydantic import Field
from returns.result import Success

from fncore.adapter import ProviderModel
from fncore.core import (
    AgentError,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    RateLimited,
    RateLimitExceeded,
    Registry,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._fold import checks_itself, raised
from fncore.core._position_names import MODEL_CALL, TOOL_CALL
from fncore.middleware._checked import Seconds, SomeSeconds, checked
from fncore.middleware._emitted import Emitted
from fncore.middleware._matching import retryable, when
from fncore.middleware._place import place

__all__ = ["retry", "retry_tools"]

_T = TypeVar("_T")

Attempts = Annotated[int, Field(ge=1, le=100)]
"""How many attempts in all, the first included."""

_log = logging.getLogger("fncore.retry")

CAUSE_LENGTH = 200
"""The most characters of the cause a retry's log line quotes."""


class _Again(Exception, Generic[_T]):
    """An outcome worth another attempt, raised inside stamina's retry block.

    It carries what is retried (``subject``) and of how many attempts, for the log line.
    """

    def __init__(
        self, outcome: Outcome[_T], cause: AgentError | ToolResult, subject: str, attempts: int
    ) -> None:
        self.outcome = outcome
        self.cause = cause
        self.subject = subject
        self.attempts = attempts
        what = f"error result {cause.content!r}" if isinstance(cause, ToolResult) else str(cause)
        super().__init__(what)

    def __repr__(self) -> str:
        return f"retryable({type(self.cause).__name__}: {self})"

    def again(self, outcome: Outcome[_T], cause: AgentError | ToolResult) -> _Again[_T]:
        """The same for another attempt's ``outcome``."""
        return _Again(outcome, cause, self.subject, self.attempts)


def _announce(details: stamina.instrumentation.RetryDetails) -> None:
    """The hook stamina calls: one line on ``fncore.retry`` for each retry of ours."""
    again = details.caused_by
    if not isinstance(again, _Again):  # someone else's retry
        return
    cause = str(again)
    if not isinstance(again.cause, ToolResult):
        cause = f"{type(again.cause).__name__}: {cause}"
    if len(cause) > CAUSE_LENGTH:
        cause = cause[: CAUSE_LENGTH - 1] + "…"
    _log.warning(
        "%s: attempt %d of %d failed (%s); attempt %d in %.2f s",
        again.subject,
        details.retry_num,
        again.attempts,
        cause,
        details.retry_num + 1,
        details.wait_for,
    )


def _announced() -> None:
    """Make sure `_announce` is among stamina's hooks (an application may reset them)."""
    hooks = stamina.instrumentation.get_on_retry_hooks()
    if _announce not in hooks:
        stamina.instrumentation.set_on_retry_hooks((*hooks, _announce))


@dataclass(frozen=True, slots=True)
class _Backoff:
    """How long to keep trying, and how long to wait in between."""

    attempts: int
    max_time: float | None
    wait_initial: float
    wait_max: float
    wait_jitter: float
    max_retry_after: float

    async def again(
        self,
        attempt: Callable[[], Awaitable[Outcome[_T]]],
        first: _Again[_T],
        started: float,
        cause_of: Callable[[Outcome[_T]], AgentError | ToolResult | None],
    ) -> Outcome[_T]:
        """The attempts after the first, whose outcome ``first`` carries, began at ``started``."""
        deadline = None if self.max_time is None else started + self.max_time
        timeout = None if deadline is None else deadline - time.monotonic()
        if timeout is not None and timeout <= 0:
            return first.outcome
        _announced()

        def delay(exc: Exception) -> bool | float:
            """Retry after the backoff (True), after the error's own wait, or not at all."""
            if not isinstance(exc, _Again):
                return False
            cause = exc.cause
            if not isinstance(cause, RateLimited | RateLimitExceeded) or cause.retry_after is None:
                return True
            wait = cause.retry_after
            if wait > self.max_retry_after or (
                deadline is not None and time.monotonic() + wait > deadline
            ):
                return False
            return wait

        pending: _Again[_T] | None = first
        outcome = first.outcome
        try:
            async for trial in stamina.retry_context(
                on=delay,
                attempts=self.attempts,
                timeout=timeout,
                wait_initial=self.wait_initial,
                wait_max=self.wait_max,
                wait_jitter=self.wait_jitter,
            ):
                with trial:
                    if pending is not None:  # the first attempt, already made
                        replay, pending = pending, None
                        raise replay
                    outcome = await attempt()
                    cause = cause_of(outcome)
                    if cause is not None:
                        raise first.again(outcome, cause)
        except _Again as last:
            return last.outcome
        return outcome


def _error_worth_it(
    outcome: Outcome[Any], should: Callable[[AgentError], bool]
) -> AgentError | None:
    """The error of ``outcome`` if ``should`` says to retry it (never a `Terminate`/`Pause`)."""
    if type(outcome) is Success:
        return None
    error = outcome.failure()
    if not isinstance(error, AgentError) or not should(error):
        return None
    return error


@checked
def retry(
    *,
    max_attempts: Attempts = 3,
    max_time: Seconds | None = 60.0,
    wait_initial: SomeSeconds = 0.5,
    wait_max: SomeSeconds = 8.0,
    wait_jitter: SomeSeconds = 1.0,
    max_retry_after: SomeSeconds = 60.0,
    on: Sequence[str] | Callable[[AgentError], bool] | None = None,
    name: str = "retry",
) -> Registry:
    """Send a failed model call again, after a backoff, while its error is worth retrying.

    The only retry layer: a model of a provider adapter is sent through its copy without
    the SDK's own retries (`ProviderModel.without_sdk_retries`). A streamed call is retried
    only while none of its events reached the consumer; after that its error is returned.

    Args:
        max_attempts: Attempts in all, the first included (1: one call, retried neither
            here nor by the model's SDK, whose own retries are off under ``retry``).
        max_time: Seconds from the first attempt after which no retry is scheduled (a
            backoff scheduled before may end up to ``wait_max`` later; a ``retry_after``
            wait that would end later is not taken); ``None``: no limit.
        wait_initial: The first backoff, in seconds; each next one doubles it.
        wait_max: The longest backoff, in seconds.
        wait_jitter: Up to this many random seconds added to each backoff.
        max_retry_after: The longest wait a `RateLimited` error's ``retry_after`` is
            honoured for; asking for more, it is returned at once, not retried.
        on: Which errors to retry: names (``"retryable"`` for a `ModelError` whose
            ``retryable`` is set, or error types such as ``"BadRequest"``), or in code a
            function of the error returning whether to retry. ``None``: ``["retryable"]``.
        name: The middleware's name, to tell two instances apart.

    Example:
        >>> registry = Registry()
        >>> registry.include(retry(max_attempts=4))
        >>> [m.name for m in registry.middleware]
        ['retry']
    """
    should = when(on, ("retryable",), "retryable", retryable)
    backoff = _Backoff(max_attempts, max_time, wait_initial, wait_max, wait_jitter, max_retry_after)
    registry = Registry()

    @registry.on(MODEL_CALL, name=name, **place("retry"))
    @checks_itself(MODEL_CALL, name)
    async def retrying(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        try:
            started = time.monotonic()
            model = ctx.model
            if isinstance(model, ProviderModel):
                ctx = replace(ctx, model=model.without_sdk_retries())
            watch: Emitted | None = None
            if ctx.run.emit is not None:
                watch = Emitted()
                ctx = ctx.map_events(watch)
            outcome = await call_next(ctx)
            if type(outcome) is Success or max_attempts == 1:
                return outcome

            def cause_of(outcome: Outcome[ModelResponse]) -> AgentError | None:
                if watch is not None and watch.seen:  # the consumer saw part of this answer
                    return None
                return _error_worth_it(outcome, should)

            cause = cause_of(outcome)
            if cause is None:
                return outcome
            first = _Again(outcome, cause, f"model call to {ctx.model.name}", max_attempts)
            return await backoff.again(lambda: call_next(ctx), first, started, cause_of)
        except Exception as exc:
            return raised(MODEL_CALL, name, exc)

    return registry


def _is_error_result(subject: AgentError | ToolResult) -> bool:
    return isinstance(subject, ToolResult)


@checked
def retry_tools(
    *,
    max_attempts: Attempts = 3,
    max_time: Seconds | None = 60.0,
    wait_initial: SomeSeconds = 0.5,
    wait_max: SomeSeconds = 8.0,
    wait_jitter: SomeSeconds = 1.0,
    max_retry_after: SomeSeconds = 60.0,
    on: Sequence[str] | Callable[[AgentError | ToolResult], bool] | None = None,
    tools: Sequence[str] | None = None,
    name: str = "retry_tools",
) -> Registry:
    """Run a failed tool call again, after a backoff, while its failure is worth retrying.

    A tool call fails with an error result (the tool raised or timed out; `ToolResult`
    with ``is_error``) or, from a middleware inside, an error value. Only what the model
    would see last is kept: the result of the last attempt.

    Args:
        max_attempts: Attempts in all, the first included: at least 2 (one retry).
        max_time: Seconds from the first attempt after which no retry is scheduled;
            ``None``: no limit.
        wait_initial: The first backoff, in seconds; each next one doubles it.
        wait_max: The longest backoff, in seconds.
        wait_jitter: Up to this many random seconds added to each backoff.
        max_retry_after: The longest wait an error's ``retry_after`` (a
            `RateLimitExceeded` from a ``rate_limit`` inside) is honoured for.
        on: What to retry: names (``"error_result"`` for an error result, or error types
            such as ``"RateLimitExceeded"``), or in code a function of the error result or
            error returning whether to retry. ``None``: ``["error_result"]``.
        tools: Only these tools (retry only what is safe to run twice); ``None``: all.
        name: The middleware's name, to tell two instances apart.

    Raises:
        ValueError: when it would retry nothing: ``max_attempts=1``, or an empty ``tools``.

    Example:
        >>> registry = Registry()
        >>> registry.include(retry_tools(max_attempts=2))
        >>> [m.name for m in registry.middleware]
        ['retry_tools']
    """
    if max_attempts == 1 or (tools is not None and not tools):
        msg = (
            "retry_tools would retry nothing: set max_attempts to 2 or more, and list tool "
            "names in tools or leave it out (every tool)"
        )
        raise ValueError(msg)
    should = when(on, ("error_result",), "error_result", _is_error_result)
    backoff = _Backoff(max_attempts, max_time, wait_initial, wait_max, wait_jitter, max_retry_after)
    registry = Registry()
    only = None if tools is None else tuple(tools)

    def cause_of(outcome: Outcome[ToolResult]) -> AgentError | ToolResult | None:
        if type(outcome) is Success:
            result = outcome.unwrap()
            return result if result.is_error and should(result) else None
        return _error_worth_it(outcome, should)

    @registry.on(TOOL_CALL, name=name, tools=only, **place("retry_tools"))
    async def retrying_tools(ctx: ToolCallContext, call_next: ToolCallNext) -> Outcome[ToolResult]:
        started = time.monotonic()
        outcome = await call_next(ctx)
        cause = cause_of(outcome)
        if cause is None:
            return outcome
        subject = f"tool call {ctx.tool.name} [{ctx.call.id}]"
        first = _Again(outcome, cause, subject, max_attempts)
        return await backoff.again(lambda: call_next(ctx), first, started, cause_of)

    return registry

"""The output guardrails of one model call: checking the text, holding or passing the stream.

Blocking mode holds every event from the first unchecked character on. Each time ``window``
new characters have arrived (or text has waited ``seconds`` unchecked), the guardrails run,
in a task of their own, on the text so far; when they allow it, the events up to that
point are released, in order. At the end of the response they run on the whole text
(unless its last character was already allowed). A block stops the model call, drops
every held event and announces `GuardTripped`.

Parallel mode passes every event on at once and runs the same checks alongside; a block
stops the model call and the stream there.
"""

from __future__ import annotations

import asyncio
import dataclasses
from collections import deque
from collections.abc import Sequence

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    MiddlewareError,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    RunInfo,
    StreamEvent,
    Terminate,
    TextDelta,
)
from fncore.core._position_names import MODEL_CALL
from fncore.middleware._guardrails import (
    Block,
    GuardCheck,
    Guardrail,
    Policy,
    Rewrite,
    judge,
    with_text,
)


class Gate:
    """One model call's output guardrails, streamed or not."""

    __slots__ = (
        "allowed",
        "call",
        "checked",
        "checking",
        "closing",
        "emit",
        "guards",
        "halt",
        "held",
        "holding",
        "length",
        "parallel",
        "pieces",
        "policy",
        "run_info",
        "seconds",
        "timer",
        "window",
    )

    def __init__(
        self,
        guards: Sequence[Guardrail],
        run: RunInfo,
        policy: Policy,
        parallel: bool,
        window: int,
        seconds: float | None,
    ) -> None:
        self.guards = guards
        self.run_info = run
        self.policy = policy
        self.parallel = parallel
        self.window = window
        self.seconds = seconds
        self.emit = run.emit  # the consumer's side of this layer
        self.pieces: list[str] = []
        self.length = 0  # characters streamed so far
        self.checked = 0  # characters the latest check started with
        self.allowed = 0  # characters the guardrails allowed
        self.held: deque[tuple[StreamEvent, int]] = deque()  # event, characters up to it
        self.holding = False  # a guardrail rewrote a prefix: hold the rest to the end
        self.halt: Failure[Terminate | AgentError] | None = None
        self.checking: asyncio.Task[None] | None = None
        self.timer: asyncio.TimerHandle | None = None
        self.call: asyncio.Future[Outcome[ModelResponse]] | None = None
        self.closing = False

    async def run(self, ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        """The model call through this gate: its response checked, its events held or not."""
        if self.emit is None:
            return await self.final(await call_next(ctx))
        call = asyncio.ensure_future(call_next(ctx.map_events(self.push)))
        self.call = call
        try:
            await asyncio.wait((call,))
            await self.settle()
        except BaseException:  # cancelled: stop what runs for us
            self.stop_all()
            raise
        if self.halt is not None:
            return self.halt
        return await self.final(call.result())

    def push(self, event: StreamEvent) -> StreamEvent | None:
        """The event map: note the text, hold (blocking) or pass (parallel) the event."""
        if self.halt is not None:
            return None  # stopped: nothing more reaches the consumer
        if type(event) is TextDelta:
            self.pieces.append(event.text)
            self.length += len(event.text)
            self.schedule()
            if self.parallel:
                return event
        elif self.parallel or not self.held:
            return event
        self.held.append((event, self.length))
        return None

    def schedule(self) -> None:
        """Start a check when a window of text is unchecked, or arm the timer for one."""
        if self.checking is not None or self.closing or self.holding:
            return
        if self.length - self.checked >= self.window:
            self.start_check()
        elif self.seconds is not None and self.timer is None and self.length > self.checked:
            self.timer = asyncio.get_running_loop().call_later(self.seconds, self.due)

    def due(self) -> None:
        """The timer: text has waited ``seconds`` unchecked."""
        self.timer = None
        if self.checking is None and not self.closing and self.length > self.checked:
            self.start_check()

    def start_check(self) -> None:
        """Check the text so far in a task of its own."""
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        self.checked = self.length
        self.checking = asyncio.create_task(self.check("".join(self.pieces)))

    async def check(self, text: str) -> None:
        """Run the guardrails on ``text``, a prefix, and act on their verdict."""
        try:
            verdict = await judge(self.guards, GuardCheck(text, "output", self.run_info))
        except Exception as exc:
            self.stop(self.raised(exc))
            verdict = None
        finally:
            self.checking = None
        if self.halt is not None or verdict is None:
            return
        if isinstance(verdict, Block):
            self.stop(self.blocked(verdict))
            return
        if isinstance(verdict, Rewrite):
            self.holding = True  # the final check decides
            return
        self.allowed = len(text)
        self.release(len(text))
        self.schedule()

    async def settle(self) -> None:
        """The call is done: no new checks; wait for the one running."""
        self.closing = True
        if self.timer is not None:
            self.timer.cancel()
            self.timer = None
        while self.checking is not None:
            await asyncio.wait((self.checking,))

    async def final(self, outcome: Outcome[ModelResponse]) -> Outcome[ModelResponse]:
        """The whole response checked: released, rewritten or blocked."""
        if type(outcome) is not Success:
            return outcome  # held events of a failed call are dropped
        response: ModelResponse = outcome.unwrap()
        text = response.text
        if not text or (self.allowed == len(text) and not self.holding):
            self.release(None)
            return outcome
        try:
            verdict = await judge(self.guards, GuardCheck(text, "output", self.run_info))
        except Exception as exc:
            return self.raised(exc)
        if isinstance(verdict, Block):
            return self.blocked(verdict)
        if isinstance(verdict, Rewrite):
            self.rewritten(verdict.text)
            message = with_text(response.message, verdict.text)
            return Success(dataclasses.replace(response, message=message))
        self.release(None)
        return outcome

    def release(self, upto: int | None) -> None:
        """Pass on the held events up to ``upto`` characters of text (``None``: all)."""
        emit, held = self.emit, self.held
        if emit is None:
            return
        while held and (upto is None or held[0][1] <= upto):
            emit(held.popleft()[0])

    def rewritten(self, text: str) -> None:
        """Blocking: stream the rewritten text's rest, then the held events that are not text.

        When the rewrite changed text already released, the stream stops at what was
        released; the response holds the rewritten text.
        """
        emit = self.emit
        if emit is None or self.parallel:
            return
        shown = "".join(self.pieces)[: self.allowed]
        if text.startswith(shown) and len(text) > len(shown):
            emit(TextDelta(text[len(shown) :]))
        for event, _ in self.held:
            if type(event) is not TextDelta:
                emit(event)
        self.held.clear()

    def blocked(self, verdict: Block) -> Failure[Terminate | AgentError]:
        """The failure of a block, announced on the stream."""
        self.held.clear()
        return self.policy.blocked(self.run_info, "output", verdict.reason, MODEL_CALL, self.emit)

    def raised(self, exc: Exception) -> Failure[Terminate | AgentError]:
        """The failure of a guardrail that raised: the run fails closed."""
        self.held.clear()
        return Failure(
            MiddlewareError(
                message=f"an output guardrail raised {type(exc).__name__}: {exc}",
                position=MODEL_CALL,
                middleware=self.policy.name,
                exception_type=type(exc).__name__,
            )
        )

    def stop(self, failure: Failure[Terminate | AgentError]) -> None:
        """End the model call early with ``failure``."""
        self.halt = failure
        call = self.call
        if call is not None and not call.done():
            call.cancel()

    def stop_all(self) -> None:
        """Cancel the call, the running check and the timer."""
        for task in (self.call, self.checking):
            if task is not None and not task.done():
                task.cancel()
        if self.timer is not None:
            self.timer.cancel()

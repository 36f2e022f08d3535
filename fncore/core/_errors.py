"""Typed error values.

Errors inside fncore are values, carried in ``Failure(...)``; nothing in the core raises for
an expected outcome. Every error says what failed, where, and what to do about it. The tree
of them all is drawn in the public module that exports them, `fncore.errors`.

Registration mistakes are not values: they raise `RegistrationError` when the stack is built,
because they are programming errors to fix before anything runs.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Literal, TypeAlias

from fncore.core._usage import NO_USAGE, Usage

if TYPE_CHECKING:
    from fncore.core._messages import Message
    from fncore.core._pause import Paused

__all__ = [
    "AgentError",
    "AuthenticationFailed",
    "BadRequest",
    "BudgetExceeded",
    "CallLimitExceeded",
    "CheckpointBusy",
    "CheckpointError",
    "CheckpointExpired",
    "CheckpointMismatch",
    "CheckpointNotFound",
    "ConnectionFailed",
    "DeadlineExceeded",
    "DecisionConflict",
    "DecisionError",
    "DecisionMissing",
    "DecisionNotAllowed",
    "InvalidHistory",
    "InvalidPrompt",
    "LimitExceeded",
    "LoopError",
    "MaxIterationsReached",
    "MiddlewareError",
    "ModelError",
    "ModelNotFound",
    "ModelTimeout",
    "OutputMissing",
    "OutputValidationFailed",
    "PermissionDenied",
    "Position",
    "ProviderUnavailable",
    "RateLimitExceeded",
    "RateLimited",
    "RegistrationError",
    "ScopeRequired",
    "SessionConflict",
    "SessionError",
    "StreamInterrupted",
    "SubagentCycle",
    "SubagentDepthExceeded",
    "SubagentError",
    "TooManyToolErrors",
    "ToolsUnavailable",
    "UnexpectedResponse",
    "UnknownRequest",
    "UnknownToolCalled",
]

Position: TypeAlias = Literal[
    "run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt"
]
"""Where a middleware stands; see the concepts page for what each wraps."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AgentError:
    """Base of every error value.

    Example:
        >>> err = MiddlewareError(message="boom", position="model_call", middleware="log")
        >>> str(err)
        "model_call middleware 'log': boom"
    """

    message: str
    """What went wrong and what to do about it."""
    position: Position | None = None
    """The position where it happened, if any."""
    middleware: str | None = None
    """The name of the middleware that failed, if one did."""

    def __str__(self) -> str:
        where = ""
        if self.position and self.middleware:
            where = f"{self.position} middleware {self.middleware!r}: "
        elif self.position:
            where = f"{self.position}: "
        return f"{where}{self.message}"


@dataclass(frozen=True, slots=True, kw_only=True)
class MiddlewareError(AgentError):
    """User code at a position raised, or returned something that is not a ``Result``."""

    exception_type: str = ""
    """The class name of the exception raised, if one was."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelError(AgentError):
    """The model call failed. Provider adapters return the specific kinds below."""

    retryable: bool = False
    """Whether the same request may succeed if sent again."""
    provider: str = ""
    """Which provider failed (``openai``, ``anthropic``, ...), when known."""
    status: int | None = None
    """The HTTP status the provider answered with, if it answered."""


@dataclass(frozen=True, slots=True, kw_only=True)
class AuthenticationFailed(ModelError):
    """The provider refused the credentials (401): set or fix the API key."""


@dataclass(frozen=True, slots=True, kw_only=True)
class PermissionDenied(ModelError):
    """The credentials may not do this (403): check the key's project, model access or region."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BadRequest(ModelError):
    """The provider rejected the request (400, 409, 413, 422, or another 4xx without a type).

    Its message says which field or what to change.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelNotFound(ModelError):
    """The model or endpoint does not exist (404): check the model name and base URL."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimited(ModelError):
    """Too many requests or tokens (429); wait ``retry_after`` seconds if given."""

    retryable: bool = True
    retry_after: float | None = None
    """Seconds the provider asked to wait (from ``retry-after``), if it said."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ProviderUnavailable(ModelError):
    """The provider is overloaded or failing (408, 5xx, 529); retrying later may work."""

    retryable: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ModelTimeout(ModelError):
    """No answer within the configured timeout; raise ``model.timeout`` or retry."""

    retryable: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class ConnectionFailed(ModelError):
    """The provider could not be reached: check the base URL, network and proxy."""

    retryable: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class StreamInterrupted(ModelError):
    """The answer was cut off, or a stream held something that could not be decoded.

    Cut off: a stream ended before its last event, or the connection closed mid-answer,
    streamed or not.
    """

    retryable: bool = True


@dataclass(frozen=True, slots=True, kw_only=True)
class UnexpectedResponse(ModelError):
    """The provider answered 2xx with a body that is not the API's answer.

    An HTML page (a proxy, a login portal), ``{}``, or an error object sent with status 200:
    ``status`` is the HTTP status and the message quotes the start of the body. Usually
    ``base_url`` points at something other than the provider's API.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class LoopError(AgentError):
    """The agent loop stopped before an answer."""

    messages: tuple[Message, ...] = ()
    """The transcript up to the stop; every tool call in it has its result."""
    usage: Usage = NO_USAGE
    """Tokens spent before the stop."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MaxIterationsReached(LoopError):
    """Every allowed round ended in tool calls; raise ``max_iterations`` or narrow the task."""


@dataclass(frozen=True, slots=True, kw_only=True)
class TooManyToolErrors(LoopError):
    """Too many consecutive rounds had a failing tool call."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownToolCalled(LoopError):
    """The model called a tool that is not offered (with ``terminate_on_unknown_calls``)."""

    tool_name: str = ""
    """The name the model used."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputValidationFailed(LoopError):
    """The model's answer did not fit the agent's ``output_type``, after every retry.

    Each failed attempt went back to the model with the validation errors; ``raw`` and
    ``errors`` are those of the last one.
    """

    raw: str = ""
    """The last answer the model gave: its text, or the ``final_result`` tool's arguments."""
    errors: str = ""
    """Why it did not fit, as pydantic said it (one problem per line)."""
    attempts: int = 0
    """How many answers were tried (``output_retries`` + 1)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class OutputMissing(LoopError):
    """The run stopped without an answer to give as the agent's ``output_type``.

    It paused for a human, a middleware terminated it with a text that is not such a value,
    the tool calls were required, or automatic tool calls are off. ``stop_reason`` says
    which; a paused run's checkpoint is in ``paused`` and resumes as usual.
    """

    stop_reason: str = ""
    """The run's `StopReason`."""
    output: str = ""
    """The run's text output (the termination text, say)."""
    paused: Paused | None = None
    """With ``stop_reason == "paused"``: what to resume, as on `RunResult`."""


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidPrompt(AgentError):
    """What ``run`` or ``stream`` was given is not a prompt; nothing ran.

    A prompt is a ``str`` (the user's text), a `Message`, or a sequence of messages.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class InvalidHistory(AgentError):
    """The conversation breaks the tool-call/result pairing that providers enforce.

    Each assistant turn's tool calls (with unique, non-empty ids) must be answered, each by
    exactly one result, after that turn and before the next assistant turn.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionError(AgentError):
    """The session store failed to load or commit a session; nothing of the run was saved."""

    session_id: str = ""
    """The session concerned."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SessionConflict(SessionError):
    """Another run committed to the session after this run loaded it; nothing was saved.

    Run the turn again: it loads the new version and continues from there.
    """

    version: int = 0
    """The version this run loaded, which is no longer the current one."""


@dataclass(frozen=True, slots=True, kw_only=True)
class LimitExceeded(AgentError):
    """A limit set by configuration or middleware stopped the run."""

    limit: str = ""
    """Which limit, as configured (``model_calls``, ``tokens_per_minute``, ...)."""
    scope: Literal["reply", "session", "shared", ""] = ""
    """Where it is counted: this reply, this session, or a store shared across runs."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CallLimitExceeded(LimitExceeded):
    """More model or tool calls than ``limit_calls`` allows (with ``exit="error"``)."""

    allowed: int = 0
    """How many calls the limit allows."""


@dataclass(frozen=True, slots=True, kw_only=True)
class BudgetExceeded(LimitExceeded):
    """The token or cost budget is spent (``budget`` with ``exit="error"``)."""

    spent: float = 0.0
    """What was spent when the limit was reached (weighted tokens, or money)."""
    allowed: float = 0.0
    """The budget."""


@dataclass(frozen=True, slots=True, kw_only=True)
class RateLimitExceeded(LimitExceeded):
    """No capacity within ``rate_limit``'s longest wait; try again later."""

    retry_after: float | None = None
    """Seconds until capacity is expected, if known."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DeadlineExceeded(LimitExceeded):
    """The deadline of the whole reply passed (``timeout``)."""

    seconds: float = 0.0
    """The deadline, in seconds."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ScopeRequired(AgentError):
    """A limit is counted per session (or per tenant), and this run has none; nothing ran.

    Sessions and request metadata are chosen per run, so the agent cannot know when it is
    built whether its runs will have them: a run without them fails before any model call
    instead of running without the limit. Pass ``session_id=`` (or the tenant in
    ``metadata=``), or drop the per-session (per-tenant) limit.
    """

    limit: str = ""
    """The limit that needs the scope, as configured (``model_calls_per_session``, ...)."""
    scope: Literal["session", "shared"] = "session"
    """What the run lacks: a session, or the metadata naming its share of a shared store."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentError(AgentError):
    """A sub-agent (an agent called as a tool, ``Agent.as_tool``) could not be called.

    Its own failures are not this: they become an error result the calling model can react
    to. This ends the whole run, at every level of the chain.
    """

    agent: str = ""
    """The sub-agent's tool name."""
    chain: tuple[str, ...] = ()
    """The agents calling one another, outermost first, ending with the one refused."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentCycle(SubagentError):
    """The sub-agent is already running further up the chain: A calls B calls A."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SubagentDepthExceeded(SubagentError):
    """The chain of agents calling agents is deeper than the tool's ``max_depth``."""

    max_depth: int = 0
    """The deepest chain allowed."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointError(AgentError):
    """A paused run could not be resumed; the checkpoint is as it was, and nothing ran."""

    checkpoint_id: str = ""
    """The checkpoint concerned."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointNotFound(CheckpointError):
    """No checkpoint has this id in the agent's session store."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointExpired(CheckpointError):
    """The checkpoint is past its time to live; the paused run cannot go on."""


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointBusy(CheckpointError):
    """Another resume of this checkpoint is under way; try again once it is done.

    A resume claims its checkpoint for as long as it runs (renewing the claim); a process
    that died while resuming frees it when the claim lapses.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointMismatch(CheckpointError):
    """The agent resuming is not built like the one that paused.

    Its middleware, tools, instructions or loop settings differ, so the checkpoint's state
    may not fit it.
    """


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionError(CheckpointError):
    """The decisions given do not fit what the checkpoint waits for; nothing ran."""

    call_id: str = ""
    """The request concerned."""


@dataclass(frozen=True, slots=True, kw_only=True)
class UnknownRequest(DecisionError):
    """A decision names a call the checkpoint does not wait for."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionMissing(DecisionError):
    """A call the checkpoint waits for has no decision."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionNotAllowed(DecisionError):
    """A decision the request does not allow, or an edit whose arguments the tool refuses."""


@dataclass(frozen=True, slots=True, kw_only=True)
class DecisionConflict(DecisionError):
    """The checkpoint was already resumed with other decisions; a decision is taken once."""


@dataclass(frozen=True, slots=True, kw_only=True)
class ToolsUnavailable(AgentError):
    """The tools to offer could not be gathered before the run; nothing ran.

    An MCP server could not be started, reached or listed, or a server's tool clashes with
    another tool. The message names the server (and both tools' sources for a clash).
    """

    source: str = ""
    """Where it failed, e.g. ``mcp server time``; empty for a name clash."""


class RegistrationError(Exception):
    """A middleware, hook or tool was registered wrongly; the message says what to change."""

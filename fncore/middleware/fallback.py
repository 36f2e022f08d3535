"""`fallback`: when the model fails, send the same request to the next model of a list.

The model that answered each call is recorded in the reply's state (`answered_by`). A
streamed call falls back only while none of its events reached the consumer.

Reasoning a provider signed (Anthropic's thinking signatures and redacted thinking,
OpenAI's encrypted reasoning) is valid only where it came from. Each model's request keeps
the signatures of its own origin (its provider and base URL) and loses the others: the
reasoning's text stays, unsigned, which adapters leave out of what they send. Where a
signature came from is kept in the session's state, so later replies know it too; one
that was never recorded came from the agent's own model.
"""

from __future__ import annotations

import hashlib
from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import TypeGuard

from returns.result import Success

from fncore.adapter import ProviderModel
from fncore.core import (
    AgentError,
    Message,
    Model,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    Part,
    ReasoningPart,
    Registry,
    RunInfo,
    StateKey,
)
from fncore.core._position_names import MODEL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._emitted import Emitted
from fncore.middleware._matching import retryable, when
from fncore.middleware._place import place

__all__ = ["answered_by", "fallback"]

DEFAULT_ON = (
    "retryable",
    "ModelNotFound",
    "AuthenticationFailed",
    "PermissionDenied",
    "UnexpectedResponse",
)
"""What falls back by default: errors another model (or provider) may well not have."""

_SIGNED_BY: StateKey[dict[str, str]] = StateKey("fncore.fallback.signed_by", default=dict)
"""Session state: the origin of each signature a fallback model produced, by digest."""

_ANSWERED: dict[str, StateKey[tuple[str, ...]]] = {}


def _answered_key(name: str) -> StateKey[tuple[str, ...]]:
    key = _ANSWERED.get(name)
    if key is None:
        key = _ANSWERED[name] = StateKey(f"fncore.fallback.{name}.answered_by", default=tuple)
    return key


def answered_by(run: RunInfo, name: str = "fallback") -> tuple[str, ...]:
    """The names of the models that answered this reply's model calls through ``name``.

    One name per call that got an answer, in order: the agent's model, or the fallback
    model that answered in its place. Read it from a ``run_end`` hook (``event.run``) or a
    middleware (``ctx.run``).

    Example:
        >>> from fncore.core import State
        >>> answered_by(RunInfo("r1", {}, State()))
        ()
    """
    return run.state.get(_answered_key(name))


def _origin(model: Model) -> str:
    """Where ``model``'s signatures are valid: a provider's endpoint, else the model itself."""
    if isinstance(model, ProviderModel):
        return f"{model.endpoint.provider} {model.endpoint.url}"
    return f"{type(model).__qualname__} {model.name}"


def _digest(part: ReasoningPart) -> str:
    blob = f"{part.signature or ''}\0{part.redacted or ''}".encode()
    return hashlib.blake2b(blob, digest_size=16).hexdigest()


def _signed(part: Part) -> TypeGuard[ReasoningPart]:
    return type(part) is ReasoningPart and (part.signature is not None or part.redacted is not None)


def _has_signed(messages: tuple[Message, ...]) -> bool:
    return any(_signed(p) for m in messages if m.role == "assistant" for p in m.parts)


def _for(request: ModelRequest, home: str, target: str, signed_by: dict[str, str]) -> ModelRequest:
    """``request`` without the signatures that did not come from ``target``."""
    messages: list[Message] = []
    changed = False
    for message in request.messages:
        if message.role == "assistant" and any(_signed(p) for p in message.parts):
            parts: list[Part] = []
            for part in message.parts:
                if _signed(part) and signed_by.get(_digest(part), home) != target:
                    changed = True
                    if part.text:
                        parts.append(ReasoningPart(part.text))
                    continue
                parts.append(part)
            message = replace(message, parts=tuple(parts))
        messages.append(message)
    return replace(request, messages=tuple(messages)) if changed else request


@checked
def fallback(
    *,
    models: Sequence[Model] = (),
    on: Sequence[str] | Callable[[AgentError], bool] | None = None,
    name: str = "fallback",
) -> Registry:
    """When the agent's model fails, send the same request to each of ``models`` in turn.

    The first answer wins. When every model fails, the last model's error is returned.

    Args:
        models: The models to fall back to, in order: model objects in code, preset names
            (``[models.<name>]``) in configuration. Required.
        on: Which errors fall back: names (``"retryable"`` for a `ModelError` whose
            ``retryable`` is set, or error types), or in code a function of the error
            returning whether to fall back. ``None``: `DEFAULT_ON`.
        name: The middleware's name, to tell two instances apart (and for `answered_by`).

    Raises:
        ValueError: without ``models``.

    Example:
        >>> from fncore.testing import TestModel
        >>> registry = Registry()
        >>> registry.include(fallback(models=[TestModel(name="cheap")]))
        >>> [m.name for m in registry.middleware]
        ['fallback']
    """
    backups = tuple(models)
    if not backups:
        msg = 'fallback needs models to fall back to: models = ["a preset name", ...]'
        raise ValueError(msg)
    should = when(on, DEFAULT_ON, "retryable", retryable)
    answered = _answered_key(name)
    registry = Registry()

    @registry.on(MODEL_CALL, name=name, **place("fallback"))
    async def falling_back(
        ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        watch: Emitted | None = None
        if ctx.run.emit is not None:
            watch = Emitted()
            ctx = ctx.map_events(watch)
        request = ctx.request
        model = primary = ctx.model
        signed_by: dict[str, str] | None = None
        if _has_signed(request.messages):
            signed_by = ctx.run.session_state.get(_SIGNED_BY)
            if signed_by:
                home = _origin(primary)
                ctx = replace(ctx, request=_for(request, home, home, signed_by))
        outcome = await call_next(ctx)
        for backup in backups:
            if type(outcome) is Success:
                break
            error = outcome.failure()
            if (
                not isinstance(error, AgentError)
                or not should(error)
                or (watch is not None and watch.seen)
            ):
                return outcome
            model = backup
            sent = request
            if signed_by is not None:
                sent = _for(request, _origin(primary), _origin(backup), signed_by)
            outcome = await call_next(replace(ctx, model=backup, request=sent))
        if type(outcome) is not Success:
            return outcome
        response = outcome.unwrap()
        state = ctx.run.state
        state.set(answered, (*state.get(answered), model.name))
        if model is primary:
            return outcome
        target = _origin(model)
        if target != _origin(primary) and _has_signed((response.message,)):
            session = ctx.run.session_state
            known: dict[str, str] = session.get(_SIGNED_BY).copy()
            known.update((_digest(p), target) for p in response.message.parts if _signed(p))
            session.set(_SIGNED_BY, known)
        if not response.model_name:
            return Success(replace(response, model_name=model.name))
        return outcome

    return registry

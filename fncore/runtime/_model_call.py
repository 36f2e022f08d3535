"""Calling a `Model`, streaming or not, and holding it to its contract.

A model returns ``Success(ModelResponse)`` or ``Failure(ModelError)`` and streams deltas
then a response. Anything else it returns, raises or streams becomes a `ModelError` naming
the model, so nothing a model does escapes the run or reaches the stream's consumer.
"""

from __future__ import annotations

from typing import Any, cast

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Emit,
    EventMapFailed,
    Message,
    Model,
    ModelError,
    ModelRequest,
    ModelResponse,
    Outcome,
)
from fncore.core._fold import short_repr
from fncore.core._model import STREAM_DELTA_TYPES
from fncore.core._position_names import MODEL_CALL


def model_name(model: Model) -> str:
    """The model's name for error messages; never raises."""
    try:
        return str(model.name)
    except Exception:
        return type(model).__name__


def _error(model: Model, problem: str, *, retryable: bool = False) -> ModelError:
    return ModelError(
        message=f"model {model_name(model)!r} {problem}",
        position=MODEL_CALL,
        retryable=retryable,
    )


def raised_by(model: Model, exc: Exception) -> ModelError:
    return _error(model, f"raised {type(exc).__name__}: {exc}")


def _is_response(value: Any) -> bool:
    return (
        type(value) is ModelResponse
        and type(cast(object, value.message)) is Message
        and value.message.role == "assistant"
    )


def _returned(model: Model, out: object) -> ModelError:
    if type(out) is Success:
        got = f"Success({short_repr(out.unwrap())})"
    elif type(out) is Failure:
        got = f"Failure({short_repr(out.failure())})"
    else:
        got = f"{type(out).__name__} {short_repr(out)}"
    return _error(
        model,
        f"returned {got}; Model.request must return Success(ModelResponse) with an "
        "assistant message, or Failure(ModelError)",
    )


def checked(model: Model, out: Any) -> Outcome[ModelResponse]:
    """``out``, what ``model.request`` returned, if it keeps the contract; else the error."""
    cls = type(out)
    if cls is Success:
        if _is_response(out.unwrap()):
            return out  # type: ignore[no-any-return]
    elif cls is Failure and isinstance(out.failure(), AgentError):
        return out  # type: ignore[no-any-return]
    return Failure(_returned(model, out))


def answered(model: Model, out: Any) -> Outcome[ModelResponse]:
    """`checked`, with the usual answer (a response with an assistant message) seen first."""
    response = out._inner_value if type(out) is Success else None
    message: object = response.message if type(response) is ModelResponse else None
    if type(message) is Message and message.role == "assistant":
        return out  # type: ignore[no-any-return]
    return checked(model, out)


async def ask(model: Model, request: ModelRequest, emit: Emit | None) -> Outcome[ModelResponse]:
    """Send ``request`` to ``model`` (streaming when ``emit`` is set) and check the answer."""
    if emit is not None:
        return await _stream(model, request, emit)
    try:
        out: Any = await model.request(request)
    except Exception as exc:
        return Failure(raised_by(model, exc))
    return checked(model, out)


async def _stream(model: Model, request: ModelRequest, emit: Emit) -> Outcome[ModelResponse]:
    try:
        item: Any
        async for item in model.stream(request):
            cls = type(item)
            if cls in STREAM_DELTA_TYPES:
                emit(item)
            elif cls is ModelResponse and _is_response(item):
                return Success(item)
            elif isinstance(item, AgentError):
                return Failure(item)
            else:
                return Failure(
                    _error(
                        model,
                        f"streamed {cls.__name__} {short_repr(item)}; a model stream yields "
                        "stream deltas, then a ModelResponse or a ModelError",
                    )
                )
    except EventMapFailed as failed:
        return Failure(failed.error)
    except Exception as exc:
        return Failure(raised_by(model, exc))
    return Failure(_error(model, "ended its stream without a response", retryable=True))


def sent(out: Outcome[ModelResponse], request: ModelRequest) -> Outcome[ModelResponse]:
    """``out``, its response holding ``request`` as what was sent, unless it holds one already.

    The loop follows the tool choice actually sent, which ``reasoning`` and ``model_call``
    middleware may change for one round.
    """
    if type(out) is Success:
        response = out.unwrap()
        if response._sent is None:  # each field named: a third of `replace`'s cost, per round
            return Success(
                ModelResponse(
                    response.message,
                    response.usage,
                    response.finish_reason,
                    response.model_name,
                    _sent=request,
                )
            )
    return out

"""An agent's ``output_type`` at the edges: choosing the strategy, typing the outcome."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pydantic import ValidationError
from returns.result import Failure, Result, Success

from fncore.core import AgentError, Model, RegistrationError, RunResult
from fncore.core._errors import OutputMissing, OutputValidationFailed
from fncore.core._output import OutputSpec, errors_of
from fncore.core._position_names import RUN

_STRATEGIES = ("auto", "native", "tool")


def output_spec(
    model: Model, output_type: object, strategy: object, retries: object
) -> OutputSpec[Any] | None:
    """The agent's `OutputSpec`; ``None`` for ``str`` (plain text, the default).

    ``auto`` asks for the provider's native JSON-schema output when the model says it has
    it (a true ``native_output`` attribute, as fncore's adapters and offline models have),
    and for the ``final_result`` tool otherwise.

    Raises:
        RegistrationError: for an unknown strategy, a bad retry count, or a type pydantic
            cannot describe.
    """
    if strategy not in _STRATEGIES:
        msg = (
            f"output_strategy must be one of {', '.join(map(repr, _STRATEGIES))}, not {strategy!r}"
        )
        raise RegistrationError(msg)
    if type(retries) is not int or retries < 0:
        msg = f"output_retries must be a whole number >= 0, not {retries!r}"
        raise RegistrationError(msg)
    if output_type is str:
        return None
    if strategy == "auto":
        strategy = "native" if getattr(model, "native_output", False) is True else "tool"
    return OutputSpec(output_type, strategy, retries)  # type: ignore[arg-type]


def typed(spec: OutputSpec[Any], outcome: Result[RunResult, AgentError]) -> Result[Any, AgentError]:
    """``outcome`` with its output parsed into ``spec``'s type, or the error saying why not.

    A completed run's answer was validated by the loop; it is parsed again here, after the
    ``run`` middleware, so what they changed is checked too (`OutputValidationFailed`). A
    run that stopped otherwise (paused, terminated, tools required or awaiting) gives its
    output if its text is such a value, and `OutputMissing` if not.
    """
    if type(outcome) is not Success:
        return outcome
    done: RunResult = outcome.unwrap()
    try:
        value = spec.parse(done.output)
    except ValidationError as exc:
        problem = errors_of(exc)
        name = spec.schema.name
        if done.stop_reason == "completed":
            return Failure(
                OutputValidationFailed(
                    message=(
                        f"the run's output does not fit output_type {name}: "
                        f"{problem.splitlines()[0]}; a run middleware changed it, or "
                        "the model's answer went unchecked"
                    ),
                    position=RUN,
                    messages=done.messages,
                    usage=done.usage,
                    raw=done.output,
                    errors=problem,
                )
            )
        return Failure(
            OutputMissing(
                message=(
                    f"the run stopped ({done.stop_reason}) without an answer to give as "
                    f"output_type {name}"
                    + ("; resume it from `paused` as usual" if done.paused is not None else "")
                ),
                messages=done.messages,
                usage=done.usage,
                stop_reason=done.stop_reason,
                output=done.output,
                paused=done.paused,
            )
        )
    return Success(replace(done, output=value))

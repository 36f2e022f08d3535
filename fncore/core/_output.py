"""Typed structured output: what the final answer must be, and the loop's decisions about it.

An agent built with ``output_type=T`` asks the model for a JSON value of ``T``'s schema, by
one of two strategies:

- ``native``: each request carries the schema (`ModelRequest.output_schema`), and the
  provider constrains the answer's text to it;
- ``tool``: a ``final_result`` tool whose arguments are the schema is offered, and the run
  ends when the model calls it; it works with any model that calls tools.

Either way an answer that does not validate goes back to the model with pydantic's errors,
at most ``retries`` times; then the run fails with `OutputValidationFailed`. Everything here
is pure: the shell calls `on_output` after each model response.
"""

from __future__ import annotations

from typing import Any, Generic, Literal, TypeAlias, final

from pydantic import PydanticSchemaGenerationError, PydanticUserError, TypeAdapter, ValidationError
from typing_extensions import TypedDict, TypeVar

from fncore.core._errors import OutputValidationFailed, RegistrationError
from fncore.core._loop import NEXT_ROUND, Decision, Fail, Finish, LoopSettings, LoopState
from fncore.core._messages import Message, ToolCallPart, ToolResultPart
from fncore.core._model import ModelResponse, OutputSchema, ToolSpec
from fncore.core._result import RunResult
from fncore.core._usage import NO_USAGE

__all__ = ["OutputStrategy"]

OutputT = TypeVar("OutputT", default=str)
"""The type of a run's ``output``: ``str`` unless the agent has an ``output_type``."""

OutputStrategy: TypeAlias = Literal["auto", "native", "tool"]
"""How an agent asks for its ``output_type``: ``native`` (the provider's JSON-schema output),
``tool`` (a ``final_result`` tool), or ``auto`` (``native`` if the model says it has it)."""

FINAL_RESULT = "final_result"
"""The name of the tool the ``tool`` strategy offers."""

_WRAP_KEY = "response"
_RECEIVED = "Final result received."
_NOT_RUN = "Not run: the run ended with the final result."


def _schema_name(output_type: object) -> str:
    name = getattr(output_type, "__name__", "") or "Output"
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)
    return cleaned[:64] or "Output"


@final
class OutputSpec(Generic[OutputT]):
    """An agent's ``output_type``, ready: its JSON schema, validator and strategy.

    Args:
        output_type: A pydantic model, dataclass, TypedDict or any type pydantic describes.
        strategy: ``native`` or ``tool`` (``auto`` is resolved by the agent, from the model).
        retries: How many invalid answers go back to the model before the run fails.

    Raises:
        RegistrationError: if pydantic cannot describe ``output_type`` as a JSON schema.

    Example:
        >>> spec = OutputSpec(int, "native", 1)
        >>> spec.parse('{"response": 42}')
        42
        >>> spec.schema.schema["required"]
        ['response']
    """

    __slots__ = ("_adapter", "_wrapped", "retries", "schema", "strategy", "tool", "type")

    def __init__(
        self, output_type: type[OutputT], strategy: Literal["native", "tool"], retries: int
    ) -> None:
        self.type = output_type
        """The type of the output."""
        self.strategy = strategy
        """How the model is asked for it."""
        self.retries = retries
        """How many invalid answers go back to the model before the run fails."""
        try:
            adapter: TypeAdapter[Any] = TypeAdapter(output_type)
            schema = adapter.json_schema()
        except (PydanticSchemaGenerationError, PydanticUserError, TypeError, ValueError) as exc:
            msg = (
                f"output_type {output_type!r} cannot be described as a JSON schema by "
                f"pydantic ({type(exc).__name__}: {str(exc).splitlines()[0]}); use a pydantic "
                "model, a dataclass, a TypedDict or a primitive type"
            )
            raise RegistrationError(msg) from None
        self._wrapped = schema.get("type") != "object"
        if self._wrapped:  # providers need an object at the root
            wrapper = TypedDict("Wrapper", {_WRAP_KEY: output_type})  # type: ignore[misc]
            adapter = TypeAdapter(wrapper)
            schema = adapter.json_schema()
            schema.pop("title", None)
        description = str(schema.pop("description", "") or "")
        self._adapter = adapter
        name = _schema_name(output_type)
        self.schema = OutputSchema(name, schema, description)
        """The schema requests carry (``native``)."""
        self.tool = ToolSpec(
            FINAL_RESULT,
            "Give the final result; call this once the answer is ready. "
            + (description or f"The arguments are the {name}."),
            schema,
            strict=True,
        )
        """The ``final_result`` tool offered (``tool``)."""

    def check(self, text: str) -> str | None:
        """Why ``text`` does not fit (pydantic's errors, one a line), or ``None`` if it does."""
        try:
            self._adapter.validate_json(_unfenced(text))
        except ValidationError as exc:
            return errors_of(exc)
        return None

    def parse(self, text: str) -> OutputT:
        """The value ``text`` (JSON) holds.

        Raises:
            pydantic.ValidationError: if it does not fit.
        """
        value = self._adapter.validate_json(_unfenced(text))
        if self._wrapped:
            return value[_WRAP_KEY]  # type: ignore[no-any-return]
        return value  # type: ignore[no-any-return]

    def __repr__(self) -> str:
        return f"OutputSpec({self.schema.name}, {self.strategy!r}, retries={self.retries})"


def _unfenced(text: str) -> str:
    """``text`` without a Markdown code fence around it (models add one now and then)."""
    stripped = text.strip()
    if stripped.startswith("```") and stripped.endswith("```") and len(stripped) > 6:
        body = stripped[3:-3]
        newline = body.find("\n")
        return body[newline + 1 :] if newline >= 0 else body
    return stripped


def errors_of(exc: ValidationError) -> str:
    """The errors of a pydantic validation, one a line: ``where: what``."""
    lines = []
    for error in exc.errors(include_url=False):
        where = ".".join(str(p) for p in error["loc"]) or "(root)"
        lines.append(f"{where}: {error['msg']}")
    return "\n".join(lines)


def on_output(
    state: LoopState,
    response: ModelResponse,
    spec: OutputSpec[Any],
    failures: int,
    settings: LoopSettings,
) -> tuple[LoopState, Decision] | None:
    """Decide on a response that may be the final answer; ``None``: it is not (tool calls).

    ``native``: a response without tool calls is the answer, its text the JSON. ``tool``: a
    response calling ``final_result`` is the answer, the arguments the JSON (the response's
    other calls are answered as not run); a text answer is a failed attempt. A valid answer
    finishes the run with the JSON as its output; an invalid one goes back to the model
    (the next round), or fails the run once ``failures`` reaches ``spec.retries``.
    """
    message = response.message
    calls = message.tool_calls
    usage = state.usage if response.usage is NO_USAGE else state.usage + response.usage
    if spec.strategy == "native":
        if calls:
            return None
        raw = message.text
        problem = spec.check(raw)
        if problem is None:
            new = (*state.new, message)
            done = LoopState(state.history, new, state.round, state.errors_in_a_row, usage)
            return done, Finish(RunResult(raw, new, usage, state.round, "completed"))
        reply = Message.user(
            f"Your answer does not fit the required JSON schema:\n{problem}\n"
            "Answer again with only a JSON value that fits the schema."
        )
        return _retry(state, message, reply, usage, raw, problem, spec, failures, settings)
    final = next((c for c in calls if c.name == FINAL_RESULT), None)
    if final is None:
        if calls:
            return None
        raw = message.text
        problem = f"the answer must be given by calling the {FINAL_RESULT} tool, not as text"
        reply = Message.user(
            f"Do not answer in text: call the {FINAL_RESULT} tool with the final result."
        )
        return _retry(state, message, reply, usage, raw, problem, spec, failures, settings)
    raw = final.arguments
    problem = spec.check(raw)
    if problem is None:
        closing = _close(calls, final, _RECEIVED, is_error=False)
        new = (*state.new, message, closing)
        done = LoopState(state.history, new, state.round, state.errors_in_a_row, usage)
        return done, Finish(RunResult(raw, new, usage, state.round, "completed"))
    content = f"Invalid final result:\n{problem}\nCall {FINAL_RESULT} again with fixed arguments."
    reply = _close(calls, final, content, is_error=True)
    return _retry(state, message, reply, usage, raw, problem, spec, failures, settings)


def _close(
    calls: tuple[ToolCallPart, ...], final: ToolCallPart, content: str, *, is_error: bool
) -> Message:
    """The tool message answering every call of the final round: ``final`` with ``content``."""
    return Message(
        "tool",
        tuple(
            ToolResultPart(c.id, c.name, content, is_error=is_error)
            if c is final
            else ToolResultPart(c.id, c.name, _NOT_RUN, is_error=True)
            for c in calls
        ),
    )


def _retry(
    state: LoopState,
    message: Message,
    reply: Message,
    usage: Any,
    raw: str,
    problem: str,
    spec: OutputSpec[Any],
    failures: int,
    settings: LoopSettings,
) -> tuple[LoopState, Decision]:
    """Send ``reply`` (the errors) back to the model, or fail once the retries are spent."""
    history = state.history + (message, reply)  # noqa: RUF005 - as in on_tool_results
    new = (*state.new, message, reply)
    after = LoopState(history, new, state.round, state.errors_in_a_row, usage)
    if failures >= spec.retries or state.round >= settings.max_iterations:
        kept = new if reply.role == "tool" else (*state.new, message)
        tries = failures + 1
        return after, Fail(
            OutputValidationFailed(
                message=(
                    f"the model's answer did not fit output_type {spec.schema.name} after "
                    f"{tries} {'try' if tries == 1 else 'tries'}: {problem.splitlines()[0]}; "
                    "see `errors` and `raw`, raise output_retries, or describe the output "
                    "better (field descriptions, instructions)"
                ),
                messages=kept,
                usage=usage,
                raw=raw,
                errors=problem,
                attempts=tries,
            )
        )
    after.round += 1
    return after, NEXT_ROUND

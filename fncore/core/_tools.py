"""Tools built from typed Python functions, with pydantic-validated arguments."""

from __future__ import annotations

import inspect
import json
import re
from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass
from typing import Any, final, get_type_hints

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter, ValidationError, create_model
from returns.result import Failure, Result, Success

from fncore.core._checks import timeout_problem
from fncore.core._errors import RegistrationError
from fncore.core._model import ToolSpec
from fncore.core._value import value

__all__ = ["Tool", "ToolFunction", "ToolResult", "to_content"]

ToolFunction = Callable[..., Awaitable[object]] | Callable[..., object]
"""A tool's implementation: a sync or async function with annotated parameters."""

_ARGS_HEADER = re.compile(r"^\s*(Args|Arguments|Parameters):\s*$")
_ARG_LINE = re.compile(r"^\s+(\w+)(?:\s*\([^)]*\))?:\s*(.+)$")


@final
@value
@dataclass(frozen=True, slots=True)
class ToolResult:
    """What a tool call produced, as the ``tool_call`` position passes it around.

    Example:
        >>> ToolResult("5").content
        '5'
    """

    content: str
    """The result as text for the model."""
    is_error: bool = False
    """Whether the call failed; error results count toward the consecutive-error limit."""


def _docstring_parts(fn: Callable[..., object]) -> tuple[str, dict[str, str]]:
    doc = inspect.getdoc(fn) or ""
    summary: list[str] = []
    params: dict[str, str] = {}
    in_args = False
    arg_indent = 0
    last: str | None = None
    for line in doc.splitlines():
        if _ARGS_HEADER.match(line):
            in_args, last = True, None
            continue
        if in_args:
            indent = len(line) - len(line.lstrip())
            if not line.strip():
                continue
            if indent > 0:
                m = _ARG_LINE.match(line)
                if m and (last is None or indent <= arg_indent):
                    arg_indent, last = indent, m.group(1)
                    params[last] = m.group(2).strip()
                elif last is not None:
                    params[last] = f"{params[last]} {line.strip()}"
                continue
            in_args = False  # a new section starts: fall through so it is handled below
        if re.match(r"^\s*(Returns|Raises|Example|Examples):\s*$", line):
            break
        summary.append(line)
    return "\n".join(summary).strip(), params


def _check_describable(tool_name: str, param: str, annotation: Any) -> None:
    try:
        TypeAdapter(annotation).json_schema()
    except Exception as exc:
        msg = (
            f"tool {tool_name!r}: parameter {param!r} is annotated {annotation!r}, which pydantic "
            f"cannot validate or describe as JSON schema ({type(exc).__name__}); use a "
            "JSON-friendly type: str, int, float, bool, list, dict, Literal, a pydantic model, "
            "a dataclass or a TypedDict"
        )
        raise RegistrationError(msg) from None


def to_content(value: object) -> str:
    """Turn a tool's return value into text for the model.

    Strings pass through, pydantic models become JSON, anything else goes through
    ``json.dumps`` (falling back to ``str``). It can raise (a ``__str__`` that raises, a
    value too deeply nested, a model that cannot be serialised): the agent calls it inside
    the tool's failure boundary, so that becomes an error result.

    Example:
        >>> to_content({"sum": 5})
        '{"sum": 5}'
    """
    cls = type(value)
    if cls is str:
        return value  # type: ignore[return-value]
    if cls is int or cls is float:
        return repr(value)
    if isinstance(value, str):
        return value
    if isinstance(value, BaseModel):
        return value.model_dump_json()
    try:
        return json.dumps(value, default=str)
    except (TypeError, ValueError):
        return str(value)


@final
class Tool:
    """A tool the model can call, built from a typed function.

    The function's annotated parameters become a pydantic model that validates the model's
    JSON arguments and yields the JSON schema shown to the model. The docstring's summary
    becomes the description; a Google-style ``Args:`` section describes the parameters.

    Async tools run on the event loop; plain (sync) functions run in a worker thread, so a
    blocking call (files, network, CPU) stalls nothing. Both run concurrently with the
    round's other calls and honour timeouts (a sync function that times out is abandoned
    to finish in its thread). ``inline=True`` calls a sync function directly on the event
    loop instead: the cheapest way to run a quick pure function, but it blocks the loop
    while it runs and no timeout can interrupt it.

    Example:
        >>> def add(a: int, b: int) -> int:
        ...     '''Add two integers.'''
        ...     return a + b
        >>> t = Tool.from_function(add)
        >>> t.name, t.spec.parameters["required"]
        ('add', ['a', 'b'])
    """

    __slots__ = (
        "_fields",
        "_validator",
        "args_model",
        "function",
        "inline",
        "is_async",
        "name",
        "source",
        "spec",
        "timeout",
    )

    def __init__(
        self,
        function: ToolFunction,
        *,
        name: str,
        args_model: type[BaseModel],
        description: str,
        timeout: float | None = None,
        inline: bool = False,
        source: str = "function",
    ) -> None:
        if timeout is not None:
            problem = timeout_problem(timeout, f"tool {name!r}: timeout")
            if problem is not None:
                raise RegistrationError(f"{problem} (or None for the agent's tool_timeout)")
        self.function = function
        self.name = name
        self.args_model = args_model
        self.timeout = timeout
        self.is_async = inspect.iscoroutinefunction(function)
        self.inline = inline and not self.is_async
        """Whether a sync function runs directly on the event loop (not in a thread)."""
        self.source = source
        """Where the tool comes from, for people: ``function``, ``tool source NAME``,
        ``mcp server NAME``, ``sub-agent NAME``."""
        self._fields = tuple(args_model.model_fields)
        self._validator = args_model.__pydantic_validator__
        try:
            schema = args_model.model_json_schema()
        except Exception as exc:
            msg = (
                f"tool {name!r}: its arguments model {args_model.__name__} has no JSON schema "
                f"({type(exc).__name__}: {exc})"
            )
            raise RegistrationError(msg) from exc
        schema.pop("title", None)
        strict = all(f.is_required() for f in args_model.model_fields.values())
        self.spec = ToolSpec(name, description, schema, strict)

    @classmethod
    def from_function(
        cls,
        function: ToolFunction,
        *,
        name: str | None = None,
        description: str | None = None,
        timeout: float | None = None,
        inline: bool = False,
    ) -> Tool:
        """Build a tool from ``function``; its parameters must all be annotated.

        Args:
            function: A sync or async function with annotated parameters.
            name: The tool's name (default: the function's).
            description: What it does, for the model (default: the docstring's summary).
            timeout: Seconds a call may take (default: the agent's ``tool_timeout``).
            inline: Call a sync function directly on the event loop instead of in a
                worker thread; for quick pure functions only.

        Raises:
            RegistrationError: if a parameter has no annotation, is ``*args``/``**kwargs``,
                or has a type pydantic cannot validate and describe as JSON schema; or if
                ``timeout`` is not a positive, finite number of seconds.
        """
        tool_name: str = name or str(getattr(function, "__name__", ""))
        if not tool_name.isidentifier() and not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", tool_name):
            msg = f"tool name {tool_name!r} is not valid; use letters, digits, '_' or '-'"
            raise RegistrationError(msg)
        summary, param_docs = _docstring_parts(function)
        hints = get_type_hints(function)
        fields: dict[str, Any] = {}
        for param in inspect.signature(function).parameters.values():
            if param.kind in (param.VAR_POSITIONAL, param.VAR_KEYWORD):
                msg = (
                    f"tool {tool_name!r}: parameter {param.name!r} is *args/**kwargs; "
                    "tools need named, annotated parameters"
                )
                raise RegistrationError(msg)
            if param.name not in hints:
                msg = (
                    f"tool {tool_name!r}: parameter {param.name!r} has no type annotation; "
                    "annotate it so its schema can be built"
                )
                raise RegistrationError(msg)
            _check_describable(tool_name, param.name, hints[param.name])
            default = ... if param.default is param.empty else param.default
            fields[param.name] = (
                hints[param.name],
                Field(default, description=param_docs.get(param.name)),
            )
        model = create_model(f"{tool_name}_args", __config__=ConfigDict(extra="forbid"), **fields)
        return cls(
            function,
            name=tool_name,
            args_model=model,
            description=description if description is not None else summary,
            timeout=timeout,
            inline=inline,
        )

    def validate(self, arguments: str) -> Result[BaseModel, str]:
        """Validate raw JSON ``arguments``; a failure carries a message for the model."""
        checked = self.check(arguments)
        if isinstance(checked, str):
            return Failure(checked)
        return Success(checked)

    def check(self, arguments: str) -> BaseModel | str:
        """`validate` without the ``Result`` wrapper: the arguments, or the message."""
        try:
            return self._validator.validate_json(arguments or "{}")  # type: ignore[no-any-return]
        except ValidationError as exc:
            problems = "; ".join(
                f"{'.'.join(str(x) for x in e['loc']) or 'arguments'}: {e['msg']}"
                for e in exc.errors(include_url=False)
            )
            return (
                f"Invalid arguments for tool {self.name!r}: {problems}. "
                "Call it again with arguments matching its schema."
            )

    def keywords(self, args: BaseModel) -> Mapping[str, object]:
        """The validated arguments as keyword arguments for the function."""
        extra = args.__pydantic_extra__
        if type(args) is self.args_model and extra is None:
            return args.__dict__
        named = {f: getattr(args, f) for f in self._fields}
        return named if extra is None else {**named, **extra}

    def __repr__(self) -> str:
        return f"Tool({self.name!r})"

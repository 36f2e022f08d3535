"""``instructions``: system prompt parts from request metadata, a function and the clock.

A ``system_prompt`` transformer: it appends, in this order, the ``template`` filled from the
run's metadata (``"You help {user_name}."`` with ``run(..., metadata={"user_name": ...})``),
what ``function`` returns for the round, and the current date and time, each separated from
the prompt before it by ``separator``. A field the metadata lacks is an error value,
`MissingField`, naming it; never a silent blank.
"""

from __future__ import annotations

import inspect
import string
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import TypeAlias
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

from returns.result import Failure, Success

from fncore.core import AgentError, Outcome, Registry, SystemPromptContext
from fncore.core._position_names import SYSTEM_PROMPT
from fncore.middleware._checked import checked
from fncore.middleware._imports import import_function
from fncore.middleware._place import place

__all__ = ["MissingField", "PromptFunction", "instructions"]

PromptFunction: TypeAlias = Callable[[SystemPromptContext], str | Awaitable[str]]
"""A function (sync or async) of the round's prompt context, returning a part of the prompt."""

Clock: TypeAlias = Callable[[], datetime]
"""What tells the time: a function returning an aware `datetime` (tests pass a fixed one)."""

DATE_FORMAT = "Current date and time: %A %d %B %Y, %H:%M (%Z)."
"""How the date and time are written, by default (`datetime.strftime` codes)."""


@dataclass(frozen=True, slots=True, kw_only=True)
class MissingField(AgentError):
    """The instructions' template names a field the run's metadata does not have.

    Example:
        >>> MissingField(message="no user_name", field="user_name").field
        'user_name'
    """

    field: str = ""
    """The missing field's name."""


def _now() -> datetime:
    return datetime.now(UTC)


def _fields(template: str) -> tuple[str, ...]:
    """The metadata keys ``template`` needs (the first name of each field).

    Raises:
        ValueError: for a template that does not parse, or a positional field (``{}``).
    """
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as exc:
        msg = f"template: {exc}; write a field as {{name}} and a brace as {{{{ or }}}}"
        raise ValueError(msg) from None
    names: list[str] = []
    for _, field, _, _ in parsed:
        if field is None:
            continue
        root = field.split(".", 1)[0].split("[", 1)[0]
        if not root or root.isdigit():
            msg = f"template: fields must be named ({{user_name}}), not {{{field}}}"
            raise ValueError(msg)
        names.append(root)
    return tuple(dict.fromkeys(names))


@checked
def instructions(
    *,
    template: str | None = None,
    function: PromptFunction | str | None = None,
    date: bool = False,
    timezone: str = "UTC",
    date_format: str = DATE_FORMAT,
    separator: str = "\n\n",
    clock: Clock | None = None,
    name: str = "instructions",
) -> Registry:
    """Parts of the system prompt made for each round: metadata, a function, the date.

    One with none of ``template``, ``function`` and ``date`` is refused: it would add nothing.

    Args:
        template: Text with ``{field}`` s filled from ``run(..., metadata=...)``
            (`str.format` syntax: ``{user.name}``, ``{count:>3}``; ``{{`` for a brace).
        function: A function (sync or async) of the `SystemPromptContext` returning text;
            from configuration, its ``"package.module:function"`` name.
        date: Add the current date and time.
        timezone: The IANA time zone the date and time are given in.
        date_format: How they are written, in `datetime.strftime` codes.
        separator: What goes between the prompt so far and each part.
        clock: What tells the time (an aware `datetime`); code only, for tests.
        name: The middleware's name, to tell two instances apart.

    Raises:
        ValueError: for nothing to add, a template that does not parse or has a positional
            field, an unknown time zone, or a function name that does not import.

    Example:
        >>> registry = Registry()
        >>> registry.include(instructions(template="You help {user_name}.", date=True))
        >>> [(m.position, m.name) for m in registry.middleware]
        [('system_prompt', 'instructions')]
    """
    fields = _fields(template) if template is not None else ()
    try:
        zone = ZoneInfo(timezone)
    except (ZoneInfoNotFoundError, ValueError):
        msg = f"timezone: {timezone!r} is not a known IANA time zone (e.g. 'Europe/Paris')"
        raise ValueError(msg) from None
    made = import_function(function, "function") if isinstance(function, str) else function
    part_of: PromptFunction | None = made  # type: ignore[assignment]
    now = clock or _now
    if template is None and part_of is None and not date:
        msg = (
            "instructions has nothing to add: give template, function or date=True "
            "(or leave instructions out)"
        )
        raise ValueError(msg)
    registry = Registry()

    @registry.on(SYSTEM_PROMPT, name=name, **place("instructions"))
    async def add_instructions(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        parts = [prompt] if prompt else []
        if template is not None:
            metadata = ctx.run.metadata
            missing = [f for f in fields if f not in metadata]
            if missing:
                return Failure(
                    MissingField(
                        message=(
                            f"the template needs {missing[0]!r} in the run's metadata; pass "
                            f"run(..., metadata={{{missing[0]!r}: ...}})"
                        ),
                        position=SYSTEM_PROMPT,
                        middleware=name,
                        field=missing[0],
                    )
                )
            parts.append(template.format_map(metadata))
        if part_of is not None:
            text = part_of(ctx)
            parts.append(await text if inspect.isawaitable(text) else text)
        if date:
            parts.append(now().astimezone(zone).strftime(date_format))
        return Success(separator.join(parts))

    return registry

"""Middleware factories of "an application", loaded from configuration by module path."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Annotated

from pydantic import AfterValidator, BaseModel, Field, validate_call
from returns.result import Success

from fncore import Model, Outcome, Registry, SystemPromptContext


def stamp(text: str = "stamped", times: int = 1) -> Registry:
    """A system_prompt transformer appending ``text`` ``times`` times."""
    registry = Registry()

    @registry.on("system_prompt", name=f"stamp_{text}")
    async def add(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        return Success(prompt + (f" {text}" * times))

    return registry


def models_seen(models: Sequence[Model], seen: str = "models") -> Registry:
    """Records the names of ``models`` (given as presets in configuration) in the prompt."""
    registry = Registry()
    names = ",".join(m.name for m in models)

    @registry.on("system_prompt", name=seen)
    async def show(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        return Success(f"{prompt} [{names}]")

    return registry


def refuses(limit: int = 1) -> Registry:
    """A factory that refuses a value it cannot work with (a ValueError)."""
    if limit > 10:
        msg = f"limit must be at most 10, not {limit}"
        raise ValueError(msg)
    return Registry()


def ranged(limit: Annotated[int, Field(ge=1)] | None = 1) -> Registry:
    """A factory whose parameter carries a range, as the built-ins' limits do."""
    return Registry()


def not_a_registry() -> object:
    """Returns the wrong thing."""
    return {"a": 1}


CLOSED: list[str] = []
"""What `owning` resources recorded when closed."""


class Resource:
    """Stands for a connection pool a middleware holds."""

    def __init__(self, name: str) -> None:
        self.name = name

    async def aclose(self) -> None:
        """Record the close."""
        CLOSED.append(self.name)


def owning(name: str = "pool") -> Registry:
    """A registry owning a resource, as a middleware with a store on Redis does."""
    registry = Registry()
    registry.own(Resource(name))
    return registry


VALIDATIONS: list[int] = []
"""Each value `validated_once`'s parameter was validated as."""


def _note(value: int) -> int:
    VALIDATIONS.append(value)
    return value


@validate_call
def validated_once(times: Annotated[int, AfterValidator(_note)] = 1) -> Registry:
    """A factory that validates its own arguments, as the built-ins do (they are `checked`)."""
    return Registry()


class _Options(BaseModel):
    """What `builds_options` builds from its argument."""

    level: int


def needs(text: str) -> Registry:
    """A factory with a parameter that has no default."""
    return Registry()


def builds_options(level: str = "1") -> Registry:
    """A factory that validates a model of its own from its argument."""
    _Options(level=level)  # type: ignore[arg-type]
    return Registry()

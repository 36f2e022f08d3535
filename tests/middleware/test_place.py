"""The built-ins' places: they find each other by what they are, never by name."""

from __future__ import annotations

from fncore import Agent, ModelCallContext, ModelCallNext, ModelResponse, Outcome, Registry
from fncore.middleware import cache, guard, limit_calls, retry, trace
from fncore.testing import TestModel


async def passing(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
    """A middleware of the application's own."""
    return await call_next(ctx)


def chain(registry: Registry) -> tuple[str, ...]:
    """The ``model_call`` layers of an agent built from ``registry``, outermost first."""
    return Agent(TestModel(), registry=registry).describe().positions["model_call"]


def test_a_middleware_of_yours_named_cache_is_not_placed_as_the_cache_built_in() -> None:
    """retry, listed first, stays outside your own `cache`: it sits inside the built-in only."""
    registry = Registry()
    registry.include(retry())
    registry.on("model_call", name="cache")(passing)
    assert chain(registry) == ("retry", "cache")


def test_middleware_of_yours_named_like_built_ins_keep_their_registration_order() -> None:
    """Your `limit_calls` and `guard` neither move nor move the built-ins around them."""
    registry = Registry()
    registry.on("model_call", name="limit_calls")(passing)
    registry.include(cache())
    registry.on("model_call", name="guard")(passing)
    assert chain(registry) == ("limit_calls", "cache", "guard")


def test_a_renamed_built_in_keeps_its_place() -> None:
    """`cache(name="answers")` is still the cache: retry goes inside it, trace outside."""
    registry = Registry()
    registry.include(retry())
    registry.include(cache(name="answers"))
    registry.include(limit_calls(name="per_reply"))
    registry.include(guard(deny=["secret"], name="no_secrets"))
    registry.include(trace(name="spans"))
    assert chain(registry) == (
        "spans",
        "no_secrets",
        "answers",
        "per_reply",
        "retry",
        "spans_chat",
    )

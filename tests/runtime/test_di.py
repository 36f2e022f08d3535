"""fncore's typed `Provide`, `Provider` and `list_provider` are dependency-injector's objects.

They build the same markers and the same ``providers.List``, so injection behaves exactly
as with the untyped spellings.
"""

from __future__ import annotations

import sys

from dependency_injector import providers, wiring
from returns.result import Success

from fncore import (
    Agent,
    Container,
    Outcome,
    Provide,
    Provider,
    Registry,
    SystemPromptContext,
    list_provider,
)
from fncore.testing import TestModel


class Greeter:
    """A dependency with a typed method."""

    def greet(self) -> str:
        return "hello"


class AppContainer(Container):
    """Adds a greeter and a list of greeters."""

    greeter = providers.Singleton(Greeter)
    greeters = list_provider(greeter, providers.Factory(Greeter))


def test_markers_are_dependency_injectors_own() -> None:
    """Subscripting gives genuine dependency-injector markers, modifiers included."""
    value = Provide[AppContainer.greeter]
    assert type(value) is wiring.Provide
    assert value.provider is AppContainer.greeter
    assert type(Provide["greeter"]) is wiring.Provide
    assert type(Provide["config.loop.max_iterations", wiring.as_int()]) is wiring.Provide
    assert type(Provider[AppContainer.greeter]) is wiring.Provider
    assert (repr(Provide), repr(Provider)) == ("fncore.Provide", "fncore.Provider")


async def test_typed_markers_inject_values_providers_and_the_container() -> None:
    """An agent resolves fncore's markers as it does dependency-injector's."""
    seen: dict[str, object] = {}
    registry = Registry()

    @registry.on("system_prompt")
    async def greeting(
        ctx: SystemPromptContext,
        prompt: str,
        greeter: Greeter = Provide[AppContainer.greeter],
        most: int = Provide["config.loop.max_iterations", wiring.as_int()],
        make: providers.Singleton[Greeter] = Provider[AppContainer.greeter],
        container: AppContainer = Provide[AppContainer],
    ) -> Outcome[str]:
        seen.update(greeter=greeter, most=most, make=make, container=container)
        return Success(f"{greeter.greet()} ({most})")

    container = AppContainer()
    await Agent(TestModel(), registry=registry, container=container).run("hi")
    assert seen == {
        "greeter": container.greeter(),
        "most": 40,
        "make": container.greeter,
        "container": container,
    }


@wiring.inject
def _wired(
    greeter: Greeter = Provide[AppContainer.greeter],
    make: providers.Singleton[Greeter] = Provider[AppContainer.greeter],
) -> tuple[Greeter, object]:
    return greeter, make


def test_dependency_injectors_own_wiring_resolves_them_too() -> None:
    """`@inject` plus `container.wire(...)` fills fncore's markers like its own."""
    container = AppContainer()
    container.wire(modules=[sys.modules[__name__]])
    try:
        greeter, make = _wired()
    finally:
        container.unwire()
    assert greeter is container.greeter()
    assert make is container.greeter


def test_list_provider_builds_a_fresh_list_per_call() -> None:
    """`list_provider` is a `providers.List`: a new list each call, in order, in containers."""
    container = AppContainer()
    assert isinstance(AppContainer.greeters, providers.List)
    first, second = container.greeters(), container.greeters()
    assert isinstance(first, list)
    assert first is not second
    assert first[0] is second[0] is container.greeter()
    assert first[1] is not second[1]

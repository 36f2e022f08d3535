"""Checked by ``mypy --strict``: dependency-injector's gaps under strict mode, closed.

One section per gap in ``typings/README.md``. Each ``assert_type`` line fails if its gap
reopens (a type falls back to ``Any`` or loses its element type);
``container_errors.py`` holds the wrong code that the same fixes turn into errors.
"""

from __future__ import annotations

from typing import Any, assert_type

from dependency_injector import containers, providers
from dependency_injector.wiring import as_int
from returns.result import Success

from fncore import (
    Agent,
    Container,
    Model,
    Outcome,
    Provide,
    Provider,
    Registry,
    SystemPromptContext,
    list_provider,
    load_container,
)
from fncore.testing import TestModel


class Greeter:
    """Something middleware asks the container for."""

    def greet(self) -> str:
        """Say hello."""
        return "hello"


class Formal(Greeter):
    """One kind of greeter."""


class Casual(Greeter):
    """Another kind of greeter."""


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


class AppContainer(Container):
    """An application's container."""

    greeter = providers.Factory(Greeter)
    greeters = list_provider(providers.Factory(Formal), providers.Singleton(Casual))
    tools = list_provider(providers.Object(add), providers.Object(multiply))


class PlainContainer(containers.DeclarativeContainer):
    """A dependency-injector container that is not fncore's."""

    greeter = providers.Factory(Greeter)


# Gap 1: `Provide[...]` and `Provider[...]` are `Any`. fncore's spellings carry the type.

assert_type(Provide[AppContainer.greeter], Greeter)
assert_type(Provide[Container.model], Model)
assert_type(Provide[Container.registry], Registry)
assert_type(Provide[Container.config.loop.max_iterations.as_int()], int)
assert_type(Provider[AppContainer.greeter], providers.Factory[Greeter])
assert_type(Provider[Container.model], providers.Selector[Model])
assert_type(Provide[PlainContainer], PlainContainer)
# Nothing says what a name, an untyped configuration option or a modified item provides.
assert_type(Provide["greeter"], Any)
assert_type(Provide[Container.config.loop.max_iterations], Any)
assert_type(Provide["config.loop.max_iterations", as_int()], Any)

registry = Registry()


@registry.on("system_prompt")
async def greeting(
    ctx: SystemPromptContext,
    prompt: str,
    greeter: Greeter = Provide[AppContainer.greeter],
    model: Model = Provide[Container.model],
    make_greeter: providers.Factory[Greeter] = Provider[AppContainer.greeter],
    rounds: int = Provide["config.loop.max_iterations"],
) -> Outcome[str]:
    """Greet, naming the model."""
    assert_type(make_greeter(), Greeter)
    return Success(f"{prompt}\n{greeter.greet()} from {model.name}, {rounds} rounds at most.")


# Gap 2: `providers.List` gives `list[Any]`. `list_provider` keeps the element type.

assert_type(AppContainer.greeters, providers.Provider[list[Greeter]])
assert_type(AppContainer().greeters(), list[Greeter])
assert_type(AppContainer().greeters()[0].greet(), str)
assert_type(AppContainer().tools()[0](2, 3), int)
assert_type(list_provider(providers.Factory(Formal))(), list[Formal])


# Every declared provider keeps its type; a name the container does not declare is an error
# (`container_errors.py`), not a `Provider[Any]`.

assert_type(AppContainer().greeter, providers.Factory[Greeter])
assert_type(AppContainer().model, providers.Selector[Model])
assert_type(load_container(environ={}).registry(), Registry)
assert_type(AppContainer().config, providers.Configuration)


# Gap 3, closed: `container.agent(...)` is a method typed with Agent's keyword arguments.


def build(container: AppContainer) -> None:
    """Build agents from a container."""
    agent = container.agent(tools=container.tools(), instructions="Be brief.")
    assert_type(agent, Agent)
    assert_type(Agent(TestModel(), container=container, registry=registry), Agent)
    assert_type(container.agent(), Agent)

"""Container code that must NOT type-check: lines marked with an E-comment are mypy errors.

The wrong code that the fixes in ``typings/README.md`` catch (dependency-injector alone
accepts every line). ``check_expected_errors.py container_errors.py`` runs mypy on this file
and compares the errors it reports with the markers, line by line.
"""

from __future__ import annotations

from dependency_injector import providers
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
    def greet(self) -> str:
        return "hello"


def add(a: int, b: int) -> int:
    return a + b


class AppContainer(Container):
    greeter = providers.Factory(Greeter)
    greeters = list_provider(providers.Factory(Greeter))


registry = Registry()


# Gap 1: a default that does not fit its annotation, or a marker that does not exist.
@registry.on("system_prompt")
async def greeting(
    ctx: SystemPromptContext,
    prompt: str,
    greeter: Registry = Provide[AppContainer.greeter],  # E: assignment
    model: Model = Provider[Container.model],  # E: assignment
    make: providers.Factory[Greeter] = Provide[AppContainer.greeter],  # E: index
    rounds: int = Provide[Container.model],  # E: assignment
) -> Outcome[str]:
    return Success(prompt)


Provide[AppContainer.greeter].shout()  # E: attr-defined
_ = Provide[AppContainer.greeter, "x"]  # E: index

# Gap 2: list elements keep their type; a plain value or no item at all is refused.
AppContainer().greeters()[0].shout()  # E: attr-defined
models: providers.Provider[list[Model]] = AppContainer.greeters  # E: assignment
list_provider(add)  # E: arg-type
list_provider()  # E: call-arg


# A provider the container does not have (dependency-injector types any name `Provider[Any]`).
load_container(environ={}).modle()  # E: attr-defined
AppContainer().greetr()  # E: attr-defined
Container().modle.override(Container.model)  # E: attr-defined
Container.modle()  # E: attr-defined


# Gap 3, closed: `container.agent(...)` checks every argument, as `Agent(...)` does.
def build(container: AppContainer) -> None:
    container.agent(tols=[add])  # E: call-arg
    container.agent(instructions=3)  # E: arg-type
    container.agent(tools=container.greeters())  # E: arg-type
    container.agent(registry=container.greeter())  # E: arg-type
    Agent(TestModel(), tols=[add])  # E: call-arg
    Agent(container=container)  # E: call-arg

"""``[[middleware]]`` entries: loaded by name or module path, validated, ordered, owned."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from returns.result import Success

from fncore import (
    ConfigError,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    RegistrationError,
    Registry,
    SystemPromptContext,
    load_container,
)

pytestmark = pytest.mark.usefixtures("on_path")


@pytest.fixture
def on_path(monkeypatch: pytest.MonkeyPatch) -> None:
    """Put this folder on sys.path, so custom_factories imports by module path."""
    monkeypatch.syspath_prepend(str(Path(__file__).parent))


def container(*entries: dict[str, Any], **more: Any):  # type: ignore[no-untyped-def]
    """A container whose configuration lists ``entries`` under middleware."""
    return load_container(overrides={"middleware": list(entries), **more}, environ={})


async def test_an_entry_by_module_path_is_built_with_its_parameters() -> None:
    """Use = 'module:factory' imports it; the other keys are its validated arguments."""
    c = container({"use": "custom_factories:stamp", "text": "ok", "times": "2"})
    agent = c.agent()
    await agent.run("hi")
    assert c.model().requests[-1].instructions == " ok ok"


async def test_entries_keep_their_order_the_first_outermost() -> None:
    """Two entries apply in the order written; the configured ones wrap the application's."""
    c = container(
        {"use": "custom_factories:stamp", "text": "first"},
        {"use": "custom_factories:stamp", "text": "second"},
    )
    positions = c.agent().describe().positions
    assert positions["system_prompt"] == ("stamp_first", "stamp_second")


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "retyr"}, "unknown built-in 'retyr'"),
        ({"use": "custom_factories:stamp", "txet": "x"}, "parameter 'txet': unknown parameter"),
        ({"use": "custom_factories:stamp", "times": "many"}, "parameter 'times':"),
        ({"use": "custom_factories:refuses", "limit": 11}, "limit must be at most 10"),
        ({"use": "custom_factories:ranged", "limit": 0}, "greater than or equal to 1"),
        ({"use": "custom_factories:not_a_registry"}, "returned dict, not a Registry"),
        ({"use": "custom_factories:missing"}, "is not a function"),
        ({"use": "no_such_module_anywhere:factory"}, "cannot import 'no_such_module_anywhere'"),
        ({"use": "retry", "on": 5}, "parameter 'on': Input should be a list"),
        ({"use": "retry", "on": ["ok", 5]}, "parameter 'on.1': Input should be a valid string"),
        ({"use": "budget", "prices": {"m": {"input": "a"}}}, "parameter 'prices.m.input':"),
        ({"use": "custom_factories:needs"}, "parameter 'text': Field required"),
    ],
)
def test_a_bad_entry_is_one_line_naming_it(entry: dict[str, Any], words: str) -> None:
    """Unknown names and parameters, wrong types and failing factories name the entry."""
    with pytest.raises(ConfigError) as info:
        container({"use": "custom_factories:stamp"}, entry).agent()
    text = str(info.value)
    assert "\n" not in text
    assert text.startswith(f"config key 'middleware[1]' (use = {entry['use']!r}): ")
    assert words in text


def test_a_factory_that_validates_its_arguments_is_validated_once() -> None:
    """Configuration leaves the validation to a factory that does its own, as built-ins do."""
    import custom_factories

    custom_factories.VALIDATIONS.clear()
    container({"use": "custom_factories:validated_once", "times": "3"}).agent()
    assert custom_factories.VALIDATIONS == [3]


def test_a_wrong_value_a_factory_validates_itself_is_one_line() -> None:
    """A factory's own validation of its arguments reads as configuration's own does."""
    with pytest.raises(ConfigError) as info:
        container({"use": "custom_factories:validated_once", "times": "x"}).agent()
    assert "parameter 'times': Input should be a valid integer" in str(info.value)
    assert "(parameters: times)" in str(info.value)


def test_a_validation_error_inside_a_factory_is_not_taken_for_a_parameter_s() -> None:
    """What a factory validates of its own (a model it builds) is its error, as it says it."""
    with pytest.raises(ConfigError) as info:
        container({"use": "custom_factories:builds_options", "level": "high"}).agent()
    assert "validation error for _Options" in str(info.value)
    assert "parameter 'level'" not in str(info.value)


def test_an_entry_without_use_is_a_config_error() -> None:
    """Every entry needs `use`: the settings say so at load time."""
    with pytest.raises(ConfigError, match=r"middleware\.0\.use"):
        container({"text": "x"})


async def test_preset_names_become_models_where_a_factory_takes_models() -> None:
    """A string where the factory takes models names a preset; the container builds it."""
    c = container(
        {"use": "custom_factories:models_seen", "models": ["cheap", "test"]},
        models={"cheap": {"kind": "test", "name": "cheap-one"}},
    )
    await c.agent().run("hi")
    assert c.model().requests[-1].instructions == " [cheap-one,test]"
    with pytest.raises(ConfigError, match="no model preset 'nowhere'"):
        container({"use": "custom_factories:models_seen", "models": ["nowhere"]}).agent()


def test_soft_hints_place_a_middleware_among_those_present() -> None:
    """before/after with soft=True apply to names that are there and ignore the others."""
    registry = Registry()

    async def layer(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return await call_next(ctx)

    registry.on("model_call", name="inner")(layer)
    registry.on("model_call", name="limits", before=["inner", "absent"], soft=True)(layer)
    from fncore import Agent
    from fncore.testing import TestModel

    assert Agent(TestModel(), registry=registry).describe().positions["model_call"] == (
        "limits",
        "inner",
    )


async def test_the_container_closes_what_its_middleware_own() -> None:
    """Resources a configured middleware's registry owns are closed by container.shutdown()."""
    import custom_factories

    custom_factories.CLOSED.clear()
    c = container({"use": "custom_factories:owning", "name": "pool-a"})
    agent = c.agent()
    assert custom_factories.CLOSED == []
    await agent.aclose()  # the agent did not make it: left open
    assert custom_factories.CLOSED == []
    await c.shutdown()
    assert custom_factories.CLOSED == ["pool-a"]
    assert isinstance(await c.agent().run("hi"), Success)  # built afresh after a shutdown


def mine() -> Registry:
    """An application's registry: one system_prompt transformer named ``mine``."""
    registry = Registry()

    @registry.on("system_prompt", name="mine")
    async def add(ctx: SystemPromptContext, prompt: str) -> Outcome[str]:
        return Success(prompt + " mine")

    return registry


async def test_a_registry_given_to_agent_adds_to_the_configured_middleware() -> None:
    """container.agent(registry=...) keeps every [[middleware]] entry, outermost, and the traces."""
    c = container({"use": "trace"}, {"use": "custom_factories:stamp", "text": "first"})
    agent = c.agent(registry=mine())
    positions = agent.describe().positions
    assert positions["system_prompt"] == ("stamp_first", "mine")
    assert positions["run"][0] == "trace"
    assert isinstance(await agent.run("hi"), Success)
    assert c.model().requests[-1].instructions == " first mine"
    assert c.agent(registry=Registry()).describe().positions["run"][0] == "trace"


async def test_a_registry_that_includes_the_containers_is_used_as_it_is() -> None:
    """Including container.registry() places the configured middleware where it stands."""
    c = container({"use": "custom_factories:stamp", "text": "first"})
    registry = mine()
    registry.include(c.registry())
    agent = c.agent(registry=registry)
    assert agent.describe().positions["system_prompt"] == ("mine", "stamp_first")


def test_a_given_registry_holding_a_configured_name_says_why() -> None:
    """The same name from configuration and the registry given: the error says the rule."""
    import custom_factories

    c = container({"use": "custom_factories:stamp", "text": "first"})
    with pytest.raises(RegistrationError) as raised:
        c.agent(registry=custom_factories.stamp("first"))
    assert "'stamp_first' is registered twice" in str(raised.value)
    assert "adds the configured [[middleware]] and plugins to the registry given" in str(
        raised.value
    )


async def test_what_configured_middleware_own_is_closed_once_whatever_the_agents() -> None:
    """Agents built with and without a registry share the configured resources: closed once."""
    import custom_factories

    custom_factories.CLOSED.clear()
    c = container({"use": "custom_factories:owning", "name": "pool-b"})
    c.agent()
    c.agent(registry=Registry())
    c.agent(registry=mine())
    await c.shutdown()
    assert custom_factories.CLOSED == ["pool-b"]

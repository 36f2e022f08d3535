"""The container: dependency injection at build time, configuration sources, plugins."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from dependency_injector import providers
from dependency_injector.wiring import Provide, Provider
from returns.result import Success

from fncore import (
    Agent,
    ConfigError,
    Container,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    RegistrationError,
    Registry,
    RunContext,
    RunNext,
    RunResult,
    load_container,
)
from fncore.testing import TestModel


class Foo:
    """A dependency that counts how often it is built."""

    built = 0

    def __init__(self) -> None:
        Foo.built += 1
        self.number = Foo.built


class AppContainer(Container):
    """An application container adding a provider middleware can ask for."""

    foo = providers.Factory(Foo)


async def _make_async() -> Foo:
    return Foo()


class AsyncContainer(Container):
    """A container whose provider needs awaiting."""

    foo = providers.Coroutine(_make_async)


def _registry_using_foo(seen: list[object]) -> tuple[Registry, Any]:
    registry = Registry()

    @registry.on("model_call")
    async def uses_foo(
        ctx: ModelCallContext, call_next: ModelCallNext, foo: Foo = Provide["foo"]
    ) -> Outcome[ModelResponse]:
        seen.append(foo)
        return await call_next(ctx)

    return registry, uses_foo


async def test_provided_parameter_is_resolved_once_at_build_time() -> None:
    """A Provide["foo"] parameter is built once when the agent is, not per call or run."""
    Foo.built = 0
    seen: list[object] = []
    registry, _ = _registry_using_foo(seen)
    agent = Agent(TestModel(), registry=registry, container=AppContainer())
    assert Foo.built == 1
    for prompt in ("one", "two", "three"):
        assert (await agent.run(prompt)).unwrap().output == prompt
    assert Foo.built == 1
    assert len(seen) == 3
    assert all(f is seen[0] for f in seen)


async def test_decorated_middleware_stays_directly_callable() -> None:
    """Registration returns the function unchanged, so a test can call it with its own foo."""
    seen: list[object] = []
    _, uses_foo = _registry_using_foo(seen)
    mine = Foo.__new__(Foo)

    async def inner(ctx: Any) -> Outcome[ModelResponse]:
        return Success(ModelResponse(Message.assistant("")))

    out = await uses_foo(object(), inner, foo=mine)
    assert isinstance(out, Success)
    assert seen == [mine]


async def test_provide_reads_a_configuration_value() -> None:
    """Provide["config.loop.max_iterations"] injects that configuration value."""
    registry = Registry()

    @registry.on("run")
    async def limit(
        ctx: RunContext, call_next: RunNext, most: int = Provide["config.loop.max_iterations"]
    ) -> Outcome[RunResult]:
        return (await call_next(ctx)).map(lambda r: RunResult(f"{r.output} (max {most})", ()))

    container = load_container(overrides={"loop": {"max_iterations": 7}}, environ={})
    agent = Agent(TestModel(), registry=registry, container=container)
    assert (await agent.run("hi")).unwrap().output == "hi (max 7)"


def test_unknown_provider_is_a_build_error_naming_the_parameter() -> None:
    """Asking for a provider the container lacks fails at Agent(...) and names the parameter."""
    registry = Registry()

    @registry.on("model_call")
    async def wants_db(
        ctx: ModelCallContext, call_next: ModelCallNext, database: object = Provide["db"]
    ) -> Outcome[ModelResponse]:
        return await call_next(ctx)

    with pytest.raises(RegistrationError, match="'database'") as info:
        Agent(TestModel(), registry=registry, container=Container())
    assert "wants_db" in str(info.value)


def test_provided_parameter_without_a_container_is_a_build_error() -> None:
    """An agent without a container cannot satisfy Provide[...] and says so at build."""
    registry, _ = _registry_using_foo([])
    with pytest.raises(RegistrationError, match="'foo'"):
        Agent(TestModel(), registry=registry)


def test_async_provider_is_a_build_error() -> None:
    """A provider that returns an awaitable is rejected at build time with a hint."""
    registry, _ = _registry_using_foo([])
    with pytest.raises(RegistrationError, match="async provider"):
        Agent(TestModel(), registry=registry, container=AsyncContainer())


def test_failing_provider_is_a_build_error() -> None:
    """A provider that raises surfaces as a RegistrationError naming the parameter."""

    def broken() -> Foo:
        msg = "no database"
        raise OSError(msg)

    class Broken(Container):
        foo = providers.Factory(broken)

    registry, _ = _registry_using_foo([])
    with pytest.raises(RegistrationError, match="'foo' failed: OSError: no database"):
        Agent(TestModel(), registry=registry, container=Broken())


# -- configuration -------------------------------------------------------------------------


def test_defaults_when_nothing_is_configured() -> None:
    """With no file, env or overrides the container holds the seeds' defaults."""
    c = load_container(environ={})
    assert c.config.model.kind() == "test"
    assert c.loop_settings().max_iterations == 40
    assert c.loop_settings().max_consecutive_errors_per_request == 3


def test_dict_overrides() -> None:
    """Overrides given as a dict reach the loop settings and the model."""
    c = load_container(
        overrides={"model": {"name": "mine"}, "loop": {"max_concurrent_tools": 2}}, environ={}
    )
    assert c.model().name == "mine"
    assert c.loop_settings().max_concurrent_tools == 2


def test_toml_file(tmp_path: Path) -> None:
    """A TOML file configures the container."""
    path = tmp_path / "fncore.toml"
    path.write_text('[loop]\nmax_iterations = 5\n[model]\nname = "from-toml"\n')
    c = load_container(path, environ={})
    assert c.loop_settings().max_iterations == 5
    assert c.model().name == "from-toml"


def test_yaml_file(tmp_path: Path) -> None:
    """A YAML file configures the container."""
    path = tmp_path / "fncore.yaml"
    path.write_text("loop:\n  max_iterations: 6\n  include_detailed_errors: true\n")
    c = load_container(path, environ={})
    assert c.loop_settings().max_iterations == 6
    assert c.loop_settings().include_detailed_errors is True


def test_environment_variables() -> None:
    """FNCORE_ variables with __ as the separator set nested keys, coerced by their type."""
    c = load_container(
        environ={
            "FNCORE_LOOP__MAX_ITERATIONS": "9",
            "FNCORE_LOOP__TERMINATE_ON_UNKNOWN_CALLS": "true",
            "FNCORE_MODEL__NAME": "env-model",
            "OTHER_LOOP__MAX_ITERATIONS": "1",
        }
    )
    settings = c.loop_settings()
    assert settings.max_iterations == 9
    assert settings.terminate_on_unknown_calls is True
    assert c.model().name == "env-model"


@pytest.mark.parametrize(
    ("use_file", "env", "overrides", "expected"),
    [
        (False, None, None, 40),
        (True, None, None, 5),
        (True, "7", None, 7),
        (True, "7", 9, 9),
        (False, "7", None, 7),
        (False, None, 9, 9),
    ],
)
def test_precedence_defaults_file_env_overrides(
    tmp_path: Path, use_file: bool, env: str | None, overrides: int | None, expected: int
) -> None:
    """Later sources win: defaults < file < environment < overrides."""
    path = tmp_path / "c.toml"
    path.write_text("[loop]\nmax_iterations = 5\n")
    c = load_container(
        path if use_file else None,
        environ={"FNCORE_LOOP__MAX_ITERATIONS": env} if env else {},
        overrides={"loop": {"max_iterations": overrides}} if overrides else None,
    )
    assert c.loop_settings().max_iterations == expected


def test_sources_merge_key_by_key(tmp_path: Path) -> None:
    """A later source changes only the keys it names; the rest of a section stays."""
    path = tmp_path / "c.toml"
    path.write_text("[loop]\nmax_iterations = 5\nmax_concurrent_tools = 3\n")
    c = load_container(path, environ={"FNCORE_LOOP__MAX_ITERATIONS": "6"})
    assert c.loop_settings().max_iterations == 6
    assert c.loop_settings().max_concurrent_tools == 3


def _one_line(exc: pytest.ExceptionInfo[ConfigError]) -> str:
    text = str(exc.value)
    assert "\n" not in text
    return text


def test_unknown_key_is_a_config_error_naming_it() -> None:
    """A misspelt key is a one-line ConfigError naming the full key."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"loop": {"max_iteratons": 3}}, environ={})
    assert "'loop.max_iteratons'" in _one_line(info)


def test_bad_value_is_a_config_error_naming_the_key() -> None:
    """An out-of-range value is a one-line ConfigError naming the key."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"loop": {"max_iterations": 0}}, environ={})
    assert "'loop.max_iterations'" in _one_line(info)


def test_bad_value_from_the_environment_is_a_config_error() -> None:
    """A wrongly typed environment value is a ConfigError naming the key."""
    with pytest.raises(ConfigError) as info:
        load_container(environ={"FNCORE_LOOP__HOOK_TIMEOUT": "soon"})
    assert "'loop.hook_timeout'" in _one_line(info)


def test_unknown_model_kind_lists_the_kinds() -> None:
    """An unknown model.kind is a ConfigError that lists the available kinds."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"model": {"kind": "gpt-9000"}}, environ={})
    text = _one_line(info)
    assert "'model.kind'" in text
    assert "'gpt-9000'" in text
    assert "test" in text.split("use one of:")[1]


def test_missing_file_is_a_config_error(tmp_path: Path) -> None:
    """A missing file is a ConfigError naming the file."""
    missing = tmp_path / "nope.toml"
    with pytest.raises(ConfigError) as info:
        load_container(missing, environ={})
    assert str(missing) in _one_line(info)


def test_unreadable_file_is_a_config_error(tmp_path: Path) -> None:
    """A path that cannot be read as a file (a directory) is a ConfigError."""
    folder = tmp_path / "dir.toml"
    folder.mkdir()
    with pytest.raises(ConfigError, match="cannot read config file"):
        load_container(folder, environ={})


def test_invalid_toml_is_a_config_error(tmp_path: Path) -> None:
    """Broken TOML is a one-line ConfigError."""
    path = tmp_path / "bad.toml"
    path.write_text("[loop\nmax_iterations = = 3\n")
    with pytest.raises(ConfigError) as info:
        load_container(path, environ={})
    assert "not valid TOML" in _one_line(info)


def test_invalid_yaml_is_a_config_error(tmp_path: Path) -> None:
    """Broken YAML is a one-line ConfigError."""
    path = tmp_path / "bad.yaml"
    path.write_text("loop: [unclosed\n  max: {\n")
    with pytest.raises(ConfigError) as info:
        load_container(path, environ={})
    assert "not valid YAML" in _one_line(info)


def test_non_mapping_file_is_a_config_error(tmp_path: Path) -> None:
    """A YAML file whose top level is a list is a ConfigError."""
    path = tmp_path / "list.yaml"
    path.write_text("- a\n- b\n")
    with pytest.raises(ConfigError, match="mapping"):
        load_container(path, environ={})


def test_unsupported_file_suffix_is_a_config_error(tmp_path: Path) -> None:
    """A file that is neither TOML nor YAML is a ConfigError saying which suffixes work."""
    path = tmp_path / "c.json"
    path.write_text("{}")
    with pytest.raises(ConfigError, match=r"\.toml, \.yaml or \.yml"):
        load_container(path, environ={})


async def test_container_agent_uses_the_configured_test_model() -> None:
    """container.agent() builds on the container's TestModel and loop configuration."""
    c = load_container(
        overrides={"model": {"name": "configured"}, "loop": {"max_iterations": 4}}, environ={}
    )
    agent = c.agent(registry=Registry())
    assert isinstance(agent.model, TestModel)
    assert agent.model.name == "configured"
    assert agent.settings.max_iterations == 4
    assert (await agent.run("echo me")).unwrap().output == "echo me"


async def test_agent_from_container_factory_uses_config() -> None:
    """container.agent() builds an agent on the configured model, settings and instructions."""
    c = load_container(
        overrides={"agent": {"instructions": "be brief"}, "loop": {"max_iterations": 3}},
        environ={},
    )
    agent = c.agent(registry=Registry())
    assert isinstance(agent, Agent)
    assert agent.settings.max_iterations == 3
    await agent.run("hi")
    model = agent.model
    assert isinstance(model, TestModel)
    assert model.requests[0].instructions == "be brief"


async def test_agent_factory_of_a_subclass_injects_from_the_subclass() -> None:
    """AppContainer().agent() binds the subclass instance, so its own providers inject."""
    seen: list[object] = []
    registry, _ = _registry_using_foo(seen)
    container = AppContainer()
    agent = container.agent(registry=registry)
    assert isinstance((await agent.run("hi")), Success)
    assert seen
    assert all(isinstance(x, Foo) for x in seen)


def test_agent_takes_a_model() -> None:
    """Agent() without a model is a TypeError (and a mypy error): it inspects no container."""
    with pytest.raises(TypeError, match="model"):
        Agent(registry=Registry())  # type: ignore[call-arg]


async def test_provide_accepts_a_provider_object_as_well_as_a_name() -> None:
    """Provide[AppContainer.foo] (the provider, not its name) resolves on the instance."""
    Foo.built = 0
    registry = Registry()
    seen: list[object] = []

    @registry.on("model_call")
    async def uses_foo(
        ctx: ModelCallContext, call_next: ModelCallNext, foo: Foo = Provide[AppContainer.foo]
    ) -> Outcome[ModelResponse]:
        seen.append(foo)
        return await call_next(ctx)

    agent = Agent(TestModel(), registry=registry, container=AppContainer())
    await agent.run("a")
    await agent.run("b")
    assert Foo.built == 1
    assert isinstance(seen[0], Foo)
    assert seen[0] is seen[1]


async def test_provider_marker_injects_the_provider_itself() -> None:
    """Provider["foo"] injects the provider (as dependency-injector does), to call per use."""
    Foo.built = 0
    registry = Registry()
    made: list[Foo] = []

    @registry.on("model_call")
    async def fresh_foo(
        ctx: ModelCallContext,
        call_next: ModelCallNext,
        make_foo: Any = Provider["foo"],
    ) -> Outcome[ModelResponse]:
        made.append(make_foo())
        return await call_next(ctx)

    agent = Agent(TestModel(), registry=registry, container=AppContainer())
    assert Foo.built == 0
    await agent.run("a")
    await agent.run("b")
    assert Foo.built == 2
    assert made[0] is not made[1]


PRESETS = """
[model]
kind = "test"

[models.test]
name = "offline"

[models.openai]
name = "gpt-4.1-mini"
timeout = 30

[models.anthropic]
name = "claude-sonnet-4-5"
max_tokens = 2048
"""


def test_preset_of_the_selected_kind_fills_the_model_section(tmp_path: Path) -> None:
    """`models.<kind>` fills in the model keys of the selected kind only."""
    path = tmp_path / "fncore.toml"
    path.write_text(PRESETS)
    c = load_container(path, environ={})
    assert (c.config.model.kind(), c.config.model.name()) == ("test", "offline")
    c = load_container(path, environ={"FNCORE_MODEL__KIND": "anthropic"})
    assert c.config.model.name() == "claude-sonnet-4-5"
    assert c.config.model.max_tokens() == 2048
    assert c.config.model.timeout() == 60.0


def test_explicit_model_keys_win_over_the_preset(tmp_path: Path) -> None:
    """A model key set by any source beats the preset's value for it."""
    path = tmp_path / "fncore.toml"
    path.write_text(PRESETS)
    c = load_container(
        path,
        environ={"FNCORE_MODEL__KIND": "openai"},
        overrides={"model": {"name": "gpt-5"}},
    )
    assert (c.config.model.name(), c.config.model.timeout()) == ("gpt-5", 30.0)


def test_a_preset_that_is_not_a_table_is_a_config_error() -> None:
    """`models.test = 3` is reported as a one-line ConfigError naming the key."""
    with pytest.raises(ConfigError, match=r"models\.test"):
        load_container(overrides={"models": {"test": 3}}, environ={})

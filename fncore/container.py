"""The dependency-injection container: the composition root of an application.

It holds the settings, the model chosen by configuration (``model.kind``), the registry
(the default one plus allowed plugins), the loop settings and the session store, and builds
agents from them: ``container.agent(tools=[...])``. It owns what it builds: ``await
container.shutdown()`` (or ``async with container:``) closes the models it made.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import logging
import os
from collections.abc import Callable, Iterable, Mapping
from typing import TYPE_CHECKING, Any, Self, TypedDict, TypeVar, Unpack, cast, overload

from dependency_injector import containers, providers
from typing_extensions import TypeVar as TypeVar_

from fncore._config_secrets import hide_secrets, reveal
from fncore._distribution import install_hint
from fncore._session_url import default_session_url
from fncore.core import (
    Model,
    ModelSettings,
    OutputStrategy,
    RegistrationError,
    Registry,
    Tool,
    ToolChoice,
)
from fncore.core._loop import LoopSettings
from fncore.core._owned import Owned
from fncore.core._registry import default_registry
from fncore.core._tools import ToolFunction
from fncore.middleware import build_middleware
from fncore.runtime import Agent, InMemorySessionStore, MCPServer, SessionStore
from fncore.session_stores import open_session_store
from fncore.settings import ConfigError, ModelConfig, load_settings
from fncore.testing import TestModel

logger = logging.getLogger("fncore")

_C = TypeVar("_C", bound="Container")
_OutputT = TypeVar_("_OutputT", default=str)

PLUGIN_GROUP = "fncore.plugins"
"""Entry-point group of plugin factories: ``factory(config) -> Registry | None``."""

PluginFactory = Callable[[Mapping[str, Any]], Registry | None]
"""A plugin: gets the whole configuration, returns its registry (``None`` opts out)."""

MODEL_KINDS: dict[str, str] = {
    "openai": "fncore_openai:chat_model_from_config",
    "openai-responses": "fncore_openai:responses_model_from_config",
    "anthropic": "fncore_anthropic:from_config",
}
"""Provider kinds beyond ``test``: where each one's ``from_config(model_section)`` lives.

Adapters are imported only when their kind is selected, so an unused provider's SDK need
not be installed.
"""

_EXTRAS = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}
_TEST_OPTIONS = {"chunk": int, "keep_requests": int}


def _test_model(section: Mapping[str, Any]) -> Model:
    options = dict(section.get("options") or {})
    for key, value in options.items():
        kind = _TEST_OPTIONS.get(key)
        if kind is None:
            msg = (
                f"config key 'model.options.{key}': model kind 'test' has no option {key!r} "
                f"(options: {', '.join(_TEST_OPTIONS)})"
            )
            raise ConfigError(msg)
        if type(value) is not kind or value < 1:
            msg = f"config key 'model.options.{key}': must be a positive whole number"
            raise ConfigError(msg)
    return TestModel(
        str(section.get("name", "test")),
        chunk=options.get("chunk", 8),
        keep_requests=options.get("keep_requests", 16),
    )


def _provider_model(kind: str, section: Mapping[str, Any], owned: Owned) -> Model:
    """Build the ``kind`` model from the ``model`` configuration section.

    Raises:
        ConfigError: if the adapter or its SDK is not installed, or the section is incomplete
            (a missing API key, say).
    """
    module_name, _, attribute = MODEL_KINDS[kind].partition(":")
    try:
        module = importlib.import_module(module_name)
    except ImportError as exc:
        msg = (
            f"model kind {kind!r} needs the {_EXTRAS[kind]} SDK: "
            f"{install_hint(_EXTRAS[kind])} ({exc})"
        )
        raise ConfigError(msg) from None
    factory: Callable[[Mapping[str, Any]], Model] = getattr(module, attribute)
    try:
        model = factory(reveal(section))
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from None
    owned.add(model)
    return model


def _provider_models(section: Any, owned: Any) -> dict[str, providers.Provider[Model]]:
    return {
        kind: providers.Singleton(_provider_model, kind, section, owned) for kind in MODEL_KINDS
    }


def _plugin_names() -> list[str]:
    """The names of the installed plugins; nothing is imported to learn them."""
    return sorted({ep.name for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)})


def _plugin(name: str, optional: bool, config: Mapping[str, Any]) -> Registry | None:
    """Load and call the plugin ``name``: its registry, or ``None`` (skipped or opted out).

    Raises:
        RegistrationError: if a required plugin is missing, fails to import, raises, or
            returns something that is not a `Registry` or ``None``.
    """
    found = importlib.metadata.entry_points(group=PLUGIN_GROUP, name=name)
    problem: str | None = None
    contributed: object = None
    if not found:
        installed = ", ".join(_plugin_names()) or "none"
        problem = f"is allowed in configuration but not installed (installed: {installed})"
    else:
        entry = next(iter(found))
        try:
            factory = entry.load()
            contributed = factory(reveal(config))
        except Exception as exc:
            problem = f"failed to load: {type(exc).__name__}: {exc}"
        else:
            if contributed is not None and not isinstance(contributed, Registry):
                what = (
                    f"the class {contributed.__name__}"
                    if isinstance(contributed, type)
                    else type(contributed).__name__
                )
                problem = (
                    f"returned {what}, not a Registry or None; its factory must return "
                    "the registry its middleware are in"
                )
    if problem is None:
        return cast(Registry | None, contributed)
    if optional:
        logger.warning("optional plugin %r skipped: it %s", name, problem)
        return None
    hint = "; fix it, or list it under plugins.optional to skip it when it fails"
    msg = f"plugin {name!r} {problem}{hint}"
    raise RegistrationError(msg)


def _preset_model(
    name: str, config: Mapping[str, Any], owned: Owned, built: dict[str, Model]
) -> Model:
    """The model the preset ``[models.<name>]`` describes (its ``kind`` defaults to ``name``).

    Built once per container and closed with it.

    Raises:
        ConfigError: if no preset has that name and it is not a model kind either.
    """
    if name in built:
        return built[name]
    presets = config.get("models") or {}
    preset = reveal(dict(presets.get(name) or {}))
    kind = str(preset.get("kind", name))
    if name not in presets and kind not in MODEL_KINDS and kind != "test":
        known = ", ".join(sorted(presets)) or "none"
        msg = f"no model preset {name!r} (presets: {known}); add [models.{name}] with its kind"
        raise ConfigError(msg)
    section = ModelConfig.model_validate({**preset, "kind": kind}).model_dump()
    model = _test_model(section) if kind == "test" else _provider_model(kind, section, owned)
    built[name] = model
    return model


def _configured(config: Mapping[str, Any], owned: Owned) -> Registry:
    """The ``[[middleware]]`` entries as one registry, in order (preset names resolved)."""
    entries = reveal(config.get("middleware") or [])
    built: dict[str, Model] = {}

    def resolve(name: str) -> Model:
        return _preset_model(name, config, owned, built)

    return build_middleware(entries, resolve)


def _registry(
    base: Registry, config: Mapping[str, Any], configured: Registry, owned: Owned
) -> Registry:
    """The configured middleware, then ``base``, then the plugins ``plugins.allow`` names.

    The configured middleware come first, so they wrap the application's (tracing and
    limits outermost). Only allowed plugins are looked up and imported: a plugin that is
    installed but not allowed never runs any code.
    """
    plugins = config.get("plugins") or {}
    allow: list[str] = list(plugins.get("allow") or [])
    if not (allow or configured.middleware or configured.hooks or configured.resources):
        return base
    optional = set(plugins.get("optional") or [])
    combined = Registry()
    combined.include(configured)
    combined.include(base)
    for name in allow:
        contributed = _plugin(name, name in optional, config)
        if contributed is None:
            continue
        try:
            combined.include(contributed)
        except RegistrationError as exc:
            msg = f"plugin {name!r}: {exc}"
            raise RegistrationError(msg) from None
    return owned.adopt(combined)


def _loop_settings(section: Mapping[str, Any]) -> LoopSettings:
    return LoopSettings(**section)


def _session_store(url: str | None, owned: Owned) -> SessionStore:
    """The store ``sessions.url`` names (in memory without one), closed with the container."""
    if url is None:
        return InMemorySessionStore()
    return owned.keep(open_session_store(reveal(url)))


def _secret(value: object) -> str:
    reveal = getattr(value, "get_secret_value", None)
    return str(reveal() if reveal is not None else value)


def _mcp_servers(section: Mapping[str, Any] | None, owned: Owned) -> tuple[MCPServer, ...]:
    """The servers of ``[mcp.servers.*]``, stopped when the container shuts down."""
    return tuple(
        owned.keep(
            MCPServer(
                name,
                command=entry.get("command"),
                env={k: _secret(v) for k, v in (entry.get("env") or {}).items()},
                cwd=entry.get("cwd"),
                url=reveal(entry.get("url")),
                headers={k: _secret(v) for k, v in (entry.get("headers") or {}).items()},
                prefix=entry.get("prefix") or "",
                tools_ttl=entry.get("tools_ttl"),
                **{k: entry[k] for k in ("timeout", "startup_timeout") if entry.get(k) is not None},
            )
        )
        for name, entry in (section or {}).items()
    )


class AgentOptions(TypedDict, total=False):
    """The `Agent` arguments that ``container.agent(...)`` takes besides the container's."""

    registry: Registry
    tools: Iterable[Tool | ToolFunction]
    additional_tools: Iterable[Tool | ToolFunction]
    instructions: str
    settings: LoopSettings
    tool_choice: ToolChoice
    model_settings: ModelSettings
    sessions: SessionStore
    model: Model
    name: str
    output_strategy: OutputStrategy
    output_retries: int
    mcp_servers: Iterable[MCPServer]


def _parts(registry: Registry) -> tuple[object, ...]:
    return (*registry.middleware, *registry.hooks, *registry.tools, *registry.tool_sources)


def _given_registry(container: Any, given: Registry) -> Registry:
    """``given`` in the place of the default registry, inside the configured middleware.

    A registry that includes ``container.registry()`` whole already places them itself,
    and is used as it is.
    """
    held = {id(part) for part in _parts(given)}
    if all(id(part) in held for part in _parts(container.registry())):
        return given
    try:
        return _registry(given, container.config(), container.middleware(), container.owned())
    except RegistrationError as exc:
        msg = (
            f"{exc} (container.agent(registry=...) adds the configured [[middleware]] and "
            "plugins to the registry given, unless it includes container.registry() whole)"
        )
        raise RegistrationError(msg) from None


class _Composition:
    """What a container does beyond providing: build agents and close what it built."""

    def agent(
        self,
        *,
        output_type: type[_OutputT] = str,  # type: ignore[assignment]
        **options: Unpack[AgentOptions],
    ) -> Agent[_OutputT]:
        """An agent on this container's model, registry, settings, instructions and store.

        Any `Agent` argument given here wins over the container's, but for ``registry``:
        one given takes the place of the default registry, and the configured
        ``[[middleware]]`` (outermost) and allowed plugins still apply, as they do without
        one; unless it includes ``container.registry()`` whole, to place them itself.
        ``Provide[...]`` parameters of middleware are resolved from this
        container. ``output_type=T`` makes an ``Agent[T]``; its strategy and retries come
        from ``[agent]`` in the settings.

        Raises:
            RegistrationError: if the stack cannot be built; among others, when the
                registry given holds a middleware the configuration adds too.
        """
        c: Any = self
        given = options.pop("registry", None)
        kwargs: dict[str, Any] = {
            "registry": c.registry() if given is None else _given_registry(c, given),
            "instructions": c.config.agent.instructions() or "",
            "settings": c.loop_settings(),
            "sessions": c.sessions(),
            "mcp_servers": c.mcp_servers(),
        }
        if output_type is not str:
            kwargs["output_type"] = output_type
            kwargs["output_strategy"] = c.config.agent.output_strategy() or "auto"
            retries = c.config.agent.output_retries()
            kwargs["output_retries"] = 1 if retries is None else retries
        kwargs.update(options)
        model = kwargs.pop("model", None)
        return Agent(c.model() if model is None else model, container=c, **kwargs)

    async def shutdown(self) -> None:
        """Close what the container built (the models' connections) and forget it.

        The next use builds afresh. Agents built from the container must not run meanwhile.
        """
        c: Any = self
        await c.owned().close()
        c.reset_singletons()

    async def __aenter__(self) -> Self:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.shutdown()


class ContainerInstance(_Composition, containers.DynamicContainer):
    """The type of ``Container()`` at run time: providers, plus `agent` and `shutdown`."""


DEFAULT_SETTINGS = load_settings(environ={})
"""The embedded defaults: the offline test model, the seeds' loop defaults."""


class Container(containers.DeclarativeContainer, _Composition):
    """fncore's container. Subclass it to add providers for your middleware to use.

    Example:
        >>> c = Container()
        >>> c.config.from_dict({"model": {"kind": "test", "name": "demo"}})
        >>> c.model().name
        'demo'
        >>> c.agent().model.name
        'demo'
    """

    instance_type = ContainerInstance

    if TYPE_CHECKING:
        # dependency-injector declares `Container.__getattr__` returning `Provider[Any]`,
        # which makes a misspelt provider (`container.modle()`) type-check. mypy falls back
        # to `__getattr__` only when it is a method: declared as a plain attribute here, it
        # is not, so an unknown name is an error in every subclass. Nothing runs here.
        __getattr__: None  # type: ignore[assignment, misc]

    config = providers.Configuration(default=DEFAULT_SETTINGS.model_dump())
    """The configuration as `load_container` read it (see `Settings`), as a mapping:
    middleware read it with ``Provide["config.section.key"]``. Secrets in it show in no
    repr: API keys are ``pydantic.SecretStr``, and so is every URL with a password (its
    ``str`` shows the URL with the password redacted; ``get_secret_value()`` gives it)."""

    owned: providers.Provider[Owned] = providers.Singleton(Owned)
    """What the container built and closes in `shutdown`."""

    model: providers.Selector[Model] = providers.Selector(
        config.model.kind,
        test=providers.Singleton(_test_model, config.model),
        **_provider_models(config.model, owned),
    )
    """The model, selected by ``model.kind``."""

    middleware: providers.Provider[Registry] = providers.Singleton(_configured, config, owned)
    """The ``[[middleware]]`` entries, built: the first is the outermost."""

    registry: providers.Provider[Registry] = providers.Singleton(
        _registry,
        base=providers.Object(default_registry),
        config=config,
        configured=middleware,
        owned=owned,
    )
    """The registry: the configured middleware, the default registry, the allowed plugins."""

    loop_settings: providers.Provider[LoopSettings] = providers.Singleton(
        _loop_settings, config.loop
    )
    """The loop's settings: the ``loop`` section."""

    sessions: providers.Provider[SessionStore] = providers.Singleton(
        _session_store, config.sessions.url, owned
    )
    """The session store ``sessions.url`` names; a ``Container()`` made without
    `load_container` and without that key keeps sessions in memory."""

    mcp_servers: providers.Provider[tuple[MCPServer, ...]] = providers.Singleton(
        _mcp_servers, config.mcp.servers, owned
    )
    """The MCP servers of ``[mcp.servers.*]``; each starts at its first use and stops in
    `shutdown`."""


@overload
def load_container(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = "FNCORE_",
    container: None = None,
) -> Container: ...
@overload
def load_container(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = "FNCORE_",
    container: _C,
) -> _C: ...
def load_container(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = "FNCORE_",
    container: Container | None = None,
) -> Container:
    """Make a container from the embedded defaults, a file, the environment and overrides.

    Later sources win: defaults < file < environment < ``overrides`` (see `load_settings`).
    A ``models`` table holds per-kind presets (``[models.anthropic] name = "..."``): the
    preset of the selected ``model.kind`` fills every ``model`` key that no source set, so
    one file serves every provider and switching is one key, ``--provider`` or
    ``FNCORE_MODEL__KIND``.

    Sessions live where ``sessions.url`` says; without it, in ``sessions.db`` in fncore's
    data directory (``FNCORE_HOME`` from ``environ``, else the user's data directory), a
    SQLite file created on first use.

    Raises:
        ConfigError: one line naming the key and its source, for an unreadable file, a wrong
            key or value, or an unknown model kind.

    Example:
        >>> c = load_container(overrides={"loop": {"max_iterations": 5}}, environ={})
        >>> c.loop_settings().max_iterations
        5
    """
    settings = load_settings(path, overrides=overrides, environ=environ, env_prefix=env_prefix)
    target = container if container is not None else Container()
    kinds = sorted(target.model.providers)
    kind = settings.model.kind
    if kind not in kinds:
        msg = f"config key 'model.kind': unknown kind {kind!r}; use one of: {', '.join(kinds)}"
        raise ConfigError(msg)
    if settings.sessions.url is None:
        env = os.environ if environ is None else environ
        settings.sessions.url = default_session_url(env)
    target.config.from_dict(hide_secrets(settings.model_dump()))
    return target


__all__ = [
    "PLUGIN_GROUP",
    "AgentOptions",
    "ConfigError",
    "Container",
    "ContainerInstance",
    "ModelConfig",
    "Owned",
    "PluginFactory",
    "load_container",
]

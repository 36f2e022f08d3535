"""The dependency-injection container: configuration, the model, the registry, stores.

Which model runs is configuration (``model.kind``), not code. Configuration comes from a
dict, a TOML or YAML file, and ``FNCORE_*`` environment variables (``FNCORE_MODEL__KIND=test``
sets ``model.kind``), later sources winning.
"""

from __future__ import annotations

import importlib
import importlib.metadata
import os
import tomllib
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Annotated, Any, TypeVar, cast, overload

import yaml
from dependency_injector import containers, providers
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from fncore.core import Model, RegistrationError, Registry
from fncore.core._loop import LoopSettings
from fncore.core._registry import default_registry
from fncore.runtime import Agent, InMemorySessionStore, SessionStore
from fncore.testing import TestModel

_C = TypeVar("_C", bound="Container")

PLUGIN_GROUP = "fncore.plugins"
"""Entry-point group of plugin factories: ``factory(config) -> Registry | None``."""

PluginFactory = Callable[[Mapping[str, Any]], Registry | None]
"""A plugin: gets the whole configuration, returns its registry (``None`` opts out)."""


class ConfigError(Exception):
    """The configuration is invalid; the message says which key and what to change."""


class _ModelConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    kind: str = "test"
    name: str = "test"
    base_url: str | None = None
    api_key: str | None = Field(default=None, repr=False)
    timeout: Annotated[float, Field(gt=0)] = 60.0
    max_retries: Annotated[int, Field(ge=0)] = 2
    max_tokens: Annotated[int | None, Field(ge=1)] = None
    sdk_tracing: bool = False
    options: dict[str, Any] = {}


MODEL_KINDS: dict[str, str] = {
    "openai": "fncore_openai:chat_model_from_config",
    "openai-responses": "fncore_openai:responses_model_from_config",
    "anthropic": "fncore_anthropic:from_config",
}
"""Provider kinds beyond ``test``: where each one's ``from_config(model_section)`` lives.

Adapters are imported only when their kind is selected, so an unused provider's SDK need
not be installed.
"""


def _provider_models(section: Any) -> dict[str, providers.Provider[Model]]:
    return {kind: providers.Singleton(_provider_model, kind, section) for kind in MODEL_KINDS}


_EXTRAS = {"openai": "openai", "openai-responses": "openai", "anthropic": "anthropic"}


def _provider_model(kind: str, section: Mapping[str, Any]) -> Model:
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
            f"pip install 'fncore[{_EXTRAS[kind]}]' ({exc})"
        )
        raise ConfigError(msg) from None
    factory: Callable[[Mapping[str, Any]], Model] = getattr(module, attribute)
    try:
        return factory(section)
    except (ValueError, TypeError) as exc:
        raise ConfigError(str(exc)) from None


_LOOP = LoopSettings()


class _LoopConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    max_iterations: Annotated[int, Field(ge=1)] = _LOOP.max_iterations
    max_consecutive_errors_per_request: Annotated[int, Field(ge=1)] = (
        _LOOP.max_consecutive_errors_per_request
    )
    terminate_on_unknown_calls: bool = _LOOP.terminate_on_unknown_calls
    include_detailed_errors: bool = _LOOP.include_detailed_errors
    enabled: bool = _LOOP.enabled
    tool_timeout: Annotated[float | None, Field(gt=0, allow_inf_nan=False)] = _LOOP.tool_timeout
    max_concurrent_tools: Annotated[int, Field(ge=1)] = _LOOP.max_concurrent_tools
    max_tool_threads: Annotated[int, Field(ge=1)] = _LOOP.max_tool_threads
    hook_timeout: Annotated[float, Field(gt=0, allow_inf_nan=False)] = _LOOP.hook_timeout


class _AgentConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    instructions: str = ""


class _PluginConfig(BaseModel):
    model_config = ConfigDict(extra="forbid")
    allow: list[str] = []
    optional: list[str] = []


class _Config(BaseModel):
    model_config = ConfigDict(extra="allow")
    model: _ModelConfig = _ModelConfig()
    models: dict[str, dict[str, Any]] = {}
    loop: _LoopConfig = _LoopConfig()
    agent: _AgentConfig = _AgentConfig()
    plugins: _PluginConfig = _PluginConfig()


DEFAULTS: dict[str, Any] = _Config().model_dump()
"""The embedded configuration: the offline test model, the seeds' loop defaults."""


def validate_config(raw: Mapping[str, Any]) -> dict[str, Any]:
    """Check ``raw`` and fill in defaults.

    Raises:
        ConfigError: naming the first wrong key and what is expected there.
    """
    try:
        return _Config.model_validate(dict(raw)).model_dump()
    except ValidationError as exc:
        first = exc.errors(include_url=False)[0]
        where = ".".join(str(x) for x in first["loc"])
        msg = f"config key {where!r}: {first['msg']}"
        raise ConfigError(msg) from None


def _loop_settings(loop: Mapping[str, Any]) -> LoopSettings:
    return LoopSettings(**loop)


def _plugin_entry_points() -> Mapping[str, PluginFactory]:
    return {ep.name: ep.load() for ep in importlib.metadata.entry_points(group=PLUGIN_GROUP)}


def _registry(
    base: Registry,
    config: Mapping[str, Any],
    factories: Mapping[str, PluginFactory] | None,
) -> Registry:
    plugins = config.get("plugins") or {}
    allow: list[str] = list(plugins.get("allow") or [])
    if not allow:
        return base
    optional = set(plugins.get("optional") or [])
    available = dict(factories) if factories is not None else _plugin_entry_points()
    combined = Registry()
    combined.include(base)
    for name in allow:
        factory = available.get(name)
        if factory is None:
            if name in optional:
                continue
            msg = (
                f"plugin {name!r} is allowed in configuration but not installed "
                f"(installed: {', '.join(sorted(available)) or 'none'})"
            )
            raise RegistrationError(msg)
        try:
            contributed = factory(config)
        except Exception as exc:
            if name in optional:
                continue
            msg = (
                f"plugin {name!r} failed to load: {type(exc).__name__}: {exc}; fix it, or list "
                "it under plugins.optional to skip it when it fails"
            )
            raise RegistrationError(msg) from exc
        if contributed is not None:
            combined.include(contributed)
    return combined


# The stubs of dependency-injector do not declare the metaclass, so mypy sees it as Any.
_DeclarativeMeta: Any = type(containers.DeclarativeContainer)


class _ContainerMeta(_DeclarativeMeta):  # type: ignore[misc]
    """Gives every container class, subclasses included, an ``agent`` bound to itself.

    An ``agent`` provider declared with ``providers.Self()`` would, once inherited, still
    point at the class it was declared on; this rebinds it for each subclass that does not
    declare its own.
    """

    def __new__(mcs, class_name: str, bases: tuple[type, ...], attributes: dict[str, Any]) -> type:
        cls: Any = super().__new__(mcs, class_name, bases, attributes)
        if "agent" not in attributes:
            cls.agent = providers.Factory(Agent, container=cls.__self__)
        return cast(type, cls)


class Container(containers.DeclarativeContainer, metaclass=_ContainerMeta):
    """fncore's container. Subclass it to add your own providers for middleware to use.

    Example:
        >>> c = Container()
        >>> c.config.from_dict({"model": {"kind": "test", "name": "demo"}})
        >>> c.model().name
        'demo'
        >>> c.agent().model.name
        'demo'
    """

    config = providers.Configuration(default=DEFAULTS)
    """The configuration (see `load_container` for its sources)."""

    model: providers.Selector[Model] = providers.Selector(
        config.model.kind,
        test=providers.Singleton(TestModel, name=config.model.name),
        **_provider_models(config.model),
    )
    """The model, selected by ``model.kind``."""

    plugin_factories: providers.Provider[Mapping[str, PluginFactory] | None] = providers.Object(
        None
    )
    """Plugin factories by name; ``None`` discovers them from installed entry points."""

    registry: providers.Provider[Registry] = providers.Singleton(
        _registry,
        base=providers.Object(default_registry),
        config=config,
        factories=plugin_factories,
    )
    """The registry: the default one plus allowed plugins."""

    loop_settings: providers.Provider[LoopSettings] = providers.Singleton(
        _loop_settings, config.loop
    )
    """Loop settings from the ``loop`` configuration."""

    sessions: providers.Provider[SessionStore] = providers.Singleton(InMemorySessionStore)
    """The session store."""

    agent: providers.Factory[Agent]
    """An agent on this container's model, registry, settings and store; call
    ``container.agent(tools=[...], instructions=...)`` with any `Agent` argument."""


def _parse_env_value(text: str) -> Any:
    try:
        return yaml.safe_load(text)
    except yaml.YAMLError:
        return text


def _from_environ(environ: Mapping[str, str], prefix: str) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key, value in environ.items():
        if not key.startswith(prefix):
            continue
        path = key[len(prefix) :].lower().split("__")
        node = out
        for part in path[:-1]:
            node = node.setdefault(part, {})
        node[path[-1]] = _parse_env_value(value)
    return out


def _merge(base: dict[str, Any], extra: Mapping[str, Any]) -> dict[str, Any]:
    out = dict(base)
    for key, value in extra.items():
        if isinstance(value, Mapping) and isinstance(out.get(key), dict):
            out[key] = _merge(out[key], value)
        else:
            out[key] = value
    return out


def read_config_file(path: str | os.PathLike[str]) -> dict[str, Any]:
    """Read a TOML (``.toml``) or YAML (``.yaml``/``.yml``) configuration file.

    Raises:
        ConfigError: if the file is missing, unreadable or not a mapping.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except OSError as exc:
        msg = f"cannot read config file {str(p)!r}: {exc.strerror or exc}"
        raise ConfigError(msg) from None
    try:
        if p.suffix == ".toml":
            data: Any = tomllib.loads(text)
        elif p.suffix in (".yaml", ".yml"):
            data = yaml.safe_load(text) or {}
        else:
            msg = f"config file {str(p)!r} must end in .toml, .yaml or .yml"
            raise ConfigError(msg)
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        msg = f"config file {str(p)!r} is not valid {p.suffix[1:].upper()}: {exc}".splitlines()[0]
        raise ConfigError(msg) from None
    if not isinstance(data, dict):
        msg = f"config file {str(p)!r} must hold a mapping at the top level"
        raise ConfigError(msg)
    return data


def _with_preset(raw: dict[str, Any]) -> dict[str, Any]:
    presets = raw.get("models")
    if presets is None:
        return raw
    if not isinstance(presets, Mapping):
        msg = "config key 'models': must be a table of presets by model kind"
        raise ConfigError(msg)
    model = raw.get("model") or {}
    if not isinstance(model, Mapping):
        return raw  # validate_config reports the wrong type
    kind = model.get("kind", DEFAULTS["model"]["kind"])
    preset = presets.get(kind) if isinstance(kind, str) else None
    if preset is None:
        return raw
    if not isinstance(preset, Mapping):
        msg = f"config key 'models.{kind}': must be a table of model keys"
        raise ConfigError(msg)
    return {**raw, "model": {**preset, **model}}


@overload
def load_container(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = "FNCORE_",
    container: None = None,
) -> Container: ...
@overload
def load_container(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = "FNCORE_",
    container: _C,
) -> _C: ...
def load_container(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, Any] | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = "FNCORE_",
    container: Container | None = None,
) -> Container:
    """Make a container from the embedded defaults, a file, the environment and overrides.

    Later sources win: defaults < file < environment < ``overrides``. A ``models`` table
    holds per-kind presets (``[models.anthropic] name = "..."``): the preset of the selected
    ``model.kind`` fills in every ``model`` key that no source set, so one file serves every
    provider and switching is one key, ``--provider`` or ``FNCORE_MODEL__KIND``.

    Raises:
        ConfigError: for an unreadable file, a wrong key or value, or an unknown model kind.

    Example:
        >>> c = load_container(overrides={"loop": {"max_iterations": 5}}, environ={})
        >>> c.loop_settings().max_iterations
        5
    """
    raw: dict[str, Any] = {}
    if path is not None:
        raw = _merge(raw, read_config_file(path))
    raw = _merge(raw, _from_environ(os.environ if environ is None else environ, env_prefix))
    if overrides:
        raw = _merge(raw, overrides)
    raw = _with_preset(raw)
    config = validate_config(_merge(DEFAULTS, raw))
    target = container if container is not None else Container()
    kinds = sorted(target.model.providers)
    kind = config["model"]["kind"]
    if kind not in kinds:
        msg = f"config key 'model.kind': unknown kind {kind!r}; use one of: {', '.join(kinds)}"
        raise ConfigError(msg)
    target.config.from_dict(config)
    return target

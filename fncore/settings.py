"""Typed settings on pydantic-settings: embedded defaults < a file < ``FNCORE_*`` < overrides.

One model, `Settings`, declares every key, its type and its default. `load_settings` reads
a TOML or YAML file, the environment (``FNCORE_`` prefix, ``__`` between nested keys:
``FNCORE_LOOP__MAX_ITERATIONS=5``) and code overrides, later sources winning key by key.
Environment values are text, coerced by the key's type and never parsed as YAML, so
``FNCORE_AGENT__INSTRUCTIONS="English #1 priority"`` arrives exactly as written. API keys
are `pydantic.SecretStr`, shown as ``**********``. Any mistake is one `ConfigError` line
naming the key and where it came from: the file, the variable, or the overrides.
"""

from __future__ import annotations

import contextvars
import os
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Annotated, Any, Literal, final

import yaml
from pydantic import (
    BaseModel,
    ConfigDict,
    Field,
    SecretStr,
    ValidationError,
    field_validator,
    model_validator,
)
from pydantic_settings import (
    BaseSettings,
    EnvSettingsSource,
    PydanticBaseSettingsSource,
    SettingsConfigDict,
    SettingsError,
    TomlConfigSettingsSource,
    YamlConfigSettingsSource,
)
from pydantic_settings.sources.utils import parse_env_vars

from fncore._config_secrets import SecretUrl, hide_secrets
from fncore._session_url import session_url_problem
from fncore.core._checks import Seconds, SomeSeconds
from fncore.core._loop import LoopSettings

__all__ = [
    "ENV_PREFIX",
    "AgentConfig",
    "ConfigError",
    "DurableSettings",
    "MCPConfig",
    "MCPServerConfig",
    "MiddlewareEntry",
    "ModelConfig",
    "PluginsConfig",
    "QueueRateLimit",
    "ServeConfig",
    "SessionsConfig",
    "Settings",
    "load_settings",
]

ENV_PREFIX = "FNCORE_"
"""The prefix of the environment variables that configure fncore."""

NOT_SETTINGS = frozenset({"HOME", "VENV"})
"""``FNCORE_HOME`` (fncore's data directory) and ``FNCORE_VENV`` (the test script's virtual
environment) are read elsewhere: they are not settings, and not reported as unknown."""


class ConfigError(Exception):
    """The configuration is invalid; the message (one line) names the key and its source."""


class _RedactedUrls(BaseModel):
    """A settings section whose repr shows no secret (see `hide_secrets`).

    A URL anywhere in it shows without its password, a text ``api_key`` as ``**********``.
    """

    def __repr_args__(self) -> Any:
        for name, value in super().__repr_args__():
            yield name, hide_secrets(value, name)


class ModelConfig(_RedactedUrls):
    """The ``[model]`` section: which model the container builds, and how."""

    model_config = ConfigDict(extra="forbid")

    kind: str = "test"
    """The provider: ``test`` (offline), ``openai``, ``openai-responses`` or ``anthropic``."""
    name: str = "test"
    """The model to call, as the provider names it."""
    base_url: str | None = None
    """The provider's base URL (an OpenAI-compatible server, a proxy); ``None``: its own."""
    api_key: SecretStr | None = None
    """The API key; ``None``: the provider's own variable (``OPENAI_API_KEY``, ...)."""
    timeout: Seconds = 60.0
    """Seconds per request."""
    max_retries: Annotated[int, Field(ge=0)] = 2
    """The SDK's own retries of failed requests."""
    max_tokens: Annotated[int | None, Field(ge=1)] = None
    """Cap on output tokens; ``None``: the provider's default."""
    sdk_tracing: bool = False
    """Let the provider SDK emit its own OpenTelemetry spans."""
    options: dict[str, Any] = {}
    """Options of the kind's model class (see each provider's page)."""


MODEL_KEYS = frozenset(ModelConfig.model_fields)


class AgentConfig(BaseModel):
    """The ``[agent]`` section."""

    model_config = ConfigDict(extra="forbid")

    ref: str | None = None
    """Your agent for the command line, ``module:attr`` (as ``--agent`` takes it); ``None``:
    the example agent."""

    instructions: str = ""
    """The base system prompt, before ``system_prompt`` transformers."""
    output_strategy: Literal["auto", "native", "tool"] = "auto"
    """How ``container.agent(output_type=T)`` asks the model for a ``T`` (see "Structured
    output")."""
    output_retries: Annotated[int, Field(ge=0)] = 1
    """How many invalid answers go back to the model before the run fails."""


class ServeConfig(BaseModel):
    """The ``[serve]`` section: where ``fncore serve`` listens (flags win) and whom it serves."""

    model_config = ConfigDict(extra="forbid")

    host: str = "127.0.0.1"
    """The address to listen on: a loopback one (``127.0.0.1``, ``::1``, ``localhost``)
    unless ``keys`` are set."""
    port: Annotated[int, Field(ge=0, le=65535)] = 8000
    """The port to listen on; ``0`` takes any free one (the line ``serve`` prints says which)."""
    keys: dict[str, SecretStr] = {}
    """API keys by tenant: ``[serve.keys] acme = "..."`` or ``FNCORE_SERVE__KEYS__ACME``.
    Secrets: a repr shows ``**********``. Empty: no key needed, loopback only."""
    cors_origins: list[str] = []
    """Origins browsers may call the server from (``["*"]``: any); empty: CORS is off."""
    drain_seconds: Seconds = 30.0
    """After ``SIGTERM``, how long requests in flight may take to finish."""
    model_name: Annotated[str, Field(min_length=1)] = "fncore"
    """The model id clients send (``GET /v1/models``)."""
    max_body_bytes: Annotated[int, Field(ge=1)] = 1_000_000
    """The largest request body accepted; a larger one gets a 413."""
    max_messages: Annotated[int, Field(ge=1)] = 256
    """The most messages one request may carry; more get a 400."""
    runs_kept: Annotated[int, Field(ge=1)] = 200
    """How many recent runs each worker keeps for ``/api/runs`` and the console."""


class MiddlewareEntry(_RedactedUrls):
    """One ``[[middleware]]`` entry: a built-in (or your factory) and its parameters."""

    model_config = ConfigDict(extra="allow")

    use: str
    """A built-in's name (``retry``) or ``package.module:factory``; the other keys are the
    factory's parameters, checked against its signature when the container builds it."""
    step: bool = False
    """Make each hook the entry registers one step of a durable run (``@hook(event,
    step=True)``): it runs once, and not again when the run is replayed after a crash. An
    entry registering middleware cannot (their passes are steps already, or replay)."""


class SessionsConfig(_RedactedUrls):
    """The ``[sessions]`` section: where conversations are kept between runs."""

    model_config = ConfigDict(extra="forbid")

    url: str | None = None
    """``memory://``, ``sqlite:///path/to/sessions.db`` or ``postgresql://...``; ``None``:
    `load_container` sets ``sessions.db`` in fncore's data directory (``FNCORE_HOME``, else
    the user's data directory), and a bare ``Container()`` keeps sessions in memory."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: str | None) -> str | None:
        problem = None if url is None else session_url_problem(url)
        if problem is not None:
            raise ValueError(problem)
        return url


class PluginsConfig(BaseModel):
    """The ``[plugins]`` section: which installed plugins may load."""

    model_config = ConfigDict(extra="forbid")

    allow: list[str] = []
    """Entry points of group ``fncore.plugins`` to load, by name; nothing else is imported."""
    optional: list[str] = []
    """Allowed plugins that are skipped, with a warning, when they are missing or fail."""


class MCPServerConfig(_RedactedUrls):
    """One ``[mcp.servers.NAME]`` table: an MCP server whose tools the agents offer.

    Give ``command`` for a program on stdio, or ``url`` for a streamable HTTP server. The
    values of ``env`` and ``headers`` are secrets: a repr shows ``**********``.
    """

    model_config = ConfigDict(extra="forbid")

    command: list[str] | None = None
    """The program and its arguments, e.g. ``["mcp-server-time"]``."""
    env: dict[str, SecretStr] = {}
    """Environment variables for the program."""
    cwd: str | None = None
    """The program's working directory."""
    url: str | None = None
    """The streamable HTTP endpoint, e.g. ``http://127.0.0.1:8000/mcp``."""
    headers: dict[str, SecretStr] = {}
    """HTTP headers of every request, e.g. ``Authorization``."""
    prefix: Annotated[str, Field(pattern=r"^[A-Za-z0-9_-]*$")] = ""
    """Put before each of the server's tool names, to keep them apart from others."""
    timeout: Seconds = 60.0
    """Seconds a tool call, or listing the tools, may take."""
    startup_timeout: Seconds = 30.0
    """Seconds starting the server (the program, or reaching the URL, and the handshake) may
    take."""
    tools_ttl: SomeSeconds | None = None
    """Seconds a listing of the server's tools stands at most; unset: until the server says
    its tool list changed, or its connection is new. ``0`` lists them at every run."""

    @model_validator(mode="after")
    def _one_transport(self) -> MCPServerConfig:
        if (self.command is None) == (self.url is None):
            msg = "give either command (a program on stdio) or url (streamable HTTP)"
            raise ValueError(msg)
        if self.command is not None and not (self.command and self.command[0]):
            msg = "command must name the program: command = ['mcp-server-time']"
            raise ValueError(msg)
        if self.url is not None and not self.url.startswith(("http://", "https://")):
            msg = "url must start with http:// or https://"
            raise ValueError(msg)
        return self


class MCPConfig(BaseModel):
    """The ``[mcp]`` section: the MCP servers whose tools the container's agents offer."""

    model_config = ConfigDict(extra="forbid")

    servers: dict[str, MCPServerConfig] = {}
    """The servers, by name: ``[mcp.servers.time] command = ["mcp-server-time"]``."""


class QueueRateLimit(BaseModel):
    """``[durable] rate_limit``: at most ``limit`` runs start per ``period`` seconds."""

    model_config = ConfigDict(extra="forbid")

    limit: Annotated[int, Field(ge=1)]
    """How many runs may start in one period, over every worker."""
    period: Seconds
    """The period, in seconds."""


class DurableSettings(_RedactedUrls):
    """The ``[durable]`` section: where durable runs are kept, and how workers take them.

    Read by ``fncore.durable`` (install the ``durable`` extra); nothing here imports DBOS.
    """

    model_config = ConfigDict(extra="forbid")

    url: SecretStr | None = None
    """The DBOS system database: ``sqlite:///path/durable.sqlite`` or
    ``postgresql://user:password@host:port/database`` (one for many workers); ``None``:
    ``durable.sqlite`` beside ``sessions.db`` in fncore's data directory. A secret: a repr
    shows it without its password."""
    queue: Annotated[str, Field(min_length=1)] = "fncore-runs"
    """The queue that enqueued runs wait on."""
    global_concurrency: Annotated[int | None, Field(ge=1)] = None
    """The most runs of the queue running at once over every worker; ``None``: no limit."""
    worker_concurrency: Annotated[int | None, Field(ge=1)] = None
    """The most runs of the queue one worker runs at once; ``None``: no limit."""
    rate_limit: QueueRateLimit | None = None
    """``{ limit = 100, period = 60.0 }``: at most so many runs start per period."""
    polling_interval: Seconds = 1.0
    """Seconds between two looks at the queue."""
    drain_timeout: SomeSeconds = 30.0
    """After ``SIGTERM``, seconds the runs in flight may take to finish."""
    executor_id: Annotated[str | None, Field(min_length=1)] = None
    """This worker's identity: its runs are the ones it recovers; ``None``: one made once and
    kept in ``worker-id`` in fncore's data directory."""

    @field_validator("url")
    @classmethod
    def _check_url(cls, url: SecretStr | None) -> SecretStr | None:
        if url is None:
            return None
        text = url.get_secret_value()
        problem = session_url_problem(text)
        if problem is None and text.startswith("memory:"):
            problem = "memory:// cannot hold durable runs: use a sqlite:/// or postgresql:// URL"
        if problem is not None:
            raise ValueError(problem)
        return SecretUrl(text)


@final
@dataclass(frozen=True, slots=True)
class _Load:
    """What one `load_settings` call reads (the sources see it through a context variable)."""

    path: Path | None
    environ: Mapping[str, str]
    env_prefix: str


_LOAD: contextvars.ContextVar[_Load] = contextvars.ContextVar("fncore_settings_load")


def _current() -> _Load:
    """What the load in progress reads (a plain ``Settings()`` reads the process's)."""
    return _LOAD.get(None) or _Load(None, os.environ, ENV_PREFIX)


class _Environ(EnvSettingsSource):
    """The environment source, reading the mapping `load_settings` was given."""

    def _load_env_vars(self) -> Mapping[str, str | None]:
        return parse_env_vars(
            _current().environ, self.case_sensitive, self.env_ignore_empty, self.env_parse_none_str
        )


class Settings(_RedactedUrls, BaseSettings):
    """Everything fncore reads from configuration, typed, with the embedded defaults.

    Example:
        >>> s = load_settings(overrides={"loop": {"max_iterations": 5}}, environ={})
        >>> s.loop.max_iterations, s.model.kind
        (5, 'test')
    """

    model_config = SettingsConfigDict(
        env_prefix=ENV_PREFIX,
        env_nested_delimiter="__",
        extra="forbid",
    )

    model: ModelConfig = ModelConfig()
    """Which model to build."""
    models: dict[str, dict[str, Any]] = {}
    """Model presets by name: ``[models.anthropic] name = "..."``. The preset named like the
    selected kind fills every ``[model]`` key no source set, so one file serves every
    provider; any preset (with its own ``kind``, which defaults to its name) can be named
    where a built-in takes models, such as ``fallback``."""
    middleware: list[MiddlewareEntry] = []
    """Built-in (or your own) middleware, in order: the first entry is the outermost."""
    loop: LoopSettings = LoopSettings()
    """The agent loop's limits and timeouts."""
    agent: AgentConfig = AgentConfig()
    """The agent's instructions."""
    plugins: PluginsConfig = PluginsConfig()
    """Which plugins load."""
    sessions: SessionsConfig = SessionsConfig()
    """Where sessions live."""
    mcp: MCPConfig = MCPConfig()
    """The MCP servers whose tools are offered."""
    serve: ServeConfig = ServeConfig()
    """Where ``fncore serve`` listens."""
    durable: DurableSettings | None = None
    """Durable runs (``fncore.durable``); ``None``: no ``[durable]`` table, and what runs
    durably anyway uses `DurableSettings`' defaults."""
    app: dict[str, Any] = {}
    """Your own settings, free-form: middleware read them with ``Provide["config.app.x"]``."""

    @model_validator(mode="before")
    @classmethod
    def _apply_preset(cls, data: Any) -> Any:
        if not isinstance(data, dict):
            return data
        presets = data.get("models")
        if not isinstance(presets, Mapping):
            return data
        for kind, preset in presets.items():
            if not isinstance(preset, Mapping):
                continue
            unknown = sorted(set(preset) - MODEL_KEYS)
            if unknown:
                keys = ", ".join(sorted(MODEL_KEYS))
                msg = f"unknown key {unknown[0]!r} in the preset (keys: {keys})"
                raise PresetError(str(kind), unknown[0], msg)
        model = data.get("model") or {}
        if not isinstance(model, Mapping):
            return data
        kind = model.get("kind", ModelConfig.model_fields["kind"].default)
        preset = presets.get(kind) if isinstance(kind, str) else None
        if isinstance(preset, Mapping):
            data = {**data, "model": {**preset, **model}}
        return data

    @classmethod
    def settings_customise_sources(
        cls,
        settings_cls: type[BaseSettings],
        init_settings: PydanticBaseSettingsSource,
        env_settings: PydanticBaseSettingsSource,
        dotenv_settings: PydanticBaseSettingsSource,
        file_secret_settings: PydanticBaseSettingsSource,
    ) -> tuple[PydanticBaseSettingsSource, ...]:
        """Overrides, then the environment, then the file (first wins): fncore's order."""
        load = _current()
        sources: list[PydanticBaseSettingsSource] = [
            init_settings,
            _Environ(settings_cls, env_prefix=load.env_prefix),
        ]
        if load.path is not None:
            sources.append(_file_source(settings_cls, load.path))
        return tuple(sources)


class PresetError(ValueError):
    """A preset names a key the ``[model]`` section does not have."""

    def __init__(self, kind: str, key: str, message: str) -> None:
        super().__init__(message)
        self.loc = ("models", kind, key)


def _file_source(settings_cls: type[BaseSettings], path: Path) -> PydanticBaseSettingsSource:
    where = str(path)
    if path.suffix not in (".toml", ".yaml", ".yml"):
        msg = f"config file {where!r} must end in .toml, .yaml or .yml"
        raise ConfigError(msg)
    if not path.is_file():
        problem = "it is a directory" if path.is_dir() else "no such file"
        msg = f"cannot read config file {where!r}: {problem}"
        raise ConfigError(msg)
    try:
        if path.suffix == ".toml":
            source: PydanticBaseSettingsSource = TomlConfigSettingsSource(settings_cls, path)
        else:
            source = YamlConfigSettingsSource(settings_cls, path, yaml_file_encoding="utf-8")
    except UnicodeDecodeError as exc:
        msg = f"config file {where!r} is not UTF-8 text (byte {exc.start}); save it as UTF-8"
        raise ConfigError(msg) from None
    except OSError as exc:
        msg = f"cannot read config file {where!r}: {exc.strerror or exc}"
        raise ConfigError(msg) from None
    except (tomllib.TOMLDecodeError, yaml.YAMLError) as exc:
        detail = _first_line(str(exc))
        msg = f"config file {where!r} is not valid {path.suffix[1:].upper()}: {detail}"
        raise ConfigError(msg) from None
    except (TypeError, ValueError):  # YAML that parsed to a list or a scalar
        msg = f"config file {where!r} must hold a mapping of keys at the top level"
        raise ConfigError(msg) from None
    return source


def _first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), text)


def _has(data: Any, path: Sequence[object]) -> bool:
    for key in path:
        if not isinstance(data, Mapping) or key not in data:
            return False
        data = data[key]
    return True


def _source_of(
    path: Sequence[object],
    overrides: Mapping[str, Any],
    environ: Mapping[str, str],
    env_prefix: str,
    file_data: Mapping[str, Any] | None,
    file: Path | None,
) -> str:
    """Where the value at ``path`` came from: the source that set it and won."""
    keys = [str(k) for k in path]
    for size in range(len(keys), 0, -1):
        if _has(overrides, keys[:size]):
            return "overrides"
    lowered = {name.upper(): name for name in environ}
    for size in range(len(keys), 0, -1):
        variable = env_prefix + "__".join(keys[:size]).upper()
        if variable.upper() in lowered:
            return lowered[variable.upper()]
    if file is not None and file_data is not None:
        for size in range(len(keys), 0, -1):
            if _has(file_data, keys[:size]):
                return str(file)
    return "the defaults"


def load_settings(
    path: str | os.PathLike[str] | None = None,
    *,
    overrides: Mapping[str, object] | None = None,
    environ: Mapping[str, str] | None = None,
    env_prefix: str = ENV_PREFIX,
) -> Settings:
    """Read the settings: embedded defaults < ``path`` < environment < ``overrides``.

    Args:
        path: A ``.toml``, ``.yaml`` or ``.yml`` file, or ``None``.
        overrides: Values set in code, as nested dicts; they win over everything.
        environ: The environment to read (default: ``os.environ``).
        env_prefix: The variables' prefix.

    Raises:
        ConfigError: one line naming the key and where it came from (the file, the
            variable or the overrides), for a file that cannot be read or parsed, an
            unknown key, a wrong type or value, or an unknown model kind.

    Example:
        >>> s = load_settings(environ={"FNCORE_AGENT__INSTRUCTIONS": "English #1 priority"})
        >>> s.agent.instructions, s.agent.ref
        ('English #1 priority', None)
    """
    file = None if path is None else Path(path)
    env = dict(os.environ if environ is None else environ)
    given: dict[str, Any] = dict(overrides or {})  # checked by Settings, key by key
    _check_variables(env, env_prefix)
    token = _LOAD.set(_Load(file, env, env_prefix))
    file_data: Mapping[str, Any] | None = None
    try:
        if file is not None:
            source = _file_source(Settings, file)
            file_data = getattr(source, "toml_data", None) or getattr(source, "yaml_data", None)
        return Settings(**given)
    except ValidationError as exc:
        error = exc.errors(include_url=False)[0]
        loc = tuple(error["loc"])
        ctx = error.get("ctx") or {}
        cause = ctx.get("error")
        if isinstance(cause, PresetError):
            loc = cause.loc
            message = str(cause)
        else:
            message = error["msg"].removeprefix("Value error, ")
        where = _source_of(loc, given, env, env_prefix, file_data, file)
        more = f" (and {exc.error_count() - 1} more)" if exc.error_count() > 1 else ""
        key = ".".join(str(part) for part in loc) or "(top level)"
        msg = f"config key {key!r} from {where}: {_first_line(message)}{more}"
        raise ConfigError(msg) from None
    except SettingsError as exc:
        raise ConfigError(_settings_error(str(exc), env, env_prefix)) from None
    finally:
        _LOAD.reset(token)


def _check_variables(environ: Mapping[str, str], env_prefix: str) -> None:
    """Refuse a ``FNCORE_*`` variable that names no setting (a misspelt section, say)."""
    sections = {name.upper() for name in Settings.model_fields}
    prefix = env_prefix.upper()
    for variable in environ:
        upper = variable.upper()
        if not upper.startswith(prefix):
            continue
        head = upper[len(prefix) :].split("__", 1)[0]
        if head not in sections and head not in NOT_SETTINGS:
            known = ", ".join(sorted(f"{prefix}{s}" for s in sections))
            msg = f"environment variable {variable}: no setting {head.lower()!r} (known: {known})"
            raise ConfigError(msg)


def _settings_error(text: str, environ: Mapping[str, str], env_prefix: str) -> str:
    """A one-line message for pydantic-settings' own errors (a variable it cannot parse)."""
    field = text.split('"')[1] if text.count('"') >= 2 else ""
    variable = env_prefix + field.upper()
    if field and any(name.upper() == variable for name in environ):
        nested = sorted(n for n in environ if n.upper().startswith(variable + "__"))
        also = f" (and {nested[0]} sets one of its keys: set one or the other)" if nested else ""
        return (
            f"environment variable {variable}: {field!r} is a section, so its value must be "
            f"a JSON object{also}"
        )
    return _first_line(text)

"""Building the models from the container's ``model`` configuration section."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, get_args

from fncore.adapter import Model
from fncore_openai._chat_model import OpenAIChatModel
from fncore_openai._chat_request import MaxTokensParam, SystemRole
from fncore_openai._responses_model import OpenAIResponsesModel

_IGNORED = frozenset({"kind", "sdk_tracing"})
_COMMON = frozenset(
    {"name", "base_url", "api_key", "timeout", "max_retries", "max_tokens", "options"}
)


def _common(config: Mapping[str, Any], kind: str) -> dict[str, Any]:
    unknown = sorted(set(config) - _COMMON - _IGNORED)
    if unknown:
        msg = f"model kind {kind!r}: unknown key(s) model.{', model.'.join(unknown)}"
        raise ValueError(msg)
    name = config.get("name")
    if not isinstance(name, str) or not name:
        msg = f"model kind {kind!r} needs model.name (the model to call, e.g. gpt-4.1-mini)"
        raise ValueError(msg)
    kwargs: dict[str, Any] = {
        "api_key": config.get("api_key"),
        "base_url": config.get("base_url"),
        "max_tokens": config.get("max_tokens"),
    }
    if config.get("timeout") is not None:
        kwargs["timeout"] = float(config["timeout"])
    if config.get("max_retries") is not None:
        kwargs["max_retries"] = int(config["max_retries"])
    return kwargs


def _options(
    config: Mapping[str, Any], kind: str, allowed: Mapping[str, tuple[Any, ...]]
) -> dict[str, Any]:
    options = config.get("options") or {}
    if not isinstance(options, Mapping):
        msg = f"model kind {kind!r}: model.options must be a table"
        raise ValueError(msg)
    out: dict[str, Any] = {}
    for key, value in options.items():
        if key not in allowed:
            known = ", ".join(sorted(allowed)) or "none"
            msg = f"model kind {kind!r}: unknown option model.options.{key} (known: {known})"
            raise ValueError(msg)
        if value not in allowed[key]:
            choices = " or ".join(repr(c) for c in allowed[key])
            msg = f"model kind {kind!r}: model.options.{key} must be {choices}, not {value!r}"
            raise ValueError(msg)
        out[key] = value
    return out


def chat_model_from_config(config: Mapping[str, Any]) -> Model:
    """An `OpenAIChatModel` from the ``model`` configuration section (kind ``openai``).

    Keys: ``name``, ``base_url``, ``api_key`` (text or a `pydantic.SecretStr`; ``None``:
    ``OPENAI_API_KEY``), ``timeout``, ``max_retries``, ``max_tokens``, and ``options``:
    ``system_role`` (``system`` or ``developer``), ``max_tokens_param``
    (``max_completion_tokens`` or ``max_tokens``).

    Raises:
        ValueError: for a missing name or API key, or an unknown key or option.

    Example:
        >>> chat_model_from_config({"name": "gpt-4.1-mini", "api_key": "sk-test"}).name
        'gpt-4.1-mini'
    """
    kind = "openai"
    kwargs = _common(config, kind)
    options = _options(
        config,
        kind,
        {"system_role": get_args(SystemRole), "max_tokens_param": get_args(MaxTokensParam)},
    )
    return OpenAIChatModel(config["name"], **kwargs, **options)


def responses_model_from_config(config: Mapping[str, Any]) -> Model:
    """An `OpenAIResponsesModel` from the ``model`` section (kind ``openai-responses``).

    Keys: ``name``, ``base_url``, ``api_key`` (text or a `pydantic.SecretStr`; ``None``:
    ``OPENAI_API_KEY``), ``timeout``, ``max_retries``, ``max_tokens``, and ``options``:
    ``store`` (``true``/``false``).

    Raises:
        ValueError: for a missing name or API key, or an unknown key or option.

    Example:
        >>> responses_model_from_config({"name": "o4-mini", "api_key": "sk-test"}).name
        'o4-mini'
    """
    kind = "openai-responses"
    kwargs = _common(config, kind)
    options = _options(config, kind, {"store": (True, False)})
    return OpenAIResponsesModel(config["name"], **kwargs, **options)

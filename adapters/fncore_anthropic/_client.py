"""Building the ``AsyncAnthropic`` client, from arguments or the container's config section."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from anthropic import AsyncAnthropic

from fncore.adapter import ApiKey, Endpoint, resolve_api_key, secret_value
from fncore_anthropic._errors import PROVIDER

if TYPE_CHECKING:
    from fncore_anthropic._model import AnthropicModel

API_KEY_VARIABLE = "ANTHROPIC_API_KEY"
"""The environment variable holding the API key when the config gives none."""

DEFAULT_MAX_TOKENS = 4096
"""``max_tokens`` for requests whose settings give none; the Messages API requires one."""


def make_client(
    *,
    api_key: ApiKey,
    base_url: str | None,
    timeout: float,
    max_retries: int,
    sdk_tracing: bool,
) -> AsyncAnthropic:
    """The SDK client for these options; the only place the key is unwrapped.

    Args:
        api_key: The key, as text or a `pydantic.SecretStr`; ``None`` lets the SDK find
            one (``ANTHROPIC_API_KEY``, ...).
        base_url: The server, without ``/v1``; ``None`` for the SDK's default.
        timeout: Seconds per HTTP request.
        max_retries: The SDK's transport retries (it honours ``retry-after``).
        sdk_tracing: Keep the SDK's own OpenTelemetry span per call. ``False`` passes
            ``open_telemetry=False``, which turns off its spans and with them its
            ``traceparent`` header; the adapter then propagates the caller's trace context
            itself: tracing is left to the application's own middleware, and a span it
            opens around the call is not duplicated by the SDK's.
    """
    key = secret_value(api_key)
    if sdk_tracing:
        return AsyncAnthropic(
            api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries
        )
    return AsyncAnthropic(
        api_key=key,
        base_url=base_url,
        timeout=timeout,
        max_retries=max_retries,
        open_telemetry=False,
    )


def endpoint_of(client: AsyncAnthropic) -> Endpoint:
    """Where ``client`` sends, with its credentials to keep out of every message."""
    return Endpoint.create(
        PROVIDER,
        str(client.base_url),
        secrets=[client.api_key, client.auth_token],
        timeout=client.timeout,
    )


def from_config(config: Mapping[str, Any]) -> AnthropicModel:
    """The model the container's ``model`` config section describes.

    Keys: ``name`` (the model), ``api_key`` (text or a `pydantic.SecretStr`; ``None``:
    ``ANTHROPIC_API_KEY``), ``base_url`` (without ``/v1``), ``timeout``, ``max_retries``,
    ``max_tokens`` (the default ``max_tokens``) and ``sdk_tracing``; ``options`` must be
    empty (the model has no other options); others (``kind``, ...) are ignored.

    Raises:
        ValueError: when neither ``api_key`` nor ``ANTHROPIC_API_KEY`` gives a key, or the
            section names no model.

    Example:
        >>> m = from_config({"kind": "anthropic", "name": "claude-x", "api_key": "sk-ant-1"})
        >>> m.name
        'claude-x'
    """
    from fncore_anthropic._model import AnthropicModel

    name = config.get("name")
    if not isinstance(name, str) or not name:
        msg = "model.name must name the Anthropic model, e.g. claude-sonnet-4-5"
        raise ValueError(msg)
    api_key = config.get("api_key")
    if resolve_api_key(api_key, API_KEY_VARIABLE) is None:
        msg = f"no Anthropic API key: set {API_KEY_VARIABLE} or model.api_key in the config"
        raise ValueError(msg)
    options = config.get("options") or {}
    if options:
        msg = (
            f"model.options {sorted(options)} are not options of the anthropic model; "
            "use model.max_tokens, model.sdk_tracing and the other model keys"
        )
        raise ValueError(msg)
    timeout = config.get("timeout")
    max_retries = config.get("max_retries")
    return AnthropicModel(
        name,
        api_key=api_key,
        base_url=config.get("base_url") or None,
        timeout=60.0 if timeout is None else float(timeout),
        max_retries=2 if max_retries is None else int(max_retries),
        default_max_tokens=int(config.get("max_tokens") or DEFAULT_MAX_TOKENS),
        sdk_tracing=bool(config.get("sdk_tracing", False)),
    )

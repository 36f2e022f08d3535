"""Building the ``AsyncOpenAI`` client, and the `Endpoint` of a client."""

from __future__ import annotations

from openai import AsyncOpenAI

from fncore.adapter import ApiKey, Endpoint, resolve_api_key
from fncore_openai._errors import PROVIDER

API_KEY_ENV = "OPENAI_API_KEY"
"""The environment variable read when no API key is given."""

MISSING_KEY = (
    f"no OpenAI API key: set {API_KEY_ENV} or model.api_key (a local OpenAI-compatible "
    "server at model.base_url, such as vLLM, Ollama or LM Studio, still needs some key: "
    'any placeholder such as "local" works)'
)


def build_client(
    *, api_key: ApiKey, base_url: str | None, timeout: float, max_retries: int
) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client for these settings; the only place the key is unwrapped.

    ``base_url`` must end in ``/v1`` for OpenAI-compatible servers
    (``http://localhost:11434/v1``); ``None`` means OpenAI (or ``OPENAI_BASE_URL``).

    Raises:
        ValueError: if no API key is given or set in ``OPENAI_API_KEY`` (the message
            names both, never a key).
    """
    key = resolve_api_key(api_key, API_KEY_ENV)
    if key is None:
        raise ValueError(MISSING_KEY)
    return AsyncOpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=max_retries)


def endpoint_of(client: AsyncOpenAI) -> Endpoint:
    """Where ``client`` sends, with its key to keep out of every message."""
    key = getattr(client, "api_key", None)
    return Endpoint.create(
        PROVIDER,
        str(client.base_url),
        secrets=[key if isinstance(key, str) else None],
        timeout=client.timeout,
    )

"""Building the ``AsyncOpenAI`` client and finding its API key."""

from __future__ import annotations

import os

from openai import AsyncOpenAI

API_KEY_ENV = "OPENAI_API_KEY"
"""The environment variable read when no API key is given."""

MISSING_KEY = (
    f"no OpenAI API key: set {API_KEY_ENV} or model.api_key (a local OpenAI-compatible "
    "server at model.base_url, such as vLLM, Ollama or LM Studio, still needs some key: "
    'any placeholder such as "local" works)'
)


def resolve_api_key(api_key: str | None) -> str:
    """``api_key``, else the ``OPENAI_API_KEY`` variable.

    Raises:
        ValueError: if neither is set (the message names both, never a key).
    """
    key = api_key or os.environ.get(API_KEY_ENV)
    if not key:
        raise ValueError(MISSING_KEY)
    return key


def build_client(
    *, api_key: str | None, base_url: str | None, timeout: float, max_retries: int
) -> AsyncOpenAI:
    """An ``AsyncOpenAI`` client for these settings.

    ``base_url`` must end in ``/v1`` for OpenAI-compatible servers
    (``http://localhost:11434/v1``); ``None`` means OpenAI (or ``OPENAI_BASE_URL``).

    Raises:
        ValueError: if no API key is given or set in the environment.
    """
    return AsyncOpenAI(
        api_key=resolve_api_key(api_key),
        base_url=base_url,
        timeout=timeout,
        max_retries=max_retries,
    )


def client_secret(client: AsyncOpenAI) -> str | None:
    """The client's API key, to keep out of error messages."""
    key = getattr(client, "api_key", None)
    return key if isinstance(key, str) and key else None

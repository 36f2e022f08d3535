"""Secrets: API keys given as `pydantic.SecretStr` or text, and credentials inside URLs."""

from __future__ import annotations

import os
import re
from typing import TypeAlias
from urllib.parse import unquote, unquote_plus, urlsplit, urlunsplit

from pydantic import SecretStr

__all__ = ["ApiKey", "redact", "redact_url", "resolve_api_key", "secret_value", "url_secrets"]

ApiKey: TypeAlias = SecretStr | str | None
"""An API key as adapters take it: a `pydantic.SecretStr` (what the container passes), plain
text, or ``None`` for the provider's environment variable."""

REDACTED = "[redacted]"
"""What stands in place of a secret in every message, URL and repr."""

_SECRET_NAME = re.compile(r"key|token|secret|passw|pwd|sig|auth|credential", re.IGNORECASE)
"""Query parameter names whose values are credentials: ``key``, ``api_key``, ``access_token``,
``client_secret``, ``password``, ``sig``, ``X-Amz-Signature``, ``X-Amz-Credential``, ..."""


def secret_value(key: ApiKey) -> str | None:
    """The key as plain text, to hand to an SDK client; ``None`` when absent or empty.

    Call it only where the client is built: everywhere else keep the `SecretStr`, whose
    ``repr`` and ``str`` show no secret.

    Example:
        >>> from pydantic import SecretStr
        >>> secret_value(SecretStr("sk-1")), secret_value("sk-2"), secret_value(SecretStr(""))
        ('sk-1', 'sk-2', None)
    """
    value = key.get_secret_value() if isinstance(key, SecretStr) else key
    return value or None


def resolve_api_key(key: ApiKey, variable: str) -> str | None:
    """The key's value, else the value of the environment ``variable``, else ``None``.

    Example:
        >>> from pydantic import SecretStr
        >>> resolve_api_key(SecretStr("sk-1"), "NO_SUCH_VARIABLE_SET")
        'sk-1'
    """
    return secret_value(key) or os.environ.get(variable) or None


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every given secret (an API key) replaced by ``[redacted]``.

    Secrets shorter than four characters are left alone: replacing them would mangle
    ordinary words.

    Example:
        >>> redact("bad key sk-123", "sk-123")
        'bad key [redacted]'
    """
    for secret in secrets:
        if secret and len(secret) >= 4:
            text = text.replace(secret, REDACTED)
    return text


def redact_url(url: str) -> str:
    """``url`` fit to show: its credentials replaced by ``[redacted]``.

    The user info (``user:password@``) goes, and so do the values of query (and fragment)
    parameters named like a key, token, secret, password or signature. A URL that cannot be
    parsed is replaced whole.

    Example:
        >>> redact_url("https://user:pw@proxy.example/v1?api_key=sk-1&region=eu")
        'https://[redacted]@proxy.example/v1?api_key=[redacted]&region=eu'
        >>> redact_url("https://store.example/blob?sv=2024&sig=abc%2Bdef")
        'https://store.example/blob?sv=2024&sig=[redacted]'
    """
    return _split(url)[0]


def url_secrets(url: str) -> tuple[str, ...]:
    """The credentials `redact_url` hides, as they may appear elsewhere in a message.

    The password comes out as written and unquoted, the whole user info too, and the user
    name alone when there is no password (a token given as the user name).

    Example:
        >>> url_secrets("https://bot:p%40ss@host/v1?token=t-123")
        ('bot:p%40ss', 'p%40ss', 'p@ss', 't-123')
    """
    return _split(url)[1]


def _split(url: str) -> tuple[str, tuple[str, ...]]:
    try:
        parts = urlsplit(url)
    except ValueError:  # e.g. an unbalanced "[" in the host
        return REDACTED, (url,)
    found: list[str] = []
    netloc = parts.netloc
    if "@" in netloc:
        userinfo, _, host = netloc.rpartition("@")
        user, colon, password = userinfo.partition(":")
        found.append(userinfo)
        _add(found, password if colon else user)
        netloc = f"{REDACTED}@{host}"
    query = _redacted_pairs(parts.query, found)
    fragment = _redacted_pairs(parts.fragment, found)
    shown = urlunsplit((parts.scheme, netloc, parts.path, query, fragment))
    return shown, tuple(dict.fromkeys(s for s in found if s))


def _redacted_pairs(text: str, found: list[str]) -> str:
    """``name=value&...`` with the values of secret-looking names replaced."""
    if "=" not in text:
        return text
    pairs = text.split("&")
    for i, pair in enumerate(pairs):
        name, equals, value = pair.partition("=")
        if equals and value and _SECRET_NAME.search(unquote_plus(name)):
            _add(found, value, plus=True)
            if value.endswith("/"):  # SDKs append "/" to the raw path, after the query
                _add(found, value.rstrip("/"), plus=True)
            pairs[i] = f"{name}={REDACTED}"
    return "&".join(pairs)


def _add(found: list[str], value: str, *, plus: bool = False) -> None:
    """Add ``value`` as written and, when it differs, unquoted."""
    found.append(value)
    found.append(unquote_plus(value) if plus else unquote(value))

"""Secrets in the container's configuration: kept whole for what connects, hidden elsewhere.

`load_container` fills the container's ``config`` from the settings, and anything may print
``container.config()``. So, in what it holds, every URL with a password (anywhere: the
session store, a model's ``base_url``, an MCP server, a shared store in a ``[[middleware]]``
entry, your ``[app]`` section) is a `SecretUrl`, and a preset's ``api_key`` a
``pydantic.SecretStr``, as ``model.api_key`` already is. The container's own providers
`reveal` them where they build what connects, so nothing else changes for them.
"""

from __future__ import annotations

from typing import Any, final

from pydantic import SecretStr

from fncore._session_url import redact_password

SECRET_KEYS = frozenset({"api_key"})
"""Keys whose text values are secrets wherever they appear (a ``[models.*]`` preset's)."""


@final
class SecretUrl(SecretStr):
    """A URL with a password: its ``str`` and ``repr`` show it with the password redacted.

    ``get_secret_value()`` gives the URL whole, as for any ``pydantic.SecretStr``.

    Example:
        >>> url = SecretUrl("redis://:hunter2@cache:6379/0")
        >>> str(url), url
        ('redis://:[redacted]@cache:6379/0', SecretUrl('redis://:[redacted]@cache:6379/0'))
        >>> url.get_secret_value()
        'redis://:hunter2@cache:6379/0'
    """

    def __str__(self) -> str:
        return redact_password(self.get_secret_value())

    def __repr__(self) -> str:
        return f"SecretUrl({str(self)!r})"


@final
class _HiddenText(SecretStr):
    """A secret given as plain text where fncore knows it is one (a preset's ``api_key``)."""

    def __repr__(self) -> str:
        return f"SecretStr({str(self)!r})"


def hide_secrets(value: Any, key: object = None) -> Any:
    """``value`` (settings as a dict) with its secrets wrapped, so no repr shows them.

    Example:
        >>> hide_secrets({"sessions": {"url": "postgresql://app:pw@db/app"}, "n": 1})
        {'sessions': {'url': SecretUrl('postgresql://app:[redacted]@db/app')}, 'n': 1}
    """
    if isinstance(value, dict):
        return {k: hide_secrets(v, k) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(hide_secrets(v) for v in value)
    if type(value) is str:
        if key in SECRET_KEYS:
            return _HiddenText(value)
        if "://" in value and redact_password(value) != value:
            return SecretUrl(value)
    return value


def reveal(value: Any) -> Any:
    """``value`` as the settings gave it: what `hide_secrets` wrapped, unwrapped.

    Example:
        >>> reveal({"url": SecretUrl("redis://:pw@cache")})
        {'url': 'redis://:pw@cache'}
    """
    if isinstance(value, dict):
        return {k: reveal(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return type(value)(reveal(v) for v in value)
    if type(value) is SecretUrl or type(value) is _HiddenText:
        return value.get_secret_value()
    return value

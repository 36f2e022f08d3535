"""`ServeSettings`: what the served app shows, what it accepts, and from whom."""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from types import MappingProxyType
from typing import final

from pydantic import SecretStr

__all__ = ["ServeSettings"]

_NO_KEYS: Mapping[str, SecretStr] = MappingProxyType({})


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """The settings of an app made by `create_app`.

    API keys are given per tenant, ``{tenant: key}``; each key is held as a
    ``pydantic.SecretStr``, so no repr, log line or error shows it.

    Example:
        >>> s = ServeSettings(model_name="support-bot", keys={"acme": "sk-acme-1"})
        >>> s.max_messages, s.keys
        (256, mappingproxy({'acme': SecretStr('**********')}))
    """

    model_name: str = "fncore"
    """The model id clients send and ``GET /v1/models`` lists; another id gets a 404."""
    max_body_bytes: int = 1_000_000
    """The largest request body accepted; a larger one gets a 413."""
    max_messages: int = 256
    """The most messages one request may carry; more get a 400."""
    runs_kept: int = 200
    """How many recent runs the app keeps for ``/api/runs`` and the console (when
    `create_app` makes its own `RunsLog`)."""
    keys: Mapping[str, SecretStr | str] = field(default_factory=lambda: _NO_KEYS)
    """API keys by tenant name. Empty: every route is open (serve on loopback only).
    Otherwise every route but ``/healthz``, ``/readyz`` and the console's static files
    needs ``Authorization: Bearer KEY``, and the key's tenant goes into each run's
    metadata as ``{"tenant": NAME}``."""
    cors_origins: tuple[str, ...] = ()
    """The origins browsers may call the app from (``"*"``: any); empty: CORS is off."""

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_messages", "runs_kept"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"ServeSettings.{name} must be a positive int, not {value!r}"
                raise ValueError(msg)
        if not self.model_name:
            msg = "ServeSettings.model_name must not be empty"
            raise ValueError(msg)
        object.__setattr__(self, "keys", MappingProxyType(_checked_keys(self.keys)))
        object.__setattr__(self, "cors_origins", tuple(self.cors_origins))

    def key_tenants(self) -> tuple[tuple[bytes, str], ...]:
        """Each key, as bytes, with its tenant: what a request's key is compared with."""
        return tuple(
            (_secret(key).get_secret_value().encode(), tenant) for tenant, key in self.keys.items()
        )


def _secret(key: SecretStr | str) -> SecretStr:
    return key if isinstance(key, SecretStr) else SecretStr(key)


def _checked_keys(keys: Mapping[str, SecretStr | str]) -> dict[str, SecretStr]:
    """``keys`` as secrets, refused (without showing any key) if one could not work."""
    checked: dict[str, SecretStr] = {}
    seen: set[str] = set()
    given: Iterable[tuple[object, object]] = keys.items()  # checked: from anywhere
    for tenant, key in given:
        if not isinstance(tenant, str) or not tenant:
            msg = "ServeSettings.keys: every key needs a tenant name (a non-empty string)"
            raise ValueError(msg)
        if not isinstance(key, SecretStr | str):
            msg = f"ServeSettings.keys[{tenant!r}] must be a string"
            raise ValueError(msg)
        value = _secret(key).get_secret_value()
        if not value or value != value.strip() or not value.isprintable():
            msg = (
                f"ServeSettings.keys[{tenant!r}] must be printable text without spaces "
                "at its ends, and not empty"
            )
            raise ValueError(msg)
        if value in seen:
            msg = f"ServeSettings.keys[{tenant!r}] is another tenant's key too; give each its own"
            raise ValueError(msg)
        seen.add(value)
        checked[tenant] = _secret(key)
    return checked

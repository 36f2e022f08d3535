"""`ServeSettings`: what the served app shows and what it accepts."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

__all__ = ["ServeSettings"]


@final
@dataclass(frozen=True, slots=True, kw_only=True)
class ServeSettings:
    """The settings of an app made by `create_app`.

    Example:
        >>> ServeSettings(model_name="support-bot").max_messages
        256
    """

    model_name: str = "fncore"
    """The model id clients send and ``GET /v1/models`` lists; another id gets a 404."""
    max_body_bytes: int = 1_000_000
    """The largest request body accepted; a larger one gets a 413."""
    max_messages: int = 256
    """The most messages one request may carry; more get a 400."""

    def __post_init__(self) -> None:
        for name in ("max_body_bytes", "max_messages"):
            value = getattr(self, name)
            if isinstance(value, bool) or not isinstance(value, int) or value < 1:
                msg = f"ServeSettings.{name} must be a positive int, not {value!r}"
                raise ValueError(msg)
        if not self.model_name:
            msg = "ServeSettings.model_name must not be empty"
            raise ValueError(msg)

"""Token usage."""

from __future__ import annotations

from dataclasses import dataclass
from typing import final

from fncore.core._value import value

__all__ = ["Usage"]


@final
@value
@dataclass(frozen=True, slots=True)
class Usage:
    """Tokens spent by one or more model calls. Usages add up with ``+``.

    Example:
        >>> (Usage(input_tokens=3, output_tokens=1) + Usage(input_tokens=2)).input_tokens
        5
    """

    input_tokens: int = 0
    """Prompt tokens, cached ones included."""
    output_tokens: int = 0
    """Completion tokens, reasoning ones included."""
    cache_read_tokens: int = 0
    """Prompt tokens served from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Prompt tokens written to the provider's prompt cache."""
    reasoning_tokens: int = 0
    """Completion tokens spent on reasoning."""
    requests: int = 0
    """How many model requests this covers."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        return Usage(
            self.input_tokens + other.input_tokens,
            self.output_tokens + other.output_tokens,
            self.cache_read_tokens + other.cache_read_tokens,
            self.cache_write_tokens + other.cache_write_tokens,
            self.reasoning_tokens + other.reasoning_tokens,
            self.requests + other.requests,
        )


NO_USAGE = Usage()
"""The empty usage, shared: the default wherever usage is unknown."""

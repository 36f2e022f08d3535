"""The names of the positions, for `fncore.core._positions`, where each is described.

The names live in a module of their own, below every other, so that error values and
contexts can name a position without importing the table (which imports them). The
table checks, when it is imported, that it describes exactly these names, in this order.
"""

from __future__ import annotations

from typing import Final, Literal, TypeAlias

__all__ = ["Position"]

Position: TypeAlias = Literal[
    "run", "reasoning", "model_call", "tool_call", "compress_context", "system_prompt"
]
"""Where a middleware stands; see the concepts page for what each wraps."""

RUN: Final = "run"
REASONING: Final = "reasoning"
MODEL_CALL: Final = "model_call"
TOOL_CALL: Final = "tool_call"
COMPRESS_CONTEXT: Final = "compress_context"
SYSTEM_PROMPT: Final = "system_prompt"

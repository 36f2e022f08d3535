"""A prompt function of "an application", named in configuration by module path."""

from __future__ import annotations

from fncore import SystemPromptContext


def house_rules(ctx: SystemPromptContext) -> str:
    """The house rules."""
    return "No swearing."

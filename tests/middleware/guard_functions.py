"""Guardrails of "an application", named in configuration as ``guard_functions:<name>``."""

from __future__ import annotations

from fncore import ToolCallContext
from fncore.middleware import Allow, Block, GuardCheck, Reject, Rewrite, ToolVerdict, Verdict


def no_shouting(check: GuardCheck) -> Verdict:
    """Block a text written in capitals."""
    return Block("shouting") if check.text.isupper() else Allow()


async def polite(check: GuardCheck) -> Verdict:
    """Rewrite "stupid" away, asynchronously."""
    return Rewrite(check.text.replace("stupid", "silly"))


def small_numbers(ctx: ToolCallContext) -> ToolVerdict:
    """Reject a tool call whose ``a`` is above 100."""
    return Reject("Numbers above 100 are not allowed.") if ctx.arg("a", int) > 100 else Allow()


NOT_A_FUNCTION = 3

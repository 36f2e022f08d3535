"""Built-in middleware: batteries for production agents.

Each built-in is a factory returning a `fncore.Registry`: one line in code,
``registry.include(retry(max_attempts=4))``, or one block in configuration::

    [[middleware]]
    use = "retry"
    max_attempts = 4

Every built-in loads with ``use`` alone and its documented defaults, declares its place in
the onion (see "Ordering the built-ins"), and keeps no per-run state on itself: counters live
in the reply's or the session's state, shared state in a store chosen by URL.
"""

from fncore.middleware._config import BUILTINS, build_middleware, load_factory
from fncore.middleware._place import ORDER, place
from fncore.middleware.approve import approve
from fncore.middleware.budget import Price, budget
from fncore.middleware.cache import cache
from fncore.middleware.cache_prompt import cache_prompt
from fncore.middleware.compact import compact
from fncore.middleware.emulate_tools import emulate_tools
from fncore.middleware.fallback import answered_by, fallback
from fncore.middleware.guard import (
    Allow,
    Block,
    GuardBlocked,
    GuardCheck,
    Guardrail,
    Reject,
    Rewrite,
    ToolGuardrail,
    ToolVerdict,
    Verdict,
    denied,
    guard,
)
from fncore.middleware.instructions import MissingField, PromptFunction, instructions
from fncore.middleware.limit_calls import limit_calls
from fncore.middleware.patch_tool_calls import ToolCallPatch, patch_tool_calls, patched_calls
from fncore.middleware.rate_limit import rate_limit
from fncore.middleware.redact_pii import PIIBlocked, redact_pii
from fncore.middleware.repair_history import Repair, history_repairs, repair_history
from fncore.middleware.retry import retry, retry_tools
from fncore.middleware.select_tools import select_tools
from fncore.middleware.timeout import timeout
from fncore.middleware.trace import trace

__all__ = [
    "BUILTINS",
    "ORDER",
    "Allow",
    "Block",
    "GuardBlocked",
    "GuardCheck",
    "Guardrail",
    "MissingField",
    "PIIBlocked",
    "Price",
    "PromptFunction",
    "Reject",
    "Repair",
    "Rewrite",
    "ToolCallPatch",
    "ToolGuardrail",
    "ToolVerdict",
    "Verdict",
    "answered_by",
    "approve",
    "budget",
    "build_middleware",
    "cache",
    "cache_prompt",
    "compact",
    "denied",
    "emulate_tools",
    "fallback",
    "guard",
    "history_repairs",
    "instructions",
    "limit_calls",
    "load_factory",
    "patch_tool_calls",
    "patched_calls",
    "place",
    "rate_limit",
    "redact_pii",
    "repair_history",
    "retry",
    "retry_tools",
    "select_tools",
    "timeout",
    "trace",
]

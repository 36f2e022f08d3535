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
from fncore.middleware.budget import Price, budget
from fncore.middleware.cache import cache
from fncore.middleware.compact import compact
from fncore.middleware.fallback import answered_by, fallback
from fncore.middleware.limit_calls import limit_calls
from fncore.middleware.rate_limit import rate_limit
from fncore.middleware.retry import retry, retry_tools
from fncore.middleware.timeout import timeout
from fncore.middleware.trace import trace

__all__ = [
    "BUILTINS",
    "ORDER",
    "Price",
    "answered_by",
    "budget",
    "build_middleware",
    "cache",
    "compact",
    "fallback",
    "limit_calls",
    "load_factory",
    "place",
    "rate_limit",
    "retry",
    "retry_tools",
    "timeout",
    "trace",
]

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

from fncore import _public
from fncore.middleware._config import *
from fncore.middleware._place import *
from fncore.middleware.approve import *
from fncore.middleware.budget import *
from fncore.middleware.cache import *
from fncore.middleware.cache_prompt import *
from fncore.middleware.compact import *
from fncore.middleware.emulate_tools import *
from fncore.middleware.fallback import *
from fncore.middleware.guard import *
from fncore.middleware.instructions import *
from fncore.middleware.limit_calls import *
from fncore.middleware.patch_tool_calls import *
from fncore.middleware.rate_limit import *
from fncore.middleware.redact_pii import *
from fncore.middleware.repair_history import *
from fncore.middleware.retry import *
from fncore.middleware.select_tools import *
from fncore.middleware.timeout import *
from fncore.middleware.trace import *

_public.export(__name__, rename=None)  # built-ins keep their modules (doctests run there)

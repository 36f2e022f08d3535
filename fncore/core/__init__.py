"""The functional core: data types, outcomes, the fold, ordering and the loop's decisions.

Pure: no I/O, no SDK, no container, no clock, no event loop.

This package is internal: its names and modules may change in any release. Applications
import from `fncore` (and `fncore.testing`, `fncore.settings`, `fncore.container`);
model adapters import from `fncore.adapter`; an import-linter contract keeps fncore's own
adapters off this package.
"""

from fncore import _public
from fncore.core._checkpoint import *
from fncore.core._contexts import *
from fncore.core._errors import *
from fncore.core._events import *
from fncore.core._hook_events import *
from fncore.core._messages import *
from fncore.core._model import *
from fncore.core._outcomes import *
from fncore.core._output import *
from fncore.core._pairing import *
from fncore.core._pause import *
from fncore.core._positions import *
from fncore.core._registry import *
from fncore.core._result import *
from fncore.core._resume import *
from fncore.core._session import *
from fncore.core._state import *
from fncore.core._tool_choice import *
from fncore.core._tools import *
from fncore.core._usage import *

_public.export(__name__, rename=None)

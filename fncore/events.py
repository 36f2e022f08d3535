"""Events: what `Agent.stream` yields, and what hooks observe.

A stream yields, in order, the deltas of each model response as they arrive (`TextDelta`,
`ReasoningDelta`, `ToolCallStarted`, `ToolCallArgsDelta`, `UsageReported`), the loop's
progress (`RoundStarted`, `RoundFinished`, `ToolResultReady`), and the stops on the way
(`GuardTripped`, `RunPaused`); a sub-agent's events arrive wrapped in `SubagentEvent`. Its
last event is always `RunCompleted`, holding what `Agent.run` would have returned.
`StreamEvent` is the union of them all.

Hooks (``@hook("run_start")``, ...) observe the lifecycle instead: `RunStart`, `RunEnd`,
`RoundStart`, `ToolStart`, `ToolEnd`, `Compaction`, `ErrorRaised`, `SubagentStart` and
`SubagentEnd`; `HookEventName` names them and `HookEvent` is their union.
"""

from fncore import _public
from fncore.core import Compaction as Compaction
from fncore.core import ErrorRaised as ErrorRaised
from fncore.core import GuardTripped as GuardTripped
from fncore.core import HookEvent as HookEvent
from fncore.core import HookEventName as HookEventName
from fncore.core import ReasoningDelta as ReasoningDelta
from fncore.core import RoundFinished as RoundFinished
from fncore.core import RoundStart as RoundStart
from fncore.core import RoundStarted as RoundStarted
from fncore.core import RunCompleted as RunCompleted
from fncore.core import RunEnd as RunEnd
from fncore.core import RunPaused as RunPaused
from fncore.core import RunStart as RunStart
from fncore.core import StreamEvent as StreamEvent
from fncore.core import SubagentEnd as SubagentEnd
from fncore.core import SubagentEvent as SubagentEvent
from fncore.core import SubagentStart as SubagentStart
from fncore.core import TextDelta as TextDelta
from fncore.core import ToolCallArgsDelta as ToolCallArgsDelta
from fncore.core import ToolCallStarted as ToolCallStarted
from fncore.core import ToolEnd as ToolEnd
from fncore.core import ToolResultReady as ToolResultReady
from fncore.core import ToolStart as ToolStart
from fncore.core import UsageReported as UsageReported

_public.export(__name__)

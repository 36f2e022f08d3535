"""What middleware's own model calls spend, counted in the run's `Usage`.

A middleware's model call (`RunInfo.call_model`: compact's summary, emulate_tools,
select_tools, guard's moderation) goes through the ``model_call`` onion, so trace, limits
and budgets see it and its usage like any other call. Its usage is the run's too: each call
adds the usage of the response it got back through the onion (a cached answer costs
nothing, a retried call its last attempt, as for the agent's own rounds) to a tally in the
reply state, which a pause keeps, so a resumed reply counts the whole reply. The tally is
added to the `RunResult`:

* when the loop ends, if ``run`` middleware wrap it, so they (trace's run span) see a total
  that holds it;
* after the ``run`` onion, what the result does not hold yet: all of it without ``run``
  middleware; what was spent after the loop ended, or in a run that never reached it (an
  input guard's moderation call, then a block), with them.
"""

from __future__ import annotations

from dataclasses import astuple, replace

from fncore.core import RunInfo, RunResult, StateKey, Usage
from fncore.core._usage import NO_USAGE

SPENT: StateKey[Usage] = StateKey("fncore.model_calls.usage", default=lambda: NO_USAGE)
"""What the reply's middleware calls spent so far (no entry while they spent nothing)."""


def spend(run: RunInfo, usage: Usage) -> None:
    """Add ``usage``, what one middleware call of ``run`` spent, to the reply's tally."""
    if usage != NO_USAGE:
        run.state.set(SPENT, run.state.get(SPENT) + usage)


def with_calls(run: RunInfo, done: RunResult) -> tuple[RunResult, Usage]:
    """``done``, the loop's result, holding the tally so far; and the tally it holds."""
    spent = run.state.peek(SPENT)
    if spent is None:
        return done, NO_USAGE
    return replace(done, usage=done.usage + spent), spent


def with_later_calls(run: RunInfo, done: RunResult, counted: Usage) -> RunResult:
    """``done``, the run's result, holding the tally: all but ``counted``, what it holds."""
    spent = run.state.peek(SPENT)
    if spent is None or spent == counted:
        return done
    later = Usage(*(s - c for s, c in zip(astuple(spent), astuple(counted), strict=True)))
    return replace(done, usage=done.usage + later)

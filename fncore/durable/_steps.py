"""The step boundary on DBOS: each of a run's effects is one DBOS step, recorded once.

`DbosSteps` is the `fncore.runtime.Steps` a durable run is given: ``step`` runs a thunk
as ``DBOS.run_step_async`` (at a slot drawn earlier by ``reserve``, for concurrent tool
calls, so the step ids follow the call order whatever the scheduling). DBOS records what
it returned; on replay it returns the record without calling the thunk. DBOS's own step
retries stay off: a step is one whole pass through an onion, whose retry middleware
already retried.
"""

from __future__ import annotations

import copyreg
from collections.abc import Awaitable, Callable, Sequence
from types import MappingProxyType
from typing import Any, TypeVar, final

from dbos import DBOS, StepOptions, StepReservation

__all__ = ["DbosSteps"]

T = TypeVar("T")


def read_only(items: dict[Any, Any]) -> MappingProxyType[Any, Any]:
    """``items`` as a read-only mapping: how a pickled ``MappingProxyType`` comes back."""
    return MappingProxyType(items)


def _mapping_proxy(
    proxy: MappingProxyType[Any, Any],
) -> tuple[Callable[[dict[Any, Any]], MappingProxyType[Any, Any]], tuple[dict[Any, Any]]]:
    return read_only, (dict(proxy),)


# What steps record goes through DBOS's pickle serializer, which any DBOSClient reads back.
# fncore's values keep read-only mappings (a session's state, a run's metadata) in
# ``MappingProxyType``s, which pickle cannot take by itself: it may now, as a copy.
copyreg.pickle(MappingProxyType, _mapping_proxy)


async def _call(thunk: Callable[[], Awaitable[T]]) -> T:
    """Await ``thunk()``: DBOS runs a coroutine function on the workflow's loop."""
    return await thunk()


@final
class DbosSteps:
    """`fncore.runtime.Steps` on DBOS (used inside fncore's workflow only)."""

    __slots__ = ()

    def reserve(self, count: int) -> Sequence[object]:
        """``count`` step slots, drawn now, in order."""
        return [DBOS.reserve_step() for _ in range(count)]

    async def step(
        self, name: str, thunk: Callable[[], Awaitable[T]], slot: object | None = None
    ) -> T:
        """Run ``thunk`` as the step ``name`` (at ``slot`` if given); on replay, its record."""
        options: StepOptions = {"name": name, "retries_allowed": False}
        if isinstance(slot, StepReservation):
            return await slot.run_async(options, _call, thunk)
        return await DBOS.run_step_async(options, _call, thunk)

"""`CallSpan`: the current span while a model call's middleware run, standing for the call.

`trace`'s outer ``model_call`` layer makes one per call; its inner layer hands it each
attempt's ``chat`` span, which gets what the middleware between them set.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from typing import Any

from opentelemetry.trace import NonRecordingSpan, Span
from opentelemetry.util.types import Attributes

_NOTHING: tuple[dict[str, Any], int] = ({}, 0)
"""What a call whose middleware set nothing before its first attempt shares with each."""


class CallSpan(NonRecordingSpan):
    """The current span while a model call's middleware run, before an attempt opens one.

    A `NonRecordingSpan` of its parent's span context, so spans started under it nest
    under the run, and every method of the Span API it does not keep is the API's own
    no-op (one the API adds too). What is set on it is kept, and lands on the ``chat``
    spans:

    * set before the first attempt started (a cache's miss), on every attempt's span,
      from its start (`begin`, `began`);
    * set after an attempt returned (``patch_tool_calls``' events), on that attempt's span:
      it is held open (`hold`) until the next attempt starts or the call is over, then
      ended at the time its attempt returned (`settle`);
    * with no attempt (a cache hit, a limit), all of it on the one span recorded for the
      call (its attributes from its start, `copy_events_to`).

    Status, exceptions, links and a new name are not kept.
    """

    # What each call starts with, until it changes (one is made per model call).
    attempts = 0
    """How many attempts began."""
    _shared: tuple[dict[str, Any], int] | None = None
    """What was set before the first attempt began: attributes, and the count of events."""
    _late: dict[str, Any] | None = None
    """What was set since the last attempt began (``None``: nothing)."""
    _copied = 0
    """How many events the last attempt's span has."""
    _held: Span | None = None
    """The span of the attempt that returned last, until it ends."""
    _ended = 0
    """When that attempt returned (ns since the epoch)."""

    def __init__(self, parent: Span) -> None:
        super().__init__(parent.get_span_context())
        self._parent = parent
        self.attributes: dict[str, Any] = {}
        self.events: list[tuple[str, Attributes, int]] = []

    def is_recording(self) -> bool:
        return self._parent.is_recording()

    def set_attribute(self, key: str, value: Any) -> None:
        self.attributes[key] = value
        if self.attempts:  # before the first, every attempt gets them (`begin`)
            if self._late is None:
                self._late = {}
            self._late[key] = value

    def set_attributes(self, attributes: Mapping[str, Any]) -> None:
        self.attributes.update(attributes)
        if self.attempts:
            if self._late is None:
                self._late = {}
            self._late.update(attributes)

    def add_event(
        self, name: str, attributes: Attributes = None, timestamp: int | None = None
    ) -> None:
        self.events.append((name, attributes, time.time_ns() if timestamp is None else timestamp))

    def copy_events_to(self, span: Span) -> None:
        """Add the events added to this stand-in to ``span`` (a call with no attempt).

        Its attributes are the span's from its start (`attributes`).
        """
        add(span, {}, self.events)

    def begin(self, attributes: dict[str, Any]) -> dict[str, Any]:
        """An attempt starts: ``attributes``, its span's, and what was set before the first.

        The attempt before, if any, is over: its span ends first (`settle`). Once the new
        span has started, `began` gives it the events added before the first attempt.
        """
        if self._held is not None:
            self.settle()
        shared = self._shared
        if shared is None:
            shared = _NOTHING
            if self.attributes or self.events:
                shared = (dict(self.attributes), len(self.events))
            self._shared = shared
        self._late = None
        self._copied = len(self.events)
        return {**attributes, **shared[0]} if shared[0] else attributes

    def began(self, span: Span) -> None:
        """The attempt's ``span`` started (after `begin`): add the events shared with it."""
        shared = self._shared
        if shared is not None and shared[1]:
            add(span, {}, self.events[: shared[1]])

    def hold(self, span: Span) -> None:
        """Keep the returned attempt's ``span`` open for what is set after it; end it later.

        One is held at a time: a span held already (attempts run side by side) ends first.
        """
        if self._held is not None:
            self.settle()
        self._held = span
        self._ended = time.time_ns()

    def settle(self) -> None:
        """End the held attempt's span, with what was set on this stand-in since it began."""
        span = self._held
        if span is None:
            return
        self._held = None
        late, events = self._late, self.events
        if late or len(events) > self._copied:
            add(span, late or {}, events[self._copied :])
            self._late = None
            self._copied = len(events)
        span.end(self._ended)


def add(
    span: Span, attributes: Mapping[str, Any], events: list[tuple[str, Attributes, int]]
) -> None:
    """Set ``attributes`` and add ``events`` on ``span``."""
    if attributes:
        span.set_attributes(attributes)
    for name, event_attributes, timestamp in events:
        span.add_event(name, event_attributes, timestamp)

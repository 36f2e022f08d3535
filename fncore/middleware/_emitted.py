"""`Emitted`: whether a streamed model call already showed its consumer something."""

from __future__ import annotations

from fncore.core import StreamEvent


class Emitted:
    """An event map that notes whether any event of a model call reached the consumer.

    A streamed call that already showed part of an answer cannot be sent again (or to
    another model) without the consumer seeing the start twice (`retry`, `fallback`).
    """

    __slots__ = ("seen",)

    def __init__(self) -> None:
        self.seen = False

    def __call__(self, event: StreamEvent) -> StreamEvent:
        self.seen = True
        return event

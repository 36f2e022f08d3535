"""``cache`` on ``memory://``: what a miss keeps, and what a hit then gives back."""

from __future__ import annotations

import pytest
from helpers import seen_outside_cache
from opentelemetry import context, trace
from opentelemetry.sdk.trace import TracerProvider

from fncore import (
    Message,
    ModelRequest,
    ModelResponse,
    TextPart,
    Usage,
)
from fncore.middleware import cache
from fncore.middleware._cache_json import NO_USAGE, kept_response, kept_until_hit
from fncore.middleware.cache import _current_context

ANSWERS = [
    ModelResponse(Message.assistant("4"), Usage(3, 1), "stop", "gpt"),
    ModelResponse(Message.assistant("4"), NO_USAGE, "stop", "gpt"),
    ModelResponse(Message("assistant", (TextPart("4"),), cache=True), Usage(3, 1)),
    ModelResponse(Message("assistant", [TextPart("4")]), Usage(3, 1)),  # type: ignore[arg-type]
    ModelResponse(
        Message.assistant("4"), Usage(3, 1), _sent=ModelRequest((Message.user("what?"),))
    ),
]


def test_a_miss_keeps_the_response_itself_only_when_a_hit_would_copy_it_anyway() -> None:
    """Itself when `kept_response` would only drop its usage; otherwise `kept_response`."""
    assert [kept_until_hit(r) is r for r in ANSWERS] == [True, True, False, False, False]
    for response in ANSWERS[2:]:
        kept = kept_until_hit(response)
        assert kept == kept_response(response)
        assert kept is not None
        assert (kept.message.cache, type(kept.message.parts), kept._sent) == (False, tuple, None)
    odd = ModelResponse(Message.assistant("x"), finish_reason="error")
    assert kept_until_hit(odd) is kept_response(odd) is None


@pytest.mark.parametrize("response", ANSWERS)
async def test_a_hit_gives_back_what_a_copy_kept_at_the_miss_would(
    response: ModelResponse,
) -> None:
    """The hit's response equals `kept_response` of the answer, no usage, nothing sent."""
    hit = (await seen_outside_cache(cache(), response))[1]
    assert hit == kept_response(response)
    assert (hit.usage, hit.message.cache, type(hit.message.parts), hit._sent) == (
        Usage(),
        False,
        tuple,
        None,
    )


def test_the_current_context_is_read_as_opentelemetry_reads_it() -> None:
    """The cache's reader of the current context gives what ``context.get_current`` gives."""
    current = _current_context()
    assert current is not context.get_current  # the context variable, read straight
    assert current() is context.get_current()
    span = TracerProvider().get_tracer("t").start_span("s")
    token = context.attach(trace.set_span_in_context(span))
    try:
        assert current() is context.get_current()
        assert trace.get_current_span(current()) is span
    finally:
        context.detach(token)
        span.end()
    assert current() is context.get_current()

"""`redact_pii` against its adversaries: values split across chunks, and traces."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator, Sequence
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from otel_support import Otel
from returns.result import Result, Success

from fncore import (
    Agent,
    Message,
    ModelError,
    ModelRequest,
    ModelResponse,
    Registry,
    RunCompleted,
    TextDelta,
)
from fncore.core._model import ModelStreamItem
from fncore.middleware import redact_pii
from fncore.middleware._pii import BUILTIN
from fncore.middleware._redactor import Rules, Streamer
from fncore.testing import ScriptedModel, tool_calls

SECRETS = [
    "ann.lee@example.org",
    "+44 20 7946 0958",
    "4111 1111 1111 1111",
    "GB82 WEST 1234 5698 7654 32",
    "192.168.10.20",
    "2001:db8::8a2e:370:7334",
    "00:1A:2B:3C:4D:5E",
    "https://intranet.example.org/payroll?id=7",
    "sk-ant-api03-abcdefghijklmnopqrstuv",
    "AKIAIOSFODNN7EXAMPLE",
    "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.c2lnbmF0dXJl",
    "-----BEGIN EC PRIVATE KEY-----\nMHcCAQEEIBkg4LVWM9nuwNSk3yByxZpYRTBnVJk5\n"
    "-----END EC PRIVATE KEY-----",
]


class Pieces:
    """A model that streams its answer in exactly the given pieces."""

    def __init__(self, pieces: Sequence[str]) -> None:
        self.pieces = list(pieces)

    @property
    def name(self) -> str:
        """The model's name."""
        return "pieces"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The whole answer at once."""
        return Success(ModelResponse(Message.assistant("".join(self.pieces))))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Each piece as a text delta, then the response."""
        for piece in self.pieces:
            yield TextDelta(piece)
        yield ModelResponse(Message.assistant("".join(self.pieces)))


def streamer(window: int = 256) -> Streamer:
    """A streamer with every built-in detector under ``redact``."""
    detectors = tuple(BUILTIN.values())
    rules = Rules(detectors, {d.name: "redact" for d in detectors}, None)
    return Streamer(rules.outward(None), window)


def released(pieces: Sequence[str], window: int = 256) -> str:
    """What a streamer releases for ``pieces``, flushed at the end."""
    subject = streamer(window)
    return "".join(subject.feed(p) for p in pieces) + subject.flush()


@pytest.mark.parametrize("secret", SECRETS)
def test_a_value_split_at_every_boundary_never_leaks(secret: str) -> None:
    """Every two-piece and three-piece split of a value in text: released text is redacted."""
    text = f"Note: {secret} is on file."
    whole = released([text])
    assert secret not in whole
    for i in range(len(text) + 1):
        assert released([text[:i], text[i:]]) == whole
    for i in range(0, len(text), 3):
        for j in range(i, len(text), 5):
            assert released([text[:i], text[i:j], text[j:]]) == whole


@given(
    secret=st.sampled_from(SECRETS),
    before=st.text(alphabet="abc ,.\n", max_size=40),
    after=st.text(alphabet="xyz ,.\n", max_size=40),
    cuts=st.lists(st.integers(min_value=0, max_value=200), max_size=12),
    window=st.integers(min_value=64, max_value=300),
)
@settings(max_examples=300, deadline=None)
def test_any_chunking_releases_the_same_redacted_text(
    secret: str, before: str, after: str, cuts: list[int], window: int
) -> None:
    """Property: however the text is cut, the consumer reads it redacted, never the value."""
    text = f"{before} {secret} {after}"
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    out = released(pieces, window)
    assert secret not in out
    assert out == released([text], window)


@given(cuts=st.lists(st.integers(min_value=0, max_value=90), max_size=10))
@settings(max_examples=60, deadline=None)
async def test_the_consumer_never_reads_a_split_value(cuts: list[int]) -> None:
    """Through an agent: deltas cut anywhere; no delta, joined or not, holds the value."""
    secret = "ann.lee@example.org"
    text = f"Write to {secret}, or to AKIAIOSFODNN7EXAMPLE."
    points = sorted({min(c, len(text)) for c in cuts})
    pieces = [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]
    registry = Registry()
    registry.include(redact_pii())
    agent = Agent(Pieces(pieces), registry=registry)
    events = [e async for e in agent.stream("hi")]
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert streamed == "Write to [EMAIL], or to [SECRET]."
    assert isinstance(events[-1], RunCompleted)
    assert events[-1].outcome.unwrap().output == streamed


def test_a_short_window_still_holds_a_growing_value() -> None:
    """A value longer than the window is held from where it is recognised until it ends."""
    token = "sk-proj-" + "a" * 500
    pieces = ["key: ", *(token[i : i + 7] for i in range(0, len(token), 7)), " done"]
    assert released(pieces, window=32) == "key: [SECRET] done"


def leaked(otel: Otel, values: Sequence[str]) -> list[str]:
    """Span attributes and event attributes that hold any of ``values``."""
    found: list[str] = []
    for span in otel.spans():
        texts = [json.dumps(dict(span.attributes or {}), default=str)]
        texts += [json.dumps(dict(e.attributes or {}), default=str) for e in span.events]
        texts.append(span.name)
        found += [f"{span.name}: {t}" for t in texts if any(v in t for v in values)]
    return found


@pytest.mark.parametrize("strategy", ["redact", "pseudonymize"])
@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
async def test_a_trace_capturing_content_never_holds_the_values(
    strategy: Any, stream: bool
) -> None:
    """trace(capture_content=True) outside redact_pii: no span holds an original value."""

    async def lookup(email: str) -> str:
        """Who owns an email."""
        return f"{email} belongs to +1 555 123 4567"

    model = ScriptedModel(
        [tool_calls(("lookup", {"email": "<EMAIL_1>"})), "It is <EMAIL_1>, call <PHONE_1>."]
    )
    otel = Otel()
    registry = otel.registry(capture_content=True)
    registry.include(redact_pii(strategy=strategy))
    agent = Agent(
        model, registry=registry, tools=[lookup], instructions="Admin is root@example.org"
    )
    prompt = "who owns ann@example.org?"
    if stream:
        async for _ in agent.stream(prompt):
            pass
    else:
        await agent.run(prompt)
    assert [s.name for s in otel.spans()].count("chat scripted") == 2
    assert leaked(otel, ["ann@example.org", "root@example.org", "555 123 4567"]) == []

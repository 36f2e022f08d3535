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

from fncore import Agent, Message, ModelError, ModelRequest, ModelResponse, Registry
from fncore.core._model import ModelStreamItem
from fncore.events import RunCompleted, TextDelta
from fncore.middleware import redact_pii
from fncore.middleware._pii import BUILTIN, find
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
        self.requests: list[ModelRequest] = []

    @property
    def name(self) -> str:
        """The model's name."""
        return "pieces"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The whole answer at once."""
        self.requests.append(request)
        return Success(ModelResponse(Message.assistant("".join(self.pieces))))

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """Each piece as a text delta, then the response."""
        self.requests.append(request)
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


CARD_SHAPES = [
    ("4", 13),
    ("4", 16),
    ("4", 19),
    ("51", 16),
    ("55", 16),
    ("2221", 16),
    ("2720", 16),
    ("34", 15),
    ("37", 15),
    ("36", 14),
    ("35", 16),
    ("6011", 16),
    ("62", 19),
]
"""Card number prefixes (Visa, Mastercard, Amex, Diners, JCB, Discover, UnionPay) and lengths."""

IBAN_SHAPES = [
    ("DE", "nnnnnnnnnnnnnnnnnn"),
    ("GB", "aaaannnnnnnnnnnnnn"),
    ("NL", "aaaannnnnnnnnn"),
    ("NO", "nnnnnnnnnnn"),
    ("BE", "nnnnnnnnnnnn"),
    ("FR", "nnnnnnnnnncccccccccccnn"),
    ("MT", "aaaannnnnccccccccccccccccccc"),
]
"""Countries and their account numbers' shapes: ``a`` a letter, ``n`` a digit, ``c`` either."""

POOLS = {
    "a": "ABCDEFGHIJKLMNOPQRSTUVWXYZ",
    "n": "0123456789",
    "c": "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ",
}


def luhn_digit(body: str) -> str:
    """The digit that completes ``body`` into a number that passes Luhn (computed afresh)."""
    total = 0
    for index, char in enumerate(reversed(body)):
        value = int(char) * (1 if index % 2 else 2)
        total += value - 9 if value > 9 else value
    return str(-total % 10)


@st.composite
def cards(draw: st.DrawFn) -> str:
    """A card number with a valid Luhn digit, in one of its usual groupings."""
    prefix, length = draw(st.sampled_from(CARD_SHAPES))
    rest = draw(
        st.text(
            alphabet="0123456789",
            min_size=length - len(prefix) - 1,
            max_size=length - len(prefix) - 1,
        )
    )
    number = prefix + rest + luhn_digit(prefix + rest)
    styles = ["plain", "spaces", "dashes"] + (["amex"] if length == 15 else [])
    style = draw(st.sampled_from(styles))
    if style == "amex":
        return f"{number[:4]} {number[4:10]} {number[10:]}"
    return grouped(number, style)


@st.composite
def ibans(draw: st.DrawFn) -> str:
    """An IBAN with valid mod-97 check digits, in one of its usual groupings."""
    country, shape = draw(st.sampled_from(IBAN_SHAPES))
    account = "".join(draw(st.sampled_from(POOLS[kind])) for kind in shape)
    moved = "".join(str(int(c, 36)) for c in f"{account}{country}00")
    number = f"{country}{98 - int(moved) % 97:02d}{account}"
    return grouped(number, draw(st.sampled_from(["plain", "spaces", "dashes"])))


def grouped(number: str, style: str) -> str:
    """``number`` as written: whole, or in groups of four with spaces or dashes."""
    if style == "plain":
        return number
    groups = [number[i : i + 4] for i in range(0, len(number), 4)]
    return (" " if style == "spaces" else "-").join(groups)


NEIGHBOURS = st.one_of(
    st.sampled_from(["card", "Pay", "EUR", "BIC", "NWBKGB2L", "12/27", "please", "x"]),
    st.from_regex(r"[0-9]{1,6}", fullmatch=True),
    st.from_regex(r"[A-Z]{2}[0-9]{2}", fullmatch=True),
    st.from_regex(r"[A-Za-z]{1,8}", fullmatch=True),
)
"""What stands next to a number: words, digits, things that look like an IBAN's start."""

BETWEEN = st.sampled_from([" ", " ", " ", ", ", ". ", ": ", "; ", " (", ") ", "/", ".", "\n"])
"""A space or punctuation between a number and its neighbours."""


@st.composite
def embedded(draw: st.DrawFn) -> tuple[str, str]:
    """A valid card number or IBAN in text, digits and words on either side, and the number."""
    number = draw(st.one_of(cards(), ibans()))
    before = draw(st.lists(st.tuples(NEIGHBOURS, BETWEEN), max_size=4))
    after = draw(st.lists(st.tuples(BETWEEN, NEIGHBOURS), max_size=4))
    text = "".join(a + b for a, b in before) + number + "".join(a + b for a, b in after)
    return text, number


def pieces_of(text: str, cuts: list[int]) -> list[str]:
    """``text`` cut at ``cuts``."""
    points = sorted({min(c, len(text)) for c in cuts})
    return [text[a:b] for a, b in zip([0, *points], [*points, len(text)], strict=True)]


@given(case=embedded(), cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=12))
@settings(max_examples=400, deadline=None, derandomize=True)
def test_a_valid_number_among_digits_and_words_is_always_redacted(
    case: tuple[str, str], cuts: list[int]
) -> None:
    """Property: a valid card number or IBAN next to digits and words is found whole.

    In any of its usual groupings, in the text and in any chunking of it.
    """
    text, number = case
    at = text.index(number)
    spans = find(text, tuple(BUILTIN.values()))
    assert any(s.start <= at and s.end >= at + len(number) for s in spans), (text, spans)
    whole = released([text])
    assert number not in whole
    assert released(pieces_of(text, cuts)) == whole


@given(case=embedded(), cuts=st.lists(st.integers(min_value=0, max_value=120), max_size=12))
@settings(max_examples=40, deadline=None, derandomize=True)
async def test_a_valid_number_among_digits_and_words_is_redacted_through_an_agent(
    case: tuple[str, str], cuts: list[int]
) -> None:
    """Property: the same through an agent, run or streamed.

    The prompt the model gets, and its answer, streamed as deltas cut anywhere.
    """
    text, number = case
    expected = released([text])
    registry = Registry()
    registry.include(redact_pii())
    model = Pieces(pieces_of(text, cuts))
    agent = Agent(model, registry=registry)
    events = [e async for e in agent.stream(text)]
    streamed = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert number not in streamed
    assert isinstance(events[-1], RunCompleted)
    assert events[-1].outcome.unwrap().output == streamed == expected
    assert (await agent.run(text)).unwrap().output == expected
    assert [r.messages[-1].text for r in model.requests] == [expected, expected]

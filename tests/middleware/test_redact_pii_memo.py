"""`redact_pii` remembers what it redacted: same results, changed messages rescanned, bounded."""

from __future__ import annotations

import dataclasses
import re
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from fncore import (
    Agent,
    InMemorySessionStore,
    Message,
    ModelRequest,
    Registry,
    ToolCallPart,
    ToolResultPart,
)
from fncore.events import TextDelta
from fncore.middleware import PIIBlocked, _memo, redact_pii
from fncore.middleware._memo import begins
from fncore.middleware._pii import _EMAIL, BUILTIN, find
from fncore.middleware._redact_memo import _BRANCHES, Generations, Memo, _shared
from fncore.middleware._redactor import Rules
from fncore.testing import FunctionModel, ScriptedModel, tool_calls

DETECTORS = tuple(BUILTIN.values())
RULES = Rules(DETECTORS, {d.name: "redact" for d in DETECTORS}, None)


def turn(n: int) -> tuple[Message, ...]:
    """Four messages of a turn, each with a value to redact but the answer."""
    return (
        Message.user(f"I am ann{n}@example.org, card 4111 1111 1111 1111"),
        Message(
            "assistant", (ToolCallPart(f"c{n}", "lookup", f'{{"who": "ann{n}@example.org"}}'),)
        ),
        Message(
            "tool", (ToolResultPart(f"c{n}", "lookup", "Ann, +44 20 7946 0958, host 10.0.0.1"),)
        ),
        Message.assistant("Noted, nothing to hide here."),
    )


CONVERSATION = (*turn(1), *turn(2), *turn(3))
"""Long enough to be remembered as a conversation (more than eight messages)."""


def cold(messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """The messages redacted with no memo at all."""
    return RULES.inward(None).request(ModelRequest(messages)).messages


def texts(messages: tuple[Message, ...]) -> list[str]:
    """Each message's text, tool-call arguments and tool results, for comparing."""
    return [repr(m.parts) for m in messages]


def test_a_memo_hit_is_what_a_cold_scan_gives() -> None:
    """The same request again is the remembered result, equal to a scan without a memo."""
    memo = Memo(100_000)
    first = RULES.inward(None, memo).request(ModelRequest(CONVERSATION)).messages
    again = RULES.inward(None, memo).request(ModelRequest(CONVERSATION)).messages
    assert again is first  # remembered, not rebuilt
    assert first == cold(CONVERSATION)
    assert "[EMAIL]" in first[0].text


def test_a_longer_conversation_redacts_only_what_it_adds() -> None:
    """A request that starts with one seen reuses its messages and redacts the rest."""
    memo = Memo(100_000)
    first = RULES.inward(None, memo).request(ModelRequest(CONVERSATION[:10])).messages
    longer = RULES.inward(None, memo).request(ModelRequest(CONVERSATION)).messages
    assert all(a is b for a, b in zip(longer[:10], first, strict=True))
    assert longer == cold(CONVERSATION)


def test_a_changed_message_at_the_same_place_is_redacted_again() -> None:
    """A message replaced by another text, at the same place, is scanned again."""
    memo = Memo(100_000)
    RULES.inward(None, memo).request(ModelRequest(CONVERSATION))
    changed = (*CONVERSATION[:4], Message.user("now bob@example.org"), *CONVERSATION[5:])
    out = RULES.inward(None, memo).request(ModelRequest(changed)).messages
    assert out == cold(changed)
    assert out[4].text == "now [EMAIL]"


def test_an_equal_message_made_again_is_found_by_its_content() -> None:
    """Messages loaded afresh (equal, not the same objects) give the same redaction."""
    memo = Memo(100_000)
    RULES.inward(None, memo).request(ModelRequest(CONVERSATION))
    reloaded = tuple(dataclasses.replace(m) for m in CONVERSATION)
    assert all(a is not b for a, b in zip(reloaded, CONVERSATION, strict=True))
    out = RULES.inward(None, memo).request(ModelRequest(reloaded)).messages
    assert out == cold(reloaded)


def test_the_memo_is_bounded() -> None:
    """However many texts pass, the memo holds at most its limit in characters."""
    memo = Memo(2_000)
    for n in range(500):
        text = f"message {n} from user{n}@example.org"
        out = RULES.inward(None, memo).text(text)
        assert out == f"message {n} from [EMAIL]"
        memo_weight = memo.texts.weight
        assert memo_weight <= 2_000
    assert len(memo.texts) < 500
    assert RULES.inward(None, memo).text("message 499 from user499@example.org").endswith("[EMAIL]")


def test_a_turn_tried_again_reuses_the_start_it_shares() -> None:
    """A request that goes another way after a shared start reuses that start."""
    memo = Memo(100_000)
    first = RULES.inward(None, memo).request(ModelRequest(CONVERSATION)).messages
    other = (*CONVERSATION[:8], Message.user("no, write to bob@example.org"))
    out = RULES.inward(None, memo).request(ModelRequest(other)).messages
    assert all(a is b for a, b in zip(out[:8], first[:8], strict=True))
    assert out == cold(other)
    assert out[-1].text == "no, write to [EMAIL]"


def test_a_turn_asked_anew_again_is_found_by_its_last_messages() -> None:
    """After a turn asked anew, the history before its question is remembered whole.

    Asking anew from there again finds it among the request's last messages (as a next
    round would), with the same redaction as a cold scan.
    """
    memo = Memo(100_000)
    first = RULES.inward(None, memo).request(ModelRequest(CONVERSATION)).messages
    once = (*CONVERSATION[:8], Message.user("no, write to bob@example.org"))
    assert RULES.inward(None, memo).request(ModelRequest(once)).messages == cold(once)
    start = memo.conversations._by_last.get(id(CONVERSATION[7]))
    assert start is not None
    assert start.inputs == CONVERSATION[:8]
    assert start.outputs == first[:8]
    again = (*CONVERSATION[:8], Message.user("or to carl@example.org"))
    out = RULES.inward(None, memo).request(ModelRequest(again)).messages
    assert all(a is b for a, b in zip(out[:8], start.outputs, strict=True))
    assert out == cold(again)
    assert out[-1].text == "or to [EMAIL]"


def test_remembered_conversations_are_bounded() -> None:
    """However many conversations pass, those remembered hold at most the limit."""
    memo = Memo(5_000)
    for n in range(100):
        messages = tuple(turn(n * 10 + k)[i] for k in range(3) for i in range(4))
        assert RULES.inward(None, memo).request(ModelRequest(messages)).messages == cold(messages)
        assert memo.conversations.weight <= 2 * 5_000


def test_generations_keep_what_is_used_and_drop_the_rest() -> None:
    """An entry used again survives a turnover; one never used again is dropped."""
    kept: Generations[str, int] = Generations(10)
    kept.put("used", 1, 2)
    kept.put("once", 2, 2)
    kept.put("a", 3, 2)  # the young generation is full: it becomes the old one
    assert kept.get("used") == 1  # back to the young generation
    kept.put("b", 4, 2)
    kept.put("c", 5, 2)  # turnover again: "once" and "a" were left in the old one
    assert kept.get("used") == 1
    assert kept.get("once") is None
    kept.put("heavy", 6, 6)  # over half the limit: not kept
    assert kept.get("heavy") is None
    assert kept.weight <= 10


async def test_an_agent_with_a_memo_sends_what_one_without_sends() -> None:
    """Turn after turn of a session, with tools: the model sees the same with or without."""

    async def lookup(who: str) -> str:
        """Who someone is."""
        return f"{who} is Ann, +44 20 7946 0958"

    def script() -> ScriptedModel:
        return ScriptedModel(
            [
                tool_calls(("lookup", {"who": "<EMAIL_1>"})),
                "That is <EMAIL_1>.",
                tool_calls(("lookup", {"who": "<EMAIL_2>"})),
                "And <EMAIL_2>, call [PHONE].",
                "Done, <EMAIL_1>.",
            ]
        )

    seen: list[list[str]] = []
    for memo_chars in (0, 4_000_000):
        model = script()
        registry = Registry()
        registry.include(redact_pii(strategies={"email": "pseudonymize"}, memo_chars=memo_chars))
        subject = Agent(model, registry=registry, tools=[lookup], sessions=InMemorySessionStore())
        outputs = [
            (await subject.run(prompt, session_id="s")).unwrap().output
            for prompt in ("Who is ann@example.org?", "And bob@example.org?", "Thanks!")
        ]
        seen.append([*outputs, *(repr(r.messages) for r in model.requests)])
    assert seen[0] == seen[1]
    assert seen[1][:3] == [
        "That is ann@example.org.",
        "And bob@example.org, call [PHONE].",
        "Done, ann@example.org.",
    ]


async def test_two_sessions_never_share_their_placeholders() -> None:
    """The same text in two sessions gets each session's own placeholder."""
    model = FunctionModel(lambda r: "ok")
    registry = Registry()
    registry.include(redact_pii(strategy="pseudonymize"))
    subject = Agent(model, registry=registry, sessions=InMemorySessionStore())
    await subject.run("write to ann@example.org", session_id="a")
    await subject.run("write to bob@example.org", session_id="b")
    await subject.run("write to ann@example.org", session_id="b")
    assert model.requests[0].messages[-1].text == "write to <EMAIL_1>"
    assert model.requests[2].messages[-1].text == "write to <EMAIL_2>"
    assert [m.text for m in model.requests[2].messages if m.role == "user"] == [
        "write to <EMAIL_1>",
        "write to <EMAIL_2>",
    ]


async def test_a_session_started_again_gets_fresh_placeholders() -> None:
    """A session deleted and begun again under its id never reuses the old pseudonyms."""
    model = FunctionModel(lambda r: "Sure, " + r.messages[-1].text.split()[-1])
    store = InMemorySessionStore()
    registry = Registry()
    registry.include(redact_pii(strategy="pseudonymize"))
    subject = Agent(model, registry=registry, sessions=store)
    await subject.run("write to ann@example.org", session_id="s")
    await store.delete("s")
    await subject.run("write to bob@example.org", session_id="s")
    result = (await subject.run("write to ann@example.org", session_id="s")).unwrap()
    assert model.requests[-1].messages[-1].text == "write to <EMAIL_2>"
    assert result.output == "Sure, ann@example.org"


async def test_replies_without_a_session_keep_their_own_placeholders() -> None:
    """Without a session, each reply numbers its placeholders afresh."""
    model = FunctionModel(lambda r: "Sure, " + r.messages[-1].text.split()[-1])
    subject = Agent(model, registry=redact_pii(strategy="pseudonymize"))
    both = (Message.user("bob@example.org"), Message.user("ann@example.org"))
    first = (await subject.run(both)).unwrap()
    second = (await subject.run("ann@example.org")).unwrap()
    assert model.requests[0].messages[-1].text == "<EMAIL_2>"
    assert model.requests[1].messages[-1].text == "<EMAIL_1>"
    assert (first.output, second.output) == ("Sure, ann@example.org", "Sure, ann@example.org")


async def test_a_blocked_value_blocks_every_time() -> None:
    """A request holding a blocked value is never remembered as passed."""
    model = FunctionModel(lambda r: "ok")
    subject = Agent(model, registry=redact_pii(strategies={"secret": "block"}))
    for _ in range(2):
        outcome = await subject.run("key AKIAIOSFODNN7EXAMPLE")
        assert isinstance(outcome.failure(), PIIBlocked)
    assert model.requests == []


async def test_a_custom_function_is_asked_every_time() -> None:
    """A custom detector that is a function may change its mind: its texts are not remembered."""
    names: set[str] = set()

    def known_names(text: str) -> list[tuple[int, int]]:
        return [m.span() for m in re.finditer(r"[A-Z][a-z]+", text) if m.group() in names]

    model = FunctionModel(lambda r: "ok")
    subject = Agent(model, registry=redact_pii(custom={"name": known_names}))
    await subject.run("ask Zed", session_id="s")
    names.add("Zed")
    await subject.run("and again", session_id="s")
    assert model.requests[0].messages[0].text == "ask Zed"
    assert model.requests[1].messages[0].text == "ask [NAME]"


async def test_streaming_is_the_same_with_a_memo() -> None:
    """Streamed answers are redacted as before: the memo is for what goes to the model."""
    streamed: list[str] = []
    for memo_chars in (0, 4_000_000):
        model = ScriptedModel(["Write to ann@example.org today.", "Again ann@example.org."])
        model.chunk = 3
        subject = Agent(model, registry=redact_pii(memo_chars=memo_chars))
        for prompt in ("hi", "hi"):
            events = [e async for e in subject.stream(prompt, session_id="s")]
            streamed.append("".join(e.text for e in events if isinstance(e, TextDelta)))
    assert streamed[:2] == streamed[2:] == ["Write to [EMAIL] today.", "Again [EMAIL]."]


VALUES = [
    "ann@example.org",
    "+44 20 7946 0958",
    "4111 1111 1111 1111",
    "GB82 WEST 1234 5698 7654 32",
    "192.168.1.10",
    "2001:db8::1",
    "::1",
    "00:1A:2B:3C:4D:5E",
    "001a.2b3c.4d5e",
    "https://example.org/a",
    "www.example.org",
    "AKIAIOSFODNN7EXAMPLE",
    "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    "sk_live_ZYXWVUTSRQPONMLK0123",
    "rk_test_ZYXWVUTSRQPONMLK0123",
    "555-1234",
]
"""A value of each built-in kind, for texts made of them and of odd characters."""

ALPHABET = st.sampled_from(
    [
        *"0123456789abcdefABCDEFxyzXYZ:.-@+()_ /#\n",
        *["\u0661", "\u0663", "\u00b2", "\u00e9", "ghp_", "sk-", "eyJ"],
        *VALUES,
    ]
)


def spans(text: str, detectors: tuple[Any, ...]) -> list[tuple[int, int, str]]:
    """What ``find`` finds, as plain tuples."""
    return [(s.start, s.end, s.detector.name) for s in find(text, detectors)]


UNTESTED = tuple(dataclasses.replace(d, needs=None) for d in DETECTORS)
"""The built-in detectors without their quick tests: each runs on every text."""


@pytest.mark.parametrize("value", VALUES)
def test_quick_tests_pass_every_kind_of_value(value: str) -> None:
    """Each kind of value is found with the quick tests as without them."""
    text = f"x {value} y"
    assert spans(text, DETECTORS) == spans(text, UNTESTED) != []


@settings(max_examples=500, deadline=None)
@given(st.lists(st.tuples(ALPHABET, st.sampled_from(["", " "])), max_size=60))
def test_quick_tests_never_hide_a_value(pieces: list[tuple[str, str]]) -> None:
    """Detectors run only when their quick test passes find what every detector finds."""
    text = "".join(a + b for a, b in pieces)
    assert spans(text, DETECTORS) == spans(text, UNTESTED)


@settings(max_examples=400, deadline=None)
@given(st.lists(st.sampled_from([*"ab1.-_+%@ x", "é", "example.org"]), max_size=60).map("".join))
def test_emails_found_from_their_at_are_every_match(text: str) -> None:
    """Searching near each ``@`` finds exactly the pattern's matches over the whole text."""
    found = list(BUILTIN["email"].find(text))
    assert found == [m.span() for m in re.finditer(_EMAIL, text)]


_POOL = tuple(Message.user(f"m{i}") for i in range(4))


@settings(max_examples=400, deadline=None)
@given(
    st.lists(st.integers(0, 3), min_size=1, max_size=40),
    st.lists(st.integers(0, 3), max_size=40),
    st.integers(0, 40),
    st.booleans(),
)
def test_the_shared_start_is_the_longest_equal_one(
    start: list[int], tail: list[int], keep: int, copied: bool
) -> None:
    """Two conversations sharing their first message share exactly their equal start.

    One goes on from a cut of the other; its messages are the same objects or equal copies.
    """
    a = tuple(_POOL[i] for i in start)
    b = (*a[: max(keep, 1)], *(_POOL[i] for i in tail))
    if copied:
        b = tuple(dataclasses.replace(m) for m in b)
    longest = 0
    while longest < min(len(a), len(b)) and a[longest] == b[longest]:
        longest += 1
    assert _shared(a, b) == longest


def rounds(
    history: tuple[Message, ...], asked: tuple[Message, ...]
) -> tuple[tuple[Message, ...], ...]:
    """The two requests of turn ``asked`` after ``history``: its question, then its result."""
    return (*history, asked[0]), (*history, *asked[:3])


def test_redacted_requests_are_noted_to_go_on_from_the_last_one() -> None:
    """A round's redacted request, made from the last one's, is noted to begin with it.

    `begins` answers without a comparison, and the request is what a cold scan gives.
    """
    memo = Memo(1_000_000)
    first, second = rounds(CONVERSATION, turn(30))
    out1 = RULES.inward(None, memo).request(ModelRequest(first)).messages
    out2 = RULES.inward(None, memo).request(ModelRequest(second)).messages
    assert out2 == RULES.inward(None).request(ModelRequest(second)).messages
    assert (id(out2), id(out1)) in _memo._starts
    assert begins(out2, out1)


def test_turns_asked_anew_keep_a_few_branches_of_a_history() -> None:
    """Turns asked anew from one history keep only the latest few branches findable.

    Each is redacted as a cold scan would; no long tuple is kept for the older branches.
    """
    memo = Memo(10_000_000)
    for n in range(3 * _BRANCHES):
        for request in rounds(CONVERSATION, turn(100 + n)):
            out = RULES.inward(None, memo).request(ModelRequest(request)).messages
            assert out == RULES.inward(None).request(ModelRequest(request)).messages
        assert len(memo.conversations._by_last) <= _BRANCHES + 1
    edited = (*CONVERSATION[:5], Message.user("now carl@example.org"), *CONVERSATION[6:])
    request = rounds(edited, turn(200))[0]
    out = RULES.inward(None, memo).request(ModelRequest(request)).messages
    assert out[5].text == "now [EMAIL]"
    assert out == RULES.inward(None).request(ModelRequest(request)).messages

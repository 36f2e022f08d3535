"""`redact_pii`: detectors, strategies, every path, streaming, pseudonyms, configuration."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from returns.result import Failure

from fncore import (
    Agent,
    ConfigError,
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    ReasoningPart,
    Registry,
    RunResult,
    Terminate,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    load_container,
)
from fncore.events import (
    ReasoningDelta,
    RunCompleted,
    TextDelta,
    ToolCallArgsDelta,
    ToolResultReady,
)
from fncore.middleware import redact_pii
from fncore.middleware.redact_pii import PIIBlocked
from fncore.testing import FunctionModel, ScriptedModel, tool_calls

MODES = pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])

SALT = SecretStr("pepper-1234")

POSITIVE = [
    ("email", "mail bob.smith@example.co.uk today", "bob.smith@example.co.uk"),
    ("phone", "call +1 (555) 123-4567 now", "+1 (555) 123-4567"),
    ("phone", "or 020 7946 0958 please", "020 7946 0958"),
    ("credit_card", "card 4111 1111 1111 1111 ok", "4111 1111 1111 1111"),
    ("credit_card", "amex 378282246310005.", "378282246310005"),
    ("credit_card", "amex 3782 822463 10005 ok", "3782 822463 10005"),
    ("credit_card", "card 4111-1111-1111-1111 1 time", "4111-1111-1111-1111"),
    ("credit_card", "ref 12 4111111111111111 56", "4111111111111111"),
    ("iban", "pay GB82 WEST 1234 5698 7654 32 now", "GB82 WEST 1234 5698 7654 32"),
    ("iban", "to DE89370400440532013000", "DE89370400440532013000"),
    ("iban", "to DE89 3704 0044 0532 0130 00 EUR 500", "DE89 3704 0044 0532 0130 00"),
    ("iban", "ref AB12 GB82-WEST-1234-5698-7654-32.", "GB82-WEST-1234-5698-7654-32"),
    ("ipv4", "host 192.168.1.10 is up", "192.168.1.10"),
    ("ipv6", "host 2001:db8::8a2e:370:7334 is up", "2001:db8::8a2e:370:7334"),
    ("ipv6", "loopback ::1 too", "::1"),
    ("mac", "nic 00:1A:2B:3C:4D:5E here", "00:1A:2B:3C:4D:5E"),
    ("mac", "cisco 001a.2b3c.4d5e here", "001a.2b3c.4d5e"),
    ("url", "see https://example.com/a?b=c. Then", "https://example.com/a?b=c"),
    (
        "secret",
        "key sk-ant-api03-abcdefghijklmnopqrstuv end",
        "sk-ant-api03-abcdefghijklmnopqrstuv",
    ),
    ("secret", "key sk-proj-abcdefghijklmnopqrstuvwx end", "sk-proj-abcdefghijklmnopqrstuvwx"),
    ("secret", "aws AKIAIOSFODNN7EXAMPLE end", "AKIAIOSFODNN7EXAMPLE"),
    (
        "secret",
        "gh ghp_abcdefghijklmnopqrstuvwxyz0123456789 end",
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789",
    ),
    (
        "secret",
        "gh github_pat_11ABCDEFG0123456789_abcdefghijkl end",
        "github_pat_11ABCDEFG0123456789_abcdefghijkl",
    ),
    (
        "secret",
        "g AIzaSyA1234567890abcdefghijklmnopqrstuv end",
        "AIzaSyA1234567890abcdefghijklmnopqrstuv",
    ),
    ("secret", "slack xoxb-1234567890-abcdefghij end", "xoxb-1234567890-abcdefghij"),
    ("secret", "stripe sk_live_abcdefghijklmnop1234 end", "sk_live_abcdefghijklmnop1234"),
    (
        "secret",
        "jwt eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_abc-def end",
        "eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxIn0.sig_abc-def",
    ),
    (
        "secret",
        "pem -----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY----- end",
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEabc\n-----END RSA PRIVATE KEY-----",
    ),
    ("secret", "cut -----BEGIN PRIVATE KEY-----\nMIIEabc", "-----BEGIN PRIVATE KEY-----\nMIIEabc"),
]

NEGATIVE = [
    ("email", "an @handle and a@b and x@localhost"),
    ("phone", "on 2026-11-23, 12 items, version 3.1"),
    ("credit_card", "card 4111 1111 1111 1112 fails Luhn"),
    ("credit_card", "ref 1234 5678 9012 3456 7890: no part of it passes Luhn"),
    ("iban", "GB83WEST12345698765432 fails mod 97"),
    ("iban", "DE12 3704 0044 0532 0130 00 EUR 500: no part of it passes mod 97"),
    ("ipv4", "999.1.1.1 and 1.2.3 are not addresses"),
    ("ipv6", "time 12:30:45 and a:b"),
    ("mac", "00:1A:2B:3C:4D is short"),
    ("url", "example.com without a scheme"),
    ("secret", "sk-short and AKIA123 and eyJ alone"),
]


def seen_by_model() -> tuple[FunctionModel, list[ModelRequest]]:
    """A model that answers "ok" and keeps the requests it got."""
    model = FunctionModel(lambda request: "ok")
    return model, model.requests


def agent(model: Any, *, tools: list[Any] | None = None, **options: Any) -> Agent:
    """An agent with ``redact_pii(**options)``."""
    registry = Registry()
    registry.include(redact_pii(**options))
    return Agent(model, registry=registry, tools=tools or [])


async def streamed(agent_: Agent, prompt: Any) -> tuple[list[Any], Any]:
    """Every event of a streamed run, and its outcome."""
    events = [e async for e in agent_.stream(prompt)]
    last = events[-1]
    assert isinstance(last, RunCompleted)
    return events, last.outcome


def all_text(events: list[Any]) -> str:
    """Everything the stream's consumer could read, as one text."""
    return "\n".join(repr(e) for e in events)


@pytest.mark.parametrize(("detector", "text", "value"), POSITIVE)
async def test_each_detector_finds_its_values(detector: str, text: str, value: str) -> None:
    """Each built-in finds its kind of value, and only it is replaced by its label."""
    model, requests = seen_by_model()
    await agent(model, detectors=[detector]).run(text)
    sent = requests[0].messages[-1].text
    assert value not in sent
    label = {"credit_card": "CREDIT_CARD"}.get(detector, detector.upper())
    assert sent == text.replace(value, f"[{label}]")


@pytest.mark.parametrize(("detector", "text"), NEGATIVE)
async def test_each_detector_leaves_lookalikes_alone(detector: str, text: str) -> None:
    """Failed checksums, dates, short forms and bare words are not matched."""
    model, requests = seen_by_model()
    await agent(model, detectors=[detector]).run(text)
    assert requests[0].messages[-1].text == text


async def test_all_detectors_run_by_default_on_every_message() -> None:
    """Every message is redacted (not only the last), and so is the system prompt."""
    model, requests = seen_by_model()
    registry = Registry()
    registry.include(redact_pii())
    history = [
        Message.user("I am ann@example.org"),
        Message.assistant("Hello ann@example.org"),
        Message.user("my card is 4111111111111111, server 10.0.0.1"),
    ]
    await Agent(model, registry=registry, instructions="Admin: root@example.org").run(history)
    request = requests[0]
    assert [m.text for m in request.messages] == [
        "I am [EMAIL]",
        "Hello [EMAIL]",
        "my card is [CREDIT_CARD], server [IPV4]",
    ]
    assert request.instructions == "Admin: [EMAIL]"


async def test_custom_detectors_from_a_regex_and_a_function() -> None:
    """Custom detectors by regex and by function, labelled by their name."""

    def employee(text: str) -> list[tuple[int, int]]:
        at = text.find("EMP")
        return [] if at < 0 else [(at, at + 6)]

    model, requests = seen_by_model()
    options: dict[str, Any] = {
        "detectors": [],
        "custom": {"ticket": r"TCK-\d+", "employee": employee},
    }
    await agent(model, **options).run("TCK-42 for EMP123")
    assert requests[0].messages[-1].text == "[TICKET] for [EMPLOYEE]"


GROUPED = [
    (
        "Pay with card 4111 1111 1111 1111 12/27 please",
        "Pay with card [CREDIT_CARD] 12/27 please",
    ),
    ("card 4111-1111-1111-1111 1 time", "card [CREDIT_CARD] 1 time"),
    ("Transfer to DE89 3704 0044 0532 0130 00 EUR 500", "Transfer to [IBAN] EUR 500"),
    ("IBAN: GB82 WEST 1234 5698 7654 32 BIC: NWBKGB2L", "IBAN: [IBAN] BIC: NWBKGB2L"),
]
"""Card numbers and IBANs followed by more digits or words, as each reached the model."""


@MODES
@pytest.mark.parametrize(("text", "expected"), GROUPED)
async def test_a_number_followed_by_digits_or_words_is_found(
    stream: bool, text: str, expected: str
) -> None:
    """With the defaults, a card number or IBAN with more after it never reaches the model."""
    model, requests = seen_by_model()
    subject = agent(model)
    if stream:
        await streamed(subject, text)
    else:
        await subject.run(text)
    assert requests[0].messages[-1].text == expected


@pytest.mark.parametrize(("text", "expected"), GROUPED)
async def test_a_streamed_number_followed_by_digits_or_words_is_found(
    text: str, expected: str
) -> None:
    """The same numbers written by the model, streamed three characters at a time."""
    model = ScriptedModel([text])
    model.chunk = 3
    events, outcome = await streamed(agent(model), "hi")
    assert "".join(e.text for e in events if isinstance(e, TextDelta)) == expected
    assert outcome.unwrap().output == expected


async def test_values_found_overlapping_are_redacted_as_one() -> None:
    """Two detectors' values that overlap: no part of either is left, under the first's label."""
    model, requests = seen_by_model()
    options: dict[str, Any] = {"detectors": [], "custom": {"left": "AB CD", "right": "CD EF"}}
    await agent(model, **options).run("xx AB CD EF yy")
    assert requests[0].messages[-1].text == "xx [LEFT] yy"


async def test_a_placeholder_never_carries_a_value_found_around_it() -> None:
    """A value the model wrote over a placeholder's end is redacted, never passed on raw."""
    model = ScriptedModel(["see <EMAIL_1>7788 ok"])
    options: dict[str, Any] = {
        "detectors": ["email"],
        "strategy": "pseudonymize",
        "strategies": {"code": "redact"},
        "custom": {"code": r"\d>\d{4}"},
    }
    outcome = await agent(model, **options).run("I am ann@example.org")
    assert outcome.unwrap().output == "see <EMAIL_[CODE] ok"


@pytest.mark.parametrize(
    ("strategy", "expected"),
    [
        ("redact", "mail [EMAIL] now"),
        ("mask", "mail ***********.org now"),
        ("pseudonymize", "mail <EMAIL_1> now"),
    ],
)
async def test_strategies(strategy: str, expected: str) -> None:
    """redact, mask (last 4 kept) and pseudonymize, as the model sees them."""
    model, requests = seen_by_model()
    await agent(model, strategy=strategy).run("mail ann@example.org now")
    assert requests[0].messages[-1].text == expected


async def test_hash_is_a_salted_hmac_stable_across_runs() -> None:
    """hash: the same value and salt give one digest; another salt another; no value shows."""
    model, requests = seen_by_model()
    await agent(model, strategy="hash", salt=SALT).run("a ann@example.org b ann@example.org")
    await agent(model, strategy="hash", salt=SALT).run("ann@example.org")
    await agent(model, strategy="hash", salt=SecretStr("other")).run("ann@example.org")
    first, second, third = (r.messages[-1].text for r in requests)
    digest = second
    assert digest.startswith("[EMAIL:")
    assert len(digest) == len("[EMAIL:]") + 16
    assert first == f"a {digest} b {digest}"
    assert third != digest


def test_the_salt_never_shows() -> None:
    """The salt is in no repr of the registry, its middleware or the error for a missing one."""
    registry = redact_pii(strategy="hash", salt=SecretStr("pepper-1234"))
    assert "pepper" not in repr(registry)
    assert "pepper" not in repr(registry.middleware)
    with pytest.raises(ValueError, match="needs a salt"):
        redact_pii(strategies={"email": "hash"})


@MODES
async def test_block_fails_the_run_with_a_typed_error(stream: bool) -> None:
    """block: the run fails with PIIBlocked naming the label, never the value."""
    model, requests = seen_by_model()
    subject = agent(model, strategies={"secret": "block"})
    prompt = "use AKIAIOSFODNN7EXAMPLE"
    if stream:
        _, outcome = await streamed(subject, prompt)
    else:
        outcome = await subject.run(prompt)
    error = outcome.failure()
    assert isinstance(error, PIIBlocked)
    assert (error.label, error.found_in, error.middleware) == ("SECRET", "request", "redact_pii")
    assert "AKIA" not in str(error)
    assert requests == []


@MODES
async def test_block_can_terminate_with_a_message(stream: bool) -> None:
    """block_with="terminate": the run ends with the message, naming the label."""
    model = ScriptedModel(["your key is AKIAIOSFODNN7EXAMPLE"])
    subject = agent(model, strategy="block", block_with="terminate", block_message="No: {label}.")
    if stream:
        events, outcome = await streamed(subject, "hi")
        assert "AKIA" not in all_text(events)
    else:
        outcome = await subject.run("hi")
    result = outcome.unwrap()
    assert (result.output, result.stop_reason) == ("No: SECRET.", "terminated")


@MODES
async def test_model_output_is_redacted(stream: bool) -> None:
    """What the model writes is redacted in the answer, the history and the stream."""
    model = ScriptedModel(["write to ann@example.org or call +44 20 7946 0958"])
    model.chunk = 3
    subject = agent(model)
    if stream:
        events, outcome = await streamed(subject, "hi")
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert text == "write to [EMAIL] or call [PHONE]"
        assert "ann@" not in all_text(events)
    else:
        outcome = await subject.run("hi")
    assert outcome.unwrap().output == "write to [EMAIL] or call [PHONE]"


def echo_tool_model() -> ScriptedModel:
    """Calls ``lookup`` with the user's email, then answers with what it got back."""
    return ScriptedModel(
        [
            tool_calls(("lookup", {"email": "<EMAIL_1>"})),
            "The owner of <EMAIL_1> is <PHONE_1>; ask <EMAIL_1>.",
        ]
    )


async def lookup(email: str) -> str:
    """Look up who owns an email address."""
    return f"{email} belongs to +1 555 123 4567"


@MODES
async def test_pseudonyms_round_trip_through_tools_and_answer(stream: bool) -> None:
    """The model sees placeholders only; the tool gets the real value; the answer is restored."""
    model = echo_tool_model()
    model.chunk = 4
    subject = agent(model, tools=[lookup], strategy="pseudonymize")
    prompt = "who owns ann@example.org?"
    if stream:
        events, outcome = await streamed(subject, prompt)
        text = "".join(e.text for e in events if isinstance(e, TextDelta))
        assert text == "The owner of ann@example.org is +1 555 123 4567; ask ann@example.org."
        results = [e.result.content for e in events if isinstance(e, ToolResultReady)]
        assert results == ["<EMAIL_1> belongs to <PHONE_1>"]
    else:
        outcome = await subject.run(prompt)
    result: RunResult = outcome.unwrap()
    assert result.output == "The owner of ann@example.org is +1 555 123 4567; ask ann@example.org."
    for request in model.requests:
        sent = json.dumps([repr(m) for m in request.messages])
        assert "ann@" not in sent
        assert "555" not in sent
    assert model.requests[0].messages[-1].text == "who owns <EMAIL_1>?"
    assert result.messages[1].tool_results[0].content == "<EMAIL_1> belongs to <PHONE_1>"


async def test_tool_arguments_and_results_are_redacted() -> None:
    """With redact, a tool gets redacted arguments and its result is redacted too."""
    got: list[str] = []

    async def notify(address: str) -> str:
        """Send a note."""
        got.append(address)
        return "sent to bob@example.org"

    model = ScriptedModel([tool_calls(("notify", {"address": "x bob@example.org"})), "done"])
    result = (await agent(model, tools=[notify]).run("go")).unwrap()
    assert got == ["x [EMAIL]"]
    assert result.messages[1].tool_results[0].content == "sent to [EMAIL]"
    assert result.messages[0].tool_calls[0].arguments == '{"address": "x [EMAIL]"}'


async def test_a_blocked_tool_result_terminates_that_call() -> None:
    """Block on a tool's result with terminate: the call's result is the message."""

    async def leak() -> str:
        """Leak a key."""
        return "AKIAIOSFODNN7EXAMPLE"

    model = ScriptedModel([tool_calls(("leak", {})), "never"])
    subject = agent(model, tools=[leak], strategy="block", block_with="terminate")
    result = (await subject.run("go")).unwrap()
    assert result.stop_reason == "terminated"
    assert "AKIA" not in repr(result)


async def test_blocked_tool_arguments_are_a_typed_error() -> None:
    """Block on a tool call's arguments: the tool never runs."""
    ran: list[str] = []

    async def send(to: str) -> str:
        """Send."""
        ran.append(to)
        return "ok"

    model = ScriptedModel([tool_calls(("send", {"to": "a@example.org"})), "done"])
    outcome = await agent(model, tools=[send], strategy="block").run("go")
    assert isinstance(outcome.failure(), PIIBlocked)
    assert ran == []


async def test_streamed_reasoning_and_tool_arguments_are_redacted() -> None:
    """Reasoning deltas and tool-argument fragments are held back and redacted."""
    message = Message(
        "assistant",
        (
            ReasoningPart("the user is ann@example.org"),
            TextPart("calling"),
            ToolCallPart("c1", "noop", json.dumps({"note": "for ann@example.org"})),
        ),
    )
    model = ScriptedModel([ModelResponse(message, finish_reason="tool_calls"), "done"])
    model.chunk = 2

    async def noop(note: str) -> str:
        """Do nothing."""
        return note

    events, _ = await streamed(agent(model, tools=[noop]), "go")
    assert "ann@" not in all_text(events)
    reasoning = "".join(e.text for e in events if isinstance(e, ReasoningDelta))
    assert reasoning == "the user is [EMAIL]"
    args = "".join(e.delta for e in events if isinstance(e, ToolCallArgsDelta))
    assert json.loads(args) == {"note": "for [EMAIL]"}


async def test_pseudonyms_persist_through_a_session() -> None:
    """A continued conversation keeps its placeholders (session state)."""
    model = FunctionModel(lambda r: " ".join(m.text for m in r.messages if m.role == "user"))
    subject = agent(model, strategy="pseudonymize")
    first = (await subject.run("I am ann@example.org", session_id="s1")).unwrap()
    second = (await subject.run("and bob@example.org", session_id="s1")).unwrap()
    assert first.output == "I am ann@example.org"
    assert model.requests[1].messages[-1].text == "and <EMAIL_2>"
    assert model.requests[1].messages[0].text == "I am <EMAIL_1>"
    assert second.output == "I am ann@example.org and bob@example.org"


async def test_concurrent_runs_never_mix_their_pseudonyms() -> None:
    """1,000 concurrent runs, one stack: each gets its own value back, never another's."""
    model = FunctionModel(lambda r: f"you are {r.messages[-1].text.split()[-1]}")
    subject = agent(model, strategy="pseudonymize")

    async def one(i: int) -> tuple[str, str]:
        outcome = await subject.run(f"I am user{i}@example.org")
        return outcome.unwrap().output, f"you are user{i}@example.org"

    pairs = await asyncio.gather(*(one(i) for i in range(1000)))
    assert all(got == want for got, want in pairs)
    assert all(r.messages[-1].text == "I am <EMAIL_1>" for r in model.requests)


async def test_sub_calls_are_redacted() -> None:
    """A middleware's own model call (call_model) goes through the redactor too."""
    model, requests = seen_by_model()
    registry = Registry()
    registry.include(redact_pii())

    @registry.on("model_call", order="outermost")
    async def judge(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        if ctx.run.calling is None:
            asked = ModelRequest((Message.user("is ann@example.org ok?"),))
            await ctx.run.call_model(asked, by="judge")
        return await call_next(ctx)

    await Agent(model, registry=registry).run("hi")
    assert requests[0].messages[-1].text == "is [EMAIL] ok?"


async def test_use_redact_pii_alone() -> None:
    """From configuration with use alone: every detector, redact."""
    model, requests = seen_by_model()
    container = load_container(overrides={"middleware": [{"use": "redact_pii"}]}, environ={})
    subject = container.agent(model=model)
    assert subject.describe().positions["model_call"] == ("redact_pii",)
    await subject.run("ann@example.org from 10.1.2.3")
    assert requests[0].messages[-1].text == "[EMAIL] from [IPV4]"


async def test_redact_pii_from_a_toml_file(tmp_path: Path) -> None:
    """Detectors, per-detector strategies, custom regexes and the salt, from a file."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        """
[[middleware]]
use = "redact_pii"
detectors = ["email", "phone"]
strategy = "mask"
strategies = { email = "hash" }
custom = { ticket = "TCK-[0-9]+" }
salt = "s3cret-salt"
"""
    )
    model, requests = seen_by_model()
    container = load_container(path, environ={})
    await container.agent(model=model).run("ann@example.org 555 123 4567 TCK-9 10.0.0.1")
    sent = requests[0].messages[-1].text
    assert sent.startswith("[EMAIL:")
    assert sent.endswith("] ********4567 *CK-9 10.0.0.1")


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "redact_pii", "strategy": "hash"}, "needs a salt"),
        ({"use": "redact_pii", "detectors": ["ssn"]}, "parameter 'detectors.0':"),
        ({"use": "redact_pii", "strategies": {"ssn": "redact"}}, "ssn is not a detector"),
        ({"use": "redact_pii", "custom": {"x": "("}}, "not a regular expression"),
        ({"use": "redact_pii", "custom": {"Email": "x"}}, "lower case"),
        ({"use": "redact_pii", "window": 0}, "parameter 'window':"),
    ],
)
def test_a_bad_entry_is_one_line(entry: dict[str, Any], words: str) -> None:
    """Mistakes are one-line configuration errors naming the entry; no salt leaks."""
    with pytest.raises(ConfigError) as info:
        load_container(overrides={"middleware": [entry]}, environ={}).agent()
    text = str(info.value)
    assert "\n" not in text
    assert words in text
    assert text.startswith("config key 'middleware[0]' (use = 'redact_pii'): ")


async def test_terminate_passes_untouched() -> None:
    """A Terminate from inside passes through unchanged."""
    registry = Registry()
    registry.include(redact_pii())

    @registry.on("model_call", order="innermost")
    async def stop(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        return Failure(Terminate("stopped"))

    model, _ = seen_by_model()
    result = (await Agent(model, registry=registry).run("hi")).unwrap()
    assert result.output == "stopped"


async def test_odd_shapes_of_arguments_and_parts() -> None:
    """Lists and numbers in arguments, non-JSON arguments, signed reasoning and short masks."""
    got: list[object] = []

    async def mail(to: list[str], count: int) -> str:
        """Mail several people."""
        got.append((to, count))
        return "ok"

    broken = ToolCallPart("c2", "mail", "not json: ann@example.org")
    history = [
        Message.user("hi"),
        Message(
            "assistant",
            (ReasoningPart("ann@example.org", signature="sig"), TextPart("x"), broken),
        ),
        Message("tool", (ToolResultPart("c2", "mail", "to ann@example.org"),)),
        Message.user("again ab@c.io and an unknown <EMAIL_9>"),
    ]
    model = ScriptedModel(
        [tool_calls(("mail", {"to": ["ann@example.org", "x"], "count": 2})), "done <EMAIL_9>"]
    )
    subject = agent(model, tools=[mail], strategies={"email": "mask"}, detectors=["email"])
    result = (await subject.run(history)).unwrap()
    assert got == [(["***********.org", "x"], 2)]
    sent = model.requests[0].messages
    assert sent[1].parts[0] == ReasoningPart("ann@example.org", signature="sig")
    assert sent[1].parts[2].arguments == "not json: ***********.org"  # type: ignore[union-attr]
    assert sent[2].tool_results[0].content == "to ***********.org"
    assert sent[3].text == "again ***c.io and an unknown <EMAIL_9>"
    assert result.output == "done <EMAIL_9>"


async def test_a_failed_model_call_and_a_failed_tool_pass_through() -> None:
    """Errors from inside come back unchanged; a compiled pattern works as a custom detector."""
    import re

    from fncore import ModelError

    model = ScriptedModel([ModelError(message="down")])
    outcome = await agent(model, custom={"code": re.compile(r"C-\d+")}).run("C-1")
    assert isinstance(outcome.failure(), ModelError)
    assert model.requests[0].messages[-1].text == "[CODE]"
    with pytest.raises(ValueError, match="name must not be empty"):
        redact_pii(name="")


async def test_a_value_blocked_mid_stream_stops_the_text() -> None:
    """Block in a streamed answer: nothing from the value on reaches the consumer."""
    model = ScriptedModel(["fine so far " * 30 + "then AKIAIOSFODNN7EXAMPLE and more"])
    model.chunk = 5
    events, outcome = await streamed(agent(model, strategies={"secret": "block"}), "hi")
    text = "".join(e.text for e in events if isinstance(e, TextDelta))
    assert text.startswith("fine so far")
    assert "AKIA" not in all_text(events)
    assert isinstance(outcome.failure(), PIIBlocked)
    assert outcome.failure().found_in == "stream"


async def test_pseudonyms_stay_unique_when_tool_calls_run_at_once() -> None:
    """Concurrent tool results of one run get distinct placeholders, each restored."""

    async def who(n: int) -> str:
        """Whose address is number n."""
        await asyncio.sleep(0)
        return f"user{n}@example.org"

    model = ScriptedModel(
        [tool_calls(("who", {"n": 1}), ("who", {"n": 2}), ("who", {"n": 3})), "<EMAIL_1> <EMAIL_3>"]
    )
    result = (await agent(model, tools=[who], strategy="pseudonymize").run("go")).unwrap()
    contents = sorted(r.content for r in result.messages[1].tool_results)
    assert contents == ["<EMAIL_1>", "<EMAIL_2>", "<EMAIL_3>"]
    assert result.output.count("@example.org") == 2

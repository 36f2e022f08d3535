"""``redact_pii``: personal data and secrets kept from the model, from traces and from streams.

One redactor serves every path. At ``model_call``, before the model: every message of the
request (user, assistant, tool results, tool-call arguments; not only the last) and the
system prompt. After it: the answer, its tool calls' arguments, and the streamed text,
reasoning and argument fragments. At ``tool_call``: the arguments before the tool runs
(placeholders put back) and the result before anyone else sees it.

Strategies: ``redact`` (``[EMAIL]``), ``mask`` (all but the last 4 characters), ``hash``
(salted HMAC-SHA256), ``block`` (the run fails with `PIIBlocked`, or terminates with a
message) and ``pseudonymize`` (``<EMAIL_1>`` for the model; the originals back in its
answer and in the tools' arguments). The pseudonyms live in the session's state, so a
conversation that goes on keeps them; without a session, that state is the reply's own.

What goes to the model is remembered once redacted (`Memo`): a later round, or a later turn,
redacts only the messages it adds. A message that changed is redacted again.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Annotated, Literal

from pydantic import Field, SecretStr
from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    Halt,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Position,
    ReasoningDelta,
    Registry,
    RunInfo,
    StreamEvent,
    Terminate,
    TextDelta,
    ToolCallArgsDelta,
    ToolCallContext,
    ToolCallNext,
    ToolResult,
)
from fncore.core._position_names import MODEL_CALL, TOOL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._pii import BUILTIN, BUILTIN_NAMES, Builtin, Detector, Finder
from fncore.middleware._place import place
from fncore.middleware._redact_memo import Memo, Owner
from fncore.middleware._redactor import PSEUDONYMS, Blocked, Pass, Rules, Strategy, Streamer

__all__ = ["PIIBlocked", "redact_pii"]

BLOCK_MESSAGE = "I can't go on with this: it holds data that must not be shared ({label})."
"""What a run ends with under ``block_with="terminate"``; ``{label}`` names what was found."""

_NAME = re.compile(r"[a-z][a-z0-9_]*")


@dataclass(frozen=True, slots=True, kw_only=True)
class PIIBlocked(AgentError):
    """A value under the ``block`` strategy was found; the value itself is never carried."""

    label: str
    """What was found (``EMAIL``, ``SECRET``, a custom detector's name in capitals)."""
    found_in: str
    """Where: ``request``, ``answer``, ``stream``, ``tool arguments``, ``tool result``."""


def _custom(name: str, how: str | re.Pattern[str] | Finder) -> Detector:
    if not _NAME.fullmatch(name) or name in BUILTIN:
        msg = (
            f"custom detector {name!r}: name it in lower case (letters, digits, _), and not "
            f"as a built-in ({', '.join(BUILTIN)})"
        )
        raise ValueError(msg)
    if callable(how):
        return Detector(name, name.upper(), how)
    try:
        pattern = re.compile(how) if isinstance(how, str) else how
    except re.error as exc:
        msg = f"custom detector {name!r}: not a regular expression: {exc}"
        raise ValueError(msg) from None

    def finder(text: str) -> Iterator[tuple[int, int]]:
        for match in pattern.finditer(text):
            yield match.span()

    return Detector(name, name.upper(), finder)


def _rules(
    detectors: Sequence[str],
    strategy: Strategy,
    strategies: Mapping[str, Strategy],
    custom: Mapping[str, str | re.Pattern[str] | Finder],
    salt: SecretStr | None,
) -> Rules:
    chosen = [BUILTIN[n] for n in BUILTIN if n in set(detectors)]
    chosen += [_custom(n, how) for n, how in custom.items()]
    names = [d.name for d in chosen]
    unknown = sorted(set(strategies) - set(names))
    if unknown:
        msg = f"strategies: {', '.join(unknown)} is not a detector in use ({', '.join(names)})"
        raise ValueError(msg)
    per = {n: strategies.get(n, strategy) for n in names}
    if "hash" in per.values() and salt is None:
        msg = "strategy 'hash' needs a salt: set salt (a secret, kept out of the code)"
        raise ValueError(msg)
    key = None if salt is None else salt.get_secret_value().encode()
    return Rules(tuple(chosen), per, key)


class _Stream:
    """The event map of one streamed model call: every text it streams goes through a pass.

    Answer text and reasoning are held back and released by a `Streamer` each; tool-call
    argument fragments by one per call. Another kind of event releases the text held first,
    so the order of events stays; `close` releases the rest when the model is done.
    """

    __slots__ = ("_args", "_arguments", "_emit", "_reasoning", "_text", "_window", "blocked")

    def __init__(
        self, text: Pass, arguments: Pass, window: int, emit: Callable[[StreamEvent], None]
    ) -> None:
        self._text = Streamer(text, window)
        self._reasoning = Streamer(text, window)
        self._arguments = arguments
        self._args: dict[str, Streamer] = {}
        self._window = window
        self._emit = emit
        self.blocked: str | None = None

    def __call__(self, event: StreamEvent) -> StreamEvent | None:
        if self.blocked is not None:
            return None
        try:
            kind = type(event)
            if kind is TextDelta:
                text = self._text.feed(event.text)  # type: ignore[union-attr]
                return TextDelta(text) if text else None
            if kind is ReasoningDelta:
                text = self._reasoning.feed(event.text)  # type: ignore[union-attr]
                return ReasoningDelta(text) if text else None
            if kind is ToolCallArgsDelta:
                call_id: str = event.call_id  # type: ignore[union-attr]
                streamer = self._args.get(call_id)
                if streamer is None:
                    streamer = self._args[call_id] = Streamer(self._arguments, self._window)
                delta = streamer.feed(event.delta)  # type: ignore[union-attr]
                return ToolCallArgsDelta(call_id, delta) if delta else None
            self._release()
        except Blocked as exc:
            self.blocked = exc.label
            return None
        return event

    def _release(self) -> None:
        text = self._text.flush()
        if text:
            self._emit(TextDelta(text))
        reasoning = self._reasoning.flush()
        if reasoning:
            self._emit(ReasoningDelta(reasoning))

    def close(self) -> None:
        """Release everything held (or note the block that stops it)."""
        if self.blocked is not None:
            return
        try:
            self._release()
            for call_id, streamer in self._args.items():
                delta = streamer.flush()
                if delta:
                    self._emit(ToolCallArgsDelta(call_id, delta))
        except Blocked as exc:
            self.blocked = exc.label


class _Redaction:
    """One configured `redact_pii`: its middleware at each position, as methods.

    It keeps nothing per run: the pseudonyms live in the session's state (`PSEUDONYMS`).
    Its `Memo` holds what it redacted inward, for every run (an entry that relies on a
    session's pseudonyms serves that session only).

    Args:
        rules: The detectors and what each does with a value found.
        block_with: Under ``block``, fail with `PIIBlocked` or terminate.
        block_message: The answer of a run that ``block`` terminates.
        window: How many characters of streamed text are held back, at least.
        name: The middleware's name, for errors.
        memo: What it has redacted inward (``None``: nothing is remembered).
    """

    __slots__ = (
        "block_message",
        "block_with",
        "keeps",
        "memo",
        "name",
        "plain",
        "rules",
        "window",
    )

    def __init__(
        self,
        rules: Rules,
        block_with: Literal["error", "terminate"],
        block_message: str,
        window: int,
        name: str,
        memo: Memo | None,
    ) -> None:
        self.rules = rules
        self.keeps = rules.pseudonymizes
        self.block_with = block_with
        self.block_message = block_message
        self.window = window
        self.name = name
        self.memo = memo
        self.plain = (
            None
            if self.keeps
            else (rules.inward(None, memo), rules.outward(None), rules.outward(None, restore=False))
        )
        """Without pseudonyms a pass holds no state: the inward, outward and tool-argument
        passes are made once, for every run."""

    def blocked(self, label: str, found_in: str, position: Position) -> Failure[Halt]:
        """How a run ends when ``label``, which is blocked, was found in ``found_in``."""
        if self.block_with == "terminate":
            return Failure(Terminate(self.block_message.replace("{label}", label)))
        message = f"found {label} in the {found_in}, and {label} is blocked"
        return Failure(
            PIIBlocked(
                message=message,
                position=position,
                middleware=self.name,
                label=label,
                found_in=found_in,
            )
        )

    def pseudonyms(self, run: RunInfo) -> dict[str, str] | None:
        """The session's pseudonyms, if any detector pseudonymizes."""
        return run.session_state.get(PSEUDONYMS) if self.keeps else None

    def inward(self, run: RunInfo, kept: dict[str, str] | None) -> Pass:
        """The pass for what goes to the model in ``run``, with the memo."""
        if self.plain is not None:
            return self.plain[0]
        owner: Owner = None
        if kept is not None:
            owner = kept if run.session_id is None else run.session_id
        return self.rules.inward(kept, self.memo, owner)

    def outward(self, kept: dict[str, str] | None) -> tuple[Pass, Pass]:
        """The passes for what comes from the model: its text, and its tools' arguments."""
        if self.plain is not None:
            return self.plain[1], self.plain[2]
        return self.rules.outward(kept), self.rules.outward(kept, restore=False)

    async def redact_call(
        self, ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        """At ``model_call``: the request on its way in, the answer and stream on the way out."""
        kept = self.pseudonyms(ctx.run)
        try:
            request = self.inward(ctx.run, kept).request(ctx.request)
        except Blocked as exc:
            return self.blocked(exc.label, "request", MODEL_CALL)
        if request is not ctx.request:
            ctx = dataclasses.replace(ctx, request=request)
        outward, arguments = self.outward(kept)
        emit = ctx.run.emit
        stream = None
        if emit is not None:
            stream = _Stream(outward, arguments, self.window, emit)
            ctx = ctx.map_events(stream)
        outcome = await call_next(ctx)
        if stream is not None:
            stream.close()
            if stream.blocked is not None:
                return self.blocked(stream.blocked, "stream", MODEL_CALL)
        if type(outcome) is not Success:
            return outcome
        try:
            return Success(outward.response(outcome.unwrap(), arguments))
        except Blocked as exc:
            return self.blocked(exc.label, "answer", MODEL_CALL)

    async def redact_tool(
        self, ctx: ToolCallContext, call_next: ToolCallNext
    ) -> Outcome[ToolResult]:
        """At ``tool_call``: the arguments before the tool runs, its result after."""
        kept = self.pseudonyms(ctx.run)
        try:
            given = ctx.args.model_dump()
            args = self.outward(kept)[0].data(given)
        except Blocked as exc:
            return self.blocked(exc.label, "tool arguments", TOOL_CALL)
        if args is not given:
            changed = {k: v for k, v in args.items() if v is not given[k]}  # type: ignore[attr-defined]
            ctx = ctx.with_args(**changed)
        outcome = await call_next(ctx)
        if type(outcome) is not Success:
            return outcome
        result: ToolResult = outcome.unwrap()
        try:
            content = self.inward(ctx.run, kept).text(result.content)
        except Blocked as exc:
            return self.blocked(exc.label, "tool result", TOOL_CALL)
        if content == result.content:
            return outcome
        return Success(dataclasses.replace(result, content=content))


@checked
def redact_pii(
    *,
    detectors: Sequence[Builtin] = BUILTIN_NAMES,
    strategy: Strategy = "redact",
    strategies: Mapping[str, Strategy] | None = None,
    custom: Mapping[str, str | re.Pattern[str] | Finder] | None = None,
    salt: SecretStr | None = None,
    block_with: Literal["error", "terminate"] = "error",
    block_message: str = BLOCK_MESSAGE,
    window: Annotated[int, Field(ge=1)] = 256,
    memo_chars: Annotated[int, Field(ge=0)] = 4_000_000,
    name: str = "redact_pii",
) -> Registry:
    """Keep personal data and secrets from the model, the traces and the stream.

    Args:
        detectors: Which built-in detectors run (default: all): ``email``, ``phone``,
            ``credit_card`` (Luhn-checked), ``iban`` (mod-97-checked), ``ipv4``, ``ipv6``,
            ``mac``, ``url``, ``secret`` (provider API keys, JWTs, PEM private keys).
        strategy: What happens to a value found, for every detector: ``redact``,
            ``mask``, ``hash``, ``block`` or ``pseudonymize``.
        strategies: A strategy per detector name, over ``strategy``.
        custom: More detectors by name (lower case; the label is the name in capitals):
            a regular expression, or, from code, a function returning ``(start, end)``
            spans.
        salt: The key of ``hash``'s HMAC (required by ``hash``). Never shown in a repr,
            log, error or trace.
        block_with: Under ``block``: ``error`` fails the run with `PIIBlocked`;
            ``terminate`` ends it with ``block_message``.
        block_message: The answer of a run ended by ``block``; ``{label}`` is replaced by
            what was found.
        window: How many characters of streamed text are held back, at least: the longest
            a value can be before it is recognisable (a value found is held however long it
            grows).
        memo_chars: How many characters of text already redacted for the model are
            remembered, so later rounds and turns redact only what is new (``0``: none).
            It bounds both what it remembers: texts, and conversations. A custom
            detector that is a function turns the memo off (it may find more than the
            text tells).
        name: The middleware's name at both positions.

    Returns:
        A registry holding the ``model_call`` and ``tool_call`` middleware.

    Raises:
        ValueError: for no detector at all, a strategy of a detector not in use, ``hash``
            without a salt, or a bad custom detector.

    Example:
        >>> registry = Registry()
        >>> registry.include(redact_pii(strategies={"email": "pseudonymize"}))
        >>> [(r.position, r.name) for r in registry.middleware]
        [('model_call', 'redact_pii'), ('tool_call', 'redact_pii')]
    """
    if not name:
        msg = "name must not be empty"
        raise ValueError(msg)
    rules = _rules(detectors, strategy, strategies or {}, custom or {}, salt)
    if not rules.detectors:
        msg = "redact_pii has nothing to find: keep some detectors, or add custom ones"
        raise ValueError(msg)
    pure = not any(callable(how) for how in (custom or {}).values())
    memo = Memo(memo_chars) if memo_chars and pure else None
    redaction = _Redaction(rules, block_with, block_message, window, name, memo)
    registry = Registry()
    where = place("redact_pii")
    registry.on(MODEL_CALL, name=name, **where)(redaction.redact_call)
    registry.on(TOOL_CALL, name=name, **where)(redaction.redact_tool)
    return registry

"""The one redactor behind every path of `redact_pii`: texts, messages, JSON, streams.

A `Rules` holds what is configured (detectors, a strategy per detector, the salt). For
each model call or tool call it makes a `Pass` bound to the run's pseudonyms, in one of two
directions: ``inward`` (towards the model: every strategy applies, values become
placeholders) or ``outward`` (from the model: placeholders are restored, values the model
wrote itself get their strategy, except ``pseudonymize``, which has nothing to hide from
the one who owns the value). A `Streamer` applies a pass to text arriving in pieces.

An inward pass may be given the `Memo` of its `redact_pii`: it then redacts each text and
each conversation once, and later requests only what they add (see ``_redact_memo``).
"""

from __future__ import annotations

import hashlib
import hmac
import json
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import Literal, TypeAlias

from fncore.core import (
    Message,
    ModelRequest,
    ModelResponse,
    Part,
    ReasoningPart,
    StateKey,
    TextPart,
    ToolCallPart,
    ToolResultPart,
)
from fncore.middleware._memo import joined
from fncore.middleware._pii import Detector, Span, find
from fncore.middleware._redact_memo import Conversation, Memo, Owner, Spread, Uses, holds, size

Strategy: TypeAlias = Literal["redact", "mask", "hash", "block", "pseudonymize"]
"""What happens to a value found: see the `redact_pii` page."""

PSEUDONYMS: StateKey[dict[str, str]] = StateKey("fncore.redact_pii.pseudonyms", default=dict)
"""Placeholder -> original value, in the session's state (the reply's, without a session)."""

_PLACEHOLDER = re.compile(r"<([A-Z][A-Z0-9_]*)_([1-9][0-9]*)>")


class Blocked(Exception):
    """A value under the ``block`` strategy was found (only its label travels)."""

    def __init__(self, label: str) -> None:
        super().__init__(label)
        self.label = label


@dataclass(frozen=True, slots=True)
class Rules:
    """The configuration of one `redact_pii`: what to find and what to do with it."""

    detectors: tuple[Detector, ...]
    strategies: Mapping[str, Strategy]
    salt: bytes | None = field(repr=False)
    _outward: tuple[Detector, ...] = field(init=False, repr=False, compare=False)
    """The detectors of an outward pass: those whose strategy is not ``pseudonymize``."""

    def __post_init__(self) -> None:
        kept = tuple(d for d in self.detectors if self.strategies[d.name] != "pseudonymize")
        object.__setattr__(self, "_outward", kept)

    @property
    def pseudonymizes(self) -> bool:
        """Whether some detector's strategy is ``pseudonymize`` (so pseudonyms are kept)."""
        return "pseudonymize" in self.strategies.values()

    def inward(
        self, pseudonyms: dict[str, str] | None, memo: Memo | None = None, owner: Owner = None
    ) -> Pass:
        """A pass for what goes to the model.

        Args:
            pseudonyms: The run's pseudonyms (``None`` when nothing pseudonymizes).
            memo: What this configuration has redacted before, to reuse (none: scan all).
            owner: Whose ``pseudonyms`` they are: the session's id, or ``pseudonyms``
                themselves without a session.
        """
        return Pass(self, self.detectors, pseudonyms, restore=False, memo=memo, owner=owner)

    def outward(self, pseudonyms: dict[str, str] | None, *, restore: bool = True) -> Pass:
        """A pass for what comes from the model (``restore``: put the originals back)."""
        return Pass(self, self._outward, pseudonyms if restore else None, restore=restore)


class Pass:
    """One direction of redaction over one run's pseudonyms."""

    __slots__ = (
        "_counts",
        "_detectors",
        "_memo",
        "_originals",
        "_owner",
        "_placeholders",
        "_rules",
        "_used",
    )

    def __init__(
        self,
        rules: Rules,
        detectors: tuple[Detector, ...],
        pseudonyms: dict[str, str] | None,
        *,
        restore: bool,
        memo: Memo | None = None,
        owner: Owner = None,
    ) -> None:
        self._rules = rules
        self._originals = pseudonyms  # placeholder -> value (shared with the run's state)
        self._placeholders: dict[str, str] | None = None
        self._counts: dict[str, int] = {}
        self._memo = memo
        self._owner = owner
        self._used: list[tuple[str, str]] | None = (
            [] if memo is not None and pseudonyms is not None else None
        )
        """Every placeholder this pass gave or reused, with its value, for the memo."""
        if pseudonyms is not None and restore and pseudonyms:
            restored = Detector("placeholder", "", self._known_placeholders, loose=True)
            detectors = (restored, *detectors)
        self._detectors = detectors

    def _known_placeholders(self, text: str) -> Iterator[tuple[int, int]]:
        originals = self._originals or {}
        for match in _PLACEHOLDER.finditer(text):
            if match.group() in originals:
                yield match.span()

    def _pseudonym(self, label: str, value: str) -> str:
        originals = self._originals
        if originals is None:  # pragma: no cover - a pass that pseudonymizes has them
            msg = "pseudonymize needs the run's pseudonyms"
            raise RuntimeError(msg)
        placeholders = self._placeholders
        if placeholders is None or len(placeholders) != len(originals):
            # built once, and again if a concurrent call of the run added some meanwhile
            placeholders = self._placeholders = {v: k for k, v in originals.items()}
        found = placeholders.get(value)
        if found is None:
            number = self._counts.get(label)
            if number is None:
                prefix = f"<{label}_"
                number = sum(k.startswith(prefix) for k in originals)
            number += 1
            while f"<{label}_{number}>" in originals:
                number += 1
            self._counts[label] = number
            found = f"<{label}_{number}>"
            originals[found] = value
            placeholders[value] = found
        if self._used is not None:
            self._used.append((found, value))
        return found

    def replacement(self, span: Span, value: str) -> str:
        """What ``value`` (found by ``span``'s detector) becomes."""
        detector = span.detector
        if detector.name == "placeholder":
            return (self._originals or {}).get(value, value)
        label = detector.label
        strategy = self._rules.strategies[detector.name]
        if strategy == "redact":
            return f"[{label}]"
        if strategy == "mask":
            return "*" * (len(value) - 4) + value[-4:] if len(value) > 4 else "*" * len(value)
        if strategy == "hash":
            salt = self._rules.salt or b""
            digest = hmac.new(salt, value.encode(), hashlib.sha256).hexdigest()[:16]
            return f"[{label}:{digest}]"
        if strategy == "pseudonymize":
            return self._pseudonym(label, value)
        raise Blocked(label)

    def spans(self, text: str) -> list[Span]:
        """What the pass's detectors find in ``text``."""
        return find(text, self._detectors)

    def apply(self, text: str, spans: Sequence[Span], end: int | None = None) -> str:
        """``text[:end]`` with each of ``spans`` (all ending by ``end``) replaced."""
        stop = len(text) if end is None else end
        if not spans:
            return text if end is None else text[:stop]
        out: list[str] = []
        at = 0
        for span in spans:
            out.append(text[at : span.start])
            out.append(self.replacement(span, text[span.start : span.end]))
            at = span.end
        out.append(text[at:stop])
        return "".join(out)

    def text(self, text: str) -> str:
        """``text`` with every value found replaced.

        Raises:
            Blocked: for a value under the ``block`` strategy.
        """
        if not text:
            return text
        memo = self._memo
        if memo is None:
            return self.apply(text, self.spans(text))
        known = memo.texts.get(text)
        used = self._used
        if known is not None and holds(known[1], known[2], self._owner, self._originals):
            if known[1] and used is not None:
                used.extend(known[1])
            return text if known[0] is None else known[0]  # unchanged: the text itself
        mark = 0 if used is None else len(used)
        out = self.apply(text, self.spans(text))
        uses = _distinct(used, mark)
        if out is text:
            memo.texts.put(text, (None, uses, None), len(text))
        else:
            owner = self._owner if uses else None
            memo.texts.put(text, (out, uses, owner), len(text) + len(out))
        return out

    def json(self, raw: str) -> str:
        """JSON text with every string in it passed through `text` (as text, if not JSON)."""
        try:
            parsed = json.loads(raw)
        except ValueError:
            return self.text(raw)
        changed = self.data(parsed)
        return raw if changed is parsed else json.dumps(changed, ensure_ascii=False)

    def data(self, value: object) -> object:
        """Strings in JSON-like data passed through `text`; the same object if none changed."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            items = [self.data(v) for v in value]
            return value if all(a is b for a, b in zip(items, value, strict=True)) else items
        if isinstance(value, dict):
            pairs: dict[object, object] | None = None
            for key, item in value.items():
                if type(item) in _SCALARS:
                    continue
                changed = self.data(item)
                if changed is not item:
                    if pairs is None:
                        pairs = dict(value)
                    pairs[key] = changed
            return value if pairs is None else pairs
        return value

    def part(self, part: Part) -> Part:
        """One message part with its text passed (the same part if nothing changed)."""
        if isinstance(part, TextPart):
            text = self.text(part.text)
            return part if text == part.text else TextPart(text)
        if isinstance(part, ToolResultPart):
            content = self.text(part.content)
            return part if content == part.content else replace(part, content=content)
        if isinstance(part, ToolCallPart):
            arguments = self.json(part.arguments)
            return part if arguments == part.arguments else replace(part, arguments=arguments)
        if isinstance(part, ReasoningPart) and part.signature is None and part.redacted is None:
            text = self.text(part.text)
            return part if text == part.text else replace(part, text=text)
        return part  # data, and reasoning a provider signed (it must go back unchanged)

    def message(self, message: Message) -> Message:
        """A message with each part passed (the same message if nothing changed)."""
        parts = tuple([self.part(p) for p in message.parts])
        if all(a is b for a, b in zip(parts, message.parts, strict=True)):
            return message
        return replace(message, parts=parts)

    def request(self, request: ModelRequest) -> ModelRequest:
        """Every message and the instructions of a request passed."""
        messages = self.messages(request.messages)
        instructions = self.text(request.instructions)
        if messages is request.messages and instructions == request.instructions:
            return request
        return replace(request, messages=messages, instructions=instructions)

    def messages(self, messages: tuple[Message, ...]) -> tuple[Message, ...]:
        """Each message passed (``messages`` itself if none changed).

        With a memo, the longest start of ``messages`` redacted before is reused, and the
        messages after it are passed and remembered with it (see `Conversations`).
        """
        memo = self._memo
        if memo is None or len(messages) <= _SHORT:
            passed = [self.message(m) for m in messages]
            same = all(a is b for a, b in zip(passed, messages, strict=True))
            return messages if same else tuple(passed)
        found, length = memo.conversations.find(messages, self._owner, self._originals)
        count = len(messages)
        head: tuple[Message, ...] = ()
        uses: Spread = ()
        weight, changed = 0, count
        if found is not None:
            uses, weight = found.start(length)
            if found.changed >= length:  # none of them changed: these very messages
                if length == count:
                    return messages
                head = messages[:length]
            else:
                changed = found.changed
                outputs = found.outputs
                head = outputs if length == len(outputs) else outputs[:length]
                if length == count:
                    return head
        passed, uses, changed = self._rest(messages, length, uses, changed)
        if changed == count:
            out = messages
        elif found is not None and head is found.outputs:  # noted: ``out`` goes on from it
            out = joined(head, tuple(passed))
        else:
            out = head + tuple(passed)
        weight += sum([size(m) for m in messages[length:]])
        owner = self._owner if uses else None
        new = Conversation(messages, out, changed, uses, owner, weight)
        memo.conversations.keep(new, found, length)
        return out

    def _rest(
        self, messages: tuple[Message, ...], start: int, uses: Spread, changed: int
    ) -> tuple[list[Message], Spread, int]:
        """The messages from ``start`` on passed, with the uses and first change so far."""
        used = self._used
        seen = {(p, v) for p, v, _ in uses} if used is not None else set()
        more: list[tuple[str, str, int]] = []
        passed: list[Message] = []
        for index in range(start, len(messages)):
            message = messages[index]
            mark = 0 if used is None else len(used)
            out = self.message(message)
            passed.append(out)
            if out is not message and changed == len(messages):
                changed = index
            if used is not None and len(used) > mark:
                for pair in used[mark:]:
                    if pair not in seen:
                        seen.add(pair)
                        more.append((*pair, index))
        return passed, (*uses, *more) if more else uses, changed

    def response(self, response: ModelResponse, tool_arguments: Pass) -> ModelResponse:
        """A response passed: its text by this pass, its tool calls' arguments by the other."""
        parts = tuple(
            [
                tool_arguments.part(p) if type(p) is ToolCallPart else self.part(p)
                for p in response.message.parts
            ]
        )
        if all(a is b for a, b in zip(parts, response.message.parts, strict=True)):
            return response
        return replace(response, message=replace(response.message, parts=parts))


_SHORT = 8
"""Requests of at most this many messages are passed message by message, each text found
in the memo's texts: remembering them as a conversation would cost more than it saves."""

_SCALARS = frozenset([int, float, bool, type(None)])
"""The JSON values that hold no text."""


def _distinct(used: list[tuple[str, str]] | None, mark: int) -> Uses:
    """The pairs of ``used`` from ``mark`` on, each once."""
    if used is None or len(used) == mark:
        return ()
    return tuple(dict.fromkeys(used[mark:]))


class Streamer:
    """A pass over text that arrives in pieces, holding back what a match could still reach.

    Nothing is released while it could still turn out to be (part of) a value: the last
    ``window`` characters are held, and so is any value found that reaches into them, however
    long it grows. `flush` releases the rest, redacted, at the end.
    """

    __slots__ = ("_held", "_pass", "_window")

    def __init__(self, redactor: Pass, window: int) -> None:
        self._pass = redactor
        self._window = window
        self._held = ""

    def feed(self, chunk: str) -> str:
        """The redacted text that is now safe to release (perhaps ``""``).

        Raises:
            Blocked: for a value under the ``block`` strategy.
        """
        text = self._held + chunk
        cut = len(text) - self._window
        if cut <= 0:
            self._held = text
            return ""
        spans = self._pass.spans(text)
        done = 0
        for span in spans:
            if span.start >= cut:
                break
            if span.end > cut:
                cut = span.start
                break
            done += 1
        self._held = text[cut:]
        return self._pass.apply(text, spans[:done], cut)

    def flush(self) -> str:
        """Whatever is held, redacted; the streamer is then empty."""
        text, self._held = self._held, ""
        return self._pass.text(text)

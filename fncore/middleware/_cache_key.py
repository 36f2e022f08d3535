"""The cache's keys: SHA-256 digests of requests, built from digests remembered per part.

A key is the same in every process. It digests, in order, the digest of each message, the
request's head (the model, instructions and tool choice as JSON text, then the digests of
the settings, the output schema and each tool's definition) and the number of messages:

    key = SHA-256(d(m1) ‖ … ‖ d(mn) ‖ head ‖ n)

`Digests` remembers the digest of each message, tool definition, output schema and
settings by object, and of each head, so a request whose parts were seen before costs a
lookup per part, not a new text of them all. It also remembers, per conversation, the
running SHA-256 over the digests of the messages seen last (and checkpoints of it every
`STEP` messages), so a request that continues them hashes only the messages that are new,
and one that branches from them only those after the last checkpoint before the branch: a
long conversation costs a comparison of identities per message.

What a request holds beyond JSON (a set or bytes in ``ModelSettings.extra``, a date or an
enum in a tool's arguments) is first put in a canonical form (`canonical`); a value with
none is refused (`Unkeyable`), never keyed by its ``repr``, which may differ from one
process to the next.
"""

from __future__ import annotations

import base64
import hashlib
from json.encoder import encode_basestring_ascii as _q
from typing import TYPE_CHECKING, TypeAlias

from fncore.core import (
    DataPart,
    Message,
    ModelRequest,
    ModelSettings,
    OutputSchema,
    ReasoningPart,
    TextPart,
    ToolCallContext,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
)
from fncore.middleware._memo import make_room
from fncore.session_stores._json import canonical, key_text, part_doc

if TYPE_CHECKING:
    from hashlib import _Hash

__all__ = ["DIGESTS_KEPT", "Digests", "plain_part", "request_key", "tool_key"]

DIGESTS_KEPT = 10_000
"""How many objects a `Digests` remembers the digest of at most (messages, tools, ...)."""

SHORT = 16
"""Conversations up to this many messages are hashed whole: cheaper than a running hash."""

STEP = 64
"""How many messages apart a conversation's running hash keeps a checkpoint to resume at."""

_Digestible: TypeAlias = Message | ToolSpec | OutputSchema | ModelSettings


def plain_part(part: object) -> bool:
    """Whether ``part`` is one of fncore's parts, each field of its own type (no subclass).

    Such a part reads back from its JSON form as itself, and cannot change in place.

    Example:
        >>> plain_part(TextPart("hi")), plain_part(DataPart(bytearray(b"x"), "image/png"))
        (True, False)
    """
    if type(part) is TextPart:
        return type(part.text) is str
    if type(part) is ToolCallPart:
        return type(part.id) is str and type(part.name) is str and type(part.arguments) is str
    if type(part) is ToolResultPart:
        return (
            type(part.call_id) is str
            and type(part.name) is str
            and type(part.content) is str
            and type(part.is_error) is bool
        )
    if type(part) is ReasoningPart:
        signature, redacted = part.signature, part.redacted
        return (
            type(part.text) is str
            and (signature is None or type(signature) is str)
            and (redacted is None or type(redacted) is str)
        )
    return type(part) is DataPart and type(part.data) is bytes and type(part.media_type) is str


def _part_text(part: object) -> str:
    """The key text of a part: JSON, the part's kind and its fields in order."""
    if type(part) is TextPart:
        return f'["text",{_q(part.text)}]'
    if type(part) is ToolCallPart:
        return f'["tool_call",{_q(part.id)},{_q(part.name)},{_q(part.arguments)}]'
    if type(part) is ToolResultPart:
        error = "true" if part.is_error else "false"
        return f'["tool_result",{_q(part.call_id)},{_q(part.name)},{_q(part.content)},{error}]'
    if type(part) is ReasoningPart:
        return (
            f'["reasoning",{_q(part.text)},{_optional(part.signature)},{_optional(part.redacted)}]'
        )
    if type(part) is DataPart:
        data = base64.b64encode(part.data).decode("ascii")
        return f'["data",{_q(part.media_type)},"{data}"]'
    return key_text(part_doc(part))  # no part of fncore's: part_doc says so (a TypeError)


def _optional(text: str | None) -> str:
    return "null" if text is None else _q(text)


def _digest(value: _Digestible) -> tuple[bytes, bool]:
    """The SHA-256 digest of ``value``'s key text, and whether it may be remembered.

    A message may be (its parts are values), unless it holds data that can change in place
    (a ``bytearray``); settings may be while their ``extra`` is empty. Tool definitions and
    output schemas are values too: their schemas are digested once per object.
    """
    if type(value) is Message:
        parts = value.parts
        text = f"[{_q(value.role)},[{','.join(map(_part_text, parts))}]]"
        frozen = DataPart not in map(type, parts) or all(map(plain_part, parts))
    elif type(value) is ToolSpec:
        schema = canonical(value.parameters, f"tool {value.name!r}'s schema")
        text, frozen = key_text([value.name, value.description, schema, value.strict]), True
    elif type(value) is OutputSchema:
        schema = canonical(value.schema, "the output schema")
        text = key_text([value.name, schema, value.description, value.strict])
        frozen = True
    else:
        extra = value.extra
        fields: list[object] = [value.temperature, value.max_tokens, value.top_p, list(value.stop)]
        fields += [value.seed, value.parallel_tool_calls, canonical(extra, "ModelSettings.extra")]
        text, frozen = key_text(fields), not extra
    return hashlib.sha256(text.encode()).digest(), frozen


class Digests:
    """Digests of requests' parts, remembered per object, a bounded number of each kind.

    Messages, tool definitions, output schemas and settings are values: each object's
    digest is computed once and looked up by identity afterwards. A message that changes
    is a new object, so it is digested anew. An entry holds its object, so while it is
    remembered no other object can take its identity; past ``max_entries`` entries, the
    older half is forgotten (and digested again if seen again). Heads (the short fields,
    settings, output schema and tools of a request) and conversations are remembered the
    same way, a sixteenth as many of each.

    Example:
        >>> digests, message = Digests(), Message.user("hi")
        >>> digests.of(message) == Digests().of(message), len(digests.of(message))
        (True, 32)
    """

    __slots__ = ("_heads", "_kept", "_runs", "max_entries")

    def __init__(self, max_entries: int = DIGESTS_KEPT) -> None:
        self.max_entries = max_entries
        self._kept: dict[int, tuple[object, bytes]] = {}
        self._heads: dict[tuple[object, ...], tuple[object, bytes]] = {}
        # per conversation: its messages seen last, checkpoints of their hash, its end, and
        # where the first message whose digest may change (a bytearray in it) is, if any
        self._runs: dict[int, tuple[tuple[Message, ...], list[_Hash], _Hash, int | None]] = {}

    def __len__(self) -> int:
        return len(self._kept) + len(self._heads) + len(self._runs)

    def of(self, value: _Digestible) -> bytes:
        """``value``'s digest: remembered, or computed (and remembered if it may be)."""
        kept = self._kept.get(id(value))
        if kept is not None and kept[0] is value and _still(value):
            return kept[1]
        return self._digested(value)

    def _digested(self, value: _Digestible) -> bytes:
        """``value``'s digest, computed, and remembered if it may be."""
        digest, frozen = _digest(value)
        if frozen:
            make_room(self._kept, self.max_entries)
            self._kept[id(value)] = (value, digest)
        return digest

    def join(self, values: tuple[_Digestible, ...]) -> bytes:
        """The digests of ``values`` (messages, tool definitions), one after the other."""
        get, digested = self._kept.get, self._digested
        digests: list[bytes] = []
        for value in values:
            kept = get(id(value))
            digests.append(kept[1] if kept is not None and kept[0] is value else digested(value))
        return b"".join(digests)

    def _chunk(self, messages: tuple[Message, ...]) -> tuple[bytes, int | None]:
        """`join` of ``messages``, and the index of the first not remembered after, if any."""
        get, of = self._kept.get, self.of
        digests: list[bytes] = []
        unkept = None
        for index, message in enumerate(messages):
            kept = get(id(message))
            if kept is not None and kept[0] is message:
                digests.append(kept[1])
                continue
            digests.append(of(message))
            kept = get(id(message))
            if unkept is None and (kept is None or kept[0] is not message):
                unkept = index
        return b"".join(digests), unkept

    def head(self, request: ModelRequest, model: str) -> bytes:
        """What the key digests of ``request`` after its messages, and before their count."""
        settings, tools, output = request.settings, request.tools, request.output_schema
        choice = request.tool_choice
        ids = (model, request.instructions, choice, id(settings), id(tools), id(output))
        kept = self._heads.get(ids)
        if kept is not None and kept[0] == (settings, tools, output) and not settings.extra:
            return kept[1]
        text = (
            f"[{_q(model)},{_q(request.instructions)},"
            f"{_q(choice) if isinstance(choice, str) else _q_name(choice.name)},"
            f"{'false' if output is None else 'true'},{len(tools)}]"
        ).encode()
        parts = [text, self.of(settings)]
        if output is not None:
            parts.append(self.of(output))
        head = b"".join((*parts, self.join(tools)))
        if not settings.extra:  # it may change in place: a head remembered only while empty
            make_room(self._heads, max(self.max_entries // 16, 1))
            self._heads[ids] = ((settings, tools, output), head)
        return head

    def messages(self, messages: tuple[Message, ...]) -> _Hash:
        """A SHA-256 over the digests of ``messages``, one after the other (not finished).

        A conversation's running hash resumes where the messages it saw last (by their
        first one) stop being these: at their end if these continue them, else at the last
        checkpoint (every `STEP` messages) before the first that differs, or that may have
        changed in place. Messages compare by identity first, then by value: equal
        messages have equal digests.
        """
        if len(messages) <= SHORT:
            return hashlib.sha256(self.join(messages))
        first = messages[0]
        run = self._runs.get(id(first))
        if run is None or run[0][0] is not first:
            at, checkpoints, running, changing = 0, [hashlib.sha256()], hashlib.sha256(), None
        else:
            seen, kept, end, changing = run
            at = len(seen) if changing is None else changing
            if changing is None and at <= len(messages) and messages[:at] == seen:
                checkpoints, running = list(kept), end.copy()  # these continue them
            else:  # another branch: resume at the last checkpoint before what differs
                same, step = 0, STEP
                top = min(at, len(messages)) // STEP * STEP
                if top and messages[:top] == seen[:top]:  # most often: it parts after it
                    same = top
                while (
                    same + step <= at and messages[same : same + step] == seen[same : same + step]
                ):
                    same += step
                checkpoints = kept[: same // STEP + 1]
                at, running, changing = same, checkpoints[-1].copy(), None
        while at < len(messages):
            stop = min(at - at % STEP + STEP, len(messages))
            digests, unkept = self._chunk(messages[at:stop])
            running.update(digests)
            if unkept is not None and changing is None:  # it may change: never resumed past
                changing = at + unkept
            at = stop
            if at % STEP == 0:
                checkpoints.append(running.copy())
        if run is None:
            make_room(self._runs, max(self.max_entries // 16, 1))
        self._runs[id(first)] = (messages, checkpoints, running.copy(), changing)
        return running


def _still(value: _Digestible) -> bool:
    """Whether ``value`` is still as remembered: settings whose ``extra`` stayed empty."""
    return type(value) is not ModelSettings or not value.extra


def _q_name(name: str) -> str:
    return f'{{"name":{_q(name)}}}'


def request_key(request: ModelRequest, model: str, digests: Digests | None = None) -> str:
    """A digest of ``request`` to ``model``, normalised: equal requests, equal keys.

    It covers what shapes the answer (the model, instructions, messages, tools, tool choice,
    settings and output schema), not the provider's prompt-cache hints. The digests of
    its parts are taken from ``digests`` when it has them; a fresh `Digests` computes the
    same key cold.

    Raises:
        Unkeyable: for a value in the settings, the tools or the output schema that has no
            canonical form (see `canonical`).
        TypeError: for a message part that is not one of fncore's.

    Example:
        >>> a = request_key(ModelRequest((Message.user("hi"),)), "gpt")
        >>> a == request_key(ModelRequest((Message.user("hi"),)), "gpt"), len(a)
        (True, 64)
    """
    remembered = Digests() if digests is None else digests
    messages = request.messages
    size = len(messages).to_bytes(8, "big")
    if len(messages) <= SHORT:  # what `Digests.messages` would hash first, in one go
        return hashlib.sha256(
            remembered.join(messages) + remembered.head(request, model) + size
        ).hexdigest()
    key = remembered.messages(messages)
    key.update(remembered.head(request, model) + size)
    return key.hexdigest()


def tool_key(ctx: ToolCallContext, digests: Digests | None = None) -> str:
    """A digest of a tool call: the tool's name, description and schema, its arguments.

    Raises:
        Unkeyable: for an argument (or a schema value) that has no canonical form.
    """
    spec = ctx.tool.spec
    definition = (Digests() if digests is None else digests).of(spec)
    arguments = key_text(canonical(ctx.args.model_dump(), f"the arguments of {spec.name!r}"))
    return hashlib.sha256(definition + arguments.encode()).hexdigest()

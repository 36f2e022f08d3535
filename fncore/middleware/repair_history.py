"""`repair_history`: make a history from elsewhere valid for the model about to get it.

Opt-in: without it the agent's strict checks stand (an unpaired history fails the run with
`InvalidHistory`). With it, before each model call the request's messages are rewritten
by these rules, in this order:

1. Pairing (every model): a tool call with no result gets a synthetic error result
   (``interrupted``), placed right after the turn's last result (or right after the call);
   a result that answers no call of the assistant turn before it (an orphan, a second
   answer, a result inside an assistant message) is dropped; a tool call outside an
   assistant message is dropped; calls of one turn that share an id (or have none) are
   renamed, and the turn's results follow them in order (the first result with the old id
   answers the first call with it, the second the second).
2. Signed reasoning: a `ReasoningPart` carrying a signature or redacted data whose origin
   is known (recorded by this middleware or by `fallback`, in the session's state) and is
   not the target model's loses them: its text stays, unsigned, and a part without text is
   dropped. A signature of unknown origin is kept (``unknown_signatures="keep"``, as
   `fallback` assumes it came from the agent's model) or stripped (``"strip"``, for imported
   histories).
3. Data parts: a `DataPart` the target cannot take (by its media type, or where it stands)
   becomes a `TextPart`: UTF-8 text types (``text/*``, ``application/json``) are decoded into
   the message, anything else becomes a one-line note naming the media type and size.
4. A message left without parts is dropped.

The loop checks a run's input before any ``model_call`` middleware; so the factory also
registers a ``run`` layer that applies rule 1 to the input (against the calls the session
leaves open), and the session commits the repaired input.

Every repair is recorded: as a span event ``fncore.repair_history`` on the current span,
and in the reply's state, read with `history_repairs`.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace
from typing import Literal, TypeAlias, final

from fncore.adapter import ProviderModel
from fncore.core import (
    DataPart,
    InvalidHistory,
    Message,
    Model,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    Part,
    ReasoningPart,
    Registry,
    RunContext,
    RunInfo,
    RunNext,
    RunResult,
    StateKey,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    open_calls,
)
from fncore.core._position_names import MODEL_CALL, RUN
from fncore.middleware._checked import checked
from fncore.middleware._place import place
from fncore.middleware.fallback import _SIGNED_BY, _digest, _origin, _signed
from fncore.runtime import register_state_type

__all__ = ["Repair", "history_repairs", "repair_history"]

INTERRUPTED = "Interrupted: this tool call has no result (it did not run, or its result was lost)."
"""The content of the synthetic error result a dangling tool call gets, by default."""

RepairKind: TypeAlias = Literal[
    "interrupted",
    "orphan_dropped",
    "call_dropped",
    "id_renamed",
    "reasoning_unsigned",
    "reasoning_dropped",
    "data_converted",
    "message_dropped",
]
"""What a repair did."""

_TEXT_TYPES = ("text/", "application/json")
_PROVIDER_DATA: dict[str, tuple[frozenset[str], Callable[[str], bool]]] = {
    "anthropic": (
        frozenset({"user", "tool"}),
        lambda t: t in {"image/jpeg", "image/png", "image/gif", "image/webp", "application/pdf"},
    ),
    "openai": (
        frozenset({"user"}),
        lambda t: t.startswith("image/") or t == "application/pdf",
    ),
}
"""Per provider: the roles whose messages may hold data, and the media types it takes."""


@register_state_type  # kept in reply state, so in a paused run's checkpoint
@final
@dataclass(frozen=True, slots=True)
class Repair:
    """One change `repair_history` made to a request's messages."""

    kind: RepairKind
    """What was done."""
    message: int
    """The index of the message it concerns: in the messages as they came for the pairing
    rule (and for a synthetic result, the index of the call's turn), in the paired
    messages for the other rules."""
    detail: str
    """A short description: the call, the media type, the id renamed."""


_REPAIRS: dict[str, StateKey[tuple[Repair, ...]]] = {}


def _key(name: str) -> StateKey[tuple[Repair, ...]]:
    key = _REPAIRS.get(name)
    if key is None:
        key = _REPAIRS[name] = StateKey(f"fncore.repair_history.{name}", default=tuple)
    return key


def history_repairs(run: RunInfo, name: str = "repair_history") -> tuple[Repair, ...]:
    """The repairs ``name`` made during this reply, each once, in the order first made.

    Read it from a ``run_end`` hook (``event.run``) or a middleware (``ctx.run``).

    Example:
        >>> from fncore.core import State
        >>> history_repairs(RunInfo("r1", {}, State()))
        ()
    """
    return run.state.get(_key(name))


# -- rule 1: pairing ---------------------------------------------------------------------


class _Pairing:
    """One pass over the messages, fixing the pairing as it goes."""

    def __init__(self, interrupted: str, pending: Sequence[ToolCallPart]) -> None:
        self.interrupted = interrupted
        self.out: list[Message] = []
        self.repairs: list[Repair] = []
        self.waiting: dict[str, ToolCallPart] = {c.id: c for c in pending}
        self.renamed: dict[str, list[str]] = {}
        self.insert_at = 0
        self.turn_at = -1

    def close_turn(self) -> None:
        """Answer the calls still waiting with an error result, after the turn's results."""
        if not self.waiting:
            return
        calls = tuple(self.waiting.values())
        results = tuple(
            ToolResultPart(c.id, c.name, self.interrupted, is_error=True) for c in calls
        )
        self.out.insert(self.insert_at, Message("tool", results))
        for call in calls:
            self.repairs.append(Repair("interrupted", self.turn_at, f"{call.name} ({call.id})"))
        self.waiting = {}

    def assistant(self, index: int, message: Message) -> Message | None:
        self.close_turn()
        self.renamed = {}
        seen: set[str] = set()
        ids = {p.id for p in message.parts if type(p) is ToolCallPart and p.id}
        parts: list[Part] = []
        for part in message.parts:
            if type(part) is ToolResultPart:
                self.repairs.append(Repair("orphan_dropped", index, f"result for {part.call_id}"))
                continue
            if type(part) is ToolCallPart:
                old = part.id
                if not old or old in seen:
                    new = _fresh(old or "call", len(parts), ids)
                    ids.add(new)
                    part = replace(part, id=new)
                    self.repairs.append(Repair("id_renamed", index, f"{old!r} -> {new!r}"))
                seen.add(part.id)
                self.renamed.setdefault(old, []).append(part.id)
                self.waiting[part.id] = part
            parts.append(part)
        self.turn_at = index
        self.insert_at = len(self.out) + 1
        return _rebuilt(message, parts)

    def other(self, index: int, message: Message) -> Message | None:
        parts: list[Part] = []
        answered = False
        for part in message.parts:
            if type(part) is ToolCallPart:
                self.repairs.append(Repair("call_dropped", index, f"{part.name} ({part.id})"))
                continue
            if type(part) is ToolResultPart:
                queue = self.renamed.get(part.call_id)
                call_id = queue.pop(0) if queue else part.call_id
                if self.waiting.pop(call_id, None) is None:
                    self.repairs.append(Repair("orphan_dropped", index, f"result for {call_id}"))
                    continue
                if call_id != part.call_id:
                    part = replace(part, call_id=call_id)
                answered = True
            parts.append(part)
        kept = _rebuilt(message, parts)
        if answered and kept is not None:
            self.insert_at = len(self.out) + 1
        return kept


def _fresh(base: str, index: int, taken: set[str]) -> str:
    candidate = f"{base}_{index}"
    n = 0
    while candidate in taken:
        n += 1
        candidate = f"{base}_{index}_{n}"
    return candidate


def _rebuilt(message: Message, parts: list[Part]) -> Message | None:
    if len(parts) == len(message.parts) and all(
        a is b for a, b in zip(parts, message.parts, strict=True)
    ):
        return message
    return replace(message, parts=tuple(parts)) if parts else None


def repair_pairing(
    messages: Sequence[Message],
    *,
    pending: Sequence[ToolCallPart] = (),
    interrupted: str = INTERRUPTED,
) -> tuple[tuple[Message, ...], tuple[Repair, ...]]:
    """``messages`` with every tool call paired with one result, and what was changed.

    Args:
        messages: The messages, in order.
        pending: Calls left open before ``messages`` (a session's last turn), which the
            messages may answer.
        interrupted: The content of the error result a call without one gets.

    Example:
        >>> call = Message("assistant", (ToolCallPart("c1", "add"),))
        >>> fixed, done = repair_pairing([Message.user("hi"), call, Message.user("go on")])
        >>> [m.role for m in fixed], [r.kind for r in done]
        (['user', 'assistant', 'tool', 'user'], ['interrupted'])
    """
    if open_calls(messages, pending) == ():
        return tuple(messages), ()
    fix = _Pairing(interrupted, pending)
    for index, message in enumerate(messages):
        kept = fix.assistant(index, message) if message.role == "assistant" else None
        if message.role != "assistant":
            kept = fix.other(index, message)
        if kept is None:
            fix.repairs.append(Repair("message_dropped", index, f"{message.role} message"))
        else:
            fix.out.append(kept)
    fix.close_turn()
    return tuple(fix.out), tuple(fix.repairs)


# -- rules 2 to 4: parts the target cannot take ---------------------------------------------


def _data_rule(
    model: Model, media_types: Sequence[str] | None
) -> Callable[[str, str], bool] | None:
    """Whether the target takes data of a media type in a message of a role (None: all)."""
    provider = model.endpoint.provider if isinstance(model, ProviderModel) else None
    roles, takes = _PROVIDER_DATA.get(provider or "", (frozenset({"user", "tool"}), None))
    if media_types is not None:
        allowed = frozenset(media_types)
        takes = lambda t: t in allowed or f"{t.partition('/')[0]}/*" in allowed  # noqa: E731
    if takes is None:
        return None
    accept = takes
    return lambda role, media_type: role in roles and accept(media_type)


def _as_text(part: DataPart) -> TextPart:
    if part.media_type.startswith(_TEXT_TYPES):
        try:
            return TextPart(part.data.decode("utf-8"))
        except UnicodeDecodeError:
            pass
    return TextPart(
        f"[{part.media_type} attachment of {len(part.data)} bytes left out: "
        "the model cannot take it]"
    )


def repair_parts(
    messages: Sequence[Message],
    *,
    target: str,
    signed_by: dict[str, str],
    strip_unknown: bool,
    takes: Callable[[str, str], bool] | None,
) -> tuple[tuple[Message, ...], tuple[Repair, ...]]:
    """``messages`` without the signatures and data parts the target cannot take.

    Args:
        messages: The messages (already paired).
        target: The target model's origin (its provider and URL).
        signed_by: The known origin of signatures, by digest.
        strip_unknown: Whether a signature of unknown origin is stripped too.
        takes: Whether the target takes data of a media type in a message of a role;
            ``None`` keeps every data part.
    """
    out: list[Message] = []
    repairs: list[Repair] = []
    changed = False
    for index, message in enumerate(messages):
        parts: list[Part] = []
        for part in message.parts:
            if _signed(part):
                origin = signed_by.get(_digest(part))
                if (origin is None and strip_unknown) or (origin is not None and origin != target):
                    if part.text:
                        parts.append(ReasoningPart(part.text))
                        repairs.append(Repair("reasoning_unsigned", index, origin or "unknown"))
                    else:
                        repairs.append(Repair("reasoning_dropped", index, origin or "unknown"))
                    continue
            elif (
                type(part) is DataPart
                and takes is not None
                and not takes(message.role, part.media_type)
            ):
                parts.append(_as_text(part))
                where = f"{part.media_type} in a {message.role} message"
                repairs.append(Repair("data_converted", index, where))
                continue
            parts.append(part)
        kept = _rebuilt(message, parts)
        if kept is not message:
            changed = True
            if kept is None:
                repairs.append(Repair("message_dropped", index, f"{message.role} message"))
                continue
        out.append(kept)
    return (tuple(out) if changed else tuple(messages)), tuple(repairs)


def _needs_parts(messages: Sequence[Message]) -> bool:
    return any(_signed(p) or type(p) is DataPart for m in messages for p in m.parts)


# -- recording -----------------------------------------------------------------------------


def _record(run: RunInfo, key: StateKey[tuple[Repair, ...]], found: Sequence[Repair]) -> None:
    from opentelemetry import trace  # imported when used

    known = run.state.get(key)
    new = [r for r in dict.fromkeys(found) if r not in known]
    if not new:
        return
    run.state.set(key, (*known, *new))
    trace.get_current_span().add_event(
        "fncore.repair_history",
        {
            "fncore.repair.count": len(new),
            "fncore.repair.kinds": sorted({r.kind for r in new}),
            "fncore.repair.details": [f"{r.kind} @{r.message}: {r.detail}" for r in new],
        },
    )


def _remember_signatures(ctx: ModelCallContext, response: ModelResponse) -> None:
    """Record where the response's signatures are valid (the model that made them)."""
    signed = [p for p in response.message.parts if _signed(p)]
    if not signed:
        return
    session = ctx.run.session_state
    known = session.get(_SIGNED_BY)
    origin = _origin(ctx.model)
    fresh = {d: origin for d in map(_digest, signed) if known.get(d) != origin}
    if fresh:
        session.set(_SIGNED_BY, {**known, **fresh})


@checked
def repair_history(
    *,
    unknown_signatures: Literal["keep", "strip"] = "keep",
    media_types: Sequence[str] | None = None,
    interrupted: str = INTERRUPTED,
    name: str = "repair_history",
) -> Registry:
    """Rewrite each request's messages so the model about to get them can take them.

    See the module's rules. Place: inside `fallback` (it sees the model actually called),
    outside `retry`.

    Args:
        unknown_signatures: What to do with signed reasoning whose origin was never
            recorded: ``"keep"`` it (it came from the agent's model) or ``"strip"`` it
            (the history was imported).
        media_types: The media types the model takes in user and tool messages
            (``image/*`` matches every image); ``None``: the provider's own (OpenAI: images
            and PDF in user messages; Anthropic: JPEG, PNG, GIF, WebP and PDF in user and
            tool messages; any other model: everything).
        interrupted: The content of the error result given to a call that has none.
        name: The middleware's name, to tell two instances apart (and for `history_repairs`).

    Example:
        >>> registry = Registry()
        >>> registry.include(repair_history())
        >>> [(m.name, m.position) for m in registry.middleware]
        [('repair_history', 'run'), ('repair_history.model_call', 'model_call')]
    """
    key = _key(name)
    strip_unknown = unknown_signatures == "strip"
    registry = Registry()

    @registry.on(RUN, name=name, **place("repair_history"))
    async def repairing_input(ctx: RunContext, call_next: RunNext) -> Outcome[RunResult]:
        pending: object = ()
        if ctx.session is not None and ctx.session.messages:
            pending = open_calls(ctx.session.messages)
        if type(pending) is InvalidHistory:  # the session's own history: not ours to rewrite
            return await call_next(ctx)
        messages, found = repair_pairing(ctx.messages, pending=pending, interrupted=interrupted)  # type: ignore[arg-type]
        if found:
            _record(ctx.run, key, found)
            ctx = replace(ctx, messages=messages)
        return await call_next(ctx)

    @registry.on(MODEL_CALL, name=f"{name}.model_call", **place("repair_history"))
    async def repairing(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        request = ctx.request
        messages, found = repair_pairing(request.messages, interrupted=interrupted)
        if _needs_parts(messages):
            signed_by = ctx.run.session_state.get(_SIGNED_BY)
            messages, more = repair_parts(
                messages,
                target=_origin(ctx.model),
                signed_by=signed_by,
                strip_unknown=strip_unknown,
                takes=_data_rule(ctx.model, media_types),
            )
            found += more
        if found:
            _record(ctx.run, key, found)
            ctx = replace(ctx, request=replace(request, messages=messages))
        outcome = await call_next(ctx)
        response = outcome.value_or(None)
        if response is not None:
            _remember_signatures(ctx, response)
        return outcome

    return registry

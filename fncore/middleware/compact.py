"""``compact``: keep a long conversation under a size, cheapest strategy first.

Before each round (``apply="history"``, at ``compress_context``) or before each model call
(``apply="request"``, at ``model_call``), the history, with the system prompt and the tool
definitions, is measured against the trigger (the counts are remembered: see
``fncore.middleware._tally``). While it is over, the strategies run in the order given, each
on the previous one's output:

* ``clear_tool_results``: all but the last ``keep_tool_results`` tool results get
  ``placeholder`` as their content (the tools in ``exclude_tools`` are left alone);
* ``window``: the oldest groups are dropped: at most ``keep`` recent groups stay, fewer
  while they are still over the trigger (never fewer than one);
* ``summarize``: a model summarises every group but the ``keep`` most recent ones into one
  user message marked with `SUMMARY_HEADER`; the next summary folds the old one in.

A *group* is a message with the tool messages after it, so an assistant turn is never
parted from its tool results. Leading system messages and (with ``keep_first``) the first
user message always stay, and so does a summary right after them.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import replace
from typing import Annotated, Literal, TypedDict

from pydantic import Field
from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    CompressContext,
    CompressNext,
    Message,
    Model,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
    RunInfo,
    StateKey,
    ToolSpec,
)
from fncore.core._position_names import COMPRESS_CONTEXT, MODEL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._compaction import (
    SUMMARY_HEADER,
    ClearToolResults,
    TokenCounter,
    approximate_tokens,
    digest,
    head_end,
    is_summary_at,
    last_groups,
    transcript,
    window,
)
from fncore.middleware._place import place
from fncore.middleware._tally import Tally

__all__ = ["SUMMARY_HEADER", "SUMMARY_PROMPT", "TokenCounter", "approximate_tokens", "compact"]

Strategy = Literal["clear_tool_results", "window", "summarize"]
"""A way to make the history shorter."""

SUMMARY_PROMPT = (
    "You compact a conversation between a user and an AI assistant that uses tools. Write a "
    "concise summary of the conversation below (and of the summary so far, if given) that "
    "keeps what the assistant needs to go on: the user's goals and constraints, decisions "
    "made, facts and numbers learnt from tools, files and names mentioned, and what is left "
    "to do. Write only the summary."
)
"""The summary model's system prompt, by default."""

PLACEHOLDER = "[This tool result was cleared to save context.]"
"""What a cleared tool result says, by default."""

DEFAULT_FRACTION = 0.75
"""With no trigger set: compact above this fraction of ``context_window``."""

Positive = Annotated[int, Field(gt=0)]
Count = Annotated[int, Field(ge=0)]
Fraction = Annotated[float, Field(gt=0, le=1)]

_log = logging.getLogger("fncore")


class _Memo(TypedDict):
    """The last summary, remembered in the session's state (the reply's, without one)."""

    covered: int
    """How many leading messages of the history as received the summary stands for."""
    digest: str
    """Their fingerprint (`digest`), to know it is still the same history."""
    summary: str
    """The summary's text."""


_MEMOS: dict[str, StateKey[_Memo | None]] = {}


def _memo_key(name: str) -> StateKey[_Memo | None]:
    key = _MEMOS.get(name)
    if key is None:
        key = _MEMOS[name] = StateKey(f"fncore.compact.{name}.summary", default=lambda: None)
    return key


class _Compactor:
    """One configured `compact`: the trigger, the strategies and its middleware.

    It keeps no state of a run; its ``Tally`` only remembers token counts (of its counter).
    """

    __slots__ = (
        "clear",
        "keep",
        "keep_first",
        "keep_results",
        "max_messages",
        "max_tokens",
        "memo",
        "model",
        "name",
        "on_error",
        "prompt",
        "strategies",
        "tally",
    )

    def __init__(
        self,
        *,
        strategies: tuple[Strategy, ...],
        max_tokens: int | None,
        max_messages: int | None,
        keep: int,
        keep_first: bool,
        keep_results: int,
        placeholder: str,
        exclude: frozenset[str],
        model: Model | None,
        prompt: str,
        on_error: Literal["keep", "fail"],
        count: TokenCounter,
        name: str,
    ) -> None:
        self.strategies = strategies
        self.max_tokens = max_tokens
        self.max_messages = max_messages
        self.keep = keep
        self.keep_first = keep_first
        self.keep_results = keep_results
        self.clear = ClearToolResults(placeholder, exclude)
        self.model = model
        self.prompt = prompt
        self.on_error = on_error
        self.tally = Tally(count)
        self.name = name
        self.memo = _memo_key(name)

    def fits(self, messages: int, tokens: int) -> bool:
        """Whether a history of ``messages`` messages and ``tokens`` tokens is under the trigger."""
        if self.max_messages is not None and messages > self.max_messages:
            return False
        return self.max_tokens is None or tokens <= self.max_tokens

    def over(self, messages: tuple[Message, ...], fixed: int) -> bool:
        """Whether ``messages`` (with ``fixed`` tokens of prompt and tools) is over the trigger."""
        if self.max_messages is not None and len(messages) > self.max_messages:
            return True
        if self.max_tokens is None:
            return False
        return fixed + self.tally.history(messages) > self.max_tokens

    async def __call__(
        self,
        messages: tuple[Message, ...],
        instructions: str,
        tools: tuple[ToolSpec, ...],
        run: RunInfo,
    ) -> Outcome[tuple[Message, ...]]:
        """``messages`` compacted, or the same tuple if it is under the trigger."""
        fixed = 0
        if self.max_tokens is not None:
            fixed = self.tally.prompt(instructions) + self.tally.tools(tools)
        if not self.over(messages, fixed):
            return Success(messages)
        current = messages
        for strategy in self.strategies:
            if current is not messages and not self.over(current, fixed):
                break
            if strategy == "clear_tool_results":
                current = self.clear(current, self.keep_results)
            elif strategy == "window":
                current = self.window(current, fixed)
            else:
                summarized = await self.summarize(current, run)
                if type(summarized) is Failure:
                    return summarized
                current = summarized.unwrap()
        return Success(current)

    def window(self, messages: tuple[Message, ...], fixed: int) -> tuple[Message, ...]:
        """The sliding window: the head, a summary, and the recent groups that fit."""
        head = head_end(messages, self.keep_first)
        if is_summary_at(messages, head):
            head += 1
        # with a message count alone, no need to count tokens
        measure = None if self.max_tokens is None else self.tally.messages
        return window(messages, head, self.keep, measure, self.fits, fixed)

    async def summarize(
        self, messages: tuple[Message, ...], run: RunInfo
    ) -> Outcome[tuple[Message, ...]]:
        """The head, one summary of the older groups, and the ``keep`` recent groups."""
        head = head_end(messages, self.keep_first)
        marked = is_summary_at(messages, head)
        start = head + 1 if marked else head
        recent = last_groups(messages, start, self.keep)
        if len(recent) < self.keep or recent[0] == start:
            return Success(messages)
        covered = recent[0]  # the messages before the recent groups
        old = messages[start:covered]
        state = run.session_state
        memo = state.get(self.memo)
        previous = messages[head].text.removeprefix(SUMMARY_HEADER).strip() if marked else ""
        if marked:  # rewritten in this reply: the memo goes on if this summary is its own
            if memo is not None and memo["summary"] == previous:
                memo = _Memo(
                    covered=memo["covered"] + len(old),
                    digest=digest(memo["digest"], old),
                    summary="",
                )
            else:
                memo = None
        else:
            known = None if memo is None else self._recall(memo, messages, covered)
            if known is not None:
                previous, seen = known
                old = messages[seen:covered]
                memo = _Memo(
                    covered=covered,
                    digest=digest(memo["digest"], old),  # type: ignore[index]
                    summary="",
                )
            else:
                memo = _Memo(covered=covered, digest=digest("", messages[:covered]), summary="")
        if old:
            made = await self._summary(previous, old, run)
            if type(made) is Failure:
                return made if self.on_error == "fail" else Success(messages)
            text = made.unwrap()
        else:
            text = previous
        if memo is not None:
            memo["summary"] = text
            state.set(self.memo, memo)
        summary = (Message.user(f"{SUMMARY_HEADER}\n{text}"),)
        return Success(messages[:head] + summary + messages[covered:])

    async def compact_history(
        self, ctx: CompressContext, call_next: CompressNext
    ) -> Outcome[tuple[Message, ...]]:
        """At ``compress_context`` (``apply="history"``): the history, compacted."""
        compacted = await self(ctx.messages, ctx.instructions, ctx.tools, ctx.run)
        if type(compacted) is Failure:
            return compacted
        messages = compacted.unwrap()
        if messages is ctx.messages:
            return await call_next(ctx)
        return await call_next(replace(ctx, messages=messages))

    async def compact_request(
        self, ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        """At ``model_call`` (``apply="request"``): the request's messages, compacted."""
        if ctx.run.calling is not None:
            return await call_next(ctx)
        request = ctx.request
        compacted = await self(request.messages, request.instructions, request.tools, ctx.run)
        if type(compacted) is Failure:
            return compacted
        messages = compacted.unwrap()
        if messages is not request.messages:
            ctx = replace(ctx, request=replace(request, messages=messages))
        return await call_next(ctx)

    @staticmethod
    def _recall(memo: _Memo, messages: tuple[Message, ...], covered: int) -> tuple[str, int] | None:
        """The remembered summary and how many messages it covers, if it fits ``messages``."""
        seen = memo["covered"]
        if seen > covered or digest("", messages[:seen]) != memo["digest"]:
            return None
        return memo["summary"], seen

    async def _summary(self, previous: str, old: tuple[Message, ...], run: RunInfo) -> Outcome[str]:
        """Ask the model for the new summary: ``previous`` with ``old`` folded in."""
        body = f"The summary so far:\n{previous}\n\n" if previous else ""
        body += f"The conversation to summarise:\n{transcript(old)}"
        request = ModelRequest((Message.user(body),), instructions=self.prompt)
        outcome = await run.call_model(request, model=self.model, by="compact")
        if type(outcome) is Failure:
            if self.on_error == "keep":
                _log.warning(
                    "compact %r: the summary call failed (%s); the history stays as it was",
                    self.name,
                    outcome.failure(),
                )
            return outcome
        text = outcome.unwrap().text.strip()
        if text:
            return Success(text)
        error = AgentError(message="the summary model answered with no text", middleware=self.name)
        if self.on_error == "keep":
            _log.warning("compact %r: %s; the history stays as it was", self.name, error.message)
        return Failure(error)


@checked
def compact(
    *,
    strategies: Sequence[Strategy] = ("clear_tool_results", "window"),
    max_tokens: Positive | None = None,
    max_messages: Positive | None = None,
    max_fraction: Fraction | None = None,
    context_window: Positive = 128_000,
    keep: Positive = 10,
    keep_first: bool = True,
    keep_tool_results: Count = 3,
    placeholder: str = PLACEHOLDER,
    exclude_tools: Sequence[str] = (),
    model: Model | None = None,
    summary_prompt: str = SUMMARY_PROMPT,
    on_summary_error: Literal["keep", "fail"] = "keep",
    apply: Literal["history", "request"] = "history",
    count_tokens: TokenCounter | None = None,
    name: str = "compact",
) -> Registry:
    """Compact the history when it grows over a trigger, trying ``strategies`` in order.

    Args:
        strategies: What to try, in order, each only while the history is still over the
            trigger: ``"clear_tool_results"``, ``"window"``, ``"summarize"``.
        max_tokens: Compact above this many tokens (the system prompt's and the tool
            definitions' included).
        max_messages: Compact above this many messages.
        max_fraction: Compact above this fraction of ``context_window`` tokens. With none
            of the three set: `DEFAULT_FRACTION` (0.75). With several, the first reached.
        context_window: The model's context window in tokens, for ``max_fraction`` (models
            do not report it: set it for yours).
        keep: How many recent groups ``window`` keeps at most and ``summarize`` leaves out
            of the summary.
        keep_first: Keep the first user message (after leading system messages) always.
        keep_tool_results: How many recent tool results ``clear_tool_results`` leaves.
        placeholder: What a cleared tool result says.
        exclude_tools: Tools whose results are never cleared.
        model: The model that summarises: a model in code, a preset name
            (``[models.<name>]``) in configuration; ``None``: the agent's own.
        summary_prompt: The summary model's system prompt.
        on_summary_error: ``"keep"``: a failed summary call leaves the history as it was
            (logged on the ``fncore`` logger) and the next strategies still run;
            ``"fail"``: the run fails with the summary call's error.
        apply: ``"history"``: compact at ``compress_context``, so the rest of the reply
            works on the compacted history; ``"request"``: compact each model request at
            ``model_call`` and leave the history whole.
        count_tokens: Counts the tokens of some messages; `approximate_tokens` by default.
            It is given one message at a time (the system prompt and each tool definition
            as a system message); each count is remembered, and the counts are added.
        name: The middleware's name, to tell two instances apart.

    Raises:
        ValueError: with no strategies, or one listed twice.

    Example:
        >>> registry = Registry()
        >>> registry.include(compact(max_messages=40))
        >>> [m.name for m in registry.middleware]
        ['compact']
    """
    chosen = tuple(strategies)
    if not chosen or len(set(chosen)) != len(chosen):
        msg = (
            "compact: strategies must name each of clear_tool_results, window, summarize at "
            f"most once, and at least one; got {list(chosen)}"
        )
        raise ValueError(msg)
    compactor = _Compactor(
        strategies=chosen,
        max_tokens=_token_trigger(max_tokens, max_messages, max_fraction, context_window),
        max_messages=max_messages,
        keep=keep,
        keep_first=keep_first,
        keep_results=keep_tool_results,
        placeholder=placeholder,
        exclude=frozenset(exclude_tools),
        model=model,
        prompt=summary_prompt,
        on_error=on_summary_error,
        count=count_tokens or approximate_tokens,
        name=name,
    )
    registry = Registry()
    if apply == "history":
        registry.on(COMPRESS_CONTEXT, name=name, **place("compact"))(compactor.compact_history)
    else:
        registry.on(MODEL_CALL, name=name, **place("compact"))(compactor.compact_request)
    return registry


def _token_trigger(
    max_tokens: int | None,
    max_messages: int | None,
    max_fraction: float | None,
    context_window: int,
) -> int | None:
    """The most tokens a history may have: the lower of ``max_tokens`` and ``max_fraction``.

    With no trigger set at all, `DEFAULT_FRACTION` of ``context_window``; with only
    ``max_messages``, ``None`` (tokens are not counted).
    """
    if max_tokens is None and max_messages is None and max_fraction is None:
        max_fraction = DEFAULT_FRACTION
    limits = [t for t in (max_tokens,) if t is not None]
    if max_fraction is not None:
        limits.append(int(max_fraction * context_window))
    return min(limits) if limits else None

"""`cache_prompt`: ask the provider to cache the prompt's stable prefix.

Providers bill a cached prompt prefix at a fraction of the price and answer sooner. What
each needs differs:

- Anthropic caches only what the request marks: `cache_prompt` sets cache breakpoints on
  the system prompt (`ModelRequest.cache_instructions`), the tool definitions
  (`ModelRequest.cache_tools`) and the last ``messages`` messages (`Message.cache`), with
  the TTL ``ttl`` (`ModelRequest.cache_ttl`). The Anthropic adapter sends them as
  ``cache_control: {"type": "ephemeral", "ttl": ...}``.
- OpenAI caches long prefixes on its own, and routes requests that share a
  ``prompt_cache_key`` to the same cache: `cache_prompt` sends one through
  ``settings.extra`` (Chat Completions and Responses), by default derived from the agent's
  name and a hash of the instructions and the tools, so every run and every process of one
  agent with one prompt shares it, and a change of prompt or tools starts a new one.

Cache reads and writes show in `Usage` (``cache_read_tokens``, ``cache_write_tokens``) and
in `trace`'s spans (``gen_ai.usage.cache_read.input_tokens``,
``gen_ai.usage.cache_creation.input_tokens``).
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from typing import Annotated, Literal

from pydantic import Field

from fncore.core import (
    Message,
    ModelCallContext,
    ModelCallNext,
    ModelRequest,
    ModelResponse,
    Outcome,
    Registry,
)
from fncore.core._position_names import MODEL_CALL
from fncore.middleware._checked import checked
from fncore.middleware._genai import provider_of
from fncore.middleware._place import place

__all__ = ["cache_prompt"]

MAX_BREAKPOINTS = 4
"""The most cache breakpoints Anthropic accepts in one request."""


def cache_key(agent: str, request: ModelRequest) -> str:
    """A stable ``prompt_cache_key``: ``agent``, then a hash of the instructions and tools.

    Example:
        >>> key = cache_key("support", ModelRequest((), instructions="Be brief."))
        >>> key.startswith("support-"), len(key.split("-")[-1])
        (True, 16)
    """
    tools = [[t.name, t.description, t.parameters, t.strict] for t in request.tools]
    material = json.dumps([request.instructions, tools], sort_keys=True, default=str)
    digest = hashlib.sha256(material.encode()).hexdigest()[:16]
    return f"{agent}-{digest}"


def marked(messages: tuple[Message, ...], count: int) -> tuple[Message, ...]:
    """``messages`` with the last ``count`` of them (system messages aside) marked to cache.

    Example:
        >>> out = marked((Message.user("a"), Message.assistant("b"), Message.user("c")), 2)
        >>> [m.cache for m in out]
        [False, True, True]
    """
    if count == 0:
        return messages
    out = list(messages)
    left = count
    for index in range(len(out) - 1, -1, -1):
        message = out[index]
        if message.role == "system":
            continue
        if not message.cache:
            out[index] = replace(message, cache=True)
        left -= 1
        if left == 0:
            break
    return tuple(out)


@checked
def cache_prompt(
    *,
    instructions: bool = True,
    tools: bool = True,
    messages: Annotated[int, Field(ge=0, le=MAX_BREAKPOINTS)] = 1,
    ttl: Literal["5m", "1h"] = "5m",
    key: str | None = None,
    openai_key: bool = True,
    openai_retention: Literal["in_memory", "24h"] | None = None,
    name: str = "cache_prompt",
) -> Registry:
    """Mark the prompt's stable prefix for the provider's prompt cache, on every model call.

    Args:
        instructions: Put a breakpoint after the system prompt (Anthropic).
        tools: Put a breakpoint after the tool definitions (Anthropic).
        messages: How many of the latest messages get a breakpoint (Anthropic): ``1``
            caches the conversation up to the newest message, so the next round reads it.
        ttl: How long Anthropic keeps the entries: ``"5m"`` (its default, no ``ttl`` sent)
            or ``"1h"`` (dearer to write).
        key: The ``prompt_cache_key`` sent to OpenAI; ``None``: the agent's name and a hash
            of the instructions and tools (see `cache_key`).
        openai_key: Whether to send a ``prompt_cache_key`` to OpenAI models at all (turn it
            off for OpenAI-compatible servers that refuse it).
        openai_retention: OpenAI's ``prompt_cache_retention`` (``"in_memory"`` or
            ``"24h"``); ``None``: not sent, OpenAI's default.
        name: The middleware's name, to tell two instances apart.

    Raises:
        ValueError: when the breakpoints asked for exceed Anthropic's 4 per request, or
            when it would mark nothing (every breakpoint and ``openai_key`` off).

    Example:
        >>> registry = Registry()
        >>> registry.include(cache_prompt(ttl="1h"))
        >>> [(m.position, m.name) for m in registry.middleware]
        [('model_call', 'cache_prompt')]
    """
    if not (instructions or tools or messages or openai_key):
        msg = "cache_prompt would mark nothing: keep instructions, tools, messages or openai_key"
        raise ValueError(msg)
    breakpoints = int(instructions) + int(tools) + messages
    if breakpoints > MAX_BREAKPOINTS:
        msg = (
            f"cache_prompt asks for {breakpoints} cache breakpoints and Anthropic accepts "
            f"{MAX_BREAKPOINTS}: lower messages, or turn instructions or tools off"
        )
        raise ValueError(msg)
    cache_ttl: Literal["5m", "1h"] | None = None if ttl == "5m" else ttl
    registry = Registry()

    @registry.on(MODEL_CALL, name=name, **place("cache_prompt"))
    async def mark(ctx: ModelCallContext, call_next: ModelCallNext) -> Outcome[ModelResponse]:
        request = ctx.request
        changed = replace(
            request,
            messages=marked(request.messages, messages),
            cache_instructions=request.cache_instructions or instructions,
            cache_tools=request.cache_tools or tools,
            cache_ttl=request.cache_ttl or cache_ttl,
        )
        if openai_key and provider_of(ctx.model) == "openai":
            settings = changed.settings
            extra = dict(settings.extra)
            extra.setdefault("prompt_cache_key", key or cache_key(ctx.run.agent, request))
            if openai_retention is not None:
                extra.setdefault("prompt_cache_retention", openai_retention)
            changed = replace(changed, settings=replace(settings, extra=extra))
        return await call_next(replace(ctx, request=changed))

    return registry

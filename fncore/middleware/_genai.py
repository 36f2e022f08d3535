"""The OpenTelemetry GenAI semantic conventions, as the ``trace`` built-in records them.

Our own constants, on purpose: the semantic-conventions package marks its GenAI names
deprecated (the conventions moved to a repository of their own), so ``trace`` depends on
none of them. The names follow the GenAI conventions as of late 2026 (status: development).

Also here: what turns fncore's values into attribute values (usage, request settings,
messages as the conventions' JSON), each string held to a hard length cap.
"""

from __future__ import annotations

import base64
import dataclasses
import functools
import json
from collections.abc import Iterable
from typing import Any
from urllib.parse import urlsplit

from fncore.core import (
    DataPart,
    Message,
    Model,
    ModelRequest,
    ModelResponse,
    ReasoningPart,
    TextPart,
    ToolCallPart,
    ToolResultPart,
    ToolSpec,
    Usage,
)

# -- span names' first words and gen_ai.operation.name values ------------------------------
INVOKE_AGENT = "invoke_agent"
CHAT = "chat"
EXECUTE_TOOL = "execute_tool"

# -- attributes ---------------------------------------------------------------------------
OPERATION_NAME = "gen_ai.operation.name"
PROVIDER_NAME = "gen_ai.provider.name"
AGENT_NAME = "gen_ai.agent.name"
CONVERSATION_ID = "gen_ai.conversation.id"
REQUEST_MODEL = "gen_ai.request.model"
REQUEST_MAX_TOKENS = "gen_ai.request.max_tokens"
REQUEST_TEMPERATURE = "gen_ai.request.temperature"
REQUEST_TOP_P = "gen_ai.request.top_p"
REQUEST_TOP_K = "gen_ai.request.top_k"
REQUEST_STOP_SEQUENCES = "gen_ai.request.stop_sequences"
REQUEST_SEED = "gen_ai.request.seed"
REQUEST_FREQUENCY_PENALTY = "gen_ai.request.frequency_penalty"
REQUEST_PRESENCE_PENALTY = "gen_ai.request.presence_penalty"
REQUEST_STREAM = "gen_ai.request.stream"
RESPONSE_MODEL = "gen_ai.response.model"
RESPONSE_FINISH_REASONS = "gen_ai.response.finish_reasons"
RESPONSE_TIME_TO_FIRST_CHUNK = "gen_ai.response.time_to_first_chunk"
USAGE_INPUT_TOKENS = "gen_ai.usage.input_tokens"
USAGE_OUTPUT_TOKENS = "gen_ai.usage.output_tokens"
USAGE_CACHE_READ_INPUT_TOKENS = "gen_ai.usage.cache_read.input_tokens"
USAGE_CACHE_CREATION_INPUT_TOKENS = "gen_ai.usage.cache_creation.input_tokens"
USAGE_REASONING_OUTPUT_TOKENS = "gen_ai.usage.reasoning.output_tokens"
TOOL_NAME = "gen_ai.tool.name"
TOOL_CALL_ID = "gen_ai.tool.call.id"
TOOL_TYPE = "gen_ai.tool.type"
TOOL_DESCRIPTION = "gen_ai.tool.description"
TOKEN_TYPE = "gen_ai.token.type"
SERVER_ADDRESS = "server.address"
SERVER_PORT = "server.port"
ERROR_TYPE = "error.type"
# Opt-in content (``capture_content=True``), as JSON text.
INPUT_MESSAGES = "gen_ai.input.messages"
OUTPUT_MESSAGES = "gen_ai.output.messages"
SYSTEM_INSTRUCTIONS = "gen_ai.system_instructions"
TOOL_DEFINITIONS = "gen_ai.tool.definitions"
TOOL_CALL_ARGUMENTS = "gen_ai.tool.call.arguments"
TOOL_CALL_RESULT = "gen_ai.tool.call.result"
# fncore's own, where the conventions have no name.
RUN_ID = "fncore.run.id"
ATTEMPT = "fncore.attempt"
STOP_REASON = "fncore.stop_reason"
ROUNDS = "fncore.rounds"
TERMINATED = "fncore.terminated"
TERMINATE_OUTPUT = "fncore.terminate.output"
PAUSED = "fncore.paused"
CACHE_HIT = "fncore.cache.hit"
"""Set by the ``cache`` built-in on the current span (see the ``trace`` page)."""

TOOL_ERROR = "tool_error"
"""``error.type`` of a tool call whose result is an error (the tool raised or timed out)."""

# -- metrics ------------------------------------------------------------------------------
TOKEN_USAGE = "gen_ai.client.token.usage"
OPERATION_DURATION = "gen_ai.client.operation.duration"
TIME_TO_FIRST_CHUNK = "gen_ai.client.operation.time_to_first_chunk"
TOKEN_BUCKETS: tuple[int, ...] = (
    1, 4, 16, 64, 256, 1024, 4096, 16384, 65536, 262144, 1048576, 4194304, 16777216, 67108864,
)  # fmt: skip
"""The conventions' bucket boundaries for token counts (powers of 4)."""
SECONDS_BUCKETS: tuple[float, ...] = (
    0.01, 0.02, 0.04, 0.08, 0.16, 0.32, 0.64, 1.28, 2.56, 5.12, 10.24, 20.48, 40.96, 81.92,
)  # fmt: skip
"""The conventions' bucket boundaries for durations, in seconds (doubling from 10 ms)."""

_TRUNCATED = "…[truncated]"
MIN_ATTRIBUTE_LENGTH = 32
"""The smallest ``max_attribute_length`` allowed: room for the truncation mark and text."""

_SETTING_EXTRAS = {
    "top_k": REQUEST_TOP_K,
    "frequency_penalty": REQUEST_FREQUENCY_PENALTY,
    "presence_penalty": REQUEST_PRESENCE_PENALTY,
}
"""Provider-specific settings (``ModelSettings.extra``) that the conventions name."""


def clip(text: str, limit: int) -> str:
    """``text`` cut to at most ``limit`` characters, marked where it was cut.

    Example:
        >>> clip("x" * 40, 32)
        'xxxxxxxxxxxxxxxxxxxx…[truncated]'
        >>> clip("short", 32)
        'short'
    """
    if len(text) <= limit:
        return text
    return text[: limit - len(_TRUNCATED)] + _TRUNCATED


def provider_of(model: Model) -> str:
    """``gen_ai.provider.name`` for ``model``: its ``provider``, else its class's module.

    Adapters on `fncore.adapter.ProviderModel` name their provider (``openai``,
    ``anthropic``); an offline or custom model gives the module its class lives in
    (``fncore.testing`` for the offline models).

    Example:
        >>> from fncore.testing import TestModel
        >>> provider_of(TestModel())
        'fncore.testing'
    """
    named = getattr(model, "provider", None)
    if isinstance(named, str) and named:
        return named
    return type(model).__module__


def model_name(model: Model) -> str:
    """The model's name; never raises (a broken ``name`` gives the class's name)."""
    try:
        return str(model.name)
    except Exception:
        return type(model).__name__


@functools.lru_cache(maxsize=64)
def server_at(url: str) -> tuple[tuple[str, Any], ...]:
    """``server.address`` and ``server.port`` of an endpoint's URL (none if unclear)."""
    # Without the user info first: a redacted one ("[redacted]@") is no IPv6 host.
    scheme, _, rest = url.partition("://")
    netloc = rest.split("/", 1)[0].split("?", 1)[0].split("#", 1)[0]
    try:
        parts = urlsplit(f"{scheme}://{netloc.rpartition('@')[2]}")
        host, port = parts.hostname, parts.port
    except ValueError:
        return ()
    if not host:
        return ()
    if port is None:
        port = {"https": 443, "http": 80}.get(parts.scheme)
    if port is None:
        return ((SERVER_ADDRESS, host),)
    return ((SERVER_ADDRESS, host), (SERVER_PORT, port))


def server_of(model: Model) -> tuple[tuple[str, Any], ...]:
    """``server.address`` and ``server.port`` of a model with an endpoint (none otherwise).

    The URL is the endpoint's, credentials already redacted.
    """
    endpoint = getattr(model, "endpoint", None)
    url = getattr(endpoint, "url", None)
    return server_at(url) if isinstance(url, str) else ()


def request_attributes(request: ModelRequest, streaming: bool) -> dict[str, Any]:
    """The request's settings as ``gen_ai.request.*`` attributes (only those that are set)."""
    settings = request.settings
    out: dict[str, Any] = {}
    if settings.max_tokens is not None:
        out[REQUEST_MAX_TOKENS] = settings.max_tokens
    if settings.temperature is not None:
        out[REQUEST_TEMPERATURE] = settings.temperature
    if settings.top_p is not None:
        out[REQUEST_TOP_P] = settings.top_p
    if settings.stop:
        out[REQUEST_STOP_SEQUENCES] = tuple(settings.stop)
    if settings.seed is not None:
        out[REQUEST_SEED] = settings.seed
    if settings.extra:
        for key, name in _SETTING_EXTRAS.items():
            value = settings.extra.get(key)
            if isinstance(value, int | float) and not isinstance(value, bool):
                out[name] = value
    if streaming:
        out[REQUEST_STREAM] = True
    return out


def usage_known(usage: Usage) -> bool:
    """Whether ``usage`` says anything: a model that reports none leaves it all zero."""
    return bool(usage.requests or usage.input_tokens or usage.output_tokens)


def usage_since(total: Usage, before: Usage) -> Usage:
    """What ``total`` spent beyond ``before`` (each count, never below zero).

    Example:
        >>> spent = usage_since(Usage(10, 4, requests=3), Usage(6, 1, requests=1))
        >>> spent.input_tokens, spent.output_tokens, spent.requests
        (4, 3, 2)
    """
    return Usage(
        *(
            max(0, getattr(total, f.name) - getattr(before, f.name))
            for f in dataclasses.fields(Usage)
        )
    )


def add_usage(attributes: dict[str, Any], usage: Usage) -> None:
    """Add ``gen_ai.usage.*`` to ``attributes`` if ``usage`` says anything (`usage_known`).

    Input and output always, cache and reasoning when not zero.

    Example:
        >>> found = {}
        >>> add_usage(found, Usage(10, 4, reasoning_tokens=2))
        >>> found  # doctest: +NORMALIZE_WHITESPACE
        {'gen_ai.usage.input_tokens': 10, 'gen_ai.usage.output_tokens': 4,
         'gen_ai.usage.reasoning.output_tokens': 2}
    """
    if not (usage.requests or usage.input_tokens or usage.output_tokens):  # `usage_known`
        return
    attributes[USAGE_INPUT_TOKENS] = usage.input_tokens
    attributes[USAGE_OUTPUT_TOKENS] = usage.output_tokens
    if usage.cache_read_tokens:
        attributes[USAGE_CACHE_READ_INPUT_TOKENS] = usage.cache_read_tokens
    if usage.cache_write_tokens:
        attributes[USAGE_CACHE_CREATION_INPUT_TOKENS] = usage.cache_write_tokens
    if usage.reasoning_tokens:
        attributes[USAGE_REASONING_OUTPUT_TOKENS] = usage.reasoning_tokens


def response_attributes(response: ModelResponse) -> dict[str, Any]:
    """``gen_ai.response.*``: the model that answered and why it stopped.

    fncore's `ModelResponse` carries no response id, so ``gen_ai.response.id`` is not set.
    """
    out: dict[str, Any] = {RESPONSE_FINISH_REASONS: (response.finish_reason,)}
    if response.model_name:
        out[RESPONSE_MODEL] = response.model_name
    return out


# -- content, as the conventions' JSON ----------------------------------------------------


def _arguments(text: str, limit: int) -> object:
    """Tool-call arguments as an object when they are JSON (the conventions ask for one)."""
    if len(text) > limit:
        return clip(text, limit)
    try:
        return json.loads(text)
    except ValueError:
        return text


def _modality(media_type: str) -> str:
    kind = media_type.partition("/")[0]
    return kind if kind in ("image", "video", "audio") else "document"


def _part(part: object, limit: int) -> dict[str, Any]:
    if type(part) is TextPart:
        return {"type": "text", "content": clip(part.text, limit)}
    if type(part) is ToolCallPart:
        arguments = _arguments(part.arguments, limit)
        return {"type": "tool_call", "id": part.id, "name": part.name, "arguments": arguments}
    if type(part) is ToolResultPart:
        response = clip(part.content, limit)
        return {"type": "tool_call_response", "id": part.call_id, "response": response}
    if type(part) is ReasoningPart:
        return {"type": "reasoning", "content": clip(part.text, limit)}
    if type(part) is DataPart:
        # Never more than the cap is encoded: the attribute is cut there anyway.
        data = base64.b64encode(part.data[:limit]).decode("ascii")
        return {
            "type": "blob",
            "mime_type": part.media_type,
            "modality": _modality(part.media_type),
            "content": clip(data, limit),
        }
    return {"type": type(part).__name__}


def _dumps(value: object, limit: int) -> str:
    return clip(json.dumps(value, ensure_ascii=False, separators=(",", ":")), limit)


def messages_json(messages: Iterable[Message], limit: int) -> str:
    """Messages as the conventions' input-messages JSON, at most ``limit`` characters.

    Each text is cut to ``limit`` before the whole is encoded, so a long history costs no
    more than its messages' count times the cap.

    Example:
        >>> messages_json([Message.user("hi")], 100)
        '[{"role":"user","parts":[{"type":"text","content":"hi"}]}]'
    """
    return _dumps(
        [{"role": m.role, "parts": [_part(p, limit) for p in m.parts]} for m in messages],
        limit,
    )


def output_json(message: Message, finish_reason: str, limit: int) -> str:
    """One answer as the conventions' output-messages JSON, at most ``limit`` characters."""
    parts = [_part(p, limit) for p in message.parts]
    return _dumps([{"role": "assistant", "parts": parts, "finish_reason": finish_reason}], limit)


def instructions_json(instructions: str, limit: int) -> str:
    """The system prompt as the conventions' system-instructions JSON."""
    return _dumps([{"type": "text", "content": clip(instructions, limit)}], limit)


def tools_json(tools: Iterable[ToolSpec], limit: int) -> str:
    """The offered tools as the conventions' tool-definitions JSON."""
    return _dumps(
        [
            {
                "type": "function",
                "name": t.name,
                "description": clip(t.description, limit),
                "parameters": t.parameters,
            }
            for t in tools
        ],
        limit,
    )

"""Measure what the provider adapters add on top of the SDKs' own parsing.

For each provider (OpenAI Chat Completions, OpenAI Responses, Anthropic Messages) one
representative answer (text, two tool calls, usage) is timed two ways, in the same process
and in interleaved rounds:

* ``sdk``: what the SDK itself does with the bytes it receives: ``json.loads`` and its own
  model construction (``construct_type``, as its client does for every response and chunk);
* ``ours``: the adapter turning the SDK object into fncore's `ModelResponse` (whole answer),
  or into stream deltas (per chunk, with the final assembly spread over the chunks).

The interesting figure is the ratio: how much the mapping adds to what a user of the bare
SDK pays anyway. Nothing touches the network.

Usage::

    python bench/adapters.py            # the table
    python bench/adapters.py --json     # the table, then one JSON object as the last line
    python bench/adapters.py --quick    # a fast, rough smoke run
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Any

import anthropic._models as anthropic_models
import openai._models as openai_models
from anthropic.types import Message as AnthropicMessage
from anthropic.types import RawMessageStreamEvent
from fncore_anthropic._decode import decode_message
from fncore_anthropic._stream import StreamDecoder
from fncore_openai._chat_decode import ChatStreamDecoder, decode_completion
from fncore_openai._responses_decode import ResponsesStreamDecoder, decode_response
from openai.types.chat import ChatCompletion, ChatCompletionChunk
from openai.types.responses import Response, ResponseStreamEvent

from fncore.adapter import Endpoint

TEXT = "The sum is 5 and the product is 6; both tools agree with the arithmetic. " * 3
ARGS = ['{"a": 2, "b": 3}', '{"a": 2, "b": 3}']
PIECE = 6
"""Characters per streamed text or argument fragment."""


def _pieces(text: str) -> list[str]:
    return [text[i : i + PIECE] for i in range(0, len(text), PIECE)]


# -- OpenAI Chat Completions -------------------------------------------------------------


def chat_completion() -> dict[str, Any]:
    """A completion with text, two tool calls and usage."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1,
        "model": "gpt-4.1-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": TEXT,
                    "tool_calls": [
                        {
                            "id": f"call_{i}",
                            "type": "function",
                            "function": {"name": name, "arguments": ARGS[i]},
                        }
                        for i, name in enumerate(("add", "multiply"))
                    ],
                },
            }
        ],
        "usage": {
            "prompt_tokens": 120,
            "completion_tokens": 40,
            "total_tokens": 160,
            "prompt_tokens_details": {"cached_tokens": 64},
            "completion_tokens_details": {"reasoning_tokens": 0},
        },
    }


def chat_chunks() -> list[dict[str, Any]]:
    """The same answer as a stream of chunks."""

    def chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
        return {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": "gpt-4.1-mini",
            "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        }

    out = [chunk({"role": "assistant", "content": ""})]
    out += [chunk({"content": piece}) for piece in _pieces(TEXT)]
    for i, name in enumerate(("add", "multiply")):
        start = {"index": i, "id": f"call_{i}", "type": "function"}
        out.append(chunk({"tool_calls": [{**start, "function": {"name": name, "arguments": ""}}]}))
        out += [
            chunk({"tool_calls": [{"index": i, "function": {"arguments": piece}}]})
            for piece in _pieces(ARGS[i])
        ]
    out.append(chunk({}, "tool_calls"))
    usage = chat_completion()["usage"]
    out.append({**chunk({}), "choices": [], "usage": usage})
    return out


# -- OpenAI Responses ------------------------------------------------------------------


def responses_response() -> dict[str, Any]:
    """A Responses API answer with text, two function calls and usage."""
    return {
        "id": "resp_1",
        "object": "response",
        "created_at": 1,
        "model": "gpt-4.1-mini",
        "status": "completed",
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "output": [
            {
                "type": "message",
                "id": "msg_1",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": TEXT, "annotations": []}],
            },
            *[
                {
                    "type": "function_call",
                    "id": f"fc_{i}",
                    "call_id": f"call_{i}",
                    "name": name,
                    "arguments": ARGS[i],
                    "status": "completed",
                }
                for i, name in enumerate(("add", "multiply"))
            ],
        ],
        "usage": {
            "input_tokens": 120,
            "input_tokens_details": {"cached_tokens": 64},
            "output_tokens": 40,
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": 160,
        },
    }


def responses_events() -> list[dict[str, Any]]:
    """The same answer as stream events."""
    final = responses_response()
    out: list[dict[str, Any]] = [
        {"type": "response.created", "sequence_number": 0, "response": {**final, "output": []}}
    ]
    out += [
        {
            "type": "response.output_text.delta",
            "sequence_number": 0,
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": piece,
            "logprobs": [],
        }
        for piece in _pieces(TEXT)
    ]
    for i, name in enumerate(("add", "multiply")):
        item = {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": f"call_{i}",
            "name": name,
            "arguments": "",
            "status": "in_progress",
        }
        out.append(
            {
                "type": "response.output_item.added",
                "sequence_number": 0,
                "output_index": i + 1,
                "item": item,
            }
        )
        out += [
            {
                "type": "response.function_call_arguments.delta",
                "sequence_number": 0,
                "item_id": f"fc_{i}",
                "output_index": i + 1,
                "delta": piece,
            }
            for piece in _pieces(ARGS[i])
        ]
    out.append({"type": "response.completed", "sequence_number": 0, "response": final})
    return out


# -- Anthropic Messages ----------------------------------------------------------------


def anthropic_message() -> dict[str, Any]:
    """A Messages API answer with text, two tool_use blocks and usage."""
    return {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [
            {"type": "text", "text": TEXT},
            *[
                {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": json.loads(ARGS[i])}
                for i, name in enumerate(("add", "multiply"))
            ],
        ],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {
            "input_tokens": 56,
            "output_tokens": 40,
            "cache_read_input_tokens": 64,
            "cache_creation_input_tokens": 0,
        },
    }


def anthropic_events() -> list[dict[str, Any]]:
    """The same answer as stream events."""
    start = {**anthropic_message(), "content": [], "stop_reason": None}
    start["usage"] = {**start["usage"], "output_tokens": 1}
    out: list[dict[str, Any]] = [{"type": "message_start", "message": start}]
    out.append(
        {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}
    )
    out += [
        {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": p}}
        for p in _pieces(TEXT)
    ]
    out.append({"type": "content_block_stop", "index": 0})
    for i, name in enumerate(("add", "multiply")):
        block = {"type": "tool_use", "id": f"toolu_{i}", "name": name, "input": {}}
        out.append({"type": "content_block_start", "index": i + 1, "content_block": block})
        out += [
            {
                "type": "content_block_delta",
                "index": i + 1,
                "delta": {"type": "input_json_delta", "partial_json": p},
            }
            for p in _pieces(ARGS[i])
        ]
        out.append({"type": "content_block_stop", "index": i + 1})
    out.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": "tool_use", "stop_sequence": None},
            "usage": {"output_tokens": 40},
        }
    )
    out.append({"type": "message_stop"})
    return out


# -- measuring ---------------------------------------------------------------------------

ENDPOINT = Endpoint.create("bench", "http://127.0.0.1:9/v1", secrets=["sk-bench-0123"])
"""Where the decoders' errors would point; nothing is sent."""


@dataclass
class Case:
    """One provider's payloads and the two ways of handling them."""

    name: str
    response_bytes: bytes
    chunk_bytes: list[bytes]
    sdk_response: Callable[[bytes], Any]
    sdk_chunk: Callable[[bytes], Any]
    ours_response: Callable[[Any], Any]
    ours_stream: Callable[[list[Any]], Any]


def _openai_parse(kind: Any) -> Callable[[bytes], Any]:
    return lambda raw: openai_models.construct_type(type_=kind, value=json.loads(raw))


def _anthropic_parse(kind: Any) -> Callable[[bytes], Any]:
    return lambda raw: anthropic_models.construct_type(type_=kind, value=json.loads(raw))


def _chat_stream(chunks: list[Any]) -> Any:
    decoder = ChatStreamDecoder("gpt-4.1-mini", ENDPOINT)
    for chunk in chunks:
        decoder.feed(chunk)
    return decoder.finish()


def _responses_stream(chunks: list[Any]) -> Any:
    decoder = ResponsesStreamDecoder("gpt-4.1-mini", ENDPOINT)
    for event in chunks:
        decoder.feed(event)
    return decoder.finish()


def _anthropic_stream(chunks: list[Any]) -> Any:
    decoder = StreamDecoder(ENDPOINT)
    for event in chunks:
        decoder.feed(event)
    return decoder.finish()


def cases() -> list[Case]:
    """The three providers."""

    def encode(items: list[dict[str, Any]]) -> list[bytes]:
        return [json.dumps(x).encode() for x in items]

    return [
        Case(
            "openai chat",
            json.dumps(chat_completion()).encode(),
            encode(chat_chunks()),
            _openai_parse(ChatCompletion),
            _openai_parse(ChatCompletionChunk),
            lambda obj: decode_completion(obj, "gpt-4.1-mini"),
            _chat_stream,
        ),
        Case(
            "openai responses",
            json.dumps(responses_response()).encode(),
            encode(responses_events()),
            _openai_parse(Response),
            _openai_parse(ResponseStreamEvent),
            lambda obj: decode_response(obj, "gpt-4.1-mini", ENDPOINT),
            _responses_stream,
        ),
        Case(
            "anthropic",
            json.dumps(anthropic_message()).encode(),
            encode(anthropic_events()),
            _anthropic_parse(AnthropicMessage),
            _anthropic_parse(RawMessageStreamEvent),
            decode_message,
            _anthropic_stream,
        ),
    ]


def _parse_all(parse: Callable[[bytes], Any], chunks: list[bytes]) -> list[Any]:
    return [parse(raw) for raw in chunks]


def _per_call_us(fn: Callable[[], Any], seconds: float) -> float:
    n, elapsed = 0, 0.0
    start = time.perf_counter()
    while elapsed < seconds:
        for _ in range(50):
            fn()
        n += 50
        elapsed = time.perf_counter() - start
    return elapsed / n * 1e6


def measure(rounds: int, seconds: float) -> dict[str, dict[str, float]]:
    """Time every case; the minimum of per-round means, per figure."""
    figures: dict[str, dict[str, list[float]]] = {}
    for case in cases():
        obj = case.sdk_response(case.response_bytes)
        chunk_objs = [case.sdk_chunk(raw) for raw in case.chunk_bytes]
        case.ours_response(obj)  # fail early, outside the timing, if a decoder rejects it
        case.ours_stream(chunk_objs)
        count = len(case.chunk_bytes)
        work: dict[str, Callable[[], Any]] = {
            "sdk_response": partial(case.sdk_response, case.response_bytes),
            "ours_response": partial(case.ours_response, obj),
            "sdk_stream": partial(_parse_all, case.sdk_chunk, case.chunk_bytes),
            "ours_stream": partial(case.ours_stream, chunk_objs),
        }
        figures[case.name] = {name: [] for name in work}
        figures[case.name]["chunks"] = [float(count)]
        for fn in work.values():
            _per_call_us(fn, seconds / 4)  # warm up
        for _ in range(rounds):
            for name, fn in work.items():
                figures[case.name][name].append(_per_call_us(fn, seconds))
    out: dict[str, dict[str, float]] = {}
    for name, samples in figures.items():
        chunks = samples.pop("chunks")[0]
        best = {k: min(v) for k, v in samples.items()}
        med = {k: statistics.median(v) for k, v in samples.items()}
        out[name] = {
            "chunks": chunks,
            "sdk_response_us": best["sdk_response"],
            "ours_response_us": best["ours_response"],
            "response_ratio": best["ours_response"] / best["sdk_response"],
            "sdk_chunk_us": best["sdk_stream"] / chunks,
            "ours_chunk_us": best["ours_stream"] / chunks,
            "chunk_ratio": best["ours_stream"] / best["sdk_stream"],
            "response_ratio_median": med["ours_response"] / med["sdk_response"],
            "chunk_ratio_median": med["ours_stream"] / med["sdk_stream"],
        }
    return out


def report(figures: dict[str, dict[str, float]]) -> str:
    """The figures as a table."""
    lines = [
        "adapter mapping cost beside the SDK's own parsing (min of round means)",
        "",
        f"  {'provider':<18}{'SDK parse':>12}{'our mapping':>13}{'ratio':>8}"
        f"{'SDK / chunk':>14}{'ours / chunk':>14}{'ratio':>8}",
    ]
    for name, f in figures.items():
        lines.append(
            f"  {name:<18}{f['sdk_response_us']:>9.1f} us{f['ours_response_us']:>10.1f} us"
            f"{f['response_ratio']:>8.2f}{f['sdk_chunk_us']:>11.2f} us"
            f"{f['ours_chunk_us']:>11.2f} us{f['chunk_ratio']:>8.2f}"
        )
    lines.append("")
    lines.append(
        "  per response: json.loads + the SDK's construct_type vs the adapter's decode of that"
    )
    lines.append(
        "  object; per chunk: the same for each streamed chunk (final assembly spread over them)"
    )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Parse options, measure, print."""
    parser = argparse.ArgumentParser(description="Adapter mapping cost vs SDK parse cost.")
    parser.add_argument("--json", action="store_true", help="end with one JSON line")
    parser.add_argument("--quick", action="store_true", help="a fast, rough smoke run")
    parser.add_argument("--rounds", type=int, default=None, help="interleaved rounds (7)")
    args = parser.parse_args(argv)
    rounds = args.rounds or (1 if args.quick else 7)
    seconds = 0.01 if args.quick else 0.15
    figures = measure(rounds, seconds)
    print(report(figures))
    if args.json:
        print(json.dumps(figures, sort_keys=True))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

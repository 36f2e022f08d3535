"""The GenAI conventions as `trace` writes them: names, values, content JSON, the cap."""

from __future__ import annotations

import base64
import json
from typing import Any

import pytest

from fncore import DataPart, Message, ModelRequest, ModelSettings, ReasoningPart, ToolSpec
from fncore.middleware import _genai as g
from fncore.testing import TestModel


class NamedModel:
    """A model-like object with a given ``provider``, ``name`` and ``endpoint``."""

    def __init__(self, provider: object = None, url: object = None, broken: bool = False):
        self.provider = provider
        self.endpoint = type("Endpoint", (), {"url": url})()
        self.broken = broken

    @property
    def name(self) -> str:
        if self.broken:
            raise RuntimeError("no name")
        return "named"


def test_the_conventions_names() -> None:
    """Our own constants hold the conventions' names (the semconv package's are deprecated)."""
    assert (g.INVOKE_AGENT, g.CHAT, g.EXECUTE_TOOL) == ("invoke_agent", "chat", "execute_tool")
    assert g.USAGE_CACHE_READ_INPUT_TOKENS == "gen_ai.usage.cache_read.input_tokens"
    assert g.USAGE_CACHE_CREATION_INPUT_TOKENS == "gen_ai.usage.cache_creation.input_tokens"
    assert g.USAGE_REASONING_OUTPUT_TOKENS == "gen_ai.usage.reasoning.output_tokens"
    assert g.RESPONSE_TIME_TO_FIRST_CHUNK == "gen_ai.response.time_to_first_chunk"
    assert (g.OPERATION_DURATION, g.TOKEN_USAGE) == (
        "gen_ai.client.operation.duration",
        "gen_ai.client.token.usage",
    )
    assert tuple(4**i for i in range(14)) == g.TOKEN_BUCKETS
    assert tuple(round(0.01 * 2**i, 2) for i in range(14)) == g.SECONDS_BUCKETS


def test_provider_is_the_models_own_or_its_module() -> None:
    """A non-empty string ``provider`` wins; anything else falls back to the class's module."""
    assert g.provider_of(NamedModel("acme")) == "acme"  # type: ignore[arg-type]
    assert g.provider_of(NamedModel("")) == __name__  # type: ignore[arg-type]
    assert g.provider_of(NamedModel(3)) == __name__  # type: ignore[arg-type]
    assert g.provider_of(TestModel()) == "fncore.testing"


def test_a_name_that_raises_gives_the_class_name() -> None:
    """model_name never raises."""
    assert g.model_name(NamedModel()) == "named"  # type: ignore[arg-type]
    assert g.model_name(NamedModel(broken=True)) == "NamedModel"  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("url", "found"),
    [
        ("https://api.acme.test/v1", {"server.address": "api.acme.test", "server.port": 443}),
        ("http://127.0.0.1:8080/v1", {"server.address": "127.0.0.1", "server.port": 8080}),
        ("http://[::1]:9000", {"server.address": "::1", "server.port": 9000}),
        (
            "https://[redacted]@api.acme.test/v1?k=1",
            {"server.address": "api.acme.test", "server.port": 443},
        ),
        ("ws://host.test/x", {"server.address": "host.test"}),
        ("http://host.test:99999", {}),
        ("not a url", {}),
        (None, {}),
    ],
)
def test_server_address_and_port_from_the_endpoint(url: Any, found: dict[str, Any]) -> None:
    """From the endpoint's (redacted) URL, default ports filled in; nothing when unclear."""
    assert dict(g.server_of(NamedModel(url=url))) == found  # type: ignore[arg-type]
    assert g.server_of(TestModel()) == ()


def test_clip_keeps_the_cap() -> None:
    """Text longer than the cap is cut to exactly the cap, marked."""
    assert len(g.clip("y" * 1000, 40)) == 40
    assert g.clip("y" * 40, 40) == "y" * 40


def test_every_part_has_its_conventions_form() -> None:
    """Reasoning, blobs (base64, never more than the cap) and unknown parts."""
    image = DataPart(b"\x89PNG" * 100, "image/png")
    pdf = DataPart(b"%PDF", "application/pdf")
    message = Message("user", (ReasoningPart("thinking"), image, pdf))
    (found,) = json.loads(g.messages_json([message], 10_000))
    assert found["parts"][0] == {"type": "reasoning", "content": "thinking"}
    blob = found["parts"][1]
    assert (blob["type"], blob["mime_type"], blob["modality"]) == ("blob", "image/png", "image")
    assert base64.b64decode(blob["content"]) == image.data
    assert found["parts"][2]["modality"] == "document"
    assert g._part(object(), 100) == {"type": "object"}
    assert len(g.messages_json([Message("user", (image,))], 64)) == 64


def test_tool_arguments_that_are_not_json_or_too_long_stay_text() -> None:
    """Arguments become an object when they parse; otherwise, or past the cap, text."""
    assert g._arguments('{"a": 1}', 100) == {"a": 1}
    assert g._arguments("{oops", 100) == "{oops"
    assert g._arguments('{"a": "' + "z" * 200 + '"}', 50) == g.clip('{"a": "' + "z" * 200, 50)


def test_instructions_and_tools_json() -> None:
    """System instructions and tool definitions as the conventions' arrays."""
    assert json.loads(g.instructions_json("Be brief.", 100)) == [
        {"type": "text", "content": "Be brief."}
    ]
    spec = ToolSpec("add", "Add.", {"type": "object"})
    assert json.loads(g.tools_json([spec], 1000)) == [
        {"type": "function", "name": "add", "description": "Add.", "parameters": {"type": "object"}}
    ]


def test_request_attributes_leave_out_what_is_not_set() -> None:
    """Default settings give no request attribute; a bool extra is not a number here."""
    assert g.request_attributes(ModelRequest(()), streaming=False) == {}
    flagged = ModelRequest((), settings=ModelSettings(extra={"top_k": True}))
    assert g.request_attributes(flagged, streaming=False) == {}
    assert g.request_attributes(ModelRequest(()), streaming=True) == {"gen_ai.request.stream": True}

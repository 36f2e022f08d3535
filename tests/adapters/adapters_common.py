"""The three APIs side by side, for tests that hold every adapter to the same behaviour.

Each `Api` builds its model on the fake server (no SDK retries) and knows what a good
answer, and a good stream, looks like on its wire.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any

import pytest
from anthropic_wire import body as anthropic_body
from anthropic_wire import events as anthropic_events
from anthropic_wire import text
from fake_provider import FakeProvider, Reply, sse
from fncore_anthropic import AnthropicModel, from_config
from fncore_openai import (
    OpenAIChatModel,
    OpenAIResponsesModel,
    chat_model_from_config,
    responses_model_from_config,
)
from openai_wire import chat_stream, chunk, completed, completion, event, message_item, response
from returns.result import Failure

from fncore.adapter import Message, ModelError, ModelRequest, ProviderModel

KEY = "sk-shared-SECRET-0123456789"
"""The API key of every model built here; no error, repr or str may show it."""

REQUEST = ModelRequest((Message.user("hi"),))

TEXT = "Hello there, friend"
"""The answer every good reply carries."""

PIECES = [TEXT[i : i + 3] for i in range(0, len(TEXT), 3)]
"""``TEXT`` as streamed, three characters a delta."""


def _responses_delta(piece: str) -> tuple[str, dict[str, Any]]:
    return event(
        "response.output_text.delta",
        item_id="msg_1",
        output_index=0,
        content_index=0,
        delta=piece,
        logprobs=[],
    )


@dataclass(frozen=True)
class Api:
    """One API: how to build its model, and a good answer in both forms."""

    name: str
    provider: str
    build: Callable[..., ProviderModel[Any, Any]]
    from_config: Callable[[dict[str, Any]], Any]
    """The factory the container calls with the ``model`` section."""
    answer: Callable[[], Reply]
    """A whole answer of ``TEXT``."""
    stream: Callable[[], Reply]
    """The same answer streamed: ``PIECES`` one event each, with the API's other events."""
    suffix: str
    """What the SDK's base URL needs after the server's root (``/v1`` for openai)."""

    def model(self, url: str, **options: Any) -> ProviderModel[Any, Any]:
        """The model on ``url`` (the server root, maybe with a query), without SDK retries."""
        options.setdefault("timeout", 5.0)
        options.setdefault("api_key", KEY)
        root, mark, query = url.partition("?")
        base_url = root + self.suffix + mark + query
        return self.build("m", base_url=base_url, max_retries=0, **options)


APIS = [
    Api(
        "chat",
        "openai",
        OpenAIChatModel,
        chat_model_from_config,
        lambda: completion(TEXT),
        lambda: chat_stream(*(chunk({"content": piece}) for piece in PIECES)),
        "/v1",
    ),
    Api(
        "responses",
        "openai",
        OpenAIResponsesModel,
        responses_model_from_config,
        lambda: response(message_item(TEXT)),
        lambda: sse(*map(_responses_delta, PIECES), completed(message_item(TEXT))),
        "/v1",
    ),
    Api(
        "anthropic",
        "anthropic",
        AnthropicModel,
        from_config,
        lambda: Reply(body=anthropic_body(text(TEXT))),
        lambda: sse(*anthropic_events(text(TEXT), chunk=3)),
        "",
    ),
]
API_PARAMS = [pytest.param(api, id=api.name) for api in APIS]


@pytest.fixture(name="models")
async def models_fixture() -> AsyncIterator[list[ProviderModel[Any, Any]]]:
    """Models a test builds (append them); their clients are closed afterwards."""
    made: list[ProviderModel[Any, Any]] = []
    yield made
    for model in made:
        await model.aclose()


def on(
    api: Api, fake: FakeProvider | str, made: list[ProviderModel[Any, Any]], **options: Any
) -> ProviderModel[Any, Any]:
    """``api``'s model on the fake server (or a server root URL), closed after the test."""
    model = api.model(fake if isinstance(fake, str) else fake.url, **options)
    made.append(model)
    return model


def clean(error: object, provider: str) -> ModelError:
    """``error`` after checking it is a one-line ModelError of ``provider`` without the key."""
    assert isinstance(error, ModelError), error
    assert error.provider == provider
    assert "\n" not in error.message
    for shown in (error.message, str(error), repr(error)):
        assert KEY not in shown
    return error


async def failure(model: ProviderModel[Any, Any], streamed: bool) -> ModelError:
    """The error of one request, or of one stream (its last item, after deltas only)."""
    if streamed:
        *deltas, last = [item async for item in model.stream(REQUEST)]
        assert not any(isinstance(d, ModelError) for d in deltas), deltas
        assert isinstance(last, ModelError), last
        return last
    result = await model.request(REQUEST)
    assert isinstance(result, Failure), result
    error: ModelError = result.failure()
    return error

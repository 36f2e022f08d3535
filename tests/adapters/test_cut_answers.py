"""An answer cut off mid-way is StreamInterrupted, streamed or not, for every adapter.

The fake server announces a whole body (``content-length``) or opens an event stream, then
closes the connection part-way. That server was reached and had started to answer: the
error says the answer was cut off and to retry, not that the server could not be reached.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from adapters_common import (  # noqa: F401
    API_PARAMS,
    REQUEST,
    TEXT,
    Api,
    clean,
    failure,
    models_fixture,
    on,
)
from fake_provider import FakeProvider, free_port

from fncore.adapter import (
    ConnectionFailed,
    ModelError,
    ModelResponse,
    ProviderModel,
    StreamInterrupted,
    TextDelta,
)


def interrupted(error: object, provider: str) -> StreamInterrupted:
    """``error`` after checking it is a clean, retryable StreamInterrupted about a cut."""
    checked = clean(error, provider)
    assert isinstance(checked, StreamInterrupted), checked
    assert checked.retryable
    assert "cut off" in checked.message
    assert "could not reach" not in checked.message
    assert "base_url" not in checked.message
    return checked


@pytest.mark.parametrize("cut", [0, 1, 40], ids=["no-byte", "one-byte", "mid-body"])
@pytest.mark.parametrize("api", API_PARAMS)
async def test_a_body_cut_off_is_interrupted(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api, cut: int
) -> None:
    """A non-streamed body that stops before its announced length is StreamInterrupted."""
    fake_provider.reply(replace(api.answer(), cut_after=cut))
    error = interrupted(await failure(on(api, fake_provider, models), False), api.provider)
    assert "closed mid-answer" in error.message
    assert "RemoteProtocolError" in error.message


@pytest.mark.parametrize("cut", [0, 4], ids=["before-any-event", "mid-stream"])
@pytest.mark.parametrize("api", API_PARAMS)
async def test_a_stream_cut_off_is_interrupted(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api, cut: int
) -> None:
    """A stream that loses its connection yields what came, then StreamInterrupted last."""
    whole = api.stream()
    fake_provider.reply(replace(whole, cut_after=cut))
    items = [item async for item in on(api, fake_provider, models).stream(REQUEST)]
    *deltas, last = items
    assert not any(isinstance(d, ModelResponse | ModelError) for d in deltas), items
    interrupted(last, api.provider)
    received = "".join(d.text for d in deltas if isinstance(d, TextDelta))
    assert TEXT.startswith(received)
    assert bool(received) == bool(cut)


@pytest.mark.parametrize("api", API_PARAMS)
async def test_the_same_answer_whole_is_a_response(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api
) -> None:
    """Uncut, the answers the tests above cut decode, streamed and not."""
    fake_provider.reply(api.answer(), api.stream())
    model = on(api, fake_provider, models)
    assert (await model.request(REQUEST)).unwrap().text == TEXT
    items = [item async for item in model.stream(REQUEST)]
    assert isinstance(items[-1], ModelResponse), items[-1]


@pytest.mark.parametrize("streamed", [False, True], ids=["request", "stream"])
@pytest.mark.parametrize("api", API_PARAMS)
async def test_nothing_listening_is_still_connection_failed(
    models: list[ProviderModel[Any, Any]], api: Api, streamed: bool
) -> None:
    """A server never reached stays ConnectionFailed, naming where it was looked for."""
    model = on(api, f"http://127.0.0.1:{free_port()}", models)
    failed = clean(await failure(model, streamed), api.provider)
    assert isinstance(failed, ConnectionFailed)
    assert "could not reach" in failed.message
    assert "model.base_url" in failed.message

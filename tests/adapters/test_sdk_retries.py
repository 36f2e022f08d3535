"""`ProviderModel.without_sdk_retries`: the same model, one request per call, same connections.

The fake server counts the requests the real SDK sends. Its 503 answers carry
``retry-after-ms: 1``, which the SDKs honour, so their own retries take a millisecond.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapters_common import API_PARAMS, KEY, REQUEST, TEXT, Api
from fake_provider import FakeProvider, Reply
from returns.result import Failure, Success

from fncore.adapter import ModelError, ProviderModel, ProviderUnavailable

UNAVAILABLE = Reply(503, {"error": {"message": "busy"}}, headers={"retry-after-ms": "1"})


def retrying(api: Api, fake: FakeProvider, retries: int = 2) -> ProviderModel[Any, Any]:
    """``api``'s model on the fake server with the SDK's own retries on."""
    return api.build(
        "m", base_url=fake.url + api.suffix, api_key=KEY, timeout=5.0, max_retries=retries
    )


@pytest.mark.parametrize("api", API_PARAMS)
async def test_the_sdk_retries_by_itself_and_the_copy_does_not(
    api: Api, fake_provider: FakeProvider
) -> None:
    """The SDK sends three requests for one call; the copy without retries sends one."""
    model = retrying(api, fake_provider)
    try:
        fake_provider.reply(UNAVAILABLE, UNAVAILABLE, api.answer())
        assert (await model.request(REQUEST)).unwrap().text == TEXT
        assert len(fake_provider.requests) == 3

        quiet = model.without_sdk_retries()
        fake_provider.requests.clear()
        fake_provider.reply(UNAVAILABLE, api.answer())
        outcome = await quiet.request(REQUEST)
        assert isinstance(outcome, Failure)
        assert isinstance(outcome.failure(), ProviderUnavailable)
        assert len(fake_provider.requests) == 1
        assert (await quiet.request(REQUEST)).unwrap().text == TEXT  # the answer left queued

        fake_provider.requests.clear()
        fake_provider.reply(UNAVAILABLE, api.answer())
        assert isinstance(await model.request(REQUEST), Success)  # the original still retries
        assert len(fake_provider.requests) == 2
    finally:
        await model.aclose()


@pytest.mark.parametrize("api", API_PARAMS)
async def test_the_copy_streams_with_one_request(api: Api, fake_provider: FakeProvider) -> None:
    """A stream through the copy is one request too: a 503 ends it with the error."""
    model = retrying(api, fake_provider)
    try:
        fake_provider.reply(UNAVAILABLE, api.stream())
        items = [item async for item in model.without_sdk_retries().stream(REQUEST)]
        assert len(items) == 1
        assert isinstance(items[0], ProviderUnavailable)
        assert len(fake_provider.requests) == 1
    finally:
        await model.aclose()


@pytest.mark.parametrize("api", API_PARAMS)
async def test_the_copy_is_made_once_and_shares_the_connections(
    api: Api, fake_provider: FakeProvider
) -> None:
    """One copy per model; closing it closes nothing, closing the model closes both."""
    model = retrying(api, fake_provider)
    quiet = model.without_sdk_retries()
    assert model.without_sdk_retries() is quiet
    assert quiet.without_sdk_retries() is quiet
    assert (quiet.name, quiet.endpoint, type(quiet)) == (model.name, model.endpoint, type(model))
    await quiet.aclose()
    fake_provider.reply(api.answer())
    assert (await model.request(REQUEST)).unwrap().text == TEXT
    await model.aclose()
    outcome = await quiet.request(REQUEST)
    assert isinstance(outcome, Failure)
    assert isinstance(outcome.failure(), ModelError)
    assert len(fake_provider.requests) == 1  # the closed pool sent nothing


@pytest.mark.parametrize("api", API_PARAMS)
async def test_a_model_without_sdk_retries_is_its_own_copy(
    api: Api, fake_provider: FakeProvider
) -> None:
    """With max_retries=0 already there is nothing to turn off: the model itself."""
    model = retrying(api, fake_provider, retries=0)
    try:
        assert model.without_sdk_retries() is model
    finally:
        await model.aclose()

"""Each adapter names its provider (for traces)."""

from __future__ import annotations

from typing import Any

import pytest
from adapters_common import API_PARAMS, Api, models_fixture, on  # noqa: F401
from fake_provider import FakeProvider

from fncore.adapter import ProviderModel


@pytest.mark.parametrize("api", API_PARAMS)
async def test_provider_is_the_endpoints(
    fake_provider: FakeProvider, models: list[ProviderModel[Any, Any]], api: Api
) -> None:
    """ProviderModel.provider is the endpoint's provider: openai or anthropic."""
    model = on(api, fake_provider, models)
    assert model.provider == api.provider == model.endpoint.provider

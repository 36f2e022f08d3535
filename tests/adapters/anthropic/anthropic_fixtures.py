"""Pytest fixtures of the Anthropic adapter tests; test modules import them.

They live here rather than in a ``conftest.py``: a second top-level ``conftest`` module
breaks the doctest collection of ``tests/conftest.py`` (both are named ``conftest``).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from typing import Any

import pytest
from anthropic_wire import KEY, MODEL, MakeModel
from fake_provider import FakeProvider
from fncore_anthropic import AnthropicModel


@pytest.fixture(scope="module", name="shared_server")
def shared_server_fixture() -> Iterator[FakeProvider]:
    """One fake server per module: stopping one takes 0.5 s (its poll interval)."""
    with FakeProvider() as server:
        yield server


@pytest.fixture(name="fake_provider")
def fake_provider_fixture(shared_server: FakeProvider) -> Iterator[FakeProvider]:
    """The module's fake server with no queued replies and no recorded requests."""
    shared_server.replies.clear()
    shared_server.requests.clear()
    yield shared_server
    shared_server.replies.clear()


@pytest.fixture(name="make_model")
async def make_model_fixture(fake_provider: FakeProvider) -> AsyncIterator[MakeModel]:
    """A factory of models with no transport retries; their HTTP clients close at teardown."""
    made: list[AnthropicModel] = []

    def build(url: str | None = None, **options: Any) -> AnthropicModel:
        options.setdefault("timeout", 5.0)
        options.setdefault("max_retries", 0)
        m = AnthropicModel(MODEL, api_key=KEY, base_url=url or fake_provider.url, **options)
        made.append(m)
        return m

    yield build
    for m in made:
        await m.aclose()

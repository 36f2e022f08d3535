"""Shared test configuration."""

from collections.abc import Iterator

import pytest
from fake_provider import FakeProvider

# Checked by mypy in CI (tests/typing/check_expected_errors.py), not run by pytest:
# expected_errors.py registers wrongly typed middleware on purpose.
collect_ignore = ["typing"]


@pytest.fixture
def fake_provider() -> Iterator[FakeProvider]:
    """A scripted provider server on 127.0.0.1, stopped after the test."""
    with FakeProvider() as server:
        yield server

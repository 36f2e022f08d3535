"""Fixtures: Debian's chromium (once per module), and the console on a real uvicorn."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from flows import browser as launch
from flows import console_app
from playwright.sync_api import Browser, Page
from serve.served import running


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless chromium per test module.

    Playwright's sync API keeps an event loop marked running while it is open: it must
    close before other modules' async tests run, so it is never session-wide.
    """
    with launch() as launched:
        yield launched


@pytest.fixture
def root() -> Iterator[str]:
    """The console's app on a free port: its root URL, ending in ``/``."""
    with running(console_app()) as base:
        yield base.removesuffix("v1")


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    """A fresh page in a context of its own (its own sessionStorage)."""
    context = browser.new_context(viewport={"width": 1200, "height": 800})
    try:
        yield context.new_page()
    finally:
        context.close()

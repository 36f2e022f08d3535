"""The console's page flows, shared by the browser tests and ``scripts/screenshots.py``.

Each flow drives the page as a person would and waits (with Playwright's auto-waiting
``expect``) until the view shows what it should; the tests assert on top of them, and the
screenshot script photographs the page after each.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator

import httpx2
from opentelemetry.sdk.trace import TracerProvider
from playwright.sync_api import Browser, Page, expect, sync_playwright
from starlette.applications import Starlette

from fncore import Agent, Registry
from fncore.middleware import limit_calls, retry, trace
from fncore.serve import RunsLog, create_app
from fncore.testing import TestModel

CHROMIUM = "/usr/bin/chromium"
"""Debian's chromium: Playwright cannot download its own browsers here."""

FLAGS = ["--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage"]

TIMEOUT_MS = 30_000
"""How long an expectation waits for the page: generous, for a busy machine."""

expect.set_options(timeout=TIMEOUT_MS)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def word_count(text: str) -> int:
    """Count the words in a text."""
    return len(text.split())


def console_app() -> Starlette:
    """An agent with two tools and a small stack, traced to a provider of its own."""
    provider = TracerProvider()
    registry = Registry()
    registry.include(trace(tracer_provider=provider))
    registry.include(retry())
    registry.include(limit_calls(model_calls_per_reply=10))
    agent = Agent(TestModel(), registry=registry, tools=[add, word_count])
    return create_app(agent, runs=RunsLog(tracer_provider=provider))


@contextlib.contextmanager
def browser() -> Iterator[Browser]:
    """Debian's chromium, headless, driven by Playwright."""
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=FLAGS)
        try:
            yield launched
        finally:
            launched.close()


def open_console(page: Page, root: str) -> None:
    """Load the console and wait until its tabs are there."""
    page.goto(root)
    expect(page.locator("body[data-ready=true]")).to_be_attached()


def show(page: Page, tab: str) -> None:
    """Select the tab called ``tab``."""
    page.get_by_role("tab", name=tab).click()
    expect(page.get_by_role("tab", name=tab)).to_have_attribute("aria-selected", "true")


def show_stack(page: Page) -> None:
    """The Stack view, its onions drawn."""
    show(page, "Stack")
    expect(page.locator(".onion").first).to_be_visible()


def show_tools(page: Page) -> None:
    """The Tools view, each tool's card drawn."""
    show(page, "Tools")
    expect(page.locator("article.tool").first).to_be_visible()


def chat(root: str, text: str, *, session: str | None = None) -> None:
    """Make a run through ``POST /v1/chat/completions``, as any OpenAI client would."""
    headers = {"fncore-session": session} if session else {}
    body = {"model": "fncore", "messages": [{"role": "user", "content": text}]}
    httpx2.post(f"{root}v1/chat/completions", json=body, headers=headers).raise_for_status()


def show_run(page: Page, index: int = 0) -> None:
    """The Runs view, then the waterfall of the ``index``-th newest run."""
    show(page, "Runs")
    rows = page.locator("tr[data-run]")
    expect(rows.nth(index)).to_be_visible()
    rows.nth(index).get_by_role("button").click()
    expect(page.locator(".waterfall .span").first).to_be_visible()


def show_chat(page: Page) -> None:
    """The Chat view, its message box ready."""
    show(page, "Chat")
    expect(page.get_by_label("Message")).to_be_editable()


def say(page: Page, text: str) -> None:
    """Send ``text`` from the Chat view's message box (the answer then streams in)."""
    page.get_by_label("Message").fill(text)
    page.get_by_role("button", name="Send").click()


def answered(page: Page) -> None:
    """Wait until the Chat view's run has ended with an answer."""
    expect(page.locator("#view-chat .chat-status")).to_have_text("Done.")


def chat_in_console(page: Page, text: str) -> None:
    """The Chat view: ``text`` sent, its tool calls and answer shown."""
    show_chat(page)
    say(page, text)
    answered(page)

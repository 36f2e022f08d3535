"""The console's page flows, shared by the browser tests and ``scripts/screenshots.py``.

Each flow drives the page as a person would and waits (with Playwright's auto-waiting
``expect``) until the view shows what it should; the tests assert on top of them, and the
screenshot script photographs the page after each.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence
from typing import Literal

import httpx2
from opentelemetry.sdk.trace import TracerProvider
from playwright.sync_api import Browser, Locator, Page, expect, sync_playwright
from pydantic import BaseModel, model_validator
from starlette.applications import Starlette

from fncore import Agent, DecisionKind, Message, ModelRequest, Registry
from fncore.middleware import approve, limit_calls, retry, trace
from fncore.serve import RunsLog, ServeSettings, create_app
from fncore.testing import FunctionModel, TestModel, tool_calls

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


def console_app(settings: ServeSettings | None = None) -> Starlette:
    """An agent with two tools and a small stack, traced to a provider of its own."""
    provider = TracerProvider()
    registry = Registry()
    registry.include(trace(tracer_provider=provider))
    registry.include(retry())
    registry.include(limit_calls(model_calls_per_reply=10))
    agent = Agent(TestModel(), registry=registry, tools=[add, word_count])
    return create_app(agent, settings, runs=RunsLog(tracer_provider=provider))


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


class Bounds(BaseModel):
    """A range of integers, ``low`` to ``high``."""

    low: int
    high: int

    @model_validator(mode="after")
    def ordered(self) -> Bounds:
        """``low`` is at most ``high``: a rule the JSON schema cannot say."""
        if self.low > self.high:
            msg = "low must not be above high"
            raise ValueError(msg)
        return self


def spread(bounds: Bounds) -> int:
    """How far apart the bounds are."""
    return bounds.high - bounds.low


def adder(request: ModelRequest) -> Message | str:
    """Calls ``add`` per "add A and B" and ``spread`` per "spread A to B", then answers."""
    last = request.messages[-1]
    if last.role == "user":
        calls: list[tuple[str, dict[str, object]]] = []
        for verb, a, b in re.findall(r"(add|spread) (-?\d+) (?:and|to) (-?\d+)", last.text):
            if verb == "add":
                calls.append(("add", {"a": int(a), "b": int(b)}))
            else:
                calls.append(("spread", {"bounds": {"low": int(a), "high": int(b)}}))
        return tool_calls(*calls)
    return "Sums: " + "; ".join(result.content for result in last.tool_results)


def inbox_app(
    decisions: Sequence[DecisionKind] = ("approve", "edit", "reject", "respond"),
    mode: Literal["batch", "per_call"] = "batch",
) -> Starlette:
    """An agent whose every ``add`` and ``spread`` call waits for a person's decision."""
    registry = Registry()
    registry.include(approve(["add", "spread"], decisions=decisions, mode=mode))
    return create_app(Agent(FunctionModel(adder), registry=registry, tools=[add, spread]))


def pause(root: str, text: str, *, session: str | None = None) -> str:
    """Start a run that pauses (``/v1/chat/completions`` answers 409): its checkpoint's id."""
    headers = {"fncore-session": session} if session else {}
    body = {"model": "fncore", "messages": [{"role": "user", "content": text}]}
    reply = httpx2.post(f"{root}v1/chat/completions", json=body, headers=headers)
    assert reply.status_code == 409, reply.text
    checkpoint: str = reply.json()["error"]["checkpoint_id"]
    return checkpoint


def show_approval(page: Page, checkpoint: str) -> Locator:
    """The Approvals view, once the checkpoint is listed: its item."""
    show(page, "Approvals")
    item = page.locator(f"article.approval[data-checkpoint='{checkpoint}']")
    expect(item).to_be_visible()
    return item


def decide(page: Page, checkpoint: str, choices: dict[str, tuple[str, str | None]]) -> None:
    """Pick a decision per call (``call id -> (label, text for its field)``) and send them."""
    item = show_approval(page, checkpoint)
    for call_id, (label, text) in choices.items():
        call = item.locator(f"fieldset.call[data-call='{call_id}']")
        call.get_by_label(label, exact=True).check()
        if text is not None:
            call.locator("textarea").fill(text)
    item.get_by_role("button", name=re.compile(r"^Send decisions?$")).click()


def refuse_edit(page: Page, checkpoint: str, call_id: str, text: str) -> Locator:
    """Edit a call's arguments to ``text``, send, and wait for the page's refusal: its list."""
    decide(page, checkpoint, {call_id: ("Edit arguments", text)})
    call = page.locator(f"article[data-checkpoint='{checkpoint}'] fieldset[data-call='{call_id}']")
    refusal = call.locator(".field-error li").first
    expect(refusal).to_be_visible()
    return call.locator(".field-error")


def outcome(page: Page, checkpoint: str) -> Locator:
    """What the page says a decision on ``checkpoint`` came to, once it says it."""
    said = page.locator(f".outcomes .outcome[data-checkpoint='{checkpoint}']")
    expect(said).to_be_visible()
    return said


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

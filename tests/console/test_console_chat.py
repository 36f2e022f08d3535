"""The console's Chat view (``POST /ag-ui``) in a real browser, on a real uvicorn."""

from __future__ import annotations

import asyncio
import threading
from collections.abc import AsyncIterator, Iterator

import httpx2
import pytest
from flows import add, answered, chat, console_app, open_console, say, show, show_chat
from playwright.sync_api import Locator, Page, expect
from returns.result import Result
from serve.served import running

from fncore import Agent
from fncore.core import ModelError, ModelRequest, ModelResponse, ModelStreamItem, TextDelta
from fncore.middleware import approve
from fncore.serve import ServeSettings, create_app
from fncore.testing import FunctionModel, TestModel

ANSWER = "Streaming answers arrive piece by piece."


class GatedModel:
    """A model that streams ``ANSWER`` in chunks and holds after the first until let go."""

    def __init__(self) -> None:
        self.gate = threading.Event()
        self._inner = FunctionModel(lambda request: ANSWER, chunk=9)

    @property
    def name(self) -> str:
        """The model's name."""
        return "gated"

    async def request(self, request: ModelRequest) -> Result[ModelResponse, ModelError]:
        """The whole answer (not used by the console, which streams)."""
        return await self._inner.request(request)

    async def stream(self, request: ModelRequest) -> AsyncIterator[ModelStreamItem]:
        """The answer's chunks; after the first, wait for the test to open the gate."""
        first = True
        async for item in self._inner.stream(request):
            yield item
            if first and isinstance(item, TextDelta):
                first = False
                await asyncio.to_thread(self.gate.wait, 60)


@pytest.fixture
def gated() -> Iterator[tuple[str, GatedModel]]:
    """A console whose model holds its answer after the first chunk, and that model."""
    model = GatedModel()
    try:
        with running(create_app(Agent(model))) as base:
            yield base.removesuffix("v1"), model
            model.gate.set()  # no run is left waiting when the server stops
    finally:
        model.gate.set()


def transcript(page: Page) -> Locator:
    """The conversation's list."""
    return page.get_by_role("list", name="Conversation")


def test_the_answer_streams_into_the_page_as_it_arrives(
    page: Page, gated: tuple[str, GatedModel]
) -> None:
    """The first chunk shows while the model still holds the rest; then the whole answer."""
    root, model = gated
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    open_console(page, root)
    expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    show_chat(page)
    say(page, "Tell me something")
    answer = transcript(page).locator(".chat-assistant .chat-text")
    expect(transcript(page).locator(".chat-user .chat-text")).to_have_text("Tell me something")
    expect(answer).to_have_text("Streaming")  # the model holds the rest
    expect(page.get_by_role("status").filter(has_text="Answering")).to_be_visible()
    expect(page.get_by_role("button", name="Stop")).to_be_enabled()
    expect(transcript(page)).to_have_attribute("aria-busy", "true")
    model.gate.set()
    expect(answer).to_have_text(ANSWER)
    answered(page)
    expect(page.get_by_role("button", name="Stop")).to_be_disabled()
    assert all(url.startswith(root) for url in requested), requested


def test_stop_aborts_the_request_and_the_server_cancels_the_run(
    page: Page, gated: tuple[str, GatedModel]
) -> None:
    """Stop mid-answer: the page says so, and the session is left as it was (not stored)."""
    root, _model = gated
    open_console(page, root)
    show_chat(page)
    say(page, "Tell me something")
    expect(transcript(page).locator(".chat-assistant .chat-text")).to_have_text("Streaming")
    page.get_by_role("button", name="Stop").click()
    expect(page.locator("#view-chat .chat-status")).to_have_text("Stopped: the run was cancelled.")
    expect(page.get_by_role("button", name="Send")).to_be_enabled()
    assert httpx2.get(f"{root}api/sessions").json()["data"] == []


def test_tool_calls_and_results_show_with_the_answer(page: Page, root: str) -> None:
    """Each call: its name, its arguments and its result; then the answer."""
    open_console(page, root)
    show_chat(page)
    say(page, "add 2 and 3")
    calls = transcript(page).locator(".chat-tool")
    expect(calls).to_have_count(2)
    add_call = calls.filter(has=page.locator(".chat-tool-name", has_text="add"))
    expect(add_call.locator(".chat-tool-args")).to_have_text('{"a":2,"b":3}')
    expect(add_call.locator(".chat-tool-result")).to_have_text("5")
    expect(calls.nth(1).locator(".chat-tool-name")).to_have_text("word_count")
    answered(page)
    expect(transcript(page).locator(".chat-assistant .chat-text")).not_to_have_count(0)


def test_a_second_message_continues_the_same_session(page: Page, root: str) -> None:
    """Both turns go to one thread: the server's session holds both."""
    open_console(page, root)
    show_chat(page)
    say(page, "add 2 and 3")
    answered(page)
    say(page, "add 4 and 5")
    answered(page)
    expect(transcript(page).locator(".chat-user")).to_have_count(2)
    sessions = httpx2.get(f"{root}api/sessions").json()["data"]
    assert len(sessions) == 1
    session = httpx2.get(f"{root}api/sessions/{sessions[0]['id']}").json()
    users = [m for m in session["messages"] if m["role"] == "user"]
    assert [m["parts"][0]["text"] for m in users] == ["add 2 and 3", "add 4 and 5"]
    expect(page.get_by_label("Session")).to_have_value(sessions[0]["id"])


def test_picking_a_session_shows_its_messages_and_continues_it(page: Page, root: str) -> None:
    """A stored session's turns show (tool calls with results); a new message goes to it."""
    chat(root, "add 2 and 3", session="alice")
    open_console(page, root)
    show_chat(page)
    page.get_by_label("Session").select_option("alice")
    expect(transcript(page).locator(".chat-user .chat-text")).to_have_text(["add 2 and 3"])
    add_call = transcript(page).locator(".chat-tool").first
    expect(add_call).to_contain_text("add")
    expect(add_call.locator(".chat-tool-result")).to_have_text("5")
    expect(transcript(page).locator(".chat-assistant")).to_have_count(1)
    say(page, "add 1 and 1")
    answered(page)
    session = httpx2.get(f"{root}api/sessions/alice").json()
    assert sum(m["role"] == "user" for m in session["messages"]) == 2
    page.get_by_label("Session").select_option("New session")
    expect(transcript(page).locator("li")).to_have_count(0)


def test_a_pause_shows_the_pending_call_and_the_decided_run_shows_after(page: Page) -> None:
    """The pending call shows; once decided (here through the API), the session shows."""
    agent = Agent(TestModel(), registry=approve(["add"]), tools=[add])
    with running(create_app(agent)) as base:
        root = base.removesuffix("v1")
        open_console(page, root)
        show_chat(page)
        say(page, "add 2 and 3")
        pending = page.locator(".chat-pause")
        expect(pending).to_contain_text("Paused for approval.")
        expect(pending.locator("li")).to_have_text(['add({"a":2,"b":3})'])
        expect(page.locator("#view-chat .chat-status")).to_have_text("Paused.")
        if page.locator("#tab-inbox").count():  # the Approvals view: the link shows it
            pending.get_by_role("link").click()
            expect(page.locator("#tab-inbox")).to_have_attribute("aria-selected", "true")
        else:
            expect(pending).to_contain_text("approvals API")
        checkpoint = httpx2.get(f"{root}api/approvals").json()["data"][0]["id"]
        decided = httpx2.post(
            f"{root}api/approvals/{checkpoint}", json={"decision": {"kind": "approve"}}
        )
        decided.raise_for_status()
        show(page, "Runs")
        show(page, "Chat")  # back in Chat: the decided run's session replaces the pause
        expect(pending).to_be_hidden()
        expect(transcript(page).locator(".chat-tool-result")).to_have_text(["5"])


def test_a_run_error_shows_in_the_page(page: Page) -> None:
    """A failed run's RUN_ERROR: its code and message, in an alert."""
    failing = FunctionModel(lambda request: ModelError(message="the model is down"))
    with running(create_app(Agent(failing))) as base:
        open_console(page, base.removesuffix("v1"))
        show_chat(page)
        say(page, "hello")
        alert = page.locator("#view-chat").get_by_role("alert")
        expect(alert).to_contain_text("ModelError")
        expect(alert).to_contain_text("the model is down")
        expect(page.locator("#view-chat .chat-status")).to_have_text("The run failed.")


def test_a_link_to_a_view_shows_it(page: Page, root: str) -> None:
    """The shell follows ``#NAME`` links (the pause's link to the Approvals view uses it)."""
    open_console(page, root)
    page.evaluate("location.hash = '#stack'")
    expect(page.get_by_role("tab", name="Stack")).to_have_attribute("aria-selected", "true")


def test_chat_sends_the_key_the_user_signed_in_with(page: Page) -> None:
    """With keys, Chat asks for one, then streams its runs with it."""
    with running(console_app(ServeSettings(keys={"ops": "secret"}))) as base:
        open_console(page, base.removesuffix("v1"))
        page.get_by_label("Key").fill("secret")
        page.get_by_role("button", name="Sign in").click()
        show_chat(page)
        say(page, "add 2 and 3")
        answered(page)
        expect(transcript(page).locator(".chat-tool-result").first).to_have_text("5")

"""The web console in a real browser (Debian's chromium, driven by Playwright) on uvicorn."""

from __future__ import annotations

import re
from collections.abc import Iterator

import httpx2
import pytest
from flows import chat, console_app, open_console, show, show_run, show_stack, show_tools
from playwright.sync_api import Page, expect
from serve.served import running

from fncore.serve import ServeSettings
from fncore.serve._console import CONSOLE_DIR


def test_the_page_loads_with_a_tab_per_view_and_nothing_from_elsewhere(
    page: Page, root: str
) -> None:
    """Chat, Approvals, Runs, Stack and Tools, in their order; every request stays on the server."""
    requested: list[str] = []
    page.on("request", lambda request: requested.append(request.url))
    open_console(page, root)
    tabs = page.get_by_role("tab")
    expect(tabs).to_have_text(["Chat", "Approvals", "Runs", "Stack", "Tools"])
    expect(page.get_by_role("tab", name="Chat")).to_have_attribute("aria-selected", "true")
    page.get_by_role("tab", name="Runs").click()
    page.get_by_role("tab", name="Runs").press("ArrowRight")
    expect(page.get_by_role("tab", name="Stack")).to_be_focused()
    expect(page.get_by_role("tabpanel")).to_have_count(1)  # only the shown one is visible
    assert requested
    assert all(url.startswith(root) for url in requested), requested
    assert page.url.endswith("#stack")


def test_the_stack_shows_the_onion_at_each_position(page: Page, root: str) -> None:
    """One onion per position, its layers outermost first, as /api/stack lists them."""
    open_console(page, root)
    show_stack(page)
    stack = httpx2.get(f"{root}api/stack").json()
    onions = page.locator(".onion")
    expect(onions).to_have_count(len(stack["positions"]))
    for position, names in stack["positions"].items():
        onion = onions.filter(has=page.locator("figcaption", has_text=position))
        expect(onion.locator(".layer-name")).to_have_text(names)
    run = onions.filter(has=page.locator("figcaption", has_text="model_call"))
    expect(run.locator(".layer-name").first).to_have_text("trace")
    expect(run.locator(".layer-name", has_text="retry")).to_be_visible()


def test_the_tools_show_their_schema_and_source(page: Page, root: str) -> None:
    """Each tool: its description, where it comes from, and its JSON schema."""
    open_console(page, root)
    show_tools(page)
    expect(page.locator("article.tool h3")).to_have_text(["add", "word_count"])
    card = page.locator("article.tool[data-tool=add]")
    expect(card).to_contain_text("Add two integers.")
    expect(card).to_contain_text("Source: function")
    expect(card.locator("pre")).to_contain_text('"a": {')
    expect(card.locator("pre")).to_contain_text('"required": [')


def test_a_run_appears_in_runs_and_its_waterfall_shows_its_spans(page: Page, root: str) -> None:
    """Runs made through /v1/chat/completions show up without a reload, with their spans."""
    open_console(page, root)
    show(page, "Runs")
    expect(page.get_by_text("No runs yet.")).to_be_visible()
    chat(root, "add 2 and 3", session="alice")
    rows = page.locator("tr[data-run]")
    expect(rows).to_have_count(1)
    expect(rows.first).to_contain_text("alice")
    expect(rows.first).to_contain_text("answer")
    show_run(page)
    spans = page.locator(".waterfall .span .span-name")
    expect(spans).to_have_text(
        [
            "invoke_agent agent",
            "chat test",
            "execute_tool add",
            "execute_tool word_count",
            "chat test",
        ]
    )
    bars = page.locator(".waterfall .span-bar")
    expect(bars).to_have_count(5)
    expect(bars.first).to_have_attribute("style", re.compile(r"left: [\d.]+%; width: [\d.]+%"))
    chat(root, "count the words", session="bob")  # a new run appears, newest first
    expect(rows).to_have_count(2)
    expect(rows.first).to_contain_text("bob")
    expect(page.locator("tr[aria-current=true]")).to_contain_text("alice")


@pytest.fixture
def locked_root() -> Iterator[str]:
    """The console's app with a key (for the tenant ``ops``): the API needs it."""
    with running(console_app(ServeSettings(keys={"ops": "secret"}))) as base:
        yield base.removesuffix("v1")


def test_login_asks_for_a_key_when_the_server_answers_401(page: Page, locked_root: str) -> None:
    """The key is asked for, kept in sessionStorage and sent as a Bearer token."""
    open_console(page, locked_root)
    dialog = page.get_by_role("dialog", name="Sign in")
    expect(dialog).to_be_visible()
    page.get_by_label("Key").fill("wrong")
    page.get_by_role("button", name="Sign in").click()
    expect(dialog.get_by_role("alert")).to_have_text("That key was refused.")
    page.keyboard.press("Escape")  # the dialog stays until a key is given
    expect(dialog).to_be_visible()
    page.get_by_label("Key").fill("secret")
    page.get_by_role("button", name="Sign in").click()
    expect(dialog).to_be_hidden()
    show_tools(page)
    assert page.evaluate("sessionStorage.getItem('fncore.key')") == "secret"
    page.reload()  # the key is kept for the tab's session
    show_tools(page)
    expect(dialog).to_be_hidden()
    page.get_by_role("button", name="Sign out").click()
    assert page.evaluate("sessionStorage.getItem('fncore.key')") is None


def test_the_console_files_ship_in_the_package(root: str) -> None:
    """``/`` is the page; ``views.json`` lists every view module, each served."""
    page = httpx2.get(root)
    assert page.status_code == 200
    assert page.headers["content-type"].startswith("text/html")
    views = httpx2.get(f"{root}console/views.json").json()["views"]
    assert views == sorted(p.stem for p in (CONSOLE_DIR / "views").glob("*.js"))
    assert {"chat", "runs", "stack", "tools"} <= set(views)
    for name in views:
        module = httpx2.get(f"{root}console/views/{name}.js")
        assert module.status_code == 200
        assert "export function mount" in module.text

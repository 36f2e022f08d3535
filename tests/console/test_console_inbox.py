"""The console's Approvals inbox in a real browser (Debian's chromium, Playwright) on uvicorn."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Callable, Iterator

import httpx2
import pytest
from flows import (
    decide,
    inbox_app,
    open_console,
    outcome,
    pause,
    refuse_edit,
    show,
    show_approval,
)
from playwright.sync_api import Page, Request, Route, expect
from serve.served import running
from starlette.applications import Starlette


@pytest.fixture
def serve() -> Iterator[Callable[[Starlette], str]]:
    """Serves apps on free ports until the test ends: each one's root URL, ending in ``/``."""
    with contextlib.ExitStack() as stack:
        yield lambda app: stack.enter_context(running(app)).removesuffix("v1")


@pytest.fixture
def root(serve: Callable[[Starlette], str]) -> str:
    """The inbox's agent (every ``add`` and ``spread`` call waits) on a free port."""
    return serve(inbox_app())


def waiting(root: str) -> list[str]:
    """The ids of the checkpoints the server lists as waiting."""
    return [c["id"] for c in httpx2.get(f"{root}api/approvals").json()["data"]]


def posts(page: Page) -> list[str]:
    """The decisions the page sends (``POST /api/approvals/...``), as it sends them."""
    sent: list[str] = []

    def seen(request: Request) -> None:
        if request.method == "POST" and "/api/approvals/" in request.url:
            sent.append(request.url)

    page.on("request", seen)
    return sent


def test_a_paused_run_appears_without_a_reload_and_approving_it_finishes_it(
    page: Page, root: str
) -> None:
    """The pause shows with its call; approving it commits the turn and empties the inbox."""
    open_console(page, root)
    show(page, "Approvals")
    expect(page.get_by_text("Nothing waits for a decision.")).to_be_visible()
    checkpoint = pause(root, "add 2 and 3", session="ada")
    item = show_approval(page, checkpoint)  # listed by the view's polling: no reload
    expect(page.get_by_text("Nothing waits for a decision.")).to_be_hidden()
    expect(item.get_by_role("heading")).to_have_text("add · session ada")
    expect(item).to_contain_text('Run add with {"a": 2, "b": 3}?')
    expect(item).to_contain_text(f"checkpoint {checkpoint}")
    expect(item.locator(".meta")).to_contain_text(re.compile(r"paused (just now|\d+ (s|min) ago)"))
    expect(item.get_by_label("Arguments of add")).to_have_text('{\n  "a": 2,\n  "b": 3\n}')
    call = item.get_by_role("radiogroup", name="Decision for add (call_0)")
    expect(call.get_by_role("radio")).to_have_count(4)
    expect(item.get_by_role("button", name="Approve all")).to_have_count(0)  # one call only
    decide(page, checkpoint, {"call_0": ("Approve", None)})
    said = outcome(page, checkpoint)
    expect(said).to_contain_text("Completed: add · session ada")
    expect(said.locator("pre")).to_have_text("Sums: 5")
    expect(item).to_have_count(0)
    assert waiting(root) == []
    session = httpx2.get(f"{root}api/sessions/ada").json()
    assert [m["role"] for m in session["messages"]] == ["user", "assistant", "tool", "assistant"]
    assert session["messages"][-1]["parts"] == [{"type": "text", "text": "Sums: 5"}]


def test_an_edit_the_schema_refuses_is_shown_in_the_page_and_nothing_is_sent(
    page: Page, root: str
) -> None:
    """The refusal names the path and the reason; the checkpoint still waits on the server."""
    sent = posts(page)
    checkpoint = pause(root, "add 2 and 3", session="ada")
    open_console(page, root)
    refusal = refuse_edit(page, checkpoint, "call_0", '{"a": "ten", "b": 1}')
    expect(refusal).to_have_text(
        'arguments.a: Instance type "string" is invalid. Expected "integer".'
    )
    field = page.get_by_label("Arguments (JSON)")
    expect(field).to_have_attribute("aria-invalid", "true")
    expect(field).to_be_focused()
    refusal = refuse_edit(page, checkpoint, "call_0", '{"a": 1, "c": 2}')
    expect(refusal).to_contain_text('arguments: Instance does not have required property "b".')
    expect(refusal).to_contain_text('arguments: Property "c" does not match additional')
    refusal = refuse_edit(page, checkpoint, "call_0", '{"a": 1,')
    expect(refusal).to_contain_text("arguments: not valid JSON")
    refusal = refuse_edit(page, checkpoint, "call_0", "[1, 2]")
    expect(refusal).to_have_text("arguments: must be a JSON object, {...}")
    assert sent == []
    assert waiting(root) == [checkpoint]
    decide(page, checkpoint, {"call_0": ("Edit arguments", '{"a": 10, "b": 1}')})
    expect(outcome(page, checkpoint).locator("pre")).to_contain_text('{"a": 10, "b": 1}')
    expect(outcome(page, checkpoint).locator("pre")).to_contain_text("]\n11")
    assert len(sent) == 1
    assert waiting(root) == []
    [result] = httpx2.get(f"{root}api/sessions/ada").json()["messages"][2]["parts"]
    assert (result["name"], result["is_error"]) == ("add", False)
    assert 'it ran with arguments {"a": 10, "b": 1}' in result["content"]
    assert result["content"].endswith("]\n11")


def test_a_nested_schema_is_checked_and_the_servers_own_refusal_shows_by_the_field(
    page: Page, root: str
) -> None:
    """``$ref``s are followed in the browser; a rule only the server knows comes back as a 400."""
    sent = posts(page)
    checkpoint = pause(root, "spread 1 to 4")
    open_console(page, root)
    refusal = refuse_edit(page, checkpoint, "call_0", '{"bounds": {"low": 1.5, "high": 4}}')
    expect(refusal).to_have_text(
        'arguments.bounds.low: Instance type "number" is invalid. Expected "integer".'
    )
    assert sent == []
    refusal = refuse_edit(page, checkpoint, "call_0", '{"bounds": {"low": 9, "high": 4}}')
    expect(refusal).to_contain_text("decisions.call_0.arguments.bounds: Value error, low must not")
    expect(refusal).to_contain_text("the checkpoint still waits")
    assert len(sent) == 1
    assert waiting(root) == [checkpoint]
    decide(page, checkpoint, {"call_0": ("Edit arguments", '{"bounds": {"low": 4, "high": 9}}')})
    expect(outcome(page, checkpoint).locator("pre")).to_contain_text("5")


def test_respond_and_reject(page: Page, root: str) -> None:
    """A response stands in for the tool's result; a rejection's message is its error."""
    first = pause(root, "add 2 and 3")
    open_console(page, root)
    decide(page, first, {"call_0": ("Respond", "It is five, I counted.")})
    expect(outcome(page, first).locator("pre")).to_have_text("Sums: It is five, I counted.")
    second = pause(root, "add 2 and 3")
    decide(page, second, {"call_0": ("Reject", "Not today.")})
    expect(outcome(page, second).locator("pre")).to_have_text("Sums: Not today.")
    third = pause(root, "add 2 and 3")
    show_approval(page, third).get_by_label("Respond", exact=True).check()
    page.get_by_role("button", name="Send decision").click()  # a response needs its text
    expect(page.locator(f"article[data-checkpoint='{third}'] .field-error")).to_have_text(
        "Write the response to send instead of the tool's result."
    )
    assert waiting(root) == [third]


def test_several_calls_are_decided_each_or_all_at_once(page: Page, root: str) -> None:
    """Each call its own decision, or one button for all of them."""
    first = pause(root, "add 1 and 2, then add 3 and 4", session="bo")
    open_console(page, root)
    item = show_approval(page, first)
    expect(item.locator("fieldset.call")).to_have_count(2)
    item.get_by_role("button", name="Send decisions").click()  # a call without a decision
    expect(item.locator("fieldset[data-call=call_0] .field-error")).to_have_text(
        "Choose a decision for add."
    )
    assert waiting(root) == [first]
    decide(page, first, {"call_0": ("Approve", None), "call_1": ("Respond", "seven")})
    expect(outcome(page, first).locator("pre")).to_have_text("Sums: 3; seven")
    second = pause(root, "add 1 and 2, then add 3 and 4")
    group = show_approval(page, second).get_by_role("group", name="For all calls")
    group.get_by_role("button", name="Approve all").click()
    expect(outcome(page, second).locator("pre")).to_have_text("Sums: 3; 7")


def test_only_the_decisions_a_call_allows_are_offered(
    page: Page, serve: Callable[[Starlette], str]
) -> None:
    root = serve(inbox_app(decisions=("approve", "reject")))
    checkpoint = pause(root, "add 1 and 2, then add 3 and 4")
    open_console(page, root)
    item = show_approval(page, checkpoint)
    radios = item.get_by_role("radiogroup", name="Decision for add (call_0)").get_by_role("radio")
    expect(radios).to_have_count(2)
    expect(item.locator("fieldset[data-call=call_0] .choice")).to_have_text(["Approve", "Reject"])
    expect(item.get_by_role("button", name="Approve all")).to_be_visible()
    expect(item.get_by_role("button", name="Reject all")).to_be_visible()
    item.get_by_role("button", name="Reject all").click()
    expect(outcome(page, checkpoint).locator("pre")).to_contain_text("Sums: ")
    assert waiting(root) == []


def test_a_run_that_pauses_again_shows_its_next_checkpoint(
    page: Page, serve: Callable[[Starlette], str]
) -> None:
    root = serve(inbox_app(mode="per_call"))
    first = pause(root, "add 1 and 2, then add 3 and 4", session="cy")
    open_console(page, root)
    decide(page, first, {"call_0": ("Approve", None)})
    expect(outcome(page, first)).to_contain_text("Paused again: add · session cy now waits for")
    [second] = waiting(root)
    item = show_approval(page, second)
    expect(item.locator("fieldset.call")).to_have_attribute("data-call", "call_1")
    decide(page, second, {"call_1": ("Approve", None)})
    expect(outcome(page, second).locator("pre")).to_have_text("Sums: 3; 7")


def test_a_checkpoint_decided_elsewhere_says_so_and_leaves_the_list(page: Page, root: str) -> None:
    """Someone else decided first: the page's POST gets 409 ``checkpoint_decided``."""
    checkpoint = pause(root, "add 2 and 3")
    open_console(page, root)
    item = show_approval(page, checkpoint)

    def stale(route: Route) -> None:  # this page's list lags behind: it still shows the item
        route.abort()

    page.route("**/api/approvals", stale)
    decided = httpx2.post(
        f"{root}api/approvals/{checkpoint}", json={"decision": {"kind": "approve"}}
    )
    assert decided.status_code == 200
    decide(page, checkpoint, {"call_0": ("Reject", None)})
    said = outcome(page, checkpoint)
    expect(said).to_contain_text("Already decided: add was decided by someone else")
    expect(item).to_have_count(0)
    page.unroute("**/api/approvals")
    expect(page.get_by_text("Nothing waits for a decision.")).to_be_visible()


def test_a_checkpoint_decided_by_another_client_leaves_the_list_by_itself(
    page: Page, root: str
) -> None:
    checkpoint = pause(root, "add 2 and 3")
    open_console(page, root)
    item = show_approval(page, checkpoint)
    httpx2.post(f"{root}api/approvals/{checkpoint}", json={"decision": {"kind": "approve"}})
    expect(item).to_have_count(0)
    expect(page.get_by_text("Nothing waits for a decision.")).to_be_visible()

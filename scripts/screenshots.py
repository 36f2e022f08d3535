"""Regenerate the console's screenshots in the docs (docs/assets/console/*.png).

Runs the console's page flows (tests/console/flows.py, the ones the browser tests use)
against a real uvicorn, in Debian's chromium, and photographs the page after each::

    python scripts/screenshots.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests" / "console"), str(ROOT / "tests")]

from flows import (  # noqa: E402
    browser,
    chat,
    chat_in_console,
    console_app,
    inbox_app,
    open_console,
    pause,
    refuse_edit,
    show_run,
    show_stack,
    show_tools,
)
from serve.served import running  # noqa: E402

OUT = ROOT / "docs" / "assets" / "console"


def main() -> None:
    """Take one screenshot per view: chat, approvals, runs (with a waterfall), stack, tools."""
    OUT.mkdir(parents=True, exist_ok=True)
    with running(console_app()) as base, browser() as launched:
        root = base.removesuffix("v1")
        chat(root, "add 2 and 3", session="alice")
        chat(root, "how many words in this?", session="bob")
        chat(root, "add 40 and 2")
        page = launched.new_page(viewport={"width": 1100, "height": 720})
        open_console(page, root)
        shots = {"runs": lambda: show_run(page, 1), "stack": lambda: show_stack(page)}
        shots["tools"] = lambda: show_tools(page)
        shots["chat"] = lambda: chat_in_console(page, "add 2 and 3")
        for name, flow in shots.items():
            flow()
            page.screenshot(path=OUT / f"{name}.png", full_page=True)
            print(OUT / f"{name}.png")
    approvals()


def approvals() -> None:
    """The Approvals view: two paused runs, one of them with an edit the schema refuses."""
    with running(inbox_app()) as base, browser() as launched:
        root = base.removesuffix("v1")
        pause(root, "add 1 and 2, then add 3 and 4", session="alice")
        edited = pause(root, "add 2 and 3", session="bob")
        page = launched.new_page(viewport={"width": 1100, "height": 720})
        open_console(page, root)
        refuse_edit(page, edited, "call_0", '{\n  "a": "two",\n  "b": 3\n}')
        page.screenshot(path=OUT / "approvals.png", full_page=True)
        print(OUT / "approvals.png")


if __name__ == "__main__":
    main()

"""A small AG-UI client: run a prompt on an fncore server and print the events as they come.

Start a server (``fncore serve --agent examples.my_agent:agent``), then::

    python examples/agui_client.py http://127.0.0.1:8000 "add 2 and 3" --thread ada

A run paused for approval ends with an interrupt; ``--approve`` answers every interrupt
with an approval in the next run's ``resume`` entries, and that run streams the rest.
Needs ``ag-ui-protocol`` and ``httpx2`` (both come with fncore's ``serve`` and ``openai``
extras). A key, when the server has keys, comes from ``FNCORE_API_KEY``.
"""

from __future__ import annotations

import argparse
import os
import uuid
from collections.abc import Iterator, Sequence

import httpx2
from ag_ui.core import (
    BaseEvent,
    Event,
    EventType,
    Interrupt,
    ResumeEntry,
    RunAgentInput,
    RunFinishedEvent,
    RunFinishedInterruptOutcome,
    UserMessage,
)
from pydantic import TypeAdapter

EVENT: TypeAdapter[Event] = TypeAdapter(Event)
"""Parses one event's JSON into its AG-UI class, by its ``type``."""


def stream_run(base_url: str, run_input: RunAgentInput) -> Iterator[BaseEvent]:
    """POST ``run_input`` to ``{base_url}/ag-ui`` and yield the events it streams."""
    headers = {"content-type": "application/json", "accept": "text/event-stream"}
    key = os.environ.get("FNCORE_API_KEY")
    if key:
        headers["authorization"] = f"Bearer {key}"
    body = run_input.model_dump_json(by_alias=True)
    url = f"{base_url.rstrip('/')}/ag-ui"
    with httpx2.stream("POST", url, content=body, headers=headers, timeout=None) as response:
        if response.status_code != 200:
            response.read()
            raise SystemExit(f"{response.status_code}: {response.text}")
        for line in response.iter_lines():
            if line.startswith("data:"):
                yield EVENT.validate_json(line.removeprefix("data:").strip())


def show(event: BaseEvent) -> str:
    """One line for ``event``: its type, then its fields as JSON."""
    fields = event.model_dump_json(by_alias=True, exclude={"type"})
    return f"{event.type.value} {fields}"


def interrupts_of(event: BaseEvent) -> list[Interrupt]:
    """The interrupts a ``RUN_FINISHED`` event ends its run with (none for other events)."""
    outcome = event.outcome if isinstance(event, RunFinishedEvent) else None
    return list(outcome.interrupts) if isinstance(outcome, RunFinishedInterruptOutcome) else []


def main(argv: Sequence[str] | None = None) -> None:
    """Run the prompt on the thread; with ``--approve``, approve every pause until done."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("server", help="the server's base URL, e.g. http://127.0.0.1:8000")
    parser.add_argument("prompt", help="what to ask")
    parser.add_argument("--thread", default=None, help="the session to continue (default: new)")
    parser.add_argument("--approve", action="store_true", help="approve every pending call")
    args = parser.parse_args(argv)
    thread_id = args.thread or f"thread-{uuid.uuid4().hex}"
    run_input = RunAgentInput(
        thread_id=thread_id,
        run_id=f"run-{uuid.uuid4().hex}",
        messages=[UserMessage(id=f"msg-{uuid.uuid4().hex}", content=args.prompt)],
    )
    while True:
        interrupts: list[Interrupt] = []
        for event in stream_run(args.server, run_input):
            print(show(event), flush=True)
            interrupts += interrupts_of(event)
            if event.type is EventType.RUN_ERROR:
                raise SystemExit(1)
        if not (interrupts and args.approve):
            return
        run_input = RunAgentInput(
            thread_id=thread_id,
            run_id=f"run-{uuid.uuid4().hex}",
            messages=[],
            resume=[
                ResumeEntry(interrupt_id=i.id, status="resolved", payload={"kind": "approve"})
                for i in interrupts
            ],
        )


if __name__ == "__main__":
    main()

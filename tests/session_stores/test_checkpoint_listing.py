"""Listing the checkpoints that wait for decisions, on every kind of store (an approvals inbox).

A checkpoint is listed from its pause until a resume claims it, oldest first; never once
decided, done or expired. Times are passed in (``now``), so no test waits for anything.
"""

from __future__ import annotations

import time
from dataclasses import replace
from typing import Any

import pytest
from codec_strategies import a_checkpoint
from conftest import StoreFactory

from fncore import (
    Agent,
    Approve,
    CheckpointCatalog,
    CheckpointInfo,
    Message,
    ModelRequest,
    PendingRequest,
    Registry,
    Reject,
    RunResult,
)
from fncore.middleware import approve
from fncore.testing import FunctionModel, tool_calls

NOW = 1_000_000.0


def at(checkpoint_id: str, created: float, **changes: Any) -> Any:
    """A paused checkpoint made at ``created``, expiring an hour later."""
    fields: dict[str, Any] = {"id": checkpoint_id, "created": created, "expires": created + 3600}
    return a_checkpoint(**{**fields, **changes})


def ids(found: list[CheckpointInfo]) -> list[str]:
    """The listed checkpoints' ids, in order."""
    return [info.id for info in found]


deleted: list[str] = []


def delete_file(path: str) -> str:
    """Delete a file."""
    deleted.append(path)
    return f"Deleted {path}."


def cleaner(request: ModelRequest) -> object:
    """Deletes the file the user names, then says what the tool answered."""
    last = request.messages[-1]
    if last.role == "user":
        return tool_calls(("delete_file", {"path": last.text}))
    return last.tool_results[0].content


async def test_paused_runs_are_listed_until_resumed(store: Any) -> None:
    """Two runs pause: both listed with their calls and decisions; a resumed one is not."""
    deleted.clear()
    registry = Registry()
    registry.include(approve(["delete_file"]))
    agent = Agent(FunctionModel(cleaner), registry=registry, tools=[delete_file], sessions=store)
    assert isinstance(store, CheckpointCatalog)
    assert await store.list_checkpoints() == []
    first = (await agent.run("a.txt", session_id="ada", metadata={"tenant": "t1"})).unwrap()
    second = (await agent.run("b.txt", session_id="bob", metadata={"tenant": "t2"})).unwrap()

    listed = await store.list_checkpoints()
    assert ids(listed) == [first.paused.checkpoint_id, second.paused.checkpoint_id]
    one, two = listed
    assert (one.agent, one.session_id, one.metadata) == (agent.name, "ada", {"tenant": "t1"})
    assert one.requests == first.paused.requests
    [request] = two.requests
    assert (request.tool, request.arguments) == ("delete_file", {"path": "b.txt"})
    assert request.description == 'Run delete_file with {"path": "b.txt"}?'
    assert request.allowed == ("approve", "edit", "reject", "respond")
    assert one.created <= two.created < two.expires
    assert ids(await store.list_checkpoints(metadata={"tenant": "t2"})) == [two.id]
    assert ids(await store.list_checkpoints(agent="another")) == []

    done = (await agent.resume(one.id, Approve())).unwrap()
    assert (done.output, deleted) == ("Deleted a.txt.", ["a.txt"])
    assert ids(await store.list_checkpoints()) == [two.id]
    rejected = (await agent.resume(two.id, Reject("Keep it."))).unwrap()
    assert rejected.stop_reason == "completed"
    assert await store.list_checkpoints() == []


def two_deletes(request: ModelRequest) -> object:
    """Deletes two files at once, then says what the tools answered."""
    last = request.messages[-1]
    if last.role == "user":
        return tool_calls(("delete_file", {"path": "a.txt"}), ("delete_file", {"path": "b.txt"}))
    return " ".join(result.content for result in last.tool_results)


async def test_a_reply_that_pauses_again_lists_its_next_checkpoint(store: Any) -> None:
    """One call at a time: the resumed reply's next checkpoint is listed, the first is not."""
    deleted.clear()
    registry = Registry()
    registry.include(approve(["delete_file"], mode="per_call"))
    model = FunctionModel(two_deletes)
    agent = Agent(model, registry=registry, tools=[delete_file], sessions=store)
    first = (await agent.run("Clean up.", session_id="ada")).unwrap().paused
    [listed] = await store.list_checkpoints()
    assert (listed.id, [r.arguments for r in listed.requests]) == (
        first.checkpoint_id,
        [{"path": "a.txt"}],
    )
    second = (await agent.resume(listed.id, Approve())).unwrap().paused
    [again] = await store.list_checkpoints()
    assert (again.id, [r.arguments for r in again.requests]) == (
        second.checkpoint_id,
        [{"path": "b.txt"}],
    )
    assert again.id != listed.id
    assert again.session_id == "ada"
    await agent.resume(again.id, Approve())
    assert (await store.list_checkpoints(), deleted) == ([], ["a.txt", "b.txt"])


async def test_a_claimed_checkpoint_is_listed_only_once_its_claim_lapsed(store: Any) -> None:
    """A resume's claim hides it; a released or lapsed claim shows it again."""
    await store.save_checkpoint(at("cp", NOW - 10))
    held = await store.claim_checkpoint("cp", "mine", NOW + 60, NOW)
    assert held.claim == "mine"
    assert await store.list_checkpoints(now=NOW) == []
    assert ids(await store.list_checkpoints(now=NOW + 61)) == ["cp"]
    refused = await store.claim_checkpoint("cp", "other", NOW + 90, NOW + 30)
    assert refused.claim == "mine"  # listing changed nothing: the claim still holds


async def test_decided_done_and_expired_checkpoints_are_not_listed(store: Any) -> None:
    """Only a ``paused`` checkpoint that has not expired waits for decisions."""
    outcome = RunResult("ok", (Message.assistant("ok"),), stop_reason="completed")
    await store.save_checkpoint(at("waiting", NOW - 50))
    await store.save_checkpoint(at("decided", NOW - 40, stage="decided", key="k"))
    await store.save_checkpoint(at("done", NOW - 30, stage="done", outcome=outcome))
    await store.save_checkpoint(at("expired", NOW - 20, expires=NOW - 1))
    assert ids(await store.list_checkpoints(now=NOW)) == ["waiting"]


async def test_listed_oldest_first_limited_and_filtered(store: Any) -> None:
    """Oldest first (then by id), at most ``limit``, filtered by agent and metadata."""
    ask = PendingRequest("q1", None, {}, "Which city?", allowed=("respond",))
    await store.save_checkpoint(at("c", NOW - 10, metadata={"tenant": "t1", "user": "ada"}))
    await store.save_checkpoint(at("a", NOW - 30, agent="other", requests=(ask,)))
    await store.save_checkpoint(at("b", NOW - 10, metadata={"tenant": "t1"}))
    assert ids(await store.list_checkpoints(now=NOW)) == ["a", "b", "c"]
    assert ids(await store.list_checkpoints(now=NOW, limit=2)) == ["a", "b"]
    assert await store.list_checkpoints(now=NOW, limit=0) == []
    assert ids(await store.list_checkpoints(now=NOW, agent="agent")) == ["b", "c"]
    assert ids(await store.list_checkpoints(now=NOW, metadata={"tenant": "t1"})) == ["b", "c"]
    found = await store.list_checkpoints(now=NOW, metadata={"user": "ada", "tenant": "t1"})
    assert ids(found) == ["c"]
    assert await store.list_checkpoints(now=NOW, metadata={"tenant": None}) == []
    [first] = await store.list_checkpoints(now=NOW, limit=1)
    assert first == CheckpointInfo(
        "a", "other", "run-1", "s", NOW - 30, NOW - 30 + 3600, (ask,), {}
    )


async def test_a_negative_limit_is_refused(store: Any) -> None:
    """``limit=-1`` is a mistake, not "all": a ValueError that says so."""
    with pytest.raises(ValueError, match="limit must be 0 or more"):
        await store.list_checkpoints(limit=-1)


async def test_listed_metadata_is_a_copy(store: Any) -> None:
    """Changing a listed checkpoint's metadata in place changes nothing stored."""
    await store.save_checkpoint(at("cp", NOW, metadata={"tags": ["a"]}))
    [info] = await store.list_checkpoints(now=NOW)
    info.metadata["tags"].append("b")
    [again] = await store.list_checkpoints(now=NOW)
    assert again.metadata == {"tags": ["a"]}
    assert replace(again, metadata={}) == replace(info, metadata={})


async def test_another_process_sees_the_same_list(durable: StoreFactory) -> None:
    """Stores on one database list what either saved, and what either claimed drops out."""
    a, b = durable(), durable()
    now = time.time()
    await a.save_checkpoint(at("one", now - 2))
    await b.save_checkpoint(at("two", now - 1))
    assert ids(await b.list_checkpoints()) == ["one", "two"]
    assert (await b.claim_checkpoint("one", "b", now + 60, now)).claim == "b"
    assert ids(await a.list_checkpoints()) == ["two"]

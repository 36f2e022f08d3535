"""The session-store contract, on every kind of store: versions, compare-and-set, appends."""

from __future__ import annotations

import asyncio
import dataclasses
import itertools
from types import MappingProxyType
from typing import Any

from conftest import StoreFactory
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from returns.result import Success

from fncore import (
    Agent,
    Message,
    ModelRequest,
    Registry,
    Session,
    SessionCatalog,
    SessionInfo,
    SessionStore,
    SessionUpdate,
    ToolCallPart,
    ToolResultPart,
    register_state_type,
)
from fncore.errors import SessionConflict
from fncore.testing import FunctionModel, TestModel


def texts(session: Session | None) -> list[str]:
    assert session is not None
    return [m.text for m in session.messages]


async def test_an_unknown_session_loads_as_none(store: SessionStore, sid: str) -> None:
    """A session never committed is ``None``."""
    assert await store.load(sid) is None


async def test_a_first_commit_makes_version_one(store: SessionStore, sid: str) -> None:
    """Version 0 means new: the commit makes version 1 with the messages and state given."""
    update = SessionUpdate(sid, 0, 0, (Message.user("hi"), Message.assistant("hello")), {"n": 1})
    saved = await store.commit(update)
    assert saved is not None
    assert saved.version == 1
    assert texts(saved) == ["hi", "hello"]
    assert dict(saved.state) == {"n": 1}
    assert await store.load(sid) == saved


async def test_a_stale_commit_conflicts_and_writes_nothing(store: SessionStore, sid: str) -> None:
    """An update made against an older version returns ``None``; the session is as it was."""
    first = await store.commit(SessionUpdate(sid, 0, 0, (Message.user("a"),), {"k": "v"}))
    second = await store.commit(SessionUpdate(sid, 1, 1, (Message.user("b"),), {"k": "w"}))
    assert first is not None
    assert second is not None
    assert await store.commit(SessionUpdate(sid, 1, 1, (Message.user("lost"),))) is None
    assert await store.commit(SessionUpdate(sid, 0, 0, (Message.user("new"),))) is None
    loaded = await store.load(sid)
    assert loaded == second
    assert texts(loaded) == ["a", "b"]
    assert dict(loaded.state) == {"k": "w"}


async def test_keep_shortens_the_history_before_the_append(store: SessionStore, sid: str) -> None:
    """``keep`` stored messages stay in front of the new ones (as `SessionUpdate.apply`)."""
    four = tuple(Message.user(str(i)) for i in range(4))
    await store.commit(SessionUpdate(sid, 0, 0, four))
    shortened = await store.commit(SessionUpdate(sid, 1, 1, (Message.user("x"),)))
    assert texts(shortened) == ["0", "x"]
    longer = await store.commit(SessionUpdate(sid, 2, 9, (Message.user("y"),)))
    assert texts(longer) == ["0", "x", "y"]
    assert await store.load(sid) == longer


async def test_state_is_replaced_and_read_only(store: SessionStore, sid: str) -> None:
    """Each commit replaces the state; a loaded session's state cannot be changed in place."""
    await store.commit(SessionUpdate(sid, 0, 0, (), {"a": [1, 2], "b": None}))
    saved = await store.commit(SessionUpdate(sid, 1, 0, (), {"c": (1, "x")}))
    loaded = await store.load(sid)
    assert saved is not None
    assert loaded is not None
    assert dict(loaded.state) == {"c": (1, "x")}
    assert loaded.messages == ()
    assert isinstance(loaded.state, MappingProxyType)


async def test_delete_forgets_a_session(store: Any, sid: str) -> None:
    """After ``delete`` the id is free again, starting at version 1."""
    await store.commit(SessionUpdate(sid, 0, 0, (Message.user("a"),)))
    assert await store.delete(sid) is True
    assert await store.delete(sid) is False
    assert await store.load(sid) is None
    again = await store.commit(SessionUpdate(sid, 0, 0, (Message.user("b"),)))
    assert again is not None
    assert again.version == 1
    assert texts(again) == ["b"]


async def test_list_sessions_tells_ids_versions_and_lengths(store: Any) -> None:
    """``list_sessions`` lists every session, sorted by code point, and forgets deleted ones."""
    assert isinstance(store, SessionCatalog)
    assert await store.list_sessions() == []
    for sid in ("b", "\xe9t\xe9", "B", "a b"):
        await store.commit(SessionUpdate(sid, 0, 0, (Message.user("hi"), Message.assistant("hi"))))
    await store.commit(SessionUpdate("b", 1, 1, (Message.user("again"),)))
    await store.delete("B")
    assert await store.list_sessions() == [
        SessionInfo("a b", 1, 2),
        SessionInfo("b", 2, 2),
        SessionInfo("\xe9t\xe9", 1, 2),
    ]


updates = st.lists(
    st.tuples(
        st.booleans(),  # made against the current version (else a stale one)
        st.integers(0, 6),  # keep
        st.lists(st.sampled_from("abcdef"), max_size=3),  # texts appended
        st.integers(0, 3),  # state
    ),
    min_size=1,
    max_size=8,
)


EXAMPLES = itertools.count()


@settings(
    max_examples=25,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(steps=updates)
async def test_commits_match_session_update_apply(store: SessionStore, steps: list[Any]) -> None:
    """Any sequence of updates, current or stale, leaves the store where `apply` says.

    The examples share the test's store, each on a session of its own.
    """
    sid = f"example-{next(EXAMPLES)}"
    expected: Session | None = None
    for current, keep, appended, state in steps:
        version = expected.version if expected is not None else 0
        update = SessionUpdate(
            sid,
            version if current else version + 1,
            keep,
            tuple(Message.user(t) for t in appended),
            {"s": state},
        )
        after = update.apply(expected)
        saved = await store.commit(update)
        assert saved == after
        expected = after if after is not None else expected
        assert await store.load(sid) == expected


async def test_tool_calls_and_results_are_kept(store: SessionStore, sid: str) -> None:
    """A tool round is stored as written, part by part."""
    call = Message("assistant", (ToolCallPart("c1", "add", '{"a": 1}'),))
    result = Message("tool", (ToolResultPart("c1", "add", "1", is_error=True),))
    saved = await store.commit(SessionUpdate(sid, 0, 0, (Message.user("go"), call, result)))
    assert saved is not None
    assert (await store.load(sid)) == saved
    assert saved.messages[1:] == (call, result)


async def test_an_agent_continues_a_stored_conversation(store: SessionStore, sid: str) -> None:
    """Runs with a session id append to it; the model sees the history."""
    model = TestModel()
    agent = Agent(model, registry=Registry(), sessions=store)
    await agent.run("My name is Ada.", session_id=sid)
    await agent.run("What is my name?", session_id=sid)
    assert [m.text for m in model.requests[1].messages] == [
        "My name is Ada.",
        "My name is Ada.",
        "What is my name?",
    ]
    session = await store.load(sid)
    assert session is not None
    assert session.version == 2
    assert len(session.messages) == 4


async def test_two_overlapping_runs_one_wins_one_conflicts(store: SessionStore, sid: str) -> None:
    """Two runs of one session at once: one commits, the other gets `SessionConflict`."""
    both_loaded = asyncio.Barrier(2)

    async def slow(request: ModelRequest) -> str:
        if request.messages[-1].text != "start":
            await asyncio.wait_for(both_loaded.wait(), 60)  # each answers once both loaded
        return "noted"

    agent = Agent(FunctionModel(slow), registry=Registry(), sessions=store)
    await agent.run("start", session_id=sid)
    first, second = await asyncio.gather(
        agent.run("one", session_id=sid), agent.run("two", session_id=sid)
    )
    outcomes = [first, second]
    assert sum(isinstance(o, Success) for o in outcomes) == 1
    (lost,) = [o.failure() for o in outcomes if not isinstance(o, Success)]
    assert isinstance(lost, SessionConflict)
    assert lost.version == 1
    session = await store.load(sid)
    assert session is not None
    assert session.version == 2
    assert len(session.messages) == 4


@register_state_type
@dataclasses.dataclass(frozen=True)
class Note:
    """A module-level dataclass, as session state may hold."""

    text: str
    tags: tuple[str, ...] = ()


async def test_restarted_store_sees_the_conversation(durable: StoreFactory, sid: str) -> None:
    """A new store on the same database (a restarted process) continues the session."""
    first = durable()
    model = TestModel()
    agent = Agent(model, registry=Registry(), sessions=first)
    await agent.run("one", session_id=sid)
    saved = await first.commit(
        SessionUpdate(sid, 1, 2, (Message.user("two"),), {"note": Note("n", ("a",))})
    )
    await first.aclose()
    second = durable()
    loaded = await second.load(sid)
    assert loaded == saved
    assert loaded.state["note"] == Note("n", ("a",))
    await Agent(model, registry=Registry(), sessions=second).run("three", session_id=sid)
    assert [m.text for m in model.requests[-1].messages] == ["one", "one", "two", "three"]


async def test_stores_on_one_database_see_each_others_commits(
    durable: StoreFactory, sid: str
) -> None:
    """Two stores (two processes) on one database: each load sees the other's commits."""
    a, b = durable(), durable()
    await a.commit(SessionUpdate(sid, 0, 0, (Message.user("a1"),)))
    assert texts(await b.load(sid)) == ["a1"]
    await b.commit(SessionUpdate(sid, 1, 1, (Message.user("b1"),)))
    assert texts(await a.load(sid)) == ["a1", "b1"]  # a remembered version 1: reads the rest
    await a.commit(SessionUpdate(sid, 2, 1, (Message.user("a2"),)))  # shortened by a
    assert texts(await b.load(sid)) == ["a1", "a2"]
    assert await b.commit(SessionUpdate(sid, 2, 2, (Message.user("stale"),))) is None
    await b.delete(sid)
    await b.commit(SessionUpdate(sid, 0, 0, (Message.user("fresh"),)))
    reloaded = await a.load(sid)  # a remembers another life of the id at version 3
    assert texts(reloaded) == ["fresh"]
    assert reloaded.version == 1


async def test_concurrent_commits_on_two_stores_one_wins(durable: StoreFactory, sid: str) -> None:
    """Two stores commit against one version at once: exactly one applies."""
    a, b = durable(), durable()
    await a.commit(SessionUpdate(sid, 0, 0, (Message.user("start"),)))
    results = await asyncio.gather(
        *(
            store.commit(SessionUpdate(sid, 1, 1, (Message.user(name),)))
            for store, name in ((a, "a"), (b, "b"), (a, "a2"), (b, "b2"))
        )
    )
    winners = [r for r in results if r is not None]
    assert len(winners) == 1
    assert winners[0].version == 2
    assert await a.load(sid) == winners[0] == await b.load(sid)


async def test_a_store_commits_to_a_session_it_never_loaded(
    durable: StoreFactory, sid: str
) -> None:
    """A store that did not load the session reads its kept history inside the commit."""
    a, b = durable(), durable()
    await a.commit(SessionUpdate(sid, 0, 0, tuple(Message.user(str(i)) for i in range(3))))
    saved = await b.commit(SessionUpdate(sid, 1, 2, (Message.user("x"),), {"k": 1}))
    assert texts(saved) == ["0", "1", "x"]
    assert await a.load(sid) == saved

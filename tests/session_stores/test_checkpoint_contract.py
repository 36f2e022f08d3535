"""The checkpoint-store contract, on every kind of store: save, load, claim, change.

A resume claims a checkpoint, then changes it only under that claim; a change may carry the
session commit of the resumed reply and the checkpoint of its next pause, and applies whole
or not at all. Times are passed in (``now``), so no test waits for a claim to lapse.
"""

from __future__ import annotations

import asyncio
import math
import socket
import time
from dataclasses import replace
from typing import Any

import pytest
from codec_strategies import a_checkpoint
from conftest import StoreFactory

from fncore import (
    Approve,
    ChangeResult,
    Checkpoint,
    CheckpointChange,
    Message,
    RunResult,
    SessionUpdate,
)
from fncore.errors import NotSerializable

LEASE = 60.0


def paused(sid: str, **changes: Any) -> Checkpoint:
    """A checkpoint made now, of a run paused on a new session ``sid``, expiring in an hour."""
    now = time.time()
    fields: dict[str, Any] = {"id": f"cp-{sid}", "session_id": sid, "created": now}
    fields["expires"] = now + 3600
    return a_checkpoint(**{**fields, **changes})


def decided(checkpoint: Checkpoint, claim: str) -> Checkpoint:
    """``checkpoint`` once its decisions were taken, still held under ``claim``."""
    return replace(
        checkpoint,
        stage="decided",
        decisions={"call_1": Approve()},
        key="k3y",
        state={"calls": [1, 2]},
        claim=claim,
        claim_until=time.time() + LEASE,
    )


def done(checkpoint: Checkpoint) -> Checkpoint:
    """``checkpoint`` once its resumed reply ended (the claim given up)."""
    outcome = RunResult("3", (Message.assistant("3"),), stop_reason="completed")
    return replace(
        decided(checkpoint, ""), stage="done", outcome=outcome, claim="", claim_until=0.0
    )


def turn(sid: str, version: int = 0) -> SessionUpdate:
    """The session commit of the resumed reply."""
    return SessionUpdate(sid, version, 0, (Message.user("hi"), Message.assistant("3")))


async def claimed(store: Any, checkpoint: Checkpoint, claim: str = "mine") -> Checkpoint:
    """Save ``checkpoint`` and claim it; it as stored then."""
    await store.save_checkpoint(checkpoint)
    now = time.time()
    held = await store.claim_checkpoint(checkpoint.id, claim, now + LEASE, now)
    assert held is not None
    assert held.claim == claim
    return held  # type: ignore[no-any-return]


async def test_a_saved_checkpoint_loads_as_saved(store: Any, sid: str) -> None:
    """A checkpoint reads back equal, unclaimed; an unknown id is ``None``."""
    checkpoint = paused(sid, state={"seen": ("a", b"\x00"), "ids": {1, 2}}, metadata={"u": "ada"})
    await store.save_checkpoint(checkpoint)
    assert await store.load_checkpoint(checkpoint.id) == checkpoint
    assert await store.load_checkpoint("no-such-checkpoint") is None
    assert await store.claim_checkpoint("no-such-checkpoint", "mine", 2.0, 1.0) is None


async def test_a_loaded_checkpoints_state_is_its_own(store: Any, sid: str) -> None:
    """Changing a loaded checkpoint's state in place changes nothing stored."""
    await store.save_checkpoint(paused(sid))
    first = await store.load_checkpoint(f"cp-{sid}")
    first.state["calls"].append(99)
    again = await store.load_checkpoint(f"cp-{sid}")
    assert again.state["calls"] == [1]


async def test_a_claim_is_taken_only_when_free(store: Any, sid: str) -> None:
    """Taken when free; refused while another holds it; taken again once that lapsed."""
    checkpoint = paused(sid)
    await store.save_checkpoint(checkpoint)
    now = time.time()
    first = await store.claim_checkpoint(checkpoint.id, "first", now + 10, now)
    assert (first.claim, first.claim_until) == ("first", now + 10)
    refused = await store.claim_checkpoint(checkpoint.id, "second", now + 15, now + 5)
    assert (refused.claim, refused.claim_until) == ("first", now + 10)
    assert refused == first
    taken = await store.claim_checkpoint(checkpoint.id, "second", now + 21, now + 11)
    assert (taken.claim, taken.claim_until) == ("second", now + 21)
    assert replace(taken, claim="", claim_until=0.0) == checkpoint
    assert await store.load_checkpoint(checkpoint.id) == taken


async def test_a_done_checkpoint_is_never_claimed(store: Any, sid: str) -> None:
    """A finished resume's checkpoint stays unclaimed: a repeat only reads its outcome."""
    finished = done(paused(sid))
    await store.save_checkpoint(finished)
    now = time.time()
    assert await store.claim_checkpoint(finished.id, "mine", now + LEASE, now) == finished
    assert await store.load_checkpoint(finished.id) == finished


async def test_a_change_applies_only_under_its_claim(store: Any, sid: str) -> None:
    """``ok`` under the claim; ``lost`` under another or one taken over (nothing written)."""
    held = await claimed(store, paused(sid), "first")
    assert (
        await store.change_checkpoint(CheckpointChange(decided(held, "x"), "x"))
        is ChangeResult.LOST
    )
    assert await store.load_checkpoint(held.id) == held
    step = decided(held, "first")
    assert await store.change_checkpoint(CheckpointChange(step, "first")) is ChangeResult.OK
    assert await store.load_checkpoint(held.id) == step
    later = step.claim_until + 1
    taken = await store.claim_checkpoint(held.id, "second", later + LEASE, later)
    assert taken.claim == "second"
    late = CheckpointChange(done(held), "first", turn(sid))
    assert await store.change_checkpoint(late) is ChangeResult.LOST
    assert await store.load_checkpoint(held.id) == taken
    assert await store.load(sid) is None
    missing = CheckpointChange(replace(step, id="no-such-checkpoint"), "first")
    assert await store.change_checkpoint(missing) is ChangeResult.LOST
    assert await store.load_checkpoint("no-such-checkpoint") is None


async def test_a_change_commits_its_session_update_with_it(store: Any, sid: str) -> None:
    """The reply's end: the checkpoint is done and the session committed, together."""
    held = await claimed(store, paused(sid))
    change = CheckpointChange(done(held), "mine", turn(sid))
    assert await store.change_checkpoint(change) is ChangeResult.OK
    assert await store.load_checkpoint(held.id) == done(held)
    session = await store.load(sid)
    assert session is not None
    assert session.version == 1
    assert [m.text for m in session.messages] == ["hi", "3"]


async def test_a_session_that_moved_on_writes_neither(store: Any, sid: str) -> None:
    """``conflict``: the session, the checkpoint and its follow-up stay as they were."""
    held = await claimed(store, paused(sid))
    elsewhere = await store.commit(SessionUpdate(sid, 0, 0, (Message.user("elsewhere"),)))
    follow = paused(sid, id="next")
    change = CheckpointChange(done(held), "mine", turn(sid), follow)
    assert await store.change_checkpoint(change) is ChangeResult.CONFLICT
    assert await store.load_checkpoint(held.id) == held  # still claimed: release, retry
    assert await store.load(sid) == elsewhere
    assert await store.load_checkpoint("next") is None


async def test_a_lost_claim_writes_no_session_and_no_follow_up(store: Any, sid: str) -> None:
    """``lost`` with a session commit and a next checkpoint: neither is written."""
    held = await claimed(store, paused(sid), "first")
    later = held.claim_until + 1
    await store.claim_checkpoint(held.id, "second", later + LEASE, later)
    change = CheckpointChange(done(held), "first", turn(sid), paused(sid, id="next"))
    assert await store.change_checkpoint(change) is ChangeResult.LOST
    assert await store.load(sid) is None
    assert await store.load_checkpoint("next") is None


async def test_a_follow_up_checkpoint_is_written_with_the_change(store: Any, sid: str) -> None:
    """The resumed reply paused again: its checkpoint is done, the next one saved, at once."""
    held = await claimed(store, paused(sid))
    follow = paused(sid, id="next", state={"calls": [1, 2, 3]})
    assert await store.change_checkpoint(CheckpointChange(done(held), "mine", follow=follow)) is (
        ChangeResult.OK
    )
    assert await store.load_checkpoint(held.id) == done(held)
    assert await store.load_checkpoint("next") == follow
    assert await store.load(sid) is None  # the session waits for the reply's end
    now = time.time()
    assert (await store.claim_checkpoint("next", "mine", now + LEASE, now)).claim == "mine"


async def test_expired_checkpoints_are_purged_on_save(store: Any, sid: str) -> None:
    """A save forgets the checkpoints expired by its time; the others stay."""
    now = time.time()
    old = paused(sid, id="old", created=now - 100, expires=now - 1)
    kept = paused(sid, id="kept", created=now - 100, expires=now + 100)
    forever = paused(sid, id="forever", created=now - 100, expires=math.inf)
    for checkpoint in (old, kept, forever):
        await store.save_checkpoint(checkpoint)
    assert await store.load_checkpoint("old") == old  # not expired when the last save ran
    await store.save_checkpoint(paused(sid, id="new", created=now))
    assert await store.load_checkpoint("old") is None
    assert await store.load_checkpoint("kept") == kept
    assert await store.load_checkpoint("forever") == forever


async def test_unstorable_state_is_refused_at_save_and_nothing_is_written(
    durable: StoreFactory, sid: str
) -> None:
    """`NotSerializable` at save: no checkpoint written, and not even the purge applied."""
    store = durable()
    now = time.time()
    old = paused(sid, id="old", created=now - 100, expires=now - 1)
    await store.save_checkpoint(old)
    with socket.socket() as unstorable, pytest.raises(NotSerializable, match="reply state 'c"):
        await store.save_checkpoint(paused(sid, id="bad", state={"conn": unstorable}))
    assert await store.load_checkpoint("bad") is None
    assert await durable().load_checkpoint("old") == old


async def test_stores_on_one_database_share_claims_and_changes(
    durable: StoreFactory, sid: str
) -> None:
    """Two processes' stores: of claims at once one wins; each sees the other's changes."""
    a, b = durable(), durable()
    checkpoint = paused(sid)
    await a.save_checkpoint(checkpoint)
    now = time.time()
    claims = [f"claim-{i}" for i in range(6)]
    got = await asyncio.gather(
        *(
            (a, b)[i % 2].claim_checkpoint(checkpoint.id, c, now + LEASE, now)
            for i, c in enumerate(claims)
        )
    )
    winners = [c for c, held in zip(claims, got, strict=True) if held.claim == c]
    assert len(winners) == 1
    assert {held.claim for held in got} == set(winners)
    winner = (a, b)[claims.index(winners[0]) % 2]
    other = b if winner is a else a
    held = replace(got[0], claim=winners[0])
    lost = CheckpointChange(done(held), "claim-x", turn(sid))
    assert await other.change_checkpoint(lost) is ChangeResult.LOST
    assert await winner.change_checkpoint(CheckpointChange(done(held), winners[0], turn(sid))) is (
        ChangeResult.OK
    )
    assert await other.load_checkpoint(checkpoint.id) == done(held)
    session = await other.load(sid)
    assert session is not None
    assert session.version == 1

"""Claiming a checkpoint to resume it: one resume at a time, under a lease it keeps renewing.

A resume claims the checkpoint in the store before it runs anything; every write it makes
then goes through its `ClaimedCheckpoint`, and applies only while the claim holds. A
process that dies while resuming stops renewing, and the checkpoint is free again once the
lease lapses.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from collections.abc import Awaitable, Mapping
from dataclasses import replace
from typing import TypeVar, final

from returns.result import Failure, Success

from fncore.core import (
    AgentError,
    ChangeResult,
    Checkpoint,
    CheckpointBusy,
    CheckpointChange,
    CheckpointError,
    CheckpointExpired,
    CheckpointMismatch,
    CheckpointNotFound,
    Decision,
    DecisionConflict,
    RunOutcome,
    SessionConflict,
    SessionUpdate,
    Tool,
)
from fncore.core._decisions import decision_key, decisions_for
from fncore.runtime._finish import absorb, finish
from fncore.session_stores._protocols import CheckpointStore

_T = TypeVar("_T")


@final
class ClaimedCheckpoint:
    """A checkpoint this process claimed: every write goes through it, one at a time."""

    __slots__ = ("claim", "current", "lease", "lock", "store")

    def __init__(
        self, store: CheckpointStore, current: Checkpoint, claim: str, lease: float
    ) -> None:
        self.store = store
        self.current = current
        self.claim = claim
        self.lease = lease
        self.lock = asyncio.Lock()

    async def write(
        self,
        checkpoint: Checkpoint,
        *,
        session: SessionUpdate | None = None,
        follow: Checkpoint | None = None,
    ) -> AgentError | None:
        """Store ``checkpoint`` (with the session commit, the next checkpoint) under the claim.

        The write runs to its end even if cancelled meanwhile. Returns the error, if it did
        not apply.
        """
        cid = checkpoint.id
        async with self.lock:
            if checkpoint.stage != "done":
                checkpoint = replace(checkpoint, claim_until=time.time() + self.lease)
            change = CheckpointChange(checkpoint, self.claim, session, follow)
            outcome, raised, cancels = await finish(self.store.change_checkpoint(change))
            if outcome == ChangeResult.OK:
                self.current = checkpoint
                absorb(cancels)
                return None
        if cancels:
            raise asyncio.CancelledError
        if raised is not None:
            return CheckpointError(
                message=(
                    f"the session store could not write checkpoint {cid!r}: "
                    f"{type(raised).__name__}: {raised}; it is as it was"
                ),
                checkpoint_id=cid,
            )
        if outcome == ChangeResult.CONFLICT and session is not None:
            return SessionConflict(
                message=(
                    f"session {session.session_id!r} changed while the paused run was "
                    "resumed; nothing was saved: resume it again"
                ),
                session_id=session.session_id,
                version=session.version,
            )
        return CheckpointBusy(
            message=(
                f"checkpoint {cid!r} was claimed by another resume while this one ran (it "
                "did not renew its claim in time); nothing of this resume was saved"
            ),
            checkpoint_id=cid,
        )

    async def renew(self) -> None:
        """Extend the claim every third of the lease, for as long as the resume runs."""
        while True:
            await asyncio.sleep(self.lease / 3)
            if await self.write(self.current) is not None:
                return

    async def release(self) -> None:
        """Give the claim up (best effort), so the checkpoint can be resumed again at once."""
        async with self.lock:
            released = replace(self.current, claim="", claim_until=0.0)
            change = CheckpointChange(released, self.claim)
            with contextlib.suppress(Exception):
                if await self.store.change_checkpoint(change) == ChangeResult.OK:
                    self.current = released

    async def renewing(self, work: Awaitable[_T]) -> _T:
        """Await ``work`` while renewing the claim; give the claim up if ``work`` raises."""
        renewing = asyncio.ensure_future(self.renew())
        try:
            result = await work
        except BaseException:
            renewing.cancel()
            await finish(self.release())
            raise
        renewing.cancel()
        return result


Claimed = tuple[ClaimedCheckpoint, dict[str, Decision], str]
"""A claimed checkpoint, the decisions by call id, and their idempotency key."""


async def claim(
    store: CheckpointStore,
    checkpoint_id: str,
    decisions: Mapping[str, Decision] | Decision,
    *,
    config: str,
    tools: Mapping[str, Tool],
    lease: float,
    token: str | None = None,
) -> Claimed | RunOutcome:
    """Claim checkpoint ``checkpoint_id`` to resume it with ``decisions``.

    Args:
        store: Where the checkpoint is.
        checkpoint_id: The paused run's checkpoint.
        decisions: A decision per waiting call id, or one decision for every one.
        config: The resuming agent's `config_hash`; the checkpoint's must be the same.
        tools: The resuming agent's tools, which edited arguments must fit.
        lease: Seconds the claim holds unless renewed.
        token: The claim's token (default: a new one). A durable resume gives its run's
            id, so its replay after a crash holds the claim it took before.

    Returns:
        The claim, the decisions and their key; or the outcome to return at once: the stored
        one of a finished resume with the same decisions, or why it cannot be resumed (the
        checkpoint is then as it was and nothing ran).
    """
    try:
        checkpoint = await store.load_checkpoint(checkpoint_id)
    except Exception as exc:
        return Failure(_unreadable(checkpoint_id, exc))
    checked = _check(checkpoint_id, checkpoint, decisions, config, tools)
    if not isinstance(checked, tuple):
        return checked
    checkpoint, decided, key = checked
    if checkpoint.stage == "done":
        return _replay(checkpoint, key)
    if token is None:
        token = uuid.uuid4().hex
    now = time.time()
    try:
        claimed = await store.claim_checkpoint(checkpoint_id, token, now + lease, now)
    except Exception as exc:
        return Failure(_unreadable(checkpoint_id, exc))
    if claimed is None:
        return Failure(_not_found(checkpoint_id))
    if claimed.claim != token:
        if claimed.stage == "done":
            return _replay(claimed, key)
        return Failure(
            CheckpointBusy(
                message=(
                    f"checkpoint {checkpoint_id!r} is being resumed by another caller "
                    "right now; try again once it is done"
                ),
                checkpoint_id=checkpoint_id,
            )
        )
    held = ClaimedCheckpoint(store, claimed, token, lease)
    if claimed.stage == "decided" and claimed.key != key:
        await held.release()
        return Failure(_conflict(claimed))
    return held, decided, key


def _check(
    checkpoint_id: str,
    checkpoint: Checkpoint | None,
    decisions: Mapping[str, Decision] | Decision,
    config: str,
    tools: Mapping[str, Tool],
) -> tuple[Checkpoint, dict[str, Decision], str] | Failure[AgentError]:
    """The checkpoint, the decisions by call id and their key; or why not to resume."""
    if checkpoint is None:
        return Failure(_not_found(checkpoint_id))
    if checkpoint.expires < time.time():
        return Failure(
            CheckpointExpired(
                message=(
                    f"checkpoint {checkpoint_id!r} expired (checkpoints live "
                    "checkpoint_ttl seconds); the paused run cannot go on: run it again"
                ),
                checkpoint_id=checkpoint_id,
            )
        )
    if checkpoint.config != config:
        return Failure(
            CheckpointMismatch(
                message=(
                    f"checkpoint {checkpoint_id!r} was written by agent "
                    f"{checkpoint.agent!r} with another stack (middleware, tools, "
                    "instructions or loop settings); resume it with an agent built "
                    "the same way"
                ),
                checkpoint_id=checkpoint_id,
            )
        )
    decided = decisions_for(checkpoint, decisions, tools)
    if type(decided) is not dict:
        return Failure(decided)  # type: ignore[arg-type]
    return checkpoint, decided, decision_key(decided)


def _not_found(checkpoint_id: str) -> CheckpointNotFound:
    """The error of a checkpoint the store does not have."""
    return CheckpointNotFound(
        message=(
            f"no checkpoint {checkpoint_id!r} in this agent's session store; check the id "
            "and that the agent uses the store the run paused in"
        ),
        checkpoint_id=checkpoint_id,
    )


def _unreadable(checkpoint_id: str, exc: Exception) -> CheckpointError:
    """The error of a store that raised reading (or claiming) a checkpoint."""
    return CheckpointError(
        message=(
            f"the session store could not read checkpoint {checkpoint_id!r}: "
            f"{type(exc).__name__}: {exc}; nothing ran"
        ),
        checkpoint_id=checkpoint_id,
    )


def _conflict(checkpoint: Checkpoint) -> DecisionConflict:
    return DecisionConflict(
        message=(
            f"checkpoint {checkpoint.id!r} was already resumed with other decisions; a "
            "decision is taken once: resume it with the same decisions"
        ),
        checkpoint_id=checkpoint.id,
    )


def _replay(checkpoint: Checkpoint, key: str) -> RunOutcome:
    """The stored outcome of a finished resume, for the same decisions only."""
    if checkpoint.key != key or checkpoint.outcome is None:
        return Failure(_conflict(checkpoint))
    return Success(checkpoint.outcome)

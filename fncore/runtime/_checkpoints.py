"""Checkpoints of paused runs: written when a run pauses, settled when its resume ends.

A paused run's checkpoint holds everything a fresh process needs to go on with it. A resume
(see `_claims`) ends it: marked done with the session commit, in one write, or with the next
checkpoint when the reply paused again; a failed reply frees it for another try.
"""

from __future__ import annotations

import asyncio
import contextlib
import time
import uuid
from dataclasses import replace
from types import MappingProxyType

from returns.result import Failure, Success

from fncore.core import (
    Checkpoint,
    CheckpointError,
    Decision,
    InvalidHistory,
    Message,
    ModelSettings,
    Paused,
    RunInfo,
    RunOutcome,
    RunPaused,
    RunResult,
    Session,
    ToolChoice,
)
from fncore.core._turn import session_update
from fncore.runtime._claims import ClaimedCheckpoint
from fncore.runtime._commit import store_name
from fncore.runtime._finish import absorb, finish
from fncore.session_stores._protocols import CheckpointStore


def new_checkpoint(
    run: RunInfo,
    session: Session | None,
    new_input: tuple[Message, ...],
    done: RunResult,
    choice: ToolChoice,
    settings: ModelSettings,
    *,
    agent: str,
    config: str,
    ttl: float,
) -> Checkpoint:
    """The checkpoint of ``run``, which paused with ``done``, for agent ``agent``.

    ``config`` is the agent's `config_hash`; the checkpoint lives ``ttl`` seconds.
    """
    paused: Paused = done.paused  # type: ignore[assignment]
    now = time.time()
    return Checkpoint(
        id=uuid.uuid4().hex,
        run_id=run.run_id,
        agent=agent,
        config=config,
        created=now,
        expires=now + ttl,
        session_id=None if session is None else session.id,
        session_version=0 if session is None else session.version,
        input=new_input,
        point=paused._point,  # type: ignore[arg-type]
        requests=paused.requests,
        tool_choice=choice,
        model_settings=settings,
        metadata=run.metadata,
        state=run.state.snapshot(),
        session_state=run.session_state.snapshot(),
    )


async def save_paused(
    store: CheckpointStore, run: RunInfo, done: RunResult, checkpoint: Checkpoint
) -> RunOutcome:
    """Save the checkpoint of a paused run; the result naming it (the session waits)."""
    _, raised, cancels = await finish(store.save_checkpoint(checkpoint))
    if raised is not None:
        if cancels:
            raise asyncio.CancelledError
        return Failure(
            CheckpointError(
                message=(
                    f"the run paused, and the session store could not save its "
                    f"checkpoint: {type(raised).__name__}: {raised}; nothing was saved"
                ),
                checkpoint_id=checkpoint.id,
            )
        )
    absorb(cancels)
    return Success(announce(run, done, checkpoint))


async def settle(
    held: ClaimedCheckpoint,
    result: RunOutcome,
    run: RunInfo,
    session: Session | None,
    new_input: tuple[Message, ...],
    decided: dict[str, Decision],
    key: str,
    follow: Checkpoint | None,
) -> RunOutcome:
    """End a resumed reply's checkpoint.

    It is marked done with the session commit (or with ``follow``, the next checkpoint, if
    the reply paused again); a failed reply frees it for another try.
    """
    if type(result) is not Success:
        await held.release()
        return result
    done: RunResult = result.unwrap()
    update = None
    if follow is not None:
        done = announce(None, done, follow)
    elif session is not None:
        planned = session_update(session, new_input, done, run.session_state.snapshot())
        if type(planned) is InvalidHistory:
            await held.release()
            return Failure(planned)
        update = planned[0]  # type: ignore[index]
    ended = replace(
        held.current,
        stage="done",
        decisions=MappingProxyType(decided),
        key=key,
        outcome=done,
        claim="",
        claim_until=0.0,
    )
    error = await held.write(ended, session=update, follow=follow)
    if error is not None:
        await held.release()
        return Failure(error)
    if follow is not None:
        announce(run, done, follow)
    return Success(done)


def announce(run: RunInfo | None, done: RunResult, checkpoint: Checkpoint) -> RunResult:
    """``done`` naming its saved ``checkpoint``; streamed as `RunPaused` to ``run``'s consumer."""
    paused = Paused(checkpoint.id, checkpoint.requests)
    if run is not None and run.emit is not None:
        with contextlib.suppress(Exception):
            run.emit(RunPaused(paused))
    return replace(done, paused=paused)


def no_checkpoints(store: object, checkpoint_id: str) -> CheckpointError:
    """The error of a store that keeps no checkpoints (so a run cannot pause)."""
    return CheckpointError(
        message=(
            f"session store {store_name(store)} keeps no checkpoints, so a run cannot "
            "pause; use one of fncore's stores (memory://, sqlite:///, postgresql://) or "
            "implement CheckpointStore"
        ),
        checkpoint_id=checkpoint_id,
    )

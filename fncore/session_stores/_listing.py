"""Which checkpoints wait for decisions: the listing every checkpoint store shares.

A checkpoint waits while its stage is ``paused``, it has not expired, and nobody holds a
claim on it (a claim that lapsed is nobody's). A ``decided`` one does not: its decisions
were taken, and only a resume with the same decisions goes on with it.
"""

from __future__ import annotations

import time
from collections.abc import Iterable, Mapping

from fncore.core import Checkpoint
from fncore.session_stores._protocols import CheckpointInfo

_MISSING = object()


def waiting(checkpoint: Checkpoint, now: float) -> bool:
    """Whether ``checkpoint`` waits for decisions at ``now``."""
    c = checkpoint
    return c.stage == "paused" and c.expires >= now and (not c.claim or c.claim_until < now)


def clock(now: float | None, limit: int | None) -> float:
    """``now``, or the clock's time; after checking ``limit``.

    Raises:
        ValueError: if ``limit`` is negative.
    """
    if limit is not None and limit < 0:
        msg = f"limit must be 0 or more (or None for all), not {limit}"
        raise ValueError(msg)
    return time.time() if now is None else now


def listed(
    checkpoints: Iterable[Checkpoint],
    now: float,
    *,
    limit: int | None,
    agent: str | None,
    metadata: Mapping[str, object] | None,
) -> list[CheckpointInfo]:
    """The ``checkpoints`` waiting at ``now`` that match, oldest first (then by id).

    Args:
        checkpoints: The checkpoints to choose from.
        now: The time to judge claims and expiry by.
        limit: At most this many (the oldest); ``None`` for all.
        agent: Only those of the agent of this name.
        metadata: Only those whose run metadata holds each of these items.
    """
    wanted = dict(metadata or {})
    found = sorted(
        (
            c
            for c in checkpoints
            if waiting(c, now)
            and (agent is None or c.agent == agent)
            and all(c.metadata.get(k, _MISSING) == v for k, v in wanted.items())
        ),
        key=lambda c: (c.created, c.id),
    )
    return [
        CheckpointInfo(
            c.id, c.agent, c.run_id, c.session_id, c.created, c.expires, c.requests, c.metadata
        )
        for c in found[:limit]
    ]

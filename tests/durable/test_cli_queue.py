"""Four ``fncore worker`` processes share one PostgreSQL queue of 200 runs; one is SIGKILLed.

Every run finishes exactly once, the queue's global concurrency is never exceeded, and the
runs of the killed worker are taken over by its replacement (``--take-over``). Concurrency
is measured inside the tool, in a table that survives a SIGKILL: rows ``enter`` and
``exit`` ordered by a sequence, a logical clock; the test adds a ``killed`` row for the
killed worker's pid, which closes what it left open.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Sequence
from pathlib import Path

import psycopg
from durable_support import (
    SERVING,
    Running,
    agent_env,
    field,
    fncore,
    reached,
    submit,
    wait_until,
)

RUNS = 200
WORKERS = 4
GLOBAL = 3
"""``[durable] global_concurrency``: fewer than the workers, so the queue must hold runs."""
HELD = "job-60"
"""The job whose tool holds (once) until its worker is killed."""


def _max_open(rows: Sequence[tuple[int, str, int, str]]) -> int:
    """The most tool calls open at once, over the gauge's rows in sequence order."""
    running: dict[int, set[str]] = defaultdict(set)
    most = 0
    for _, job, pid, kind in rows:
        if kind == "enter":
            running[pid].add(job)
        elif kind == "exit":
            running[pid].discard(job)
        else:  # killed: what its process left open ended with it
            running.pop(pid, None)
        most = max(most, sum(map(len, running.values())))
    return most


def _rows(url: str) -> list[tuple[int, str, int, str]]:
    with psycopg.connect(url) as connection:
        return connection.execute("SELECT seq, job, pid, kind FROM gauge ORDER BY seq").fetchall()


def _count(url: str, query: str) -> int:
    with psycopg.connect(url) as connection:
        row = connection.execute(query).fetchone()
    assert row is not None
    return int(row[0])


def test_four_workers_run_200_queued_runs_once_each_within_the_global_limit(
    tmp_path: Path, gauge: str
) -> None:
    """200 runs, 4 workers, one SIGKILLed while it holds a run: all 200 finish exactly once."""
    env = agent_env(
        tmp_path,
        durable=gauge,
        gauge=gauge,
        hold=HELD,
        extra={
            "FNCORE_DURABLE__GLOBAL_CONCURRENCY": str(GLOBAL),
            "FNCORE_DURABLE__WORKER_CONCURRENCY": "1",
            "FNCORE_DURABLE__POLLING_INTERVAL": "0.05",
        },
    )
    agent = ("--agent", "durable_agents:queue")
    homes = [tmp_path / f"w{i}" for i in range(WORKERS + 1)]
    for home in homes:
        home.mkdir()
    workers = {
        f"w{i}": Running(homes[i], env, "worker", *agent, "--executor-id", f"w{i}")
        for i in range(WORKERS)
    }
    for worker in workers.values():
        worker.stderr_line(SERVING)
    run_ids = submit(gauge, "fncore-runs", env, [f"job-{n}" for n in range(RUNS)])
    assert len(set(run_ids)) == RUNS

    # Kill the worker holding HELD (its only run: worker_concurrency is 1), mark it in
    # the gauge, and start a replacement that takes its runs over.
    pid = reached(tmp_path, HELD, next(iter(workers.values())))
    dead = next(name for name, worker in workers.items() if worker.pid == pid)
    workers.pop(dead).kill()
    with psycopg.connect(gauge, autocommit=True) as connection:
        connection.execute(
            "INSERT INTO gauge (job, pid, kind) VALUES (%s, %s, 'killed')", (HELD, pid)
        )
    workers["w4"] = Running(
        homes[WORKERS], env, "worker", *agent, "--executor-id", "w4", "--take-over", dead
    )

    done = "SELECT count(*) FROM dbos.workflow_status WHERE status = 'SUCCESS'"
    wait_until(lambda: _count(gauge, done) == RUNS, f"{RUNS} runs to succeed")
    for name, worker in workers.items():
        status, _ = worker.stop()
        assert status == 0, (name, worker.stderr())
        assert f"worker {name} draining" in worker.stderr()

    rows = _rows(gauge)
    exits: dict[str, int] = defaultdict(int)
    enters: dict[str, int] = defaultdict(int)
    for _, job, _, kind in rows:
        if kind == "exit":
            exits[job] += 1
        elif kind == "enter":
            enters[job] += 1
    assert exits == {f"job-{n}": 1 for n in range(RUNS)}  # every run's tool finished once
    assert enters == {**exits, HELD: 2}  # only the held call ran again
    assert _max_open(rows) <= GLOBAL
    statuses = "SELECT count(*) FROM dbos.workflow_status WHERE status <> 'SUCCESS'"
    assert _count(gauge, statuses) == 0
    held = fncore(tmp_path, env, "runs", "show", run_ids[60]).stdout
    assert field(held, "output") == f"finished {HELD}"
    assert field(held, "executor") not in {dead, "-"}  # taken over: back on the queue

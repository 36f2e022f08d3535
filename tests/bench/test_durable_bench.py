"""Smoke tests of bench/durable.py: fncore's side on SQLite and PostgreSQL, and a missing peer.

Pydantic AI is never installed with fncore: ``--no-peer`` measures fncore's side alone, and
a ``--peer-python`` without Pydantic AI stops the script with the line saying what to
install.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

from bench_runs import BENCH, check_figures, quick_run

DATABASES = ("sqlite", "postgres")
CLOCKS = ("", "_cpu")
MEASURED = tuple(
    f"{db}_{kind}{clock}_us"
    for db in DATABASES
    for kind in ("plain", "durable")
    for clock in CLOCKS
)
"""Times measured directly: positive."""
DERIVED = tuple(
    f"{db}_{kind}{clock}_us"
    for db in DATABASES
    for kind in ("step", "floor_step")
    for clock in CLOCKS
)
"""Differences of measurements, per step: finite numbers."""


def test_quick_run_measures_fncore_on_both_databases() -> None:
    """--quick --no-peer --json gives fncore's plain and durable runs and its cost per step."""
    figures, table = quick_run("durable.py", "--no-peer")
    check_figures(figures, MEASURED, DERIVED)
    assert set(figures) == {*MEASURED, *DERIVED, "rounds", "runs", "steps", "dbos_version"}
    assert figures["steps"] == 7
    assert "SQLite" in table
    assert "PostgreSQL" in table
    assert "Pydantic AI" not in table


def test_a_peer_python_without_pydantic_ai_stops_with_what_to_install(tmp_path: Path) -> None:
    """A --peer-python lacking Pydantic AI: exit status 2, naming pydantic-ai-slim[dbos]."""
    peer = tmp_path / "python-without-pydantic-ai"
    peer.write_text(
        f'#!/bin/sh\nexec {shlex.quote(sys.executable)} -c {shlex.quote(HIDING)} "$@"\n'
    )
    peer.chmod(0o755)
    done = subprocess.run(
        [sys.executable, str(BENCH / "durable.py"), "--quick", "--peer-python", str(peer)],
        capture_output=True,
        text=True,
        timeout=120,
        check=False,
    )
    assert done.returncode == 2, done.stderr
    assert done.stdout == ""
    assert 'pip install "pydantic-ai-slim[dbos]"' in done.stderr
    assert done.stderr.strip().splitlines()[-1].startswith("durable.py: the pydantic_ai side")


HIDING = """
import os, runpy, sys
sys.modules["pydantic_ai"] = None  # hidden, whether this interpreter has it or not
sys.argv = sys.argv[1:]
sys.path.insert(0, os.path.dirname(sys.argv[0]))
runpy.run_path(sys.argv[0], run_name="__main__")
"""

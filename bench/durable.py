"""Measure what a durable run costs per step: fncore's and Pydantic AI's, on SQLite and PostgreSQL.

The workload (``_durable_side.py``): one user message; the model (in-process, zero latency)
asks for the tool ``add`` three times, one call a round, then answers with text. A durable
run of it records 7 steps: 4 model calls and 3 tool calls.

Each framework runs it not durable (``plain``) and durable, on DBOS, on one database kind
at a time: a SQLite file in a temporary folder, then a PostgreSQL the benchmark starts in a
temporary folder with the server's default durability (``--postgres URL`` uses yours: a
server where the benchmark may create databases). DBOS keeps one instance per process, on
one database, so each framework runs in a process of its own (a *side*), driven by this
one over its stdin and stdout; the two sides take turns, round by round, so that both are
timed in the same stretch of time, and within a side the variants take turns too.

* fncore (``_durable_fncore.py``, this interpreter): ``agent.run`` against
  ``DurableRuntime.run``, without a session;
* Pydantic AI (``_durable_pydantic_ai.py``, ``--peer-python``, a venv of its own with
  ``pydantic-ai-slim[dbos]``): its agent on a ``FunctionModel`` against the same agent
  wrapped in ``DBOSAgent``, and with the ``DBOSDurability`` capability inside a workflow;
  its tool is a ``@DBOS.step``, so that its runs record the same 7 steps;
* DBOS alone (in fncore's side): a bare workflow of 7 steps that do nothing, called
  directly; ``<db>_floor_step_us`` is its time over 7, the floor of any framework's cost
  per step on that database.

Each figure is the minimum over rounds of the mean per run (noise only ever adds time; many
short rounds, 40 of 5 runs, so that each side finds quiet stretches of a busy machine), in
wall time (``..._us``) and in the side's CPU time, all its threads (``..._cpu_us``): the
wall time includes waiting for the database's writes to reach the disk, the CPU time is
the work of the framework, DBOS and the database client. ``<db>_step_us`` is the durable
run less the plain one, over the steps it recorded: what durability costs a step, the
workflow's own start and end shared among its steps. ``<db>_step_ratio`` is fncore's over
Pydantic AI's ``DBOSAgent``'s, ``<db>_step_ratio_durability`` over its capability's (and
``<db>_step_cpu_ratio...`` the same in CPU time): the target is a wall-time ratio of at
most 1 against both.

Usage::

    python bench/durable.py --peer-python /tmp/pyd-dbos-venv/bin/python         # full run
    python bench/durable.py --peer-python /tmp/pyd-dbos-venv/bin/python --json  # + JSON line
    python bench/durable.py --quick --no-peer    # a fast smoke run of fncore's side alone
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING, Any

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _durable_side, _measure, sessions
else:  # run as a script, whose folder is on sys.path
    import _durable_side
    import _measure
    import sessions

BENCH = Path(__file__).resolve().parent
DATABASES = ("sqlite", "postgres")
STEPS = 2 * _durable_side.CALLS + 1
"""Steps a durable run of the workload records: its model calls and its tool calls."""
PEER_VARIANTS = {"dbos_agent": "pydantic_ai", "durability": "pydantic_ai_durability"}
"""Pydantic AI's durable variants, with the prefix of their figures."""


class SideFailed(RuntimeError):
    """A side stopped before it answered; its own message is on stderr."""

    def __init__(self, name: str, status: int | None) -> None:
        super().__init__(f"the {name} side stopped (exit status {status}); see above")
        self.status = status


@dataclass
class Side:
    """One framework's process on one database, speaking ``_durable_side.py``'s protocol."""

    name: str
    process: subprocess.Popen[str]
    ready: dict[str, Any]

    @classmethod
    def start(cls, name: str, python: str, script: str, url: str) -> Side:
        """Start ``script`` under ``python`` on ``url`` and wait until it is ready."""
        process = subprocess.Popen(
            [python, str(BENCH / script), url],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
            bufsize=1,
        )
        side = cls(name, process, {})
        side.ready = side._answer()
        return side

    def _answer(self) -> dict[str, Any]:
        stdout: IO[str] | None = self.process.stdout
        line = stdout.readline() if stdout is not None else ""
        if not line:
            raise SideFailed(self.name, self.process.wait())
        answer: dict[str, Any] = json.loads(line)
        return answer

    def round(self, runs: int) -> dict[str, dict[str, float]]:
        """Each variant's mean µs per run over ``runs`` runs, by clock (wall, cpu)."""
        stdin = self.process.stdin
        if stdin is None:
            msg = "the side has no stdin"
            raise RuntimeError(msg)
        stdin.write(f"round {runs}\n")
        stdin.flush()
        return self._answer()

    def stop(self) -> None:
        """Tell the side to quit and wait for it."""
        if self.process.stdin is not None and self.process.poll() is None:
            with contextlib.suppress(BrokenPipeError):
                self.process.stdin.write("quit\n")
                self.process.stdin.close()
        try:
            self.process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


@contextlib.contextmanager
def sides(urls: dict[str, str], peer_python: str | None) -> Iterator[list[Side]]:
    """The sides on their ``urls``: fncore's, and Pydantic AI's given ``peer_python``."""
    started: list[Side] = []
    try:
        started.append(Side.start("fncore", sys.executable, "_durable_fncore.py", urls["fncore"]))
        if peer_python is not None:
            script = "_durable_pydantic_ai.py"
            started.append(Side.start("pydantic_ai", peer_python, script, urls["pydantic_ai"]))
        yield started
    finally:
        for side in started:
            side.stop()


def _check_steps(side: Side) -> None:
    for variant, names in side.ready["steps"].items():
        if len(names) != STEPS:
            msg = f"{side.name} {variant} recorded {len(names)} steps, not {STEPS}: {names}"
            raise RuntimeError(msg)


CLOCKS = {"wall": "", "cpu": "_cpu"}
"""Each clock a side reads, with the suffix of its figures' names."""


def _durable_figures(
    name: str, best: dict[str, dict[str, float]], variant: str, plain: str
) -> dict[str, float]:
    """``<name>_durable_us`` and ``<name>_step_us`` of one variant, for each clock."""
    figures: dict[str, float] = {}
    for clock, suffix in CLOCKS.items():
        durable = best[clock][variant]
        figures[f"{name}_durable{suffix}_us"] = durable
        figures[f"{name}_step{suffix}_us"] = (durable - best[clock][plain]) / STEPS
    return figures


def measure_on(database: str, urls: dict[str, str], args: argparse.Namespace) -> dict[str, Any]:
    """The figures of every side on one database kind."""
    best: dict[str, dict[str, dict[str, float]]] = {}
    with sides(urls, None if args.no_peer else args.peer_python) as started:
        for side in started:
            _check_steps(side)
            side.round(max(1, args.runs // 5))  # a warm-up round, not counted
            best[side.name] = {clock: {} for clock in CLOCKS}
        for number in range(args.rounds):
            for side in started if number % 2 == 0 else reversed(started):
                for clock, times in side.round(args.runs).items():
                    kept = best[side.name][clock]
                    for variant, us in times.items():
                        kept[variant] = min(kept.get(variant, us), us)
        ready = {side.name: side.ready for side in started}
    figures: dict[str, Any] = {"dbos_version": ready["fncore"]["dbos"]}
    for clock, suffix in CLOCKS.items():
        figures[f"{database}_plain{suffix}_us"] = best["fncore"][clock]["plain"]
        # a bare workflow: all of its time is what durability costs
        figures[f"{database}_floor_step{suffix}_us"] = best["fncore"][clock]["floor"] / STEPS
    figures.update(_durable_figures(database, best["fncore"], "durable", "plain"))
    if "pydantic_ai" not in best:
        return figures
    figures["pydantic_ai_version"] = ready["pydantic_ai"]["version"]
    for clock, suffix in CLOCKS.items():
        figures[f"pydantic_ai_{database}_plain{suffix}_us"] = best["pydantic_ai"][clock]["plain"]
    for variant, prefix in PEER_VARIANTS.items():
        name = f"{prefix}_{database}"
        figures.update(_durable_figures(name, best["pydantic_ai"], variant, "plain"))
        ratio = "" if variant == "dbos_agent" else "_durability"
        for suffix in CLOCKS.values():
            mine = figures[f"{database}_step{suffix}_us"]
            figures[f"{database}_step{suffix}_ratio{ratio}"] = (
                mine / figures[f"{name}_step{suffix}_us"]
            )
    return figures


def measure(args: argparse.Namespace) -> dict[str, Any]:
    """Every figure: SQLite first, then PostgreSQL."""
    figures: dict[str, Any] = {"rounds": args.rounds, "runs": args.runs, "steps": STEPS}
    with tempfile.TemporaryDirectory() as folder:
        urls = {name: f"sqlite:///{folder}/{name}.sqlite" for name in ("fncore", "pydantic_ai")}
        figures.update(measure_on("sqlite", urls, args))
    with sessions.postgres(args.postgres) as server:
        base = server.rsplit("/", 1)[0]
        urls = {name: f"{base}/bench_{name}" for name in ("fncore", "pydantic_ai")}
        figures.update(measure_on("postgres", urls, args))
    return figures


LABELS = {"sqlite": "SQLite", "postgres": "PostgreSQL"}
PEER_TITLES = {"pydantic_ai": "DBOSAgent", "pydantic_ai_durability": "DBOSDurability"}


def _row(label: str, figures: dict[str, Any], plain: str, name: str) -> str:
    cells = ""
    for suffix in CLOCKS.values():
        for key in (f"{plain}{suffix}_us", f"{name}_durable{suffix}_us", f"{name}_step{suffix}_us"):
            cells += f"{figures[key]:>10.0f}"
    return f"  {label:<36}{cells}"


def _floor_row(figures: dict[str, Any], database: str) -> str:
    cells = ""
    for suffix in CLOCKS.values():
        step = figures[f"{database}_floor_step{suffix}_us"]
        cells += f"{'':>10}{step * STEPS:>10.0f}{step:>10.0f}"
    return f"  {'DBOS alone: 7 steps doing nothing':<36}{cells}"


def report(figures: dict[str, Any]) -> str:
    """The figures as a human-readable table."""
    lines = [
        f"durable runs, {figures['steps']} steps each ({figures['rounds']} rounds of "
        f"{figures['runs']} runs; minimum of round means, µs; dbos {figures['dbos_version']})",
        "",
        f"  {'':<36}{'wall time':^30}{'CPU time (process)':^30}",
        f"  {'':<36}" + f"{'plain':>10}{'durable':>10}{'per step':>10}" * 2,
    ]
    for database in DATABASES:
        lines += [LABELS[database]]
        lines.append(_floor_row(figures, database))
        lines.append(_row("fncore", figures, f"{database}_plain", database))
        if "pydantic_ai_version" not in figures:
            continue
        for prefix, title in PEER_TITLES.items():
            label = f"Pydantic AI {figures['pydantic_ai_version']}, {title}"
            lines.append(
                _row(label, figures, f"pydantic_ai_{database}_plain", f"{prefix}_{database}")
            )
        for suffix, clock in (("", "wall time"), ("_cpu", "CPU time")):
            ratio = figures[f"{database}_step{suffix}_ratio"]
            other = figures[f"{database}_step{suffix}_ratio_durability"]
            verdict = "met" if max(ratio, other) <= 1 else "missed"
            target = f"; target ≤ 1: {verdict}" if not suffix else ""
            lines.append(
                f"  fncore's {clock} per step / Pydantic AI's: {ratio:.2f} (DBOSAgent), "
                f"{other:.2f} (DBOSDurability){target}"
            )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    parser = _measure.arguments(__doc__, rounds=(40, 1), runs=(5, 2))
    parser.add_argument("--postgres", default=None, help="a PostgreSQL URL to use")
    parser.add_argument(
        "--peer-python",
        default=sys.executable,
        help="the interpreter of a venv with pydantic-ai-slim[dbos] (default: this one)",
    )
    parser.add_argument("--no-peer", action="store_true", help="measure fncore's side alone")
    args = parser.parse_args(argv)
    args.rounds, args.runs = _measure.chosen(parser, args, rounds=(40, 1), runs=(5, 2))
    try:
        figures = measure(args)
    except SideFailed as failed:
        print(f"durable.py: {failed}", file=sys.stderr)
        return 2
    print(report(figures))
    if args.json:
        print(json.dumps(figures))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())

"""Measure what the ``trace`` built-in costs per run: with no provider, and with the SDK's.

The reference workload of ``overhead.py``: one user message; the model (in-process, zero
latency) answers with one tool call ``add(a, b)``, the tool runs, the model answers with
text. Each run is one ``invoke_agent`` span, two ``chat`` spans and one ``execute_tool``
span, and two duration and four token-usage measurements.

Workloads, in interleaved rounds in one process; each figure is the minimum of the
per-round means (noise only ever adds time):

* ``bare``: ``agent.run`` with no middleware;
* ``layers``: four pass-through middleware where ``trace`` has its four (``run``, two at
  ``model_call``, ``tool_call``): what switching those positions on costs any middleware;
* ``off``: ``bare`` with ``trace()`` and no tracer or meter provider configured (the API's
  own proxies, as in a process that never set up OpenTelemetry);
* ``sdk``: the same with ``trace()`` on the SDK's tracer provider (a simple span processor
  into an in-memory exporter) and meter provider (an in-memory reader);
* ``content``: ``sdk`` with ``capture_content=True``;
* ``by_hand``: ``bare`` with the same spans and measurements made by hand with the SDK's
  API, from the model and the tool themselves: what the SDK itself costs, so that
  ``sdk - by_hand`` is what ``trace`` adds to it.

Usage::

    python bench/trace_cost.py            # full run, human-readable table
    python bench/trace_cost.py --json     # the same, then one JSON object as the last line
    python bench/trace_cost.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from fncore import Registry
from fncore.middleware import trace

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure
else:  # run as a script, whose folder is on sys.path
    import _measure


def pass_through() -> Registry:
    """Four middleware that only call the next, where ``trace`` has its four."""
    registry = Registry()

    async def through(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    registry.on("run", name="run")(through)
    registry.on("model_call", name="outer")(through)
    registry.on("model_call", name="inner")(through)
    registry.on("tool_call", name="tool")(through)
    return registry


def traced(**options: Any) -> Registry:
    """A registry holding ``trace(**options)``."""
    registry = Registry()
    registry.include(trace(**options))
    return registry


async def measure(rounds: int, runs: int) -> _measure.Figures:
    """Every figure: per-run costs (minimum over rounds) and their differences and ratios."""
    sdk = _measure.Sdk()
    providers = {"tracer_provider": sdk.tracer_provider, "meter_provider": sdk.meter_provider}
    agents = {
        "bare": _measure.agent_with(None),
        "layers": _measure.agent_with(pass_through()),
        "off": _measure.agent_with(traced()),
        "sdk": _measure.agent_with(traced(**providers)),
        "content": _measure.agent_with(traced(capture_content=True, **providers)),
    }
    works = [_measure.Workload(name, agent.run) for name, agent in agents.items()]
    works.append(_measure.Workload("by_hand", _measure.HandTraced(sdk).run))

    async def clear() -> None:
        sdk.clear()

    best = await _measure.minimum_of_rounds(works, rounds, runs, clear)
    bare = best["bare"]
    return {
        "bare_us": bare,
        "layers_us": best["layers"],
        "off_us": best["off"],
        "sdk_us": best["sdk"],
        "content_us": best["content"],
        "by_hand_us": best["by_hand"],
        "off_extra_us": best["off"] - bare,
        "off_own_us": best["off"] - best["layers"],
        "sdk_extra_us": best["sdk"] - bare,
        "by_hand_extra_us": best["by_hand"] - bare,
        "sdk_own_us": best["sdk"] - best["by_hand"],
        "content_extra_us": best["content"] - bare,
        "off_ratio": best["off"] / bare,
        "sdk_ratio": best["sdk"] / bare,
        "rounds": rounds,
        "runs": runs,
    }


ROWS: list[tuple[str, str, Callable[[float], str]]] = [
    ("bare_us", "a run, no middleware", lambda v: f"{v:8.1f} µs"),
    ("layers_us", "with 4 pass-through layers in trace's places", lambda v: f"{v:8.1f} µs"),
    ("off_us", "with trace, no provider configured", lambda v: f"{v:8.1f} µs"),
    ("sdk_us", "with trace, SDK providers, in-memory export", lambda v: f"{v:8.1f} µs"),
    ("content_us", "the same, capture_content=True", lambda v: f"{v:8.1f} µs"),
    ("off_extra_us", "trace's cost, no provider", lambda v: f"{v:8.2f} µs"),
    ("off_own_us", "  of which beyond 4 pass-through layers", lambda v: f"{v:8.2f} µs"),
    ("sdk_extra_us", "trace's cost, SDK (4 spans, 6 measurements)", lambda v: f"{v:8.1f} µs"),
    ("by_hand_extra_us", "  the same spans and measurements by hand", lambda v: f"{v:8.1f} µs"),
    ("sdk_own_us", "  trace's own beyond them", lambda v: f"{v:8.1f} µs"),
    ("off_ratio", "no provider / bare", lambda v: f"{v:8.3f}"),
    ("sdk_ratio", "SDK / bare", lambda v: f"{v:8.2f}"),
]


def report(figures: _measure.Figures) -> str:
    """The figures as a human-readable table."""
    rounds, runs = figures["rounds"], figures["runs"]
    lines = [f"trace cost per run ({rounds} rounds of {runs} runs; minimum of round means)"]
    lines += [f"  {label:<48} {shown(figures[key])}" for key, label, shown in ROWS]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    return _measure.main(__doc__, argv, measure, report)


if __name__ == "__main__":
    raise SystemExit(main())

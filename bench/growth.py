"""Measure what one turn of a conversation costs as it grows: at 10, 100 and 1,000 messages.

A turn continues a session on the memory session store (`InMemorySessionStore`): the
session's history is loaded, one new user message (never sent before, so that the cache
misses) starts the reference workload of ``overhead.py`` (the model answers with one tool
call ``add(a, b)``, the tool runs, the model answers with text), and the four new messages
are committed. The model is in-process and answers at once, but gives the event loop one
turn per call, as a real model's network call does.

The stack: the production stack of ``builtins.py`` (``trace`` on the SDK's tracer and
meter providers, exporting to memory; ``retry``, ``limit_calls`` and ``budget`` with their
defaults; ``rate_limit`` on ``memory://`` with limits no turn comes near; ``cache`` on
``memory://``, missing each turn) plus ``redact_pii`` with its defaults and ``compact``
with its default strategies under a token trigger no turn reaches (``max_tokens`` of a
million), so it counts the history's tokens and never compacts.

The history before a turn: 10, 100 or 1,000 messages of turns like the timed one (a user
message of about 140 characters holding an e-mail address to redact, the tool call, its
result and the answer), after one user and assistant exchange where the size needs it.
Each session is made once with its history; after each timed turn it is cut back to that
history (the same messages, as a store holds them after earlier turns) with the four new
messages dropped and its state reset, outside the timing, and the cut checks that the turn
committed its four messages after the history unchanged (nothing compacted). The session
the cut leaves remembers that its history's tool calls are all answered, as the session a
run commits does, so no turn checks the whole history's pairing again. So every
timed turn starts at exactly its stated length, with what remembers earlier turns (a memo,
a cache) as warm as a conversation's next turn finds it.

Workloads, in rounds in one process; each figure is the minimum over rounds of the mean per
turn (noise only ever adds time). A round is ``--runs`` (40) steps, and a step takes one
turn of each workload on 1,000 messages and ten of each on 10 or 100, round-robin, so that
every workload is timed over the same stretch of time, and a busy machine slows them alike.
Each turn is timed alone, from ``agent.run`` to its result. Between two workloads,
untimed, the exporter and the rate limits' windows are emptied and the event loop gets a
millisecond, so that what one workload left running or scheduled (a rate limit's clean-up
task, a worker thread's result, a timer) is not timed in the next one's turns. What the
benchmark holds (every workload's session and agent) is moved out of the garbage
collector's sight at the start of each round (``gc.freeze``), so that a full collection a
turn sets off walks what the turns made, not the benchmark's twenty sessions; the
collector still runs as usual.

* ``stack`` at 10, 100 and 1,000 messages: ``turn_us_10``, ``turn_us_100``,
  ``turn_us_1000``; ``growth_ratio`` is ``turn_us_1000 / turn_us_10`` (target: at most 1.5);
* ``bare`` (no middleware) at 10 and 1,000 messages: what the engine and the store
  themselves add as the history grows;
* the stack less one built-in, for each built-in, at 10 and 1,000 messages:
  ``builtin_us_10`` and ``builtin_us_1000`` hold each built-in's share of a turn (the stack
  minus the stack without it), so the difference is what that built-in adds as the
  conversation grows.

Usage::

    python bench/growth.py            # full run, human-readable table
    python bench/growth.py --json     # the same, then one JSON object as the last line
    python bench/growth.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import asyncio
import gc
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from returns.result import Success

from fncore import (
    Agent,
    InMemorySessionStore,
    Message,
    Registry,
    SessionUpdate,
    Tool,
    ToolCallPart,
    ToolResultPart,
)
from fncore.core._session import pending_calls, remember_pending
from fncore.middleware import compact, redact_pii

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure
    from bench._stack import empty_windows, production_parts, registry_of
else:  # run as a script, whose folder is on sys.path
    import _measure
    from _stack import empty_windows, production_parts, registry_of

SIZES = (10, 100, 1000)
"""Messages in the session before the timed turn."""
SMALL, LARGE = SIZES[0], SIZES[-1]
TARGET_GROWTH_RATIO = 1.5
"""Goal: a turn at 1,000 prior messages costs at most this many turns at 10."""
NEVER = 1_000_000
"""``compact``'s token trigger: far above any history here."""
ANSWER = "1 + 2 = 3."
"""The final text of every turn."""
ADDED = 4
"""Messages a turn adds: the user's, the tool call, its result, the answer."""
SETTLE = 0.001
"""Seconds the event loop gets between two workloads, untimed: what one left scheduled (a
worker thread's result, a timer) runs then, not in the next one's turns."""
SHORT_TURNS = 10
"""How many times ``runs`` turns a round times on a history shorter than 1,000 messages
(those turns are cheaper, so more of them take the noise down to the same share)."""


def parts(sdk: _measure.Sdk) -> dict[str, Callable[[], Registry]]:
    """The stack's built-ins by name, outermost first: production, ``redact_pii``, ``compact``."""
    return {
        **production_parts(sdk),
        "redact_pii": redact_pii,
        "compact": lambda: compact(max_tokens=NEVER),
    }


def past_turn(n: int) -> tuple[Message, ...]:
    """The four messages of earlier turn ``n``, like those a timed turn adds."""
    call = ToolCallPart(f"past_{n}", "add", f'{{"a": {n}, "b": 2}}')
    return (
        Message.user(
            f"Turn {n}: thanks for the update on the quarterly report. Please send the "
            f"draft to ann.lee@example.org before Friday. What is {n} + 2?"
        ),
        Message("assistant", (call,)),
        Message("tool", (ToolResultPart(call.id, "add", str(n + 2)),)),
        Message.assistant(f"{n} + 2 = {n + 2}. I will send the draft before Friday."),
    )


def prior_history(size: int) -> tuple[Message, ...]:
    """``size`` messages (an even number): an opening exchange if needed, then past turns."""
    opening: tuple[Message, ...] = ()
    if size % ADDED:
        opening = (
            Message.user("Hello, I have a few sums and an errand for you today."),
            Message.assistant("Of course: send them one by one."),
        )
    turns = (m for n in range(size // ADDED) for m in past_turn(n))
    history = (*opening, *turns)
    if len(history) != size:
        msg = f"a history of {size} messages cannot be made of pairs and turns of {ADDED}"
        raise ValueError(msg)
    return history


def agent_with(registry: Registry, store: InMemorySessionStore) -> Agent:
    """The workload's agent: ``registry``, the yielding model, ``add``, sessions in ``store``."""
    tool = Tool.from_function(_measure.add, inline=True)
    model = _measure.InstantModel(yield_once=True)
    return Agent(model, registry=registry, tools=[tool], sessions=store)


@dataclass
class Conversation:
    """One agent continuing one session of ``history``, cut back to it after each turn."""

    name: str
    agent: Agent
    store: InMemorySessionStore
    history: tuple[Message, ...]

    @property
    def session_id(self) -> str:
        """The session, named after the workload."""
        return self.name

    async def open(self) -> None:
        """Make the session with its history (checked: every tool call has its result)."""
        made = await self.store.commit(SessionUpdate(self.session_id, 0, 0, self.history))
        if made is None or pending_calls(made) != ():
            msg = f"{self.name}: the session exists already, or has unanswered tool calls"
            raise RuntimeError(msg)

    async def turn(self, prompt: str) -> float:
        """One turn's seconds, from ``agent.run`` to its result; then the cut back."""
        started = time.perf_counter()
        outcome = await self.agent.run(prompt, session_id=self.session_id)
        seconds = time.perf_counter() - started
        if type(outcome) is not Success or outcome.unwrap().output != ANSWER:
            msg = f"{self.name}: unexpected outcome {outcome!r}"
            raise RuntimeError(msg)
        await self.cut_back()
        return seconds

    async def cut_back(self) -> None:
        """Drop the turn's messages and state; fail unless it added four after the history."""
        size = len(self.history)
        session = await self.store.load(self.session_id)
        if (
            session is None
            or len(session.messages) != size + ADDED
            or session.messages[:size] != self.history
        ):
            msg = f"{self.name}: the turn did not add {ADDED} messages to its history unchanged"
            raise RuntimeError(msg)
        update = SessionUpdate(self.session_id, session.version, size, ())
        after = await self.store.commit(update)
        if after is None:
            msg = f"{self.name}: conflict while cutting the session back"
            raise RuntimeError(msg)
        remember_pending(after, ())  # as a run's commit does: its history is already checked

    @property
    def turns_per_step(self) -> int:
        """Turns this conversation takes in each step of a round (more on a short history)."""
        return 1 if len(self.history) >= LARGE else SHORT_TURNS

    async def seconds(self) -> float:
        """The seconds of one step's turns, each with a prompt never sent before."""
        total = 0.0
        for text in _measure.prompts(self.turns_per_step, vary=True):
            total += await self.turn(text)
        return total


class Setup:
    """Every conversation: the stack, bare, and the stack less each built-in."""

    def __init__(self) -> None:
        self.sdk = sdk = _measure.Sdk()
        self.registries: list[Registry] = []
        self.names = tuple(parts(sdk))
        self.conversations: list[Conversation] = []
        self._add("stack", self._stack(), SIZES)
        self._add("bare", Registry(), (SMALL, LARGE))
        for left_out in self.names:
            self._add(f"without_{left_out}", self._stack(left_out), (SMALL, LARGE))

    def _stack(self, left_out: str | None = None) -> Registry:
        made = parts(self.sdk)
        registry = registry_of(*(make() for name, make in made.items() if name != left_out))
        self.registries.append(registry)
        return registry

    def _add(self, name: str, registry: Registry, sizes: tuple[int, ...]) -> None:
        store = InMemorySessionStore()
        agent = agent_with(registry, store)
        self.conversations += [
            Conversation(f"{name}_{size}", agent, store, prior_history(size)) for size in sizes
        ]

    async def between(self) -> None:
        """Empty the exporter and the rate limits' windows (memory stays flat)."""
        self.sdk.clear()
        await empty_windows(self.registries)

    async def check(self) -> None:
        """Open every session; fail loudly unless the stack's turns trace a cache miss."""
        for conversation in self.conversations:
            await conversation.open()
            self.sdk.clear()
            await conversation.turn(f"{_measure.PROMPT} (check)")
            if conversation.name.startswith(("bare_", "without_trace_", "without_cache_")):
                continue
            hits = [
                (s.attributes or {}).get("fncore.cache.hit")
                for s in self.sdk.exporter.get_finished_spans()
                if s.name == "chat instant"
            ]
            if hits != [False, False]:
                msg = f"{conversation.name}: expected two traced cache misses, got {hits}"
                raise RuntimeError(msg)
        self.sdk.clear()


async def steps(setup: Setup, runs: int) -> dict[str, float]:
    """Each conversation's mean µs per turn over ``runs`` steps of turns, round-robin.

    A step takes each conversation's turns in turn, so that every workload's figure comes
    from the same stretch of time. After each, untimed, the exporter and the windows are
    emptied (so no rate limit's clean-up runs on in another workload's turns) and the loop
    gets `SETTLE` seconds.
    """
    totals = dict.fromkeys((c.name for c in setup.conversations), 0.0)
    for _ in range(runs):
        for conversation in setup.conversations:
            totals[conversation.name] += await conversation.seconds()
            await setup.between()
            await asyncio.sleep(SETTLE)
    return {c.name: totals[c.name] / (runs * c.turns_per_step) * 1e6 for c in setup.conversations}


async def measure(rounds: int, runs: int) -> _measure.Figures:
    """Every figure: µs per turn (minimum over rounds of the round's mean), and ratios."""
    setup = Setup()
    await setup.check()
    await steps(setup, max(runs // 4, 2))  # warm up: what is made once, memos filled
    best = dict.fromkeys((c.name for c in setup.conversations), float("inf"))
    for _ in range(rounds):
        gc.collect()
        gc.freeze()  # what the benchmark holds (20 sessions, their memos) is no turn's garbage
        for name, us in (await steps(setup, runs)).items():
            best[name] = min(best[name], us)
    turn = {size: best[f"stack_{size}"] for size in SIZES}
    without = {
        size: {name: best[f"without_{name}_{size}"] for name in setup.names}
        for size in (SMALL, LARGE)
    }
    return {
        **{f"turn_us_{size}": turn[size] for size in SIZES},
        "growth_ratio": turn[LARGE] / turn[SMALL],
        "target_growth_ratio": TARGET_GROWTH_RATIO,
        "bare_turn_us_10": best[f"bare_{SMALL}"],
        "bare_turn_us_1000": best[f"bare_{LARGE}"],
        "bare_growth_ratio": best[f"bare_{LARGE}"] / best[f"bare_{SMALL}"],
        **{
            f"builtin_us_{size}": {name: turn[size] - us for name, us in without[size].items()}
            for size in (SMALL, LARGE)
        },
        **{f"without_us_{size}": without[size] for size in (SMALL, LARGE)},
        "rounds": rounds,
        "runs": runs,
    }


LABELS = {
    "trace": "trace (SDK providers, in-memory export)",
    "retry": "retry (nothing fails)",
    "limit_calls": "limit_calls (defaults)",
    "budget": "budget (defaults)",
    "rate_limit": "rate_limit (memory://, never waits)",
    "cache": "cache, missing (memory://)",
    "redact_pii": "redact_pii (defaults)",
    "compact": "compact (token trigger, never reached)",
}


def report(figures: _measure.Figures) -> str:
    """The figures as a human-readable table."""
    ratio = figures["growth_ratio"]
    verdict = "PASS" if ratio <= TARGET_GROWTH_RATIO else "MISS"
    head = "".join(f"{f'{n:,} msgs':>13}" for n in SIZES)
    stack = "".join(f"{figures[f'turn_us_{n}']:>10.0f} µs" for n in SIZES)
    small, large = figures[f"bare_turn_us_{SMALL}"], figures[f"bare_turn_us_{LARGE}"]
    lines = [
        f"one turn of a conversation as it grows ({figures['rounds']} rounds of "
        f"{figures['runs']} steps of turns, {SHORT_TURNS}x on shorter histories; minimum of "
        "round means)",
        "turn: load the session, 1 new user message -> model calls add(a, b) -> tool runs ->",
        "      model answers text (the model yields once a call), commit 4 messages",
        "stack: trace (SDK), retry, limit_calls, budget, rate_limit (memory://), cache (miss),",
        "       redact_pii, compact (token trigger never reached)",
        "",
        f"{'':<42}{head}   1000 / 10",
        f"  {'the stack':<40}{stack}   {ratio:8.2f}   target <= {TARGET_GROWTH_RATIO:g}  {verdict}",
        f"  {'no middleware':<40}{small:>10.0f} µs{'':>13}{large:>10.0f} µs   "
        f"{figures['bare_growth_ratio']:8.2f}",
        "",
        "each built-in's share of a turn: the stack minus the stack without it",
        f"{'':<42}{f'{SMALL:,} msgs':>13}{f'{LARGE:,} msgs':>13}{'grows by':>13}",
    ]
    for name, label in LABELS.items():
        at_small = figures[f"builtin_us_{SMALL}"][name]
        at_large = figures[f"builtin_us_{LARGE}"][name]
        lines.append(
            f"  {label:<40}{at_small:>+10.0f} µs{at_large:>+10.0f} µs"
            f"{at_large - at_small:>+10.0f} µs"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures."""
    return _measure.main(__doc__, argv, measure, report, rounds=(5, 2), runs=(40, 3))


if __name__ == "__main__":
    raise SystemExit(main())

import asyncio
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any

from hypothesis import given
from hypothesis import strategies as st
from returns.result import Failure, Success

from fncore.core import Order, Outcome, Registration, Terminate
from fncore.core._fold import Handler, fold_onion
from fncore.core._ordering import order_layers

Next = Callable[[int], Awaitable[Outcome[int]]]
Layer = Callable[[int, Next], Awaitable[Outcome[int]]]


@dataclass(frozen=True)
class Spec:
    """A simple arithmetic middleware: transform the input, maybe stop, transform the output."""

    kind: str
    k_in: int
    c_in: int
    k_out: int
    c_out: int

    def build(self, name: str, log: list[str]) -> tuple[str, Layer]:
        async def layer(x: int, call_next: Next) -> Outcome[int]:
            log.append(f"{name}<{x}")
            if self.kind == "stop" and x % 3 == 0:
                return Success(x)
            if self.kind == "terminate" and x % 5 == 0:
                return Failure(Terminate(str(x)))
            if self.kind == "raise" and x % 7 == 0:
                raise ValueError(x)
            out = await call_next(x * self.k_in + self.c_in)
            log.append(f"{name}>{out}")
            return out.map(lambda v: v * self.k_out + self.c_out)

        return name, layer


small = st.integers(min_value=-3, max_value=3)
specs = st.builds(
    Spec, st.sampled_from(["plain", "stop", "terminate", "raise"]), small, small, small, small
)
ops = st.tuples(small, small, st.booleans())


def make_op(a: int, b: int, fails: bool, log: list[str]) -> Handler[int, int]:
    async def op(x: int) -> Outcome[int]:
        log.append(f"op<{x}")
        if fails and x % 2 == 0:
            return Failure(Terminate("even"))
        return Success(x * a + b)

    return op


def run(handler: Handler[int, int], x: int) -> Outcome[int]:
    async def main() -> Outcome[int]:
        return await handler(x)

    return asyncio.run(main())


async def identity(x: int, call_next: Next) -> Outcome[int]:
    return await call_next(x)


@given(st.lists(specs, max_size=4), st.integers(0, 4), ops, st.integers(-50, 50))
def test_identity_middleware_changes_nothing(
    stack: list[Spec], where: int, op: tuple[int, int, bool], x: int
) -> None:
    """Inserting a pass-through middleware anywhere leaves the outcome and the trace unchanged."""
    log_plain: list[str] = []
    log_with: list[str] = []
    plain = [s.build(f"m{i}", log_plain) for i, s in enumerate(stack)]
    with_id = [s.build(f"m{i}", log_with) for i, s in enumerate(stack)]
    with_id.insert(min(where, len(with_id)), ("identity", identity))
    expected = run(fold_onion("run", plain, make_op(*op, log_plain), int), x)
    got = run(fold_onion("run", with_id, make_op(*op, log_with), int), x)
    assert got == expected
    assert log_with == log_plain


@given(specs, specs, specs, ops, st.integers(-50, 50))
def test_fold_is_associative(a: Spec, b: Spec, c: Spec, op: tuple[int, int, bool], x: int) -> None:
    """fold([a, b, c]) == fold([a], fold([b, c])) == fold([a, b], fold([c])), traces included."""
    logs: list[list[str]] = [[], [], []]

    def layers(log: list[str]) -> list[tuple[str, Layer]]:
        return [a.build("a", log), b.build("b", log), c.build("c", log)]

    flat = layers(logs[0])
    right = layers(logs[1])
    left = layers(logs[2])
    out_flat = run(fold_onion("run", flat, make_op(*op, logs[0]), int), x)
    out_right = run(
        fold_onion("run", right[:1], fold_onion("run", right[1:], make_op(*op, logs[1]), int), int),
        x,
    )
    out_left = run(
        fold_onion("run", left[:2], fold_onion("run", left[2:], make_op(*op, logs[2]), int), int), x
    )
    assert out_flat == out_right == out_left
    assert logs[0] == logs[1] == logs[2]


async def _mw(ctx: Any, call_next: Any) -> Any:
    return await call_next(ctx)


@st.composite
def hinted_layers(draw: st.DrawFn) -> list[Registration]:
    """Registrations with random pins and an acyclic set of before/after hints."""
    n = draw(st.integers(1, 8))
    names = [f"m{i}" for i in range(n)]
    # A hidden topological order; every hint respects it, so the hints are acyclic.
    topo = draw(st.permutations(names))
    rank = {name: i for i, name in enumerate(topo)}
    before: dict[str, list[str]] = {name: [] for name in names}
    after: dict[str, list[str]] = {name: [] for name in names}
    pairs = [(u, v) for u in names for v in names if rank[u] < rank[v]]
    for u, v in draw(st.lists(st.sampled_from(pairs), unique=True) if pairs else st.just([])):
        if draw(st.booleans()):
            before[u].append(v)
        else:
            after[v].append(u)
    orders: list[Order | None] = [None, None, "outermost", "innermost"]
    return [
        Registration(
            "tool_call",
            _mw,
            name,
            draw(st.sampled_from(orders)),
            tuple(before[name]),
            tuple(after[name]),
        )
        for name in names
    ]


def _constraints(layers: Sequence[Registration]) -> list[tuple[str, str]]:
    pairs = [(r.name, other) for r in layers for other in r.before]
    return pairs + [(other, r.name) for r in layers for other in r.after]


@given(hinted_layers())
def test_order_layers_is_a_permutation_meeting_every_hint(layers: list[Registration]) -> None:
    """order_layers returns each registration once, and every before/after hint holds."""
    ordered = order_layers(layers)
    assert sorted(r.name for r in ordered) == sorted(r.name for r in layers)
    assert len(ordered) == len(layers)
    place = {r.name: i for i, r in enumerate(ordered)}
    for outer, inner in _constraints(layers):
        assert place[outer] < place[inner], (outer, inner, [r.name for r in ordered])


@given(hinted_layers())
def test_order_layers_keeps_uninvolved_middleware_in_pinned_registration_order(
    layers: list[Registration],
) -> None:
    """Middleware no hint mentions keep their (pin group, registration) order among themselves."""
    involved = {name for pair in _constraints(layers) for name in pair}
    group = {"outermost": 0, None: 1, "innermost": 2}
    expected = [
        r.name
        for _, r in sorted(
            ((group[r.order], i), r) for i, r in enumerate(layers) if r.name not in involved
        )
    ]
    got = [r.name for r in order_layers(layers) if r.name not in involved]
    assert got == expected


@given(hinted_layers())
def test_order_layers_is_deterministic(layers: list[Registration]) -> None:
    """Ordering the same registrations twice gives the same order."""
    assert order_layers(layers) == order_layers(list(layers))

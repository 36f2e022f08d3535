"""Resolve ordering hints into one order per position, once, at build time."""

from __future__ import annotations

import heapq
from collections.abc import Mapping, Sequence

from fncore.core._errors import RegistrationError
from fncore.core._registry import Registration

_GROUP = {"outermost": 0, None: 1, "innermost": 2}


def order_layers(layers: Sequence[Registration]) -> tuple[Registration, ...]:
    """Order one position's middleware: outermost first.

    Registration order is kept (first registered is outermost), except that ``outermost``
    and ``innermost`` pins move a middleware to an end and ``before``/``after`` hints move
    it around a named one. Only the middleware carrying a hint moves, and only if it is not
    already on the asked side: it goes just outside (``before``) or just inside (``after``)
    the one it names, and every other middleware keeps its registration order. A built-in's
    hints (its ``builtin`` is set) name built-ins, matched by what each layer is, not by
    its name: see `Registration.builtin`.

    Raises:
        RegistrationError: for a hint naming a middleware that is not registered at this
            position, or hints that form a cycle; the message names both sides.

    Example:
        >>> async def f(ctx, call_next): ...
        >>> a = Registration("run", f, "a")
        >>> b = Registration("run", f, "b", before=("a",))
        >>> [r.name for r in order_layers([a, b])]
        ['b', 'a']
    """
    index = {reg.name: i for i, reg in enumerate(layers)}
    kinds: dict[str, list[int]] = {}
    for i, reg in enumerate(layers):
        if reg.builtin is not None:
            kinds.setdefault(reg.builtin, []).append(i)
    outer: list[list[int]] = []
    inner: list[list[int]] = []
    for i, reg in enumerate(layers):
        outer.append(_targets(reg, i, reg.before, "before", index, kinds))
        inner.append(_targets(reg, i, reg.after, "after", index, kinds))
    rank = sorted(range(len(layers)), key=lambda i: (_GROUP[layers[i].order], i))
    priority = {i: p for p, i in enumerate(rank)}
    edges: dict[int, set[int]] = {i: set() for i in range(len(layers))}
    for i in range(len(layers)):
        edges[i].update(outer[i])
        for j in inner[i]:
            edges[j].add(i)
    indegree = dict.fromkeys(edges, 0)
    for targets in edges.values():
        for j in targets:
            indegree[j] += 1
    place = _wanted_places(outer, inner, priority)
    ready = [(place[i], priority[i], i) for i, d in indegree.items() if d == 0]
    heapq.heapify(ready)
    out: list[int] = []
    while ready:
        _, _, i = heapq.heappop(ready)
        out.append(i)
        for j in edges[i]:
            indegree[j] -= 1
            if indegree[j] == 0:
                heapq.heappush(ready, (place[j], priority[j], j))
    if len(out) < len(layers):
        raise RegistrationError(_cycle_message(layers, edges, set(out)))
    return tuple(layers[i] for i in out)


def _targets(
    reg: Registration,
    i: int,
    names: tuple[str, ...],
    hint: str,
    index: Mapping[str, int],
    kinds: Mapping[str, list[int]],
) -> list[int]:
    """The layers that ``reg``'s ``before`` (or ``after``) hint ``names`` point at.

    A built-in's hints name built-ins, and point at the layers that are those built-ins
    (their ``builtin``), whatever they are called, and never at a middleware of yours that
    happens to share a built-in's name; a built-in that is not there is skipped. Any other
    hint names a middleware by its name (and a ``soft`` one skips names that are not there).

    Raises:
        RegistrationError: for a hint naming no registered middleware (unless soft), or the
            middleware itself.
    """
    if reg.builtin is not None:
        return [j for name in names for j in kinds.get(name, ()) if j != i]
    found: list[int] = []
    for other in names:
        j = index.get(other)
        if j is None:
            if reg.soft:
                continue
            known = ", ".join(sorted(index)) or "none"
            msg = (
                f"{reg.position} middleware {reg.name!r} asks to run {hint} {other!r}, "
                f"which is not registered at {reg.position!r} (registered: {known}); "
                "fix the name or register it"
            )
            raise RegistrationError(msg)
        if j == i:
            msg = f"{reg.position} middleware {reg.name!r} asks to run {hint} itself"
            raise RegistrationError(msg)
        found.append(j)
    return found


def _wanted_places(
    outer: Sequence[Sequence[int]], inner: Sequence[Sequence[int]], priority: dict[int, int]
) -> dict[int, float]:
    """Where each middleware would go: its own place, unless its own hints move it.

    A hinted middleware goes just outside (``before``, the layers in ``outer``) or just
    inside (``after``, those in ``inner``) the ones it names when it is not already there;
    the named ones do not move. The topological sort then enforces every hint, so these
    places only break ties.
    """
    step = 1 / (len(outer) + 1)
    place: dict[int, float] = {}

    def wanted(i: int, visiting: frozenset[int]) -> float:
        if i in place:
            return place[i]
        inside = visiting | {i}
        spot = float(priority[i])
        before = [wanted(j, inside) for j in outer[i] if j not in inside]
        after = [wanted(j, inside) for j in inner[i] if j not in inside]
        if before:
            spot = min(spot, min(before) - step)
        if after:
            spot = max(spot, max(after) + step)
        place[i] = spot
        return spot

    for i in range(len(outer)):
        wanted(i, frozenset())
    return place


def _cycle_message(
    layers: Sequence[Registration], edges: dict[int, set[int]], placed: set[int]
) -> str:
    # Walk predecessors: every unplaced node has an unplaced one (its indegree stayed above
    # zero), whereas walking successors can dead-end at a node merely stuck behind a cycle.
    preds: dict[int, list[int]] = {i: [] for i in edges if i not in placed}
    for i in preds:
        for j in edges[i]:
            if j not in placed:
                preds[j].append(i)
    start = min(preds)
    path = [start]
    seen = {start: 0}
    node = start
    while True:
        node = min(preds[node])
        if node in seen:
            cycle = [*path[seen[node] :], node][::-1]
            break
        seen[node] = len(path)
        path.append(node)
    chain = " -> ".join(repr(layers[i].name) for i in cycle)
    first, second = layers[cycle[0]].name, layers[cycle[1]].name
    return (
        f"{layers[start].position} ordering hints form a cycle: {chain} "
        f"(each must run before the next); {first!r} and {second!r} cannot both hold, "
        "drop one of the before=/after= hints"
    )

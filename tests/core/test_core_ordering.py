from collections.abc import Sequence
from typing import Any

import pytest

from fncore.core import Order, Registration, RegistrationError
from fncore.core._ordering import order_layers


async def mw(ctx: Any, call_next: Any) -> Any:
    return await call_next(ctx)


def reg(
    name: str,
    *,
    order: Order | None = None,
    before: Sequence[str] = (),
    after: Sequence[str] = (),
) -> Registration:
    return Registration("model_call", mw, name, order, tuple(before), tuple(after))


def names(layers: Sequence[Registration]) -> list[str]:
    return [r.name for r in order_layers(layers)]


def test_registration_order_is_kept_without_hints() -> None:
    """With no pins or hints the first registered is outermost."""
    assert names([reg("a"), reg("b"), reg("c")]) == ["a", "b", "c"]


def test_empty_position_orders_to_nothing() -> None:
    """No layers order to an empty tuple."""
    assert order_layers([]) == ()


def test_outermost_and_innermost_pins_move_to_the_ends() -> None:
    """order='outermost' goes first and order='innermost' goes last, whatever the registration."""
    layers = [reg("a", order="innermost"), reg("b"), reg("c", order="outermost"), reg("d")]
    assert names(layers) == ["c", "b", "d", "a"]


def test_several_pins_keep_registration_order_among_themselves() -> None:
    """Two outermost pins (or two innermost) stay in registration order."""
    layers = [
        reg("i1", order="innermost"),
        reg("o1", order="outermost"),
        reg("i2", order="innermost"),
        reg("o2", order="outermost"),
    ]
    assert names(layers) == ["o1", "o2", "i1", "i2"]


def test_before_hint_moves_outside() -> None:
    """before=['a'] puts a later registration outside of 'a'."""
    assert names([reg("a"), reg("b"), reg("c", before=["a"])]) == ["c", "a", "b"]


def test_after_hint_moves_inside() -> None:
    """after=['c'] puts an earlier registration inside of 'c'."""
    assert names([reg("a", after=["c"]), reg("b"), reg("c")]) == ["b", "c", "a"]


def test_hints_move_only_what_they_must() -> None:
    """A hint moves its middleware just past the named one; the others keep their order."""
    layers = [reg("a"), reg("b"), reg("c"), reg("d", before=["c"])]
    assert names(layers) == ["a", "b", "d", "c"]


def test_pins_and_hints_combine() -> None:
    """A hint between two free middleware holds alongside pinned ends."""
    layers = [
        reg("trace", order="outermost"),
        reg("cache"),
        reg("retry", before=["cache"]),
        reg("raw", order="innermost"),
    ]
    assert names(layers) == ["trace", "retry", "cache", "raw"]


def test_sort_is_stable() -> None:
    """Unconstrained middleware keep registration order around a moved one."""
    layers = [reg("a"), reg("b"), reg("c"), reg("d"), reg("e", after=["a"])]
    assert names(layers) == ["a", "b", "c", "d", "e"]
    layers = [reg("a"), reg("b"), reg("c"), reg("d"), reg("e", before=["b"])]
    assert names(layers) == ["a", "e", "b", "c", "d"]


def test_unknown_hint_names_both_sides() -> None:
    """A hint naming an unregistered middleware names the asker, the missing name and the known."""
    with pytest.raises(RegistrationError) as info:
        order_layers([reg("cache"), reg("retry", before=["cahce"])])
    text = str(info.value)
    assert "'retry'" in text
    assert "'cahce'" in text
    assert "registered: cache, retry" in text
    assert "model_call" in text


def test_self_hint_is_refused() -> None:
    """A middleware asking to run before itself is a RegistrationError naming it."""
    with pytest.raises(RegistrationError, match="'a' asks to run after itself"):
        order_layers([reg("a", after=["a"])])


def test_two_cycle_names_both_sides() -> None:
    """Hints a-before-b and b-before-a form a cycle error naming both."""
    with pytest.raises(RegistrationError) as info:
        order_layers([reg("a", before=["b"]), reg("b", before=["a"])])
    text = str(info.value)
    assert "cycle" in text
    assert "'a' -> 'b' -> 'a'" in text


def test_two_cycle_from_before_and_after_names_both_sides() -> None:
    """Both before= and after= of one name on one side form a cycle naming both."""
    with pytest.raises(RegistrationError, match=r"cycle.*'a'.*'b'"):
        order_layers([reg("a", before=["b"], after=["b"]), reg("b")])


def test_three_cycle_names_every_member() -> None:
    """A three-way cycle error shows the whole chain."""
    layers = [reg("a", before=["b"]), reg("b", before=["c"]), reg("c", before=["a"])]
    with pytest.raises(RegistrationError) as info:
        order_layers(layers)
    text = str(info.value)
    assert "'a' -> 'b' -> 'c' -> 'a'" in text
    assert "drop one of the before=/after= hints" in text


def test_cycle_reported_even_behind_a_stuck_middleware() -> None:
    """A middleware stuck after a cycle does not hide it: the error names the cycle's members."""
    layers = [reg("x", after=["a"]), reg("a", before=["b"]), reg("b", before=["a"])]
    with pytest.raises(RegistrationError) as info:
        order_layers(layers)
    text = str(info.value)
    assert "cycle" in text
    assert "'a'" in text
    assert "'b'" in text
    assert "'x' ->" not in text

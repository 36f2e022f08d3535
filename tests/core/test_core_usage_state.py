from fncore.core import RunResult, State, StateKey, Usage


def test_usage_adds_every_field() -> None:
    """Usage + Usage sums each counter field by field."""
    a = Usage(1, 2, 3, 4, 5, 6)
    b = Usage(10, 20, 30, 40, 50, 60)
    assert a + b == Usage(11, 22, 33, 44, 55, 66)


def test_usage_zero_is_identity_and_total_tokens() -> None:
    """Usage() is the neutral element and total_tokens is input plus output."""
    u = Usage(input_tokens=7, output_tokens=5, reasoning_tokens=2, requests=1)
    assert u + Usage() == u
    assert Usage() + u == u
    assert u.total_tokens == 12


def test_run_result_defaults() -> None:
    """RunResult defaults to zero usage, zero rounds and stop_reason 'completed'."""
    result = RunResult("5", ())
    assert (result.usage, result.rounds, result.stop_reason) == (Usage(), 0, "completed")


def test_state_get_creates_default_once() -> None:
    """get() builds the default from the factory on first access and stores it."""
    made: list[int] = []

    def factory() -> list[str]:
        made.append(1)
        return []

    key = StateKey("items", default=factory)
    state = State()
    first = state.get(key)
    first.append("x")
    assert state.get(key) == ["x"]
    assert state.get(key) is first
    assert made == [1]


def test_state_set_then_get_and_snapshot() -> None:
    """set() stores a value, get() returns it, snapshot() copies the values by name."""
    counter = StateKey("calls", default=lambda: 0)
    state = State()
    state.set(counter, 3)
    assert state.get(counter) == 3
    snap = state.snapshot()
    assert snap == {"calls": 3}
    snap["calls"] = 99
    assert state.get(counter) == 3


def test_state_starts_from_given_values_without_aliasing() -> None:
    """State(values) reads saved values and does not write back into the given mapping."""
    saved: dict[str, object] = {"calls": 2}
    counter = StateKey("calls", default=lambda: 0)
    state = State(saved)
    assert state.get(counter) == 2
    state.set(counter, 5)
    assert saved == {"calls": 2}


def test_states_are_independent() -> None:
    """Two States never share values for the same key."""
    key: StateKey[set[str]] = StateKey("seen", default=set)
    one, two = State(), State()
    one.get(key).add("a")
    assert two.get(key) == set()


def test_state_key_repr_names_key() -> None:
    """StateKey's repr shows its name."""
    assert repr(StateKey("calls", default=lambda: 0)) == "StateKey('calls')"

import asyncio
from collections.abc import Awaitable, Callable
from functools import partial
from typing import Any

import pytest
from returns.result import Failure, Success

from fncore.core import AgentError, MiddlewareError, ModelError, Outcome, Terminate
from fncore.core._fold import chain_steps, checks_itself, fold_onion

Next = Callable[[int], Awaitable[Outcome[int]]]


async def add_one(x: int) -> Outcome[int]:
    return Success(x + 1)


def recorder(
    log: list[str],
) -> tuple[Callable[[str], Callable[..., Awaitable[Outcome[int]]]], Next]:
    def layer(name: str) -> Callable[..., Awaitable[Outcome[int]]]:
        async def mw(x: int, call_next: Next) -> Outcome[int]:
            log.append(f"{name} pre")
            out = await call_next(x)
            log.append(f"{name} post")
            return out

        return mw

    async def op(x: int) -> Outcome[int]:
        log.append("op")
        return Success(x)

    return layer, op


async def test_onion_pre_and_post_order() -> None:
    """First layer is outermost: mw1 pre, mw2 pre, op, mw2 post, mw1 post."""
    log: list[str] = []
    layer, op = recorder(log)
    handler = fold_onion("run", [("mw1", layer("mw1")), ("mw2", layer("mw2"))], op, int)
    assert await handler(7) == Success(7)
    assert log == ["mw1 pre", "mw2 pre", "op", "mw2 post", "mw1 post"]


async def test_layers_transform_input_and_output() -> None:
    """A layer may change what flows inward and post-process what comes back with .map."""

    async def double_in(x: int, call_next: Next) -> Outcome[int]:
        return await call_next(x * 2)

    async def negate_out(x: int, call_next: Next) -> Outcome[int]:
        return (await call_next(x)).map(lambda v: -v)

    handler = fold_onion("run", [("negate", negate_out), ("double", double_in)], add_one, int)
    assert await handler(5) == Success(-11)


async def test_short_circuit_skips_downstream_but_upstream_post_runs() -> None:
    """Returning Success without call_next skips inner layers and the op; outer post still runs."""
    log: list[str] = []
    layer, op = recorder(log)

    async def cache(x: int, call_next: Next) -> Outcome[int]:
        log.append("cache hit")
        return Success(100)

    async def plus_one_after(x: int, call_next: Next) -> Outcome[int]:
        return (await call_next(x)).map(lambda v: v + 1)

    handler = fold_onion(
        "model_call",
        [
            ("outer", layer("outer")),
            ("post", plus_one_after),
            ("cache", cache),
            ("inner", layer("inner")),
        ],
        op,
        int,
    )
    assert await handler(1) == Success(101)
    assert log == ["outer pre", "cache hit", "outer post"]


async def test_terminate_skips_upstream_map_but_upstream_receives_it() -> None:
    """Failure(Terminate) bypasses .map post-processing, yet outer layers still see the Failure."""
    seen: list[Outcome[int]] = []
    mapped: list[int] = []

    async def tracer(x: int, call_next: Next) -> Outcome[int]:
        out = await call_next(x)
        seen.append(out)
        return out

    def record(v: int) -> int:
        mapped.append(v)
        return v

    async def post(x: int, call_next: Next) -> Outcome[int]:
        return (await call_next(x)).map(record)

    async def guard(x: int, call_next: Next) -> Outcome[int]:
        return Failure(Terminate("blocked"))

    handler = fold_onion(
        "run", [("tracer", tracer), ("post", post), ("guard", guard)], add_one, int
    )
    out = await handler(1)
    assert out == Failure(Terminate("blocked"))
    assert seen == [Failure(Terminate("blocked"))]
    assert mapped == []


async def test_exception_becomes_middleware_error_value() -> None:
    """A raising middleware yields Failure(MiddlewareError) with name, position and type."""

    async def boom(x: int, call_next: Next) -> Outcome[int]:
        raise KeyError("missing")

    out = await fold_onion("tool_call", [("boom", boom)], add_one, int)(1)
    assert isinstance(out, Failure)
    error = out.failure()
    assert isinstance(error, MiddlewareError)
    assert error.middleware == "boom"
    assert error.position == "tool_call"
    assert error.exception_type == "KeyError"
    assert "raised KeyError" in error.message
    assert "missing" in error.message
    assert str(error).startswith("tool_call middleware 'boom': ")


async def test_exception_in_innermost_op_propagates_to_wrapping_layer() -> None:
    """An exception from the op itself is attributed to the innermost layer that called it."""

    async def op(x: int) -> Outcome[int]:
        raise ValueError("bad")

    out = await fold_onion("run", [("outer", _pass), ("inner", _pass)], op, int)(1)
    assert isinstance(out, Failure)
    assert out.failure().middleware == "inner"


async def _pass(x: int, call_next: Next) -> Outcome[int]:
    return await call_next(x)


async def test_outer_layer_recovers_with_lash() -> None:
    """An outer layer can turn an inner error into a success with .lash."""

    async def boom(x: int, call_next: Next) -> Outcome[int]:
        raise RuntimeError("flaky")

    async def fallback(x: int, call_next: Next) -> Outcome[int]:
        return (await call_next(x)).lash(lambda _e: Success(0))

    out = await fold_onion("model_call", [("fallback", fallback), ("boom", boom)], add_one, int)(1)
    assert out == Success(0)


async def test_outer_layer_retries_by_calling_next_again() -> None:
    """A retry layer calls call_next again after a failure and gets the second outcome."""
    attempts: list[int] = []

    async def flaky(x: int, call_next: Next) -> Outcome[int]:
        attempts.append(x)
        if len(attempts) == 1:
            raise ConnectionError("try again")
        return await call_next(x)

    async def retry(x: int, call_next: Next) -> Outcome[int]:
        first = await call_next(x)
        if isinstance(first, Failure) and isinstance(first.failure(), AgentError):
            return await call_next(x)
        return first

    out = await fold_onion("model_call", [("retry", retry), ("flaky", flaky)], add_one, int)(4)
    assert out == Success(5)
    assert attempts == [4, 4]


async def test_error_values_pass_through_unchanged() -> None:
    """A Failure(AgentError) returned (not raised) reaches the outside as the same value."""
    error = ModelError(message="rate limited", retryable=True)

    async def op(x: int) -> Outcome[int]:
        return Failure(error)

    out = await fold_onion("model_call", [("a", _pass), ("b", _pass)], op, int)(1)
    assert out == Failure(error)


async def test_returning_none_is_a_middleware_error_mentioning_call_next() -> None:
    """A middleware that forgets to return gives a MiddlewareError hinting at call_next."""

    async def forgot(x: int, call_next: Next) -> Outcome[int]:
        await call_next(x)
        return None  # type: ignore[return-value]

    out = await fold_onion("reasoning", [("forgot", forgot)], add_one, int)(1)
    assert isinstance(out, Failure)
    error = out.failure()
    assert isinstance(error, MiddlewareError)
    assert error.middleware == "forgot"
    assert error.position == "reasoning"
    assert "return await call_next(ctx)" in error.message


async def test_returning_a_plain_value_is_a_middleware_error() -> None:
    """A middleware returning a bare value is told to wrap it in Success/Failure."""

    async def bare(x: int, call_next: Next) -> Outcome[int]:
        return 5  # type: ignore[return-value]

    out = await fold_onion("run", [("bare", bare)], add_one, int)(1)
    assert isinstance(out, Failure)
    assert "returned int 5, not a Result" in out.failure().message
    assert "Success(...)" in out.failure().message


async def test_cancelled_error_propagates() -> None:
    """asyncio.CancelledError is not turned into a value: it propagates out of the fold."""

    async def cancelled(x: int, call_next: Next) -> Outcome[int]:
        raise asyncio.CancelledError

    handler = fold_onion("run", [("outer", _pass), ("cancelled", cancelled)], add_one, int)
    with pytest.raises(asyncio.CancelledError):
        await handler(1)


async def test_empty_fold_is_the_innermost_itself() -> None:
    """Folding no layers returns the innermost handler object, at no cost."""
    assert fold_onion("run", [], add_one, int) is add_one


async def test_chain_steps_runs_left_to_right() -> None:
    """Transformers chain: each gets the previous one's output, in registration order."""

    async def exclaim(ctx: str, value: str) -> Outcome[str]:
        return Success(value + "!")

    async def upper(ctx: str, value: str) -> Outcome[str]:
        return Success(f"{value.upper()} ({ctx})")

    run = chain_steps("system_prompt", [("exclaim", exclaim), ("upper", upper)])
    assert run is not None
    assert await run("r1", "be brief") == Success("BE BRIEF! (r1)")


def test_chain_steps_returns_none_without_steps() -> None:
    """No transformers means no chain at all (None), so the position is skipped."""
    assert chain_steps("system_prompt", []) is None


async def test_chain_steps_failure_stops_the_chain() -> None:
    """A Failure from one step is returned as is and later steps do not run."""
    ran: list[str] = []

    async def stop(ctx: None, value: str) -> Outcome[str]:
        return Failure(Terminate("stopped"))

    async def later(ctx: None, value: str) -> Outcome[str]:
        ran.append(value)
        return Success(value)

    run = chain_steps("system_prompt", [("stop", stop), ("later", later)])
    assert run is not None
    assert await run(None, "x") == Failure(Terminate("stopped"))
    assert ran == []


async def test_chain_steps_exception_and_non_result_become_errors() -> None:
    """A raising step or one returning a non-Result is a MiddlewareError naming that step."""

    async def fine(ctx: None, value: str) -> Outcome[str]:
        return Success(value)

    async def raises(ctx: None, value: str) -> Outcome[str]:
        raise TypeError("nope")

    async def plain(ctx: None, value: str) -> Outcome[str]:
        return value  # type: ignore[return-value]

    for name, fn, expect in (
        ("raises", raises, "raised TypeError"),
        ("plain", plain, "not a Result"),
    ):
        run = chain_steps("system_prompt", [("fine", fine), (name, fn)])
        assert run is not None
        out = await run(None, "x")
        assert isinstance(out, Failure)
        error = out.failure()
        assert isinstance(error, MiddlewareError)
        assert (error.middleware, error.position) == (name, "system_prompt")
        assert expect in error.message


def test_returns_keeps_a_containers_value_in_inner_value() -> None:
    """The fold reads ``_inner_value`` directly (a method call less per layer): pin it."""
    assert Success(1)._inner_value == 1
    assert Failure("x")._inner_value == "x"


async def test_a_middleware_that_checks_itself_is_called_straight() -> None:
    """Marked for its position and name, it gets no guard: its layer is a plain call."""

    @checks_itself("tool_call", "mw")
    async def mw(x: int, call_next: Next) -> Outcome[int]:
        return await call_next(x + 1)

    handler = fold_onion("tool_call", [("mw", mw)], add_one, int)
    assert getattr(handler, "__code__", None) is mw.__code__  # the middleware, no guard
    assert await handler(1) == Success(3)


def marked_layers() -> list[tuple[str, Any]]:
    """One middleware that checks itself, each way it can be defined, and what it adds."""

    @checks_itself("tool_call", "mw")
    async def plain(x: int, call_next: Next) -> Outcome[int]:
        return (await call_next(x * 10)).map(lambda v: v + 1)

    @checks_itself("tool_call", "mw")
    async def defaulted(x: int, call_next: Next, step: int = 1) -> Outcome[int]:
        return (await call_next(x * 10)).map(lambda v: v + step)

    async def method(offset: int, x: int, call_next: Next) -> Outcome[int]:
        return (await call_next(x * 10)).map(lambda v: v + offset)

    async def keyword(x: int, call_next: Next, *, offset: int) -> Outcome[int]:
        return (await call_next(x * 10)).map(lambda v: v + offset)

    return [
        ("bound", plain),
        ("straight", defaulted),  # a parameter with a default: the layer makes the call
        ("bound", checks_itself("tool_call", "mw")(partial(method, 1))),
        ("straight", checks_itself("tool_call", "mw")(partial(keyword, offset=1))),
    ]


@pytest.mark.parametrize(("way", "mw"), marked_layers())
async def test_a_layer_with_its_call_next_bound_gives_what_a_straight_call_gives(
    way: str, mw: Any
) -> None:
    """Bound (no frame of its own) or called by its layer, the same outcomes, each inner its own.

    The same middleware folded twice, around two innermost ends, keeps each end apart,
    and is itself left as it was.
    """
    defaults = getattr(mw, "__defaults__", None)
    first = fold_onion("tool_call", [("mw", mw)], add_one, int)
    second = fold_onion("tool_call", [("mw", mw)], lambda x: add_one(x + 100), int)
    runs = (first.func if isinstance(first, partial) else first).__code__
    own = (mw.func if isinstance(mw, partial) else mw).__code__
    assert runs is own if way == "bound" else runs.co_name == "straight"
    for x in (0, 1, 7):
        assert await first(x) == Success(x * 10 + 2) == await mw(x, add_one)
        assert await second(x) == Success(x * 10 + 102)
    assert getattr(mw, "__defaults__", None) == defaults


@pytest.mark.parametrize(
    ("position", "name", "accepts"),
    [
        ("tool_call", "renamed", None),
        ("model_call", "mw", None),
        ("tool_call", "mw", lambda ctx, value: True),
    ],
)
async def test_a_middleware_that_checks_itself_elsewhere_is_guarded(
    position: Any, name: str, accepts: Any
) -> None:
    """Under another name or position, or where values get a further check: guarded."""

    @checks_itself("tool_call", "mw")
    async def mw(x: int, call_next: Next) -> Outcome[int]:
        return None  # type: ignore[return-value]  # what a guard catches

    handler = fold_onion(position, [(name, mw)], add_one, int, accepts)
    assert asyncio.iscoroutinefunction(handler)
    out = await handler(1)
    assert isinstance(out, Failure)
    error = out.failure()
    assert isinstance(error, MiddlewareError)
    assert (error.middleware, error.position) == (name, position)

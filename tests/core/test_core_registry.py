from collections.abc import Iterable
from typing import Any

import pytest
from returns.result import Success

from fncore.core import RegistrationError, Registry, Tool
from fncore.core._registry import POSITIONS, tool_functions


async def passthrough(ctx: Any, call_next: Any) -> Any:
    return await call_next(ctx)


async def observe(event: Any) -> None:
    return None


def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


def test_on_records_registration_with_options() -> None:
    """on() records position, name, order and hints as given, in registration order."""
    registry = Registry()

    @registry.on("model_call", name="log", order="outermost", before=["retry"], after=("auth",))
    async def log(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    @registry.on("tool_call", tools=["add"])
    async def audit(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    first, second = registry.middleware
    assert (first.position, first.name, first.function) == ("model_call", "log", log)
    assert (first.order, first.before, first.after, first.tools) == (
        "outermost",
        ("retry",),
        ("auth",),
        None,
    )
    assert (second.name, second.tools) == ("audit", ("add",))


async def test_decorators_return_function_unchanged() -> None:
    """on/hook/tool/tool_source return the very function, still directly callable."""
    registry = Registry()
    assert registry.on("run")(passthrough) is passthrough
    assert registry.hook("run_start")(observe) is observe
    assert registry.tool(multiply) is multiply
    assert registry.tool(name="times")(multiply) is multiply

    def source() -> list[Tool]:
        return []

    assert registry.tool_source(source) is source

    async def inner(ctx: int) -> Success[int]:
        return Success(ctx + 1)

    assert await passthrough(1, inner) == Success(2)
    assert multiply(3, 4) == 12


@pytest.mark.parametrize("position", POSITIONS)
def test_every_position_accepts_a_two_argument_async_function(position: Any) -> None:
    """Each of the six positions accepts a well-shaped async function."""
    registry = Registry()
    registry.on(position)(passthrough)  # type: ignore[no-untyped-call]
    assert registry.middleware[0].position == position


def test_extra_parameters_with_defaults_are_allowed() -> None:
    """Parameters beyond the required ones are fine when they have defaults (injection)."""
    registry = Registry()

    @registry.on("run")
    async def with_dep(ctx: Any, call_next: Any, client: object = None) -> Any:
        return await call_next(ctx)

    assert registry.middleware[0].name == "with_dep"


@pytest.mark.parametrize("arity", [1, 3])
def test_wrong_arity_names_function_and_shape(arity: int) -> None:
    """A middleware with the wrong number of parameters is refused, showing the shape to write."""
    registry = Registry()

    async def one(ctx: Any) -> Any:
        return ctx

    async def three(ctx: Any, call_next: Any, extra: Any) -> Any:
        return ctx

    fn = one if arity == 1 else three
    with pytest.raises(RegistrationError) as info:
        registry.on("model_call")(fn)  # type: ignore[type-var]
    text = str(info.value)
    assert f"'{fn.__name__}'" in text
    assert "exactly 2 argument" in text
    assert "(ctx: ModelCallContext, call_next: ModelCallNext)" in text
    assert "Provide[" in text
    assert registry.middleware == ()


def test_sync_middleware_is_refused() -> None:
    """A plain def is refused with a message telling to write async def."""
    registry = Registry()

    def sync_mw(ctx: Any, call_next: Any) -> Any:
        return call_next(ctx)

    with pytest.raises(RegistrationError, match=r"'sync_mw' must be an async function.*async def"):
        registry.on("run")(sync_mw)


def test_unknown_position_is_refused() -> None:
    """An unknown position names the function and lists the valid positions."""
    registry = Registry()
    with pytest.raises(RegistrationError) as info:
        registry.on("model", name="x")(passthrough)  # type: ignore[call-overload]
    text = str(info.value)
    assert "'passthrough'" in text
    assert "'model'" in text
    assert "model_call" in text
    assert "tool_call" in text


def test_bad_order_is_refused() -> None:
    """order= accepts only 'outermost' or 'innermost'."""
    with pytest.raises(RegistrationError, match=r"'passthrough'.*'outermost' or 'innermost'"):
        Registry().on("run", order="first")(passthrough)  # type: ignore[call-overload]


def test_tools_filter_outside_tool_call_is_refused() -> None:
    """tools= at any position but tool_call names the function and says where it applies."""
    with pytest.raises(RegistrationError) as info:
        Registry().on("model_call", tools=["add"])(passthrough)  # type: ignore[call-overload]
    text = str(info.value)
    assert "'passthrough'" in text
    assert "'tool_call'" in text
    assert "'model_call'" in text


@pytest.mark.parametrize("hint", ["before", "after"])
def test_hint_as_string_is_refused_with_list_suggestion(hint: str) -> None:
    """before='x' / after='x' names the function and suggests the list form."""
    with pytest.raises(RegistrationError) as info:
        Registry().on("run", **{hint: "retry"})(passthrough)  # type: ignore[call-overload]
    text = str(info.value)
    assert "'passthrough'" in text
    assert f"{hint}=['retry']" in text


def test_duplicate_name_at_same_position_is_refused() -> None:
    """Two middleware with the same name at one position clash, naming both functions."""
    registry = Registry()
    registry.on("run")(passthrough)

    async def other(ctx: Any, call_next: Any) -> Any:
        return await call_next(ctx)

    with pytest.raises(RegistrationError) as info:
        registry.on("run", name="passthrough")(other)
    text = str(info.value)
    assert "'passthrough'" in text
    assert "other" in text
    assert "name=" in text
    assert len(registry.middleware) == 1


def test_same_name_at_different_positions_is_allowed() -> None:
    """A name is unique per position only."""
    registry = Registry()
    registry.on("run")(passthrough)
    registry.on("model_call")(passthrough)
    assert [r.position for r in registry.middleware] == ["run", "model_call"]


def test_hook_records_event_name_and_timeout() -> None:
    """hook() records the event, the name (default: function name) and the timeout."""
    registry = Registry()
    registry.hook("tool_end", timeout=2.0)(observe)
    registry.hook("error", name="alert")(observe)
    first, second = registry.hooks
    assert (first.event, first.name, first.timeout) == ("tool_end", "observe", 2.0)
    assert (second.event, second.name, second.timeout) == ("error", "alert", None)


def test_unknown_hook_event_is_refused() -> None:
    """An unknown hook event names the function and lists the valid events."""
    with pytest.raises(RegistrationError) as info:
        Registry().hook("on_start")(observe)  # type: ignore[call-overload]
    text = str(info.value)
    assert "'observe'" in text
    assert "'on_start'" in text
    assert "run_start" in text


def test_hook_with_wrong_signature_or_timeout_is_refused() -> None:
    """A hook must be async with one argument, and its timeout positive."""
    registry = Registry()
    with pytest.raises(RegistrationError, match=r"'passthrough'.*exactly 1 argument"):
        registry.hook("run_end")(passthrough)  # type: ignore[type-var]
    with pytest.raises(RegistrationError, match="positive"):
        registry.hook("run_end", timeout=0)(observe)
    assert registry.hooks == ()


def test_tool_bare_and_with_options() -> None:
    """Registry.tool works bare or parameterised; options reach the built Tool."""
    registry = Registry()
    registry.tool(multiply)
    registry.tool(name="times", description="Times.", timeout=3.0)(multiply)
    plain, named = registry.tools
    assert (plain.name, plain.spec.description) == ("multiply", "Multiply two integers.")
    assert (named.name, named.spec.description, named.timeout) == ("times", "Times.", 3.0)


def test_tool_with_unannotated_param_is_refused() -> None:
    """Registering an unannotated tool raises at registration."""

    def bad(x):  # type: ignore[no-untyped-def]
        return x

    with pytest.raises(RegistrationError, match=r"tool 'bad': parameter 'x'"):
        Registry().tool(bad)


def test_tool_source_must_be_sync_without_required_params() -> None:
    """A tool source is a plain function taking no required argument."""
    registry = Registry()

    async def async_source() -> list[Tool]:
        return []

    def needs_arg(path: str) -> list[Tool]:
        return []

    def fine(path: str = ".") -> Iterable[Tool]:
        return []

    with pytest.raises(RegistrationError, match=r"'async_source' must be a plain function"):
        registry.tool_source(async_source)  # type: ignore[type-var]
    with pytest.raises(RegistrationError, match=r"'needs_arg'.*exactly 0 argument"):
        registry.tool_source(needs_arg)
    registry.tool_source(fine)
    assert [s.name for s in registry.tool_sources] == ["fine"]


def test_include_merges_everything_in_order() -> None:
    """include() appends the other registry's middleware, hooks, tools and sources."""
    app, lib = Registry(), Registry()
    app.on("run", name="app_mw")(passthrough)
    lib.on("run", name="lib_mw")(passthrough)
    lib.on("model_call", name="app_mw")(passthrough)
    lib.hook("run_start")(observe)
    lib.tool(multiply)

    def source() -> list[Tool]:
        return []

    lib.tool_source(source)
    app.include(lib)
    assert [(r.position, r.name) for r in app.middleware] == [
        ("run", "app_mw"),
        ("run", "lib_mw"),
        ("model_call", "app_mw"),
    ]
    assert [h.name for h in app.hooks] == ["observe"]
    assert [t.name for t in app.tools] == ["multiply"]
    assert [s.name for s in app.tool_sources] == ["source"]


def test_include_detects_name_clash() -> None:
    """include() refuses a middleware whose name is already taken at that position."""
    app, lib = Registry(), Registry()
    app.on("tool_call", name="retry")(passthrough)
    lib.on("tool_call", name="retry")(passthrough)
    with pytest.raises(RegistrationError, match=r"tool_call middleware name 'retry'"):
        app.include(lib)


def test_tool_functions_accepts_tools_and_functions() -> None:
    """tool_functions keeps Tool objects and builds tools from plain functions."""
    built = Tool.from_function(multiply, name="times")
    tools = tool_functions([built, multiply])
    assert tools[0] is built
    assert tools[1].name == "multiply"

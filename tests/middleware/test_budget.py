"""``budget``: weighted tokens and cost, per reply, session and tenant, and each exit."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest
from helpers import config_error, configured, outcome_of
from processes import BARRIER, PRELUDE, run_processes
from returns.result import Success

from fncore import (
    Agent,
    InMemorySessionStore,
    Message,
    MiddlewareError,
    ModelRequest,
    ModelResponse,
    Registry,
    ScopeRequired,
    StateKey,
    Usage,
    load_container,
)
from fncore.errors import BudgetExceeded, ProviderUnavailable, SessionConflict
from fncore.events import RunEnd
from fncore.middleware import Price, budget
from fncore.middleware.budget import HINT, MESSAGE
from fncore.shared_stores import RedisStore
from fncore.testing import FunctionModel, tool_calls


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def costly(input_tokens: int = 100, output_tokens: int = 10, *, name: str = "") -> Any:
    """A model function: `add` while tools are allowed, then an answer; fixed usage each."""

    def reply(request: ModelRequest) -> ModelResponse:
        message = (
            Message.assistant("final")
            if request.tool_choice == "none"
            else tool_calls(("add", {"a": 1, "b": 2}))
        )
        return ModelResponse(message, Usage(input_tokens, output_tokens, requests=1), "stop", name)

    return reply


def agent_with(registry: Registry, model: Any, **options: Any) -> Agent:
    return Agent(model, registry=registry, tools=[add], **options)


def spent_in(registry: Registry, key: str, scope: str = "state") -> list[float]:
    """Record, at the end of every run, what ``key`` holds in the reply's (session's) state."""
    seen: list[float] = []
    state_key: StateKey[float] = StateKey(key, default=float)

    @registry.hook("run_end")
    async def record(event: RunEnd) -> None:
        seen.append(getattr(event.run, scope).get(state_key))

    return seen


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_spent_reply_budget_makes_the_next_round_the_last(streaming: bool) -> None:
    """Weighted tokens: once spent, the next round is told to wrap up and offered no tools."""
    registry = budget(tokens_per_reply=250, output_weight=4.0)
    spent = spent_in(registry, "budget.tokens_per_reply")
    model = FunctionModel(costly())
    result = (await outcome_of(agent_with(registry, model), "go", streaming=streaming)).unwrap()
    # 100 + 4 * 10 = 140 per call: over 250 after the second call
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert [len(r.tools) for r in model.requests] == [1, 1, 0]
    assert model.requests[-1].messages[-1].text == HINT
    assert (result.output, result.stop_reason) == ("final", "completed")
    assert spent == [420.0]


async def test_the_weights_default_to_one() -> None:
    """By default a token is a token: input plus output."""
    registry = budget()
    spent = spent_in(registry, "budget.tokens_per_reply")
    await agent_with(registry, FunctionModel(costly(7, 3))).run("go", tool_choice="none")
    assert spent == [10.0]


@pytest.mark.parametrize("streaming", [False, True])
async def test_end_stops_a_model_that_keeps_calling_after_its_last_round(streaming: bool) -> None:
    """The last round's tool calls are answered, then the run stops without another call."""
    model = FunctionModel(lambda request: tool_calls(("add", {"a": 1, "b": 1})))
    registry = budget(tokens_per_reply=1, message="Budget gone.")
    result = (await outcome_of(agent_with(registry, model), "go", streaming=streaming)).unwrap()
    assert (result.output, result.stop_reason) == ("Budget gone.", "terminated")
    assert len(model.requests) == 2


@pytest.mark.parametrize("streaming", [False, True])
async def test_error_refuses_the_call_after_the_budget_is_spent(streaming: bool) -> None:
    """exit='error': no call once spent; the run fails with what was spent and allowed."""
    model = FunctionModel(costly())
    registry = budget(tokens_per_reply=250, exit="error")
    error = (await outcome_of(agent_with(registry, model), "go", streaming=streaming)).failure()
    assert isinstance(error, BudgetExceeded)
    assert (error.limit, error.scope, error.spent, error.allowed) == (
        "tokens_per_reply",
        "reply",
        330.0,
        250.0,
    )
    assert (error.position, error.middleware) == ("model_call", "budget")
    assert "330 weighted tokens of its tokens_per_reply=250" in error.message
    assert len(model.requests) == 3


async def test_each_reply_has_the_whole_reply_budget_and_sessions_add_up() -> None:
    """Reply budgets start fresh every reply; a session budget spans the session's replies."""
    model = FunctionModel(costly())
    store = InMemorySessionStore()
    registry = budget(tokens_per_reply=300, tokens_per_session=500)
    agent = agent_with(registry, model, sessions=store)
    first = (await agent.run("one", session_id="s")).unwrap()  # 110 each: 330, then the last
    second = (await agent.run("two", session_id="s")).unwrap()  # 440 + 110: over the session's
    third = (await agent.run("three", session_id="s")).unwrap()  # spent before it started
    assert (first.rounds, second.rounds) == (4, 2)
    assert (third.output, third.stop_reason) == (MESSAGE, "terminated")
    assert len(model.requests) == 6
    session = await store.load("s")
    assert session is not None
    assert session.state["budget.tokens_per_session"] == 660.0


async def test_a_failed_call_spends_nothing_and_its_error_passes_through() -> None:
    """A model error has no usage: nothing is spent, and the run fails with that error."""
    registry = budget(tokens_per_reply=10)
    spent = spent_in(registry, "budget.tokens_per_reply")
    model = FunctionModel(lambda request: ProviderUnavailable(message="down"))
    error = (await agent_with(registry, model).run("go")).failure()
    assert isinstance(error, ProviderUnavailable)
    assert spent == [0.0]


def test_a_price_costs_per_million_tokens_and_cached_input_may_be_cheaper() -> None:
    """Price.cost: input, cached input and output, per million tokens."""
    usage = Usage(input_tokens=2_000_000, output_tokens=1_000_000, cache_read_tokens=500_000)
    assert Price(input=1.0, output=4.0).cost(usage) == pytest.approx(6.0)
    assert Price(input=1.0, output=4.0, cached_input=0.1).cost(usage) == pytest.approx(5.55)


@pytest.mark.parametrize("streaming", [False, True])
async def test_a_cost_budget_prices_each_call_by_its_model(streaming: bool) -> None:
    """cost_per_reply: each call priced from the table; spent, the next round is the last."""
    model = FunctionModel(costly(1_000_000, 100_000), name="gpt-test")
    registry = budget(
        tokens_per_reply=None,
        prices={"gpt-test": Price(input=0.4, output=1.6)},
        cost_per_reply=1.0,
    )
    spent = spent_in(registry, "budget.cost_per_reply")
    result = (await outcome_of(agent_with(registry, model), "go", streaming=streaming)).unwrap()
    assert [r.tool_choice for r in model.requests] == ["auto", "auto", "none"]
    assert result.output == "final"
    assert spent == [pytest.approx(3 * 0.56)]  # 0.4 + 0.1 * 1.6 per call


async def test_the_answering_model_is_priced_when_the_table_knows_it() -> None:
    """A response from another model (a fallback) is priced as that model, else as asked."""
    model = FunctionModel(costly(1_000_000, 0, name="cheap-2026-01-01"), name="main")
    prices = {"main": Price(input=10.0, output=10.0), "cheap-2026-01-01": Price(input=1, output=1)}
    registry = budget(tokens_per_reply=None, prices=prices, cost_per_reply=100.0)
    spent = spent_in(registry, "budget.cost_per_reply")
    await agent_with(registry, model).run("go", tool_choice="none")
    assert spent == [pytest.approx(1.0)]
    registry = budget(tokens_per_reply=None, prices={"main": prices["main"]}, cost_per_reply=100)
    spent = spent_in(registry, "budget.cost_per_reply")
    await agent_with(registry, model).run("go", tool_choice="none")
    assert spent == [pytest.approx(10.0)]


async def test_a_model_without_a_price_is_refused_before_the_call() -> None:
    """Cost that cannot be counted is not silently zero: the call is not made."""
    model = FunctionModel(costly(), name="unpriced")
    registry = budget(prices={"other": Price(input=1, output=1)}, cost_per_reply=1.0)
    error = (await agent_with(registry, model).run("go")).failure()
    assert isinstance(error, MiddlewareError)
    assert "no price for model 'unpriced' (priced: other)" in error.message
    assert model.requests == []


@pytest.mark.parametrize(
    ("options", "metadata", "scope"),
    [
        ({"cost_per_session": 1.0}, {}, "session"),
        ({"tokens_per_tenant": 10.0}, {}, "shared"),
        ({"tokens_per_tenant": 10.0}, {"tenant": ""}, "shared"),
        ({"tokens_per_tenant": 10.0, "tenant_key": "org"}, {"tenant": "acme"}, "shared"),
    ],
)
async def test_a_budget_whose_scope_the_run_lacks_fails_before_any_call(
    options: dict[str, Any], metadata: dict[str, Any], scope: str
) -> None:
    """Per-session without a session, per-tenant without the tenant: typed, nothing sent."""
    if "cost_per_session" in options:
        options["prices"] = {"function": Price(input=1, output=1)}
    model = FunctionModel(costly())
    outcome = await agent_with(budget(**options), model).run("go", metadata=metadata)
    error = outcome.failure()
    assert isinstance(error, ScopeRequired)
    assert (error.scope, error.position, error.middleware) == (scope, "run", "budget")
    assert model.requests == []


async def test_a_tenant_budget_is_shared_by_the_runs_of_a_tenant() -> None:
    """tokens_per_tenant: one tenant's runs share it; another tenant has its own."""
    model = FunctionModel(costly(40, 10))
    registry = budget(tokens_per_reply=None, tokens_per_tenant=250)
    agent = agent_with(registry, model)
    acme = {"tenant": "acme"}
    first = (await agent.run("a", metadata=acme)).unwrap()  # 50 + 50 + 50 + 50 + 50: last
    second = (await agent.run("b", metadata=acme)).unwrap()  # spent before it started
    other = (await agent.run("c", metadata={"tenant": "globex"})).unwrap()
    assert (first.rounds, first.output) == (6, "final")
    assert (second.output, second.stop_reason) == (MESSAGE, "terminated")
    assert other.output == "final"
    await registry.aclose()


async def test_a_thousand_concurrent_runs_spend_exactly_from_one_tenant_budget() -> None:
    """1,000 concurrent runs of one tenant: the shared total is exactly their sum."""

    async def slow(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0)
        return costly(3, 2)(request)

    registry = budget(tokens_per_reply=12, tokens_per_tenant=1e9, output_weight=2.0)
    agent = agent_with(registry, FunctionModel(slow))
    runs = (agent.run(f"run {i}", metadata={"tenant": "acme"}) for i in range(1000))
    outcomes = await asyncio.gather(*runs)
    assert all(o.unwrap().rounds == 3 for o in outcomes)  # 7 + 7 >= 12: the third is last
    store = registry.resources[0]
    assert await store.incr("budget.tokens_per_tenant:acme", 0.0) == 1000 * 3 * 7.0


async def test_tenant_budgets_in_redis_are_shared_by_two_processes(redis_url: str) -> None:
    """Two processes on one Redis spend from one tenant budget: the total is exact."""
    script = (
        PRELUDE
        + """
from fncore import Agent, Message, ModelResponse, Usage
from fncore.middleware import budget
from fncore.testing import FunctionModel


async def main():
    url, runs = sys.argv[1], int(sys.argv[2])
    registry = budget(tokens_per_reply=None, tokens_per_tenant=1e9, store=url)
    model = FunctionModel(lambda r: ModelResponse(Message.assistant("ok"), Usage(3, 2)))
    agent = Agent(model, registry=registry)
    await wait_for_start()
    outcomes = await asyncio.gather(
        *(agent.run("hi", metadata={"tenant": "acme"}) for _ in range(runs))
    )
    await registry.aclose()
    print(json.dumps(sum(o.unwrap().output == "ok" for o in outcomes)))


asyncio.run(main())
"""
    )
    answered = await run_processes(script, redis_url, "300")
    assert answered == [300, 300]
    store = RedisStore(redis_url)
    assert await store.incr("budget.tokens_per_tenant:acme", 0.0) == 600 * 5.0
    await store.aclose()


async def test_a_tenant_spent_in_one_process_is_stopped_in_another(redis_url: str) -> None:
    """What one process spent from a tenant's budget, the other process sees."""
    script = (
        PRELUDE
        + """
from fncore import Agent, Message, ModelResponse, Usage
from fncore.middleware import budget
from fncore.testing import FunctionModel


async def main():
    registry = budget(tokens_per_reply=None, tokens_per_tenant=5, store=sys.argv[1])
    model = FunctionModel(lambda r: ModelResponse(Message.assistant("ok"), Usage(3, 2)))
    outcome = await Agent(model, registry=registry).run("hi", metadata={"tenant": "acme"})
    await registry.aclose()
    print(json.dumps(outcome.unwrap().stop_reason))


asyncio.run(main())
"""
    )
    assert await run_processes(script, redis_url, count=1) == ["completed"]
    assert await run_processes(script, redis_url, count=1) == ["terminated"]


@pytest.mark.parametrize("exit", ["end", "error"])
async def test_four_processes_never_exceed_a_session_budget_on_redis(
    redis_url: str, exit: str, sessions_url: str
) -> None:
    """Four processes, 15 concurrent runs of one session each, 100 tokens for the session.

    Each call spends 5: exactly 20 calls are made between them, and not one more. Every run
    commits, is refused or conflicts; the session (in each process's memory, or one for all
    in PostgreSQL) holds each committed run once.
    """
    script = (
        PRELUDE
        + BARRIER
        + """
from fncore import Agent, Message, ModelResponse, Usage, open_session_store
from fncore.errors import BudgetExceeded, SessionConflict
from fncore.middleware import budget
from fncore.testing import FunctionModel


async def answer(request):
    await asyncio.sleep(0.002)
    return ModelResponse(Message.assistant("ok"), Usage(3, 2))


async def main():
    url, exit, sessions_url = sys.argv[1], sys.argv[2], sys.argv[3]
    registry = budget(
        tokens_per_reply=None,
        tokens_per_session=100,
        session_spend="store",
        store=url,
        exit=exit,
    )
    model = FunctionModel(answer)
    sessions = open_session_store(sessions_url)
    agent = Agent(model, registry=registry, sessions=sessions)
    await barrier(url, "start", 4)
    outcomes = await asyncio.gather(*(agent.run("hi", session_id="shared") for _ in range(15)))
    await registry.aclose()
    errors = [o.swap().value_or(None) for o in outcomes]
    refused = sum(isinstance(e, BudgetExceeded) for e in errors)
    conflicts = sum(isinstance(e, SessionConflict) for e in errors)
    await barrier(url, "done", 4)
    session = await sessions.load("shared")
    if hasattr(sessions, "aclose"):
        await sessions.aclose()
    print(json.dumps([
        len(model.requests),
        refused,
        errors.count(None),
        conflicts,
        0 if session is None else session.version,
        0 if session is None else len(session.messages),
    ]))


asyncio.run(main())
"""
    )
    counts = await run_processes(script, redis_url, exit, sessions_url, count=4)
    calls, refused, committed, conflicts, versions, lengths = zip(*counts, strict=True)
    assert sum(calls) == 20
    assert sum(refused) == (60 - 20 if exit == "error" else 0)
    assert [sum(runs) for runs in zip(refused, committed, conflicts, strict=True)] == [15] * 4
    # one session for all: every process sees every commit; one each: its own
    shared = sessions_url.startswith("postgresql")
    assert versions == ((sum(committed),) * 4 if shared else committed)
    assert lengths == tuple(2 * v for v in versions)  # each commit: a prompt, an answer
    store = RedisStore(redis_url)
    assert await store.incr("budget.tokens_per_session:shared", 0.0) == 100.0
    await store.aclose()


async def test_a_tenant_budget_starts_again_after_its_period(redis_url: str) -> None:
    """A tenant's spending expires ``period`` seconds after its first call of the period."""
    model = FunctionModel(costly(3, 2))
    # the first two runs must fall in one period, however slow the machine: a period of 2 s
    registry = budget(tokens_per_reply=None, tokens_per_tenant=5, period=2, store=redis_url)
    agent = agent_with(registry, model)
    acme = {"tenant": "acme"}
    assert (await agent.run("a", metadata=acme)).unwrap().rounds == 2
    assert (await agent.run("b", metadata=acme)).unwrap().stop_reason == "terminated"
    await asyncio.sleep(2.1)
    assert (await agent.run("c", metadata=acme)).unwrap().rounds == 2
    await registry.aclose()


@pytest.fixture(params=["memory", "redis"])
def store(request: pytest.FixtureRequest) -> str:
    """Each store spending can count in: this process's memory, and a real Redis."""
    if request.param == "memory":
        return "memory://"
    return str(request.getfixturevalue("redis_url"))


@pytest.mark.parametrize("exit", ["end", "error"])
async def test_concurrent_runs_of_a_session_never_exceed_its_budget_in_the_store(
    store: str, exit: str
) -> None:
    """session_spend='store': 100 concurrent runs of one session spend exactly its budget.

    Each call spends 5 of 50: exactly ten calls are made, and every other run stops
    (``end``) or fails (``error``) without one. (Of the runs that got to commit, the first
    wins and the others are `SessionConflict`s, as for any concurrent runs of a session.)
    """

    async def answer(request: ModelRequest) -> ModelResponse:
        await asyncio.sleep(0.001)
        return ModelResponse(Message.assistant("ok"), Usage(3, 2))

    model = FunctionModel(answer)
    registry = budget(
        tokens_per_reply=None, tokens_per_session=50, session_spend="store", store=store, exit=exit
    )
    agent = agent_with(registry, model)
    outcomes = await asyncio.gather(*(agent.run(f"run {i}", session_id="s") for i in range(100)))
    assert len(model.requests) == 10
    assert await registry.resources[0].incr("budget.tokens_per_session:s", 0.0) == 50.0
    errors = [o.failure() for o in outcomes if not isinstance(o, Success)]
    refused = [e for e in errors if isinstance(e, BudgetExceeded)]
    assert all(isinstance(e, (BudgetExceeded, SessionConflict)) for e in errors)
    if exit == "error":
        assert len(refused) == 90
        assert {(e.scope, e.spent) for e in refused} == {("session", 50.0)}
    else:
        assert refused == []
    await registry.aclose()


async def test_a_run_cancelled_in_its_turn_lets_the_next_run_of_the_session_in(
    store: str,
) -> None:
    """Cancelled while its round holds the session's turn, a run gives the turn up."""
    entered = asyncio.Event()

    async def answer(request: ModelRequest) -> ModelResponse:
        if request.messages[-1].text == "stuck":
            entered.set()
            await asyncio.Event().wait()  # until cancelled
        return ModelResponse(Message.assistant("ok"), Usage(3, 2))

    registry = budget(
        tokens_per_reply=None, tokens_per_session=50, session_spend="store", store=store
    )
    agent = agent_with(registry, FunctionModel(answer))
    stuck = asyncio.create_task(agent.run("stuck", session_id="s"))
    await entered.wait()
    stuck.cancel()
    with pytest.raises(asyncio.CancelledError):
        await stuck
    result = await asyncio.wait_for(agent.run("next", session_id="s"), 10)
    assert result.unwrap().output == "ok"
    await registry.aclose()


@pytest.mark.parametrize("session_spend", ["state", "store"])
async def test_what_a_failed_run_spent_counts_in_the_store_only(session_spend: str) -> None:
    """A run that spent, then failed: the store keeps its spending, the session's state not."""
    replies: list[Any] = [
        ModelResponse(tool_calls(("add", {"a": 1, "b": 2})), Usage(3, 2)),
        ProviderUnavailable(message="down"),
    ]
    model = FunctionModel(lambda request: replies[len(model.requests) - 1])
    sessions = InMemorySessionStore()
    registry = budget(tokens_per_reply=None, tokens_per_session=100, session_spend=session_spend)
    agent = agent_with(registry, model, sessions=sessions)
    assert isinstance((await agent.run("go", session_id="s")).failure(), ProviderUnavailable)
    assert await sessions.load("s") is None  # a failed run commits nothing
    if session_spend == "store":
        assert await registry.resources[0].incr("budget.tokens_per_session:s", 0.0) == 5.0
    else:
        assert registry.resources == ()
    await registry.aclose()


async def test_a_nested_run_of_the_same_session_does_not_wait_for_its_own_turn() -> None:
    """An agent used as another's model, on the same session: the inner round shares the turn."""
    registry = budget(tokens_per_reply=None, tokens_per_session=100, session_spend="store")
    inner = agent_with(registry, FunctionModel(costly(3, 2)))

    async def delegate(request: ModelRequest) -> ModelResponse:
        result = (await inner.run("inner", session_id="s", tool_choice="none")).unwrap()
        return ModelResponse(Message.assistant(result.output), Usage(1, 1))

    outer = agent_with(registry, FunctionModel(delegate))
    result = await asyncio.wait_for(outer.run("outer", session_id="s", tool_choice="none"), 10)
    assert result.unwrap().output == "final"
    assert await registry.resources[0].incr("budget.tokens_per_session:s", 0.0) == 5.0 + 2.0
    await registry.aclose()


@pytest.mark.parametrize(
    ("options", "words"),
    [
        ({"tokens_per_reply": None}, "needs a budget"),
        ({"cost_per_reply": 1.0}, "cost_per_reply needs prices per model"),
        ({"prices": {"m": Price(input=1, output=1)}}, "prices are only used by a cost budget"),
        ({"session_spend": "store"}, "counts per-session budgets only"),
    ],
)
def test_bad_combinations_are_value_errors(options: dict[str, Any], words: str) -> None:
    """A budget that could not work is refused when the registry is made."""
    with pytest.raises(ValueError, match=words):
        budget(**options)


async def test_configuration_loads_it_with_use_alone() -> None:
    """Configured by name alone: 100,000 tokens per reply, ending gracefully."""
    agent = configured({"use": "budget"}).agent(tools=[add])
    assert agent.describe().positions["model_call"] == ("budget",)
    assert (await agent.run("1 2")).unwrap().output == "add: 3"


async def test_configuration_from_a_toml_file_with_a_price_table(tmp_path: Path) -> None:
    """Prices as a TOML table, validated into Price values; a cost budget applies them."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        """
[model]
name = "gpt-4.1-mini"

[[middleware]]
use = "budget"
tokens_per_reply = 5000
cost_per_session = 0.000015
exit = "error"
prices = { "gpt-4.1-mini" = { input = 0.4, output = 1.6 } }
"""
    )
    agent = load_container(path, environ={}).agent(tools=[add])
    first = await agent.run("1 2", session_id="s")
    assert isinstance(first, Success)  # 2 calls: 9 tokens in, 4 out: 1e-5 spent
    error = (await agent.run("1 2", session_id="s")).failure()
    assert isinstance(error, BudgetExceeded)
    assert (error.limit, error.scope) == ("cost_per_session", "session")


async def test_configuration_counts_a_session_on_redis(tmp_path: Path, redis_url: str) -> None:
    """session_spend = "store" in TOML: two containers (as two processes) share the spending."""
    path = tmp_path / "fncore.toml"
    path.write_text(
        f"""
[[middleware]]
use = "budget"
tokens_per_reply = 5000
tokens_per_session = 1
session_spend = "store"
store = "{redis_url}"
"""
    )
    async with (
        load_container(path, environ={}) as first,
        load_container(path, environ={}) as second,
    ):
        answered = (await first.agent().run("hello", session_id="s")).unwrap()
        stopped = (await second.agent().run("hello again", session_id="s")).unwrap()
    assert (answered.stop_reason, stopped.stop_reason) == ("completed", "terminated")


@pytest.mark.parametrize(
    ("entry", "words"),
    [
        ({"use": "budget", "tokens_per_reply": 0}, "greater than 0"),
        ({"use": "budget", "cost_per_reply": 1}, "needs prices"),
        (
            {"use": "budget", "cost_per_reply": 1, "prices": {"m": {"input": -1, "output": 1}}},
            "parameter 'prices.m.input'",
        ),
        ({"use": "budget", "exit": "continue"}, "parameter 'exit'"),
        ({"use": "budget", "tokens_per_tenant": 1, "store": "ftp://x"}, "unknown scheme 'ftp'"),
        ({"use": "budget", "session_spend": "redis"}, "parameter 'session_spend'"),
        (
            {"use": "budget", "tokens_per_session": 1, "session_spend": "store", "store": "x://"},
            "unknown scheme 'x'",
        ),
    ],
)
def test_configuration_errors_are_one_line(entry: dict[str, Any], words: str) -> None:
    """Wrong values, prices and combinations are one ConfigError line naming the entry."""
    assert words in config_error(entry)

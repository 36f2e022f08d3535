"""``budget``: a weighted token budget and a cost budget, per reply, per session, per tenant.

Every model call's usage (the `Usage` on its response) is spent from each configured budget:

* tokens, weighted: ``input_weight * input_tokens + output_weight * output_tokens``
  (AgentScope's reply budget);
* cost: from a price table per model (per million tokens, in the prices' currency).

Each budget counts in one scope: the reply (``ctx.run.state``), the session
(``ctx.run.session_state``, or with ``session_spend="store"`` the store, under the session's
id), or a tenant (the run's ``metadata[tenant_key]``) in a store shared by every process that
uses the same URL. Per-session spending in the store is shared at once by every run of the
session in every process; its rounds take turns (a lock in the store), so concurrent runs
spend as if they ran one after another.

A budget is checked before each round: the round that crosses it is not cut short (its cost
is known only afterwards). What follows is ``exit``:

* ``end`` (default): the next round is the reply's last, told to wrap up (``hint``) and
  offered no tools. A round after that (the model called a tool anyway), or a reply that
  starts with its budget already spent, stops before calling the model, with ``message``.
* ``error``: no further model call is made; the run fails with `BudgetExceeded`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from functools import partial
from typing import Annotated, Literal

from pydantic import BaseModel, ConfigDict, Field
from returns.result import Failure, Success

from fncore.core import (
    BudgetExceeded,
    MiddlewareError,
    ModelCallContext,
    ModelCallNext,
    ModelResponse,
    Outcome,
    ReasoningContext,
    ReasoningNext,
    Registry,
    RunInfo,
    StateKey,
    Usage,
)
from fncore.core._fold import checks_itself, raised
from fncore.core._position_names import MODEL_CALL, REASONING
from fncore.middleware._checked import Seconds, checked
from fncore.middleware._place import place
from fncore.middleware._scopes import (
    Turn,
    Verdict,
    register_last_round,
    require_scopes,
    session_turns,
    tenant_of,
)
from fncore.shared_stores import SharedStore, open_store

__all__ = ["Price", "budget"]

HINT = "Your budget is spent. Give your final answer now, with what you have, without tools."
"""What the last round of a reply is told, by default."""

MESSAGE = "Stopped: the budget is spent."
"""The output of a reply that ``exit="end"`` stops without another model call."""

Amount = Annotated[float, Field(gt=0, allow_inf_nan=False)]
"""A budget: more than zero, finite (weighted tokens, or money in the prices' currency)."""

Weight = Annotated[float, Field(ge=0, allow_inf_nan=False)]
"""How much a token counts toward a token budget: zero or more, finite."""

Meter = Literal["tokens", "cost"]
"""What a budget counts: weighted tokens, or cost."""

Scope = Literal["reply", "session", "shared"]
"""Where a budget counts: the reply's state, the session's, or a tenant's share of a store."""


class Price(BaseModel):
    """What a model costs, per million tokens, in the currency of your choice.

    Example:
        >>> price = Price(input=0.4, output=1.6)
        >>> round(price.cost(Usage(input_tokens=1_000_000, output_tokens=500_000)), 6)
        1.2
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    input: float = Field(ge=0, allow_inf_nan=False)
    """Per million input tokens."""
    output: float = Field(ge=0, allow_inf_nan=False)
    """Per million output tokens (reasoning tokens included)."""
    cached_input: float | None = Field(default=None, ge=0, allow_inf_nan=False)
    """Per million input tokens read from the provider's prompt cache (default: ``input``)."""

    def cost(self, usage: Usage) -> float:
        """What ``usage`` costs at this price."""
        cached = min(usage.cache_read_tokens, usage.input_tokens)
        cached_price = self.input if self.cached_input is None else self.cached_input
        fresh = usage.input_tokens - cached
        total = fresh * self.input + cached * cached_price + usage.output_tokens * self.output
        return total / 1_000_000


@dataclass(frozen=True, slots=True)
class _Budget:
    """One configured budget: what it meters, where it counts, how much it allows."""

    limit: str
    meter: Meter
    scope: Scope
    allowed: float
    key: StateKey[float]

    def amount(self, tokens: float, cost: float) -> float:
        """What a call that spent ``tokens`` (weighted) and ``cost`` spends from it."""
        return tokens if self.meter == "tokens" else cost


@dataclass(frozen=True, slots=True)
class _Stored:
    """The budgets counted in a store, which every process using the same URL shares.

    Per-tenant budgets count under the run's tenant and start again every ``period``;
    per-session budgets (``session_spend="store"``) count under the session's id.
    """

    budgets: tuple[_Budget, ...]
    store: SharedStore
    tenant_key: str
    period: float

    def _key(self, budget: _Budget, run: RunInfo) -> str:
        owner = tenant_of(run, self.tenant_key) if budget.scope == "shared" else run.session_id
        return f"{budget.key.name}:{owner}"

    def _ttl(self, budget: _Budget) -> float | None:
        return self.period if budget.scope == "shared" else None

    async def over(self, run: RunInfo) -> tuple[_Budget, float] | None:
        """The first budget ``run``'s tenant (session) has spent, with what it spent, if any."""
        for budget in self.budgets:
            spent = await self.store.incr(self._key(budget, run), 0.0, ttl=self._ttl(budget))
            if spent >= budget.allowed:
                return budget, spent
        return None

    async def spend(self, run: RunInfo, tokens: float, cost: float) -> None:
        """Spend from each budget of ``run``'s tenant (session): atomic, exact across processes."""
        for budget in self.budgets:
            amount = budget.amount(tokens, cost)
            await self.store.incr(self._key(budget, run), amount, ttl=self._ttl(budget))


@dataclass(frozen=True, slots=True)
class _Books:
    """What each budget of one ``budget`` middleware spent, wherever it counts."""

    local: tuple[_Budget, ...]
    """The budgets per reply and per session, in the run's state."""
    stored: _Stored | None
    """The budgets per tenant, and per session with ``session_spend="store"``, if any."""

    def over_here(self, run: RunInfo) -> tuple[_Budget, float] | None:
        """The first budget in the run's state ``run`` has spent, with what it spent."""
        for budget in self.local:  # the reply's or the session's state, here and in `spend_here`
            state = run.state if budget.scope == "reply" else run.session_state
            spent = state.get(budget.key)
            if spent >= budget.allowed:
                return budget, spent
        return None

    async def over(self, run: RunInfo) -> tuple[_Budget, float] | None:
        """The first budget ``run`` has spent, with what it spent; ``None`` if none is."""
        over = self.over_here(run)
        if over is not None or self.stored is None:
            return over
        return await self.stored.over(run)

    def spend_here(self, run: RunInfo, tokens: float, cost: float) -> None:
        """Spend ``tokens`` and ``cost`` from every budget in the run's state."""
        for budget in self.local:
            state = run.state if budget.scope == "reply" else run.session_state
            spent = tokens if budget.meter == "tokens" else cost  # `_Budget.amount`
            state.set(budget.key, state.get(budget.key) + spent)


def _verdict(over: tuple[_Budget, float] | None, ctx: ReasoningContext) -> Verdict:
    if over is None:
        return "go"
    # spent before the reply started: it has nothing to wrap up
    return "stop" if ctx.round == 1 else "last"


def _exceeded(budget: _Budget, spent: float, name: str) -> BudgetExceeded:
    unit = "weighted tokens" if budget.meter == "tokens" else "cost"
    where = "tenant" if budget.scope == "shared" else budget.scope
    return BudgetExceeded(
        message=(
            f"this {where} spent {spent:g} {unit} of its {budget.limit}={budget.allowed:g}: "
            "raise the budget, or use exit='end' to finish the reply with an answer"
        ),
        position=MODEL_CALL,
        middleware=name,
        limit=budget.limit,
        scope=budget.scope,
        spent=spent,
        allowed=budget.allowed,
    )


def _configured(
    name: str,
    amounts: tuple[tuple[str, Meter, Scope, float | None], ...],
    priced: bool,
    session_spend: Literal["state", "store"],
) -> tuple[_Budget, ...]:
    """The budgets ``amounts`` sets (``None``: not set), each under its own key.

    Raises:
        ValueError: for no budget at all, a cost budget without prices (``priced``), prices
            without a cost budget, or ``session_spend="store"`` without a session budget.
    """
    budgets = tuple(
        _Budget(
            limit, meter, scope, allowed, StateKey(f"{name}.{limit}", default=float, shared=True)
        )
        for limit, meter, scope, allowed in amounts
        if allowed is not None
    )
    if not budgets:
        msg = "budget needs a budget: set tokens_per_reply, cost_per_reply, ..."
        raise ValueError(msg)
    costs = [b.limit for b in budgets if b.meter == "cost"]
    if costs and not priced:
        msg = (
            f"budget: {costs[0]} needs prices per model, e.g. "
            'prices = { "gpt-4.1-mini" = { input = 0.4, output = 1.6 } }'
        )
        raise ValueError(msg)
    if priced and not costs:
        msg = "budget: prices are only used by a cost budget: set cost_per_reply, ..."
        raise ValueError(msg)
    if session_spend == "store" and not any(b.scope == "session" for b in budgets):
        msg = (
            "budget: session_spend='store' counts per-session budgets only: set "
            "tokens_per_session or cost_per_session, or drop session_spend"
        )
        raise ValueError(msg)
    return budgets


@dataclass(frozen=True, slots=True)
class _Turns:
    """A session's rounds taking turns (``session_spend="store"`` with ``exit="error"``)."""

    turn: Turn

    async def take_turns(
        self, ctx: ReasoningContext, call_next: ReasoningNext
    ) -> Outcome[ModelResponse]:
        """At ``reasoning``: run the round in its session's turn."""
        async with self.turn(ctx.run):
            return await call_next(ctx)


class _Spender:
    """One configured `budget`'s middleware, as methods: what each position does.

    Args:
        books: Where each budget counts.
        weights: How much an input and an output token count.
        prices: Per model name, what it costs (empty: no cost budget).
        refuse: Whether a call is refused once a budget is spent (``exit="error"``).
        name: The middleware's name, for errors.
    """

    __slots__ = ("books", "input_weight", "name", "output_weight", "prices", "refuse")

    def __init__(
        self,
        books: _Books,
        weights: tuple[float, float],
        prices: Mapping[str, Price],
        refuse: bool,
        name: str,
    ) -> None:
        self.books = books
        self.input_weight, self.output_weight = weights
        self.prices = prices
        self.refuse = refuse
        self.name = name

    async def verdict(self, ctx: ReasoningContext) -> Verdict:
        """Before a round (``exit="end"``): go on, make it the last, or stop."""
        return _verdict(await self.books.over(ctx.run), ctx)

    def verdict_here(self, ctx: ReasoningContext) -> Verdict:
        """`verdict`, for budgets all counted in the run's state: no await."""
        return _verdict(self.books.over_here(ctx.run), ctx)

    async def spend_budget(
        self, ctx: ModelCallContext, call_next: ModelCallNext
    ) -> Outcome[ModelResponse]:
        """At ``model_call``: spend what the call's answer used (refuse it when spent)."""
        try:
            run = ctx.run
            prices = self.prices
            requested = ctx.model.name
            if prices and requested not in prices:
                known = ", ".join(sorted(prices))
                return Failure(
                    MiddlewareError(
                        message=(
                            f"no price for model {requested!r} (priced: {known}): add it to "
                            "prices, or its cost could not be counted; nothing was sent"
                        ),
                        position=MODEL_CALL,
                        middleware=self.name,
                    )
                )
            if self.refuse:
                books = self.books
                over = books.over_here(run) if books.stored is None else await books.over(run)
                if over is not None:
                    return Failure(_exceeded(*over, self.name))
            outcome = await call_next(ctx)
            if type(outcome) is Success:
                response: ModelResponse = outcome.unwrap()
                usage = response.usage
                tokens = (
                    self.input_weight * usage.input_tokens
                    + self.output_weight * usage.output_tokens
                )
                price = _price(prices, response.model_name, requested) if prices else None
                cost = 0.0 if price is None else price.cost(usage)
                books = self.books
                books.spend_here(run, tokens, cost)
                if books.stored is not None:
                    await books.stored.spend(run, tokens, cost)
            return outcome
        except Exception as exc:
            return raised(MODEL_CALL, self.name, exc)


@checked
def budget(
    *,
    tokens_per_reply: Amount | None = 100_000,
    tokens_per_session: Amount | None = None,
    tokens_per_tenant: Amount | None = None,
    input_weight: Weight = 1.0,
    output_weight: Weight = 1.0,
    prices: Mapping[str, Price] | None = None,
    cost_per_reply: Amount | None = None,
    cost_per_session: Amount | None = None,
    cost_per_tenant: Amount | None = None,
    tenant_key: str = "tenant",
    period: Seconds = 86_400.0,
    session_spend: Literal["state", "store"] = "state",
    store: str = "memory://",
    exit: Literal["end", "error"] = "end",
    hint: str = HINT,
    message: str = MESSAGE,
    name: str = "budget",
) -> Registry:
    """Spend every model call's usage from token and cost budgets; end or fail when spent.

    Args:
        tokens_per_reply: Weighted tokens one reply may spend (``None``: no limit).
        tokens_per_session: Weighted tokens one session may spend over all its replies.
        tokens_per_tenant: Weighted tokens one tenant may spend per ``period``, counted in
            ``store``.
        input_weight: How much an input token counts.
        output_weight: How much an output token counts.
        prices: Per model name, what a million tokens cost (`Price`, or a mapping with its
            keys, turned into one); needed by the cost budgets, and only by them.
        cost_per_reply: What one reply may cost, in the prices' currency.
        cost_per_session: What one session may cost over all its replies.
        cost_per_tenant: What one tenant may spend per ``period``, counted in ``store``.
        tenant_key: The metadata key naming a run's tenant (``run(..., metadata=...)``).
        period: Seconds after which a tenant's spending starts again from zero, counted from
            its first call in the period.
        session_spend: Where per-session spending is counted: ``"state"``, the session's
            state, committed with it when a run succeeds; or ``"store"``, in ``store`` under
            the session's id, shared at once by every run of the session in every process
            using it (failed runs' spending included), whose rounds take turns.
        store: Where per-tenant spending (and per-session, with ``session_spend="store"``)
            is counted: ``memory://`` (this process) or ``redis://host:port/db`` (every
            process using it).
        exit: When a budget is spent, ``"end"`` the reply with a final answer, or fail with
            an ``"error"`` (`BudgetExceeded`).
        hint: What the last round of a reply is told (``exit="end"``).
        message: The output of a reply stopped without another model call (``exit="end"``).
        name: The middleware's name at each position (to use two instances).

    Returns:
        A registry with the middleware: at ``model_call`` to spend (and with
        ``exit="error"`` to refuse calls), at ``reasoning`` for the last round
        (``exit="end"``) and the session's turn (``session_spend="store"``), at ``run`` to
        require a session or tenant if needed.

    Raises:
        ValueError: for no budget at all, a cost budget without prices, or prices without a
            cost budget.

    Example:
        >>> registry = budget(tokens_per_reply=5_000, output_weight=4.0)
        >>> sorted({r.position for r in registry.middleware})
        ['model_call', 'reasoning']
    """
    amounts: tuple[tuple[str, Meter, Scope, float | None], ...] = (
        ("tokens_per_reply", "tokens", "reply", tokens_per_reply),
        ("tokens_per_session", "tokens", "session", tokens_per_session),
        ("tokens_per_tenant", "tokens", "shared", tokens_per_tenant),
        ("cost_per_reply", "cost", "reply", cost_per_reply),
        ("cost_per_session", "cost", "session", cost_per_session),
        ("cost_per_tenant", "cost", "shared", cost_per_tenant),
    )
    budgets = _configured(name, amounts, bool(prices), session_spend)
    registry = Registry()
    in_store = ("shared", "session") if session_spend == "store" else ("shared",)
    stored = tuple(b for b in budgets if b.scope in in_store)
    session = [b.limit for b in budgets if b.scope == "session"]
    shared = [b.limit for b in budgets if b.scope == "shared"]
    if session or shared:
        require_scopes(
            registry, "budget", name, session=session, shared=shared, tenant_key=tenant_key
        )
    kept = registry.own(open_store(store)) if stored else None
    books = _Books(
        tuple(b for b in budgets if b not in stored),
        None if kept is None else _Stored(stored, kept, tenant_key, period),
    )
    # Per-session spending in the store: a session's rounds take turns, in every process,
    # so the check before each round sees what every earlier round spent.
    turn = None if kept is None or session_spend == "state" else session_turns(kept, name)
    spender = _Spender(books, (input_weight, output_weight), prices or {}, exit == "error", name)
    where = place("budget")
    if exit == "end":
        verdict = spender.verdict if books.stored is not None else spender.verdict_here
        register_last_round(registry, "budget", name, verdict, hint, message, turn)
    elif turn is not None:
        registry.on(REASONING, name=name, **where)(_Turns(turn).take_turns)
    spend = checks_itself(MODEL_CALL, name)(partial(_Spender.spend_budget, spender))
    registry.on(MODEL_CALL, name=name, **where)(spend)
    return registry


def _price(prices: Mapping[str, Price], *names: str) -> Price | None:
    return next((prices[n] for n in names if n in prices), None)

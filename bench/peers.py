"""Measure fncore beside its peers on the reference workload, in one process: bare and layered.

The workload of ``overhead.py``: one user message; the model (in-process, zero latency)
answers with one tool call ``add(a, b)``, the tool runs, the model answers with text. Each
framework runs it through its own agent loop with its own tool machinery; only the model is
a stand-in, the least each framework's model interface allows (it never yields to the event
loop, converts no tool schemas and sends nothing):

* fncore: ``overhead.py``'s agent and model (a `Model` answering from prebuilt responses),
  and its pass-through middleware;
* Microsoft Agent Framework (``agent-framework-core``): ``Agent`` on a chat client made of
  ``BaseChatClient`` with the layers a provider's client composes (chat middleware,
  function invocation, telemetry, off as by default);
* LangChain v1 (``langchain``): ``create_agent`` with a ``BaseChatModel`` whose
  ``bind_tools`` keeps the model as it is;
* Pydantic AI (``pydantic-ai-slim``): ``Agent`` on a ``FunctionModel``.

The peers' tool ``add`` is a coroutine function: each of them hands a plain function to a
worker thread, where fncore runs its ``inline`` tool on the event loop.

Workloads, for each framework: ``bare``, its agent with no middleware; ``layered``, the
same with ``--layers`` (10) pass-through middleware at each position the framework wraps
of the three fncore has (the run, each model call, each tool call): fncore's ``run``,
``model_call`` and ``tool_call``; Agent Framework's agent, chat and function middleware;
LangChain's ``awrap_model_call`` and ``awrap_tool_call`` (it has no middleware around the
whole run); Pydantic AI's capabilities with ``wrap_run``, ``wrap_model_request`` and
``wrap_tool_execute``. ``per_layer_us`` is ``(layered - bare)`` over the layer calls a run
makes: 40 where there are three positions (1 run, 2 model calls, 1 tool call, times 10),
30 for LangChain. Before timing, each framework's agents are checked to answer ``1 + 2 =
3.``, call the tool once, and (layered) pass through every layer as many times as counted.

The workloads run in rounds in one process and event loop; each figure is the minimum of
the per-round means (noise only ever adds time). A round is ``--runs`` (200) steps, and a
step runs each peer's workloads once and fncore's twenty times (each run is that much
cheaper), round-robin, so that every figure comes from the same stretch of time and a busy
machine slows them alike; between two workloads the event loop gets a millisecond, untimed,
so that what one left scheduled is not timed in the next. No tracing or instrumentation is
on in any framework.

The peers are not dependencies of fncore and are never imported by its tests: install them
in a venv of their own (see ``docs/performance.md``); without one of them this script stops
with one line naming what is missing.

Usage::

    python bench/peers.py            # full run, human-readable table
    python bench/peers.py --json     # the same, then one JSON object as the last line
    python bench/peers.py --quick    # a fast smoke run (figures are rough)
"""

from __future__ import annotations

import asyncio
import gc
import importlib.metadata
import importlib.util
import sys
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from fncore import Agent, Tool

if TYPE_CHECKING:  # mypy reads bench/ as a package (see bench/__init__.py)
    from bench import _measure, overhead
else:  # run as a script, whose folder is on sys.path
    import _measure
    import overhead

LAYERS = 10
"""Pass-through middleware at each position in the ``layered`` workloads."""
FNCORE_WEIGHT = 20
"""How many runs of fncore's workloads a step takes (each run is that much cheaper)."""
ANSWER = "1 + 2 = 3."
"""The final text of every run."""
SETTLE = 0.001
"""Seconds the event loop gets between two workloads, untimed: what one left scheduled (a
background task, a worker thread's result) runs then, not in the next one's runs."""
REQUIRED = {
    "agent_framework": "agent-framework-core",
    "langchain": "langchain",
    "langchain_core": "langchain-core",
    "pydantic_ai": "pydantic-ai-slim",
}
"""Each module a peer needs, with the distribution that provides it."""

Run = Callable[[str], Awaitable[str]]
"""One run of a framework's agent on a prompt, to its final text."""


class Counts:
    """How often the tool and the middleware ran, for the checks (never while timed)."""

    def __init__(self) -> None:
        self.tool = 0
        self.layers = 0


@dataclass(frozen=True)
class Peer:
    """One framework: how to build its agent with some layers, and what a run passes through."""

    name: str
    distribution: str
    build: Callable[[int, Counts | None], Run]
    """Its run with ``layers`` pass-through middleware at each position (counting, or not)."""
    positions_per_run: int
    """The layer calls a run makes with one layer at each position."""

    @property
    def version(self) -> str:
        """The installed version of its distribution."""
        return importlib.metadata.version(self.distribution)


# -- fncore ---------------------------------------------------------------------------------


def fncore_run(layers: int, counts: Counts | None) -> Run:
    """``overhead.py``'s agent: ``layers`` pass-through middleware at run, model_call, tool_call."""
    if counts is None:
        agent = overhead.make_agent(layers)
    else:
        called = [0]

        def add(a: int, b: int) -> int:
            """Add two integers."""
            counts.tool += 1
            return a + b

        registry = overhead.counting_registry(layers, called)
        tool = Tool.from_function(add, inline=True)
        agent = Agent(overhead.InstantModel(), registry=registry, tools=[tool])

    async def run(prompt: str) -> str:
        output = (await agent.run(prompt)).unwrap().output
        if counts is not None:
            counts.layers = called[0]
        return output

    return run


# -- Microsoft Agent Framework ----------------------------------------------------------------


def agent_framework_run(layers: int, counts: Counts | None) -> Run:
    """Agent Framework's ``Agent``: ``layers`` agent, chat and function middleware."""
    from agent_framework import (
        Agent,
        AgentMiddleware,
        BaseChatClient,
        ChatMiddleware,
        ChatMiddlewareLayer,
        ChatResponse,
        Content,
        FunctionInvocationLayer,
        FunctionMiddleware,
        Message,
        UsageDetails,
    )
    from agent_framework.observability import ChatTelemetryLayer

    call = ChatResponse(
        messages=[
            Message(
                role="assistant",
                contents=[Content.from_function_call("call_0", "add", arguments={"a": 1, "b": 2})],
            )
        ],
        usage_details=UsageDetails(input_token_count=12, output_token_count=8),
    )
    text = ChatResponse(
        messages=[Message(role="assistant", contents=[ANSWER])],
        usage_details=UsageDetails(input_token_count=20, output_token_count=6),
    )

    class InstantClient(  # composed as a provider's client is: the tool loop outermost
        FunctionInvocationLayer, ChatMiddlewareLayer, ChatTelemetryLayer, BaseChatClient
    ):
        OTEL_PROVIDER_NAME = "instant"

        async def _inner_get_response(
            self, *, messages: Sequence[Any], stream: bool, options: Any, **kwargs: Any
        ) -> Any:
            last = messages[-1].contents[-1]
            return text if last.type == "function_result" else call

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        if counts is not None:
            counts.tool += 1
        return a + b

    def counted() -> None:
        if counts is not None:
            counts.layers += 1

    class Run(AgentMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            counted()
            await call_next()

    class Chat(ChatMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            counted()
            await call_next()

    class Function(FunctionMiddleware):
        async def process(self, context: Any, call_next: Any) -> None:
            counted()
            await call_next()

    middleware = [kind() for kind in (Run, Chat, Function) for _ in range(layers)]
    agent = Agent(client=InstantClient(), tools=[add], middleware=middleware or None)

    async def run(prompt: str) -> str:
        return str((await agent.run(prompt)).text)

    return run


# -- LangChain ----------------------------------------------------------------------------------


def langchain_run(layers: int, counts: Counts | None) -> Run:
    """LangChain v1's ``create_agent``: ``layers`` middleware wrapping model and tool calls."""
    from langchain.agents import create_agent
    from langchain.agents.middleware import AgentMiddleware
    from langchain_core.language_models import BaseChatModel
    from langchain_core.messages import AIMessage, ToolMessage
    from langchain_core.outputs import ChatGeneration, ChatResult

    call = ChatResult(
        generations=[
            ChatGeneration(
                message=AIMessage(
                    content="",
                    tool_calls=[{"name": "add", "args": {"a": 1, "b": 2}, "id": "call_0"}],
                    usage_metadata={"input_tokens": 12, "output_tokens": 8, "total_tokens": 20},
                )
            )
        ]
    )
    text = ChatResult(
        generations=[
            ChatGeneration(
                message=AIMessage(
                    content=ANSWER,
                    usage_metadata={"input_tokens": 20, "output_tokens": 6, "total_tokens": 26},
                )
            )
        ]
    )

    class InstantChat(BaseChatModel):
        @property
        def _llm_type(self) -> str:
            return "instant"

        def _generate(self, messages: list[Any], stop: Any = None, **kwargs: Any) -> Any:
            return text if isinstance(messages[-1], ToolMessage) else call

        async def _agenerate(self, messages: list[Any], stop: Any = None, **kwargs: Any) -> Any:
            return text if isinstance(messages[-1], ToolMessage) else call

        def bind_tools(self, tools: Any, **kwargs: Any) -> Any:
            return self

    async def add(a: int, b: int) -> int:
        """Add two integers."""
        if counts is not None:
            counts.tool += 1
        return a + b

    class Through(AgentMiddleware):
        def __init__(self, n: int) -> None:
            super().__init__()
            self._name = f"through_{n}"

        @property
        def name(self) -> str:
            return self._name

        async def awrap_model_call(self, request: Any, handler: Any) -> Any:
            if counts is not None:
                counts.layers += 1
            return await handler(request)

        async def awrap_tool_call(self, request: Any, handler: Any) -> Any:
            if counts is not None:
                counts.layers += 1
            return await handler(request)

    agent = create_agent(InstantChat(), [add], middleware=[Through(n) for n in range(layers)])

    async def run(prompt: str) -> str:
        state = await agent.ainvoke({"messages": [{"role": "user", "content": prompt}]})
        return str(state["messages"][-1].content)

    return run


# -- Pydantic AI --------------------------------------------------------------------------------


def pydantic_ai_run(layers: int, counts: Counts | None) -> Run:
    """Pydantic AI's ``Agent`` on a ``FunctionModel``: ``layers`` wrapping capabilities."""
    from pydantic_ai import Agent
    from pydantic_ai.capabilities import AbstractCapability
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import FunctionModel
    from pydantic_ai.usage import RequestUsage

    call = ModelResponse(
        parts=[ToolCallPart("add", {"a": 1, "b": 2}, tool_call_id="call_0")],
        usage=RequestUsage(input_tokens=12, output_tokens=8),
    )
    text = ModelResponse(
        parts=[TextPart(ANSWER)], usage=RequestUsage(input_tokens=20, output_tokens=6)
    )

    async def answer(messages: list[Any], info: Any) -> Any:
        return text if isinstance(messages[-1].parts[-1], ToolReturnPart) else call

    def counted() -> None:
        if counts is not None:
            counts.layers += 1

    class Through(AbstractCapability[Any]):
        async def wrap_run(self, ctx: Any, *, handler: Any) -> Any:
            counted()
            return await handler()

        async def wrap_model_request(self, ctx: Any, *, request_context: Any, handler: Any) -> Any:
            counted()
            return await handler(request_context)

        async def wrap_tool_execute(
            self, ctx: Any, *, call: Any, tool_def: Any, args: Any, handler: Any
        ) -> Any:
            counted()
            return await handler(args)

    agent = Agent(FunctionModel(answer), capabilities=[Through() for _ in range(layers)])

    @agent.tool_plain
    async def add(a: int, b: int) -> int:
        """Add two integers."""
        if counts is not None:
            counts.tool += 1
        return a + b

    async def run(prompt: str) -> str:
        return str((await agent.run(prompt)).output)

    return run


PEERS = (
    Peer("fncore", "fncore-agents", fncore_run, 4),
    Peer("agent_framework", "agent-framework-core", agent_framework_run, 4),
    Peer("langchain", "langchain", langchain_run, 3),
    Peer("pydantic_ai", "pydantic-ai-slim", pydantic_ai_run, 4),
)
"""The frameworks measured, fncore first."""


async def check(peer: Peer, layers: int) -> None:
    """Fail loudly unless ``peer``'s runs answer, call the tool once and pass every layer."""
    for depth in (0, layers):
        counts = Counts()
        output = await peer.build(depth, counts)(_measure.PROMPT)
        expected = depth * peer.positions_per_run
        if output != ANSWER or counts.tool != 1 or counts.layers != expected:
            msg = (
                f"{peer.name} with {depth} layers: answered {output!r}, ran the tool "
                f"{counts.tool} times and {counts.layers} layers (expected {expected})"
            )
            raise RuntimeError(msg)


def missing() -> list[str]:
    """The distributions a peer needs that are not installed."""
    found = importlib.util.find_spec
    return sorted({dist for module, dist in REQUIRED.items() if found(module) is None})


async def steps(workloads: list[tuple[str, Run, int]], runs: int) -> dict[str, float]:
    """Each workload's mean µs per run over ``runs`` steps, round-robin.

    A step runs each workload as many times as its weight, then gives the event loop
    `SETTLE` seconds, so that every figure comes from the same stretch of time and a busy
    machine slows them alike.
    """
    totals = dict.fromkeys((name for name, _, _ in workloads), 0.0)
    for _ in range(runs):
        for name, run, weight in workloads:
            totals[name] += await _measure.mean_us(run, [_measure.PROMPT] * weight) * weight
            await asyncio.sleep(SETTLE)
    return {name: totals[name] / (runs * weight) for name, _, weight in workloads}


async def measure(rounds: int, runs: int) -> _measure.Figures:
    """Each framework's µs per run, bare and layered, and what a layer call costs."""
    workloads: list[tuple[str, Run, int]] = []
    for peer in PEERS:
        await check(peer, LAYERS)
        weight = FNCORE_WEIGHT if peer.name == "fncore" else 1
        workloads += [
            (f"{peer.name}_bare", peer.build(0, None), weight),
            (f"{peer.name}_layered", peer.build(LAYERS, None), weight),
        ]
    await steps(workloads, max(runs // 10, 2))  # warm up
    best = dict.fromkeys((name for name, _, _ in workloads), float("inf"))
    for _ in range(rounds):
        gc.collect()
        for name, us in (await steps(workloads, runs)).items():
            best[name] = min(best[name], us)
    fncore_bare, fncore_layered = best["fncore_bare"], best["fncore_layered"]
    figures: dict[str, Any] = {}
    for peer in PEERS:
        bare, layered = best[f"{peer.name}_bare"], best[f"{peer.name}_layered"]
        calls = LAYERS * peer.positions_per_run
        figures[peer.name] = {
            "version": peer.version,
            "bare_us": bare,
            "layered_us": layered,
            "layer_calls": calls,
            "per_layer_us": (layered - bare) / calls,
            "bare_vs_fncore": bare / fncore_bare,
            "layered_vs_fncore": layered / fncore_layered,
        }
    return {
        "frameworks": figures,
        "layers": LAYERS,
        "python": sys.version.split()[0],
        "rounds": rounds,
        "runs": runs,
    }


LABELS = {
    "fncore": "fncore",
    "agent_framework": "Microsoft Agent Framework",
    "langchain": "LangChain v1 (create_agent)",
    "pydantic_ai": "Pydantic AI",
}


def report(figures: _measure.Figures) -> str:
    """The figures as a human-readable table."""
    lines = [
        f"the reference workload on each framework ({figures['rounds']} rounds of "
        f"{figures['runs']} steps, fncore {FNCORE_WEIGHT}x a step; minimum of round means; "
        f"Python {figures['python']})",
        "workload: 1 user message -> model calls add(a, b) -> tool runs -> model answers text",
        f"layered: {figures['layers']} pass-through middleware at each position it has",
        "",
        f"  {'framework':<30}{'version':>10}{'bare':>12}{'x fncore':>10}"
        f"{'layered':>12}{'x fncore':>10}{'per layer':>12}",
    ]
    for name, f in figures["frameworks"].items():
        lines.append(
            f"  {LABELS[name]:<30}{f['version']:>10}"
            f"{f['bare_us']:>9.1f} µs{f['bare_vs_fncore']:>9.0f}x"
            f"{f['layered_us']:>9.1f} µs{f['layered_vs_fncore']:>9.0f}x"
            f"{f['per_layer_us']:>9.2f} µs"
        )
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    """Run the benchmark and print its figures (or name the peers that are not installed)."""
    absent = missing()
    if absent:
        print(
            f"peers.py: not installed: {', '.join(absent)}; install the peers in a venv of "
            "their own (see docs/performance.md)",
            file=sys.stderr,
        )
        return 2
    return _measure.main(__doc__, argv, measure, report, rounds=(5, 2), runs=(200, 10))


if __name__ == "__main__":
    raise SystemExit(main())

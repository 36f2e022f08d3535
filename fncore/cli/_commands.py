"""The commands: ``run`` (answer a prompt, perhaps in a session) and ``stack`` (the onion)."""

from __future__ import annotations

import asyncio
import json
import logging
import sys
from collections.abc import AsyncIterable, AsyncIterator, Awaitable, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from typing import TYPE_CHECKING, Any, TextIO, TypeAlias

from returns.result import Failure, Result

from fncore import (
    Agent,
    AgentError,
    Approve,
    ConfigError,
    Container,
    Decision,
    DecisionKind,
    Edit,
    PendingRequest,
    Reject,
    Respond,
    RunResult,
    load_container,
)
from fncore._distribution import install_hint
from fncore.adapter import Part
from fncore.cli._agent_ref import load_agent
from fncore.cli._errors import CommandFailed
from fncore.cli._example import build_example_agent
from fncore.cli._sessions import open_store, part_lines
from fncore.cli._text import safe
from fncore.cli._trace import Trace
from fncore.events import (
    RoundFinished,
    RoundStarted,
    RunCompleted,
    StreamEvent,
    TextDelta,
    ToolResultReady,
)
from fncore.middleware import trace as trace_builtin

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider as PrintingProvider
    from opentelemetry.trace import TracerProvider


class RunFailed(CommandFailed):
    """The run returned ``Failure``; the message is the error's text."""


class Waiting(Exception):
    """The run paused for a human; its checkpoint id was printed as stdout's last line."""

    def __init__(self, checkpoint_id: str) -> None:
        super().__init__(checkpoint_id)
        self.checkpoint_id = checkpoint_id


def to_stderr(line: str) -> None:
    """Write one trace line to standard error, its control characters escaped (`safe`)."""
    print(safe(line), file=sys.stderr, flush=True)


def answer_text(text: str, out: TextIO) -> str:
    """``text`` (an answer) as printed on ``out``: escaped (`safe`) when it is a terminal.

    A pipe or a file gets the answer exactly as the model gave it.
    """
    return safe(text, lines=True) if out.isatty() else text


def overrides(
    provider: str | None, model: str | None, base_url: str | None = None
) -> dict[str, Any]:
    """Configuration overrides from ``--provider``, ``--model`` and ``--base-url``.

    Example:
        >>> overrides("test", None)
        {'model': {'kind': 'test'}}
    """
    chosen: dict[str, str] = {}
    if provider is not None:
        chosen["kind"] = provider
    if model is not None:
        chosen["name"] = model
    if base_url is not None:
        chosen["base_url"] = base_url
    return {"model": chosen} if chosen else {}


def example_agent(
    config: str | None,
    settings: Mapping[str, Any],
    trace: Trace = to_stderr,
    spans: TracerProvider | None = None,
) -> tuple[Container, Agent]:
    """Load the container (defaults < file < ``FNCORE_*`` < flags) and build the example.

    With ``spans``, the ``trace`` built-in sends the run's spans there, from outside every
    other middleware (named ``cli_trace`` if the configuration has a ``trace`` already).

    Raises:
        ConfigError: for a bad file, key, value or model kind.
        RegistrationError: if the stack cannot be built.
    """
    container = _container(config, settings)
    return container, _example(container, trace, spans)


def _container(config: str | None, settings: Mapping[str, Any]) -> Container:
    container: Container = load_container(config, overrides=settings)
    # The MCP SDK logs a server's garbage with a traceback; errors here are one line.
    logging.getLogger("mcp").addHandler(logging.NullHandler())
    return container


def _example(container: Container, trace: Trace, spans: TracerProvider | None) -> Agent:
    outermost = None
    if spans is not None:
        taken = {r.name for r in container.registry().middleware}
        name = "cli_trace" if "trace" in taken else "trace"
        outermost = trace_builtin(tracer_provider=spans, name=name)
    return build_example_agent(container, trace, outermost)


_MODEL_FLAGS = {"kind": "--provider", "name": "--model", "base_url": "--base-url"}
"""The flag that sets each ``[model]`` key (see `overrides`)."""


async def chosen_agent(
    ref: str | None,
    config: str | None,
    settings: Mapping[str, Any],
    trace: Trace = to_stderr,
    spans: TracerProvider | None = None,
) -> tuple[Container, Agent]:
    """The agent a command works with: ``--agent``, else ``[agent] ref``, else the example.

    ``ref`` is ``--agent``; without it or ``[agent] ref``, it is `example_agent`'s.

    Your agent (see `load_agent`) brings its own model and middleware, so the model flags
    (``settings``) and ``spans`` (``--trace``) are refused with it rather than ignored.

    Raises:
        ConfigError: for bad configuration, or model flags or ``--trace`` with your agent.
        RegistrationError: if the example's stack cannot be built.
        CommandFailed: if ``ref`` gives no agent (one line: `AgentRefError`'s message).
    """
    container = _container(config, settings)
    ref = ref or container.config.agent.ref()
    if ref is None:
        return container, _example(container, trace, spans)
    flags = [_MODEL_FLAGS[key] for key in settings.get("model", {})]
    flags += ["--trace"] if spans is not None else []
    if flags:
        msg = (
            f"{', '.join(flags)} {'applies' if len(flags) == 1 else 'apply'} to the example "
            f"agent only; agent {ref!r} brings its own model and middleware"
        )
        raise ConfigError(msg)
    loaded = await load_agent(ref)
    if isinstance(loaded, Failure):
        raise CommandFailed(str(loaded.failure()))
    return container, loaded.unwrap()


@asynccontextmanager
async def opened(container: Container, agent: Agent) -> AsyncIterator[Agent]:
    """``agent`` until the block ends, then closed (`Agent.aclose`) with ``container``."""
    async with container:  # closes the model's connections and the store at the end
        try:
            yield agent
        finally:
            await agent.aclose()


def span_provider() -> PrintingProvider:
    """A tracer provider printing each run's spans to stderr (``--trace``).

    Raises:
        ConfigError: if the OpenTelemetry SDK is not installed.
    """
    try:
        from fncore.cli._spans import printing_provider
    except ImportError as exc:
        if not (exc.name or "").startswith("opentelemetry"):
            raise
        msg = f"--trace needs the OpenTelemetry SDK: {install_hint('otel')}"
        raise ConfigError(msg) from None
    return printing_provider(to_stderr)


def _unwrap(outcome: Result[RunResult, AgentError]) -> RunResult:
    if isinstance(outcome, Failure):
        raise RunFailed(str(outcome.failure()))
    return outcome.unwrap()


_KEYS: dict[DecisionKind, tuple[str, str]] = {
    "approve": ("a", "[a]pprove"),
    "reject": ("r", "[r]eject"),
    "edit": ("e", "[e]dit"),
    "respond": ("s", "re[s]pond"),
}
"""Each decision's key at the prompt, and how the prompt offers it."""

RUN_DECISIONS: tuple[DecisionKind, ...] = ("approve", "reject", "edit")
"""The decisions ``fncore run`` offers at a terminal (where the request allows them)."""


def ask_decision(
    request: PendingRequest,
    ask: Callable[[str], str],
    kinds: tuple[DecisionKind, ...] = RUN_DECISIONS,
) -> Decision:
    """A decision on ``request`` from the person at the terminal, one of ``kinds``."""
    offered = [k for k in kinds if k in request.allowed]
    keys = "/".join(_KEYS[k][1] for k in offered)
    while True:
        answer = ask(f"{safe(request.description)} {keys}: ").strip().lower()
        chosen = next((k for k in offered if answer in {k, _KEYS[k][0]}), None)
        if chosen == "approve":
            return Approve()
        if chosen == "reject":
            reason = ask("Why (empty: no reason)? ").strip()
            return Reject(reason) if reason else Reject()
        if chosen == "respond":
            return Respond(ask("The result the model gets: "))
        if chosen == "edit":
            try:
                edited = json.loads(ask("New arguments (JSON object): "))
            except ValueError:
                edited = None
            if isinstance(edited, dict):
                return Edit(edited)
            print("Not a JSON object; try again.", file=sys.stderr, flush=True)


Resume: TypeAlias = Callable[
    [str, Mapping[str, Decision]], Awaitable[Result[RunResult, AgentError]]
]
"""Goes on with a paused run: its checkpoint id and the decisions in, the outcome out."""


async def settle(
    agent: Agent,
    result: RunResult,
    out: TextIO,
    ask: Callable[[str], str] | None,
    resume: Resume | None = None,
) -> RunResult:
    """Handle a paused ``result``: decide at the terminal (``ask``), else stop waiting.

    The decisions go on through ``resume`` (by default ``agent.resume``).

    Raises:
        Waiting: when nobody can decide here (no terminal); the checkpoint id is printed
            as the last line of ``out``, each pending request on stderr.
        RunFailed: if a resume returns ``Failure``.
    """
    while result.paused is not None:
        paused = result.paused
        if ask is None:
            for request in paused.requests:
                allowed = ", ".join(request.allowed)
                print(
                    safe(f"waiting: {request.description} (call {request.call_id}; {allowed})"),
                    file=sys.stderr,
                    flush=True,
                )
            print(paused.checkpoint_id, file=out, flush=True)
            raise Waiting(paused.checkpoint_id)
        decisions = {r.call_id: ask_decision(r, ask) for r in paused.requests}
        result = _unwrap(await (resume or agent.resume)(paused.checkpoint_id, decisions))
    return result


def terminal_asker() -> Callable[[str], str] | None:
    """``input`` when a person is at the terminal (stdin and stdout are TTYs), else ``None``."""
    return input if sys.stdin.isatty() and sys.stdout.isatty() else None


async def run_prompt(agent: Agent, prompt: str, out: TextIO, session_id: str | None = None) -> None:
    """Run ``prompt`` (in the session ``session_id``, if given) and print the final answer.

    Raises:
        RunFailed: if the run returns ``Failure``.
        Waiting: if it paused for approval with nobody at a terminal to decide.
    """
    result = _unwrap(await agent.run(prompt, session_id=session_id))
    result = await settle(agent, result, out, terminal_asker())
    print(answer_text(result.output, out), file=out, flush=True)


async def show_stream(
    events: AsyncIterable[StreamEvent],
    out: TextIO,
    tools: Callable[[str], None] | None = None,
) -> tuple[RunResult, bool]:
    """Print the text of ``events`` as it streams in, and (to ``tools``) each tool call.

    With ``tools``, each call the model asks for is shown (name and arguments) when its
    round ends, then its result when it is ready, one line each (see `part_lines`); a
    line of text streamed so far is ended first.

    Returns:
        The run's result, and whether the text of its last round was printed (when it
        was not, the answer is still to print: a middleware ended the run, say).

    Raises:
        RunFailed: if the run returns ``Failure`` (after ending a line of text printed).
    """
    streamed = False  # the last round's text was printed
    pending = False  # a line of text is open on ``out``

    def show(parts: Sequence[Part]) -> None:
        nonlocal pending
        if tools is None or not parts:
            return
        if pending:
            out.write("\n")
            pending = False
        for part in parts:
            for line in part_lines(part):
                tools(line)

    async for event in events:
        if isinstance(event, RoundStarted):
            streamed = False
        elif isinstance(event, TextDelta):
            streamed = pending = True
            out.write(answer_text(event.text, out))
            out.flush()
        elif isinstance(event, RoundFinished):
            show(event.response.message.tool_calls)
        elif isinstance(event, ToolResultReady):
            show((event.result,))
        elif isinstance(event, RunCompleted):
            if pending and (isinstance(event.outcome, Failure) or event.outcome.unwrap().paused):
                out.write("\n")
                out.flush()
            return _unwrap(event.outcome), streamed
    msg = "the run's stream ended without its outcome"  # RunStream always ends with it
    raise RunFailed(msg)


def end_answer(result: RunResult, streamed: bool, out: TextIO) -> None:
    """End the answer on ``out``: its text unless it was ``streamed``, then a newline."""
    if not streamed:
        out.write(answer_text(result.output, out))
    out.write("\n")
    out.flush()


async def stream_prompt(
    agent: Agent, prompt: str, out: TextIO, session_id: str | None = None
) -> None:
    """Run ``prompt`` streaming (in a session, if given): print text deltas, then a newline.

    When the last round streamed no text (a middleware terminated the run, or a required
    tool call ended it) the final answer is printed instead, so stdout always ends with it.

    Raises:
        RunFailed: if the run returns ``Failure``.
    """
    result, streamed = await show_stream(agent.stream(prompt, session_id=session_id), out)
    if result.paused is not None:
        result = await settle(agent, result, out, terminal_asker())
        streamed = False
    end_answer(result, streamed, out)


def run_command(
    prompt: str,
    *,
    config: str | None,
    settings: Mapping[str, Any],
    stream: bool,
    spans: bool = False,
    session: str | None = None,
    ref: str | None = None,
    durable: bool = False,
) -> None:
    """``fncore run``: answer ``prompt`` on stdout with the chosen agent (`chosen_agent`).

    With ``spans`` (``--trace``), the run's OpenTelemetry spans are printed to stderr too.
    With ``session``, the run continues that session of the agent's store (which is
    opened first, so a store that cannot be used fails before the model is called), and
    commits the turn to it. With ``durable``, the run is a durable run (`durable_prompt`).

    Raises:
        ConfigError: for bad configuration, or ``--trace`` without the OpenTelemetry SDK.
        RegistrationError: if the stack cannot be built.
        CommandFailed: if ``ref`` gives no agent.
        SessionStoreError: if ``session`` is given and the store cannot be opened.
        RunFailed: if the run returns ``Failure``.
    """
    provider = span_provider() if spans else None
    action = stream_prompt if stream else run_prompt

    async def run_then_close() -> None:
        async with opened(*await chosen_agent(ref, config, settings, spans=provider)) as agent:
            if session is not None:
                await open_store(agent.sessions)
            if durable:
                from fncore.cli._durable import durable_prompt, durable_settings

                await durable_prompt(
                    agent, durable_settings(config, settings), prompt, sys.stdout, session
                )
            else:
                await action(agent, prompt, sys.stdout, session)

    try:
        asyncio.run(run_then_close())
    finally:
        if provider is not None:
            provider.shutdown()


def resume_command(
    checkpoint_id: str,
    decision: Decision,
    *,
    config: str | None,
    settings: Mapping[str, Any],
    ref: str | None = None,
    durable: bool = False,
) -> None:
    """``fncore resume``: finish a paused run of the chosen agent with ``decision``.

    Every waiting call gets ``decision``. The answer goes to stdout; if the run pauses
    again, it is handled as ``fncore run`` does. With ``durable``, the rest of the run is
    a new durable run (`durable_resume`).

    Raises:
        ConfigError: for bad configuration.
        RegistrationError: if the stack cannot be built.
        CommandFailed: if ``ref`` gives no agent.
        SessionStoreError: if the store cannot be opened.
        RunFailed: if the resume returns ``Failure`` (an unknown checkpoint, say).
        Waiting: if the run paused again with nobody at a terminal to decide.
    """

    async def resume_then_close() -> None:
        async with opened(*await chosen_agent(ref, config, settings)) as agent:
            await open_store(agent.sessions)
            if durable:
                from fncore.cli._durable import durable_resume, durable_settings

                durable_config = durable_settings(config, settings)
                await durable_resume(agent, durable_config, checkpoint_id, decision, sys.stdout)
                return
            result = _unwrap(await agent.resume(checkpoint_id, decision))
            result = await settle(agent, result, sys.stdout, terminal_asker())
            print(answer_text(result.output, sys.stdout), flush=True)

    asyncio.run(resume_then_close())


def tools_command(
    *, config: str | None, settings: Mapping[str, Any], out: TextIO, ref: str | None = None
) -> None:
    """``fncore tools``: every tool the chosen agent offers, and where each comes from.

    Its MCP servers are started and listed, then stopped.

    Raises:
        ConfigError: for bad configuration.
        RegistrationError: if the stack cannot be built, two tools share a name, or an MCP
            server cannot be started (`MCPServerError`, naming it).
        CommandFailed: if ``ref`` gives no agent.
    """

    async def list_then_close() -> list[tuple[str, str]]:
        chosen = await chosen_agent(ref, config, settings, trace=lambda _line: None)
        async with opened(*chosen) as agent:
            await agent.connect()
            return [(name, agent.tools[name].source) for name in agent.describe().tools]

    rows = [(safe(name), safe(source)) for name, source in asyncio.run(list_then_close())]
    width = max((len(name) for name, _ in rows), default=0)
    for name, source in rows:
        print(f"{name:<{width}}  {source}", file=out)


def stack_command(
    *, config: str | None, settings: Mapping[str, Any], ref: str | None = None
) -> None:
    """``fncore stack``: print the chosen agent's onion, position by position.

    Raises:
        ConfigError: for bad configuration.
        RegistrationError: if the stack cannot be built.
        CommandFailed: if ``ref`` gives no agent.
    """

    async def describe_then_close() -> str:
        async with opened(*await chosen_agent(ref, config, settings)) as agent:
            return str(agent.describe())

    print(safe(asyncio.run(describe_then_close()), lines=True))

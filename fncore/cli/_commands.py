"""The commands: ``run`` (answer a prompt, perhaps in a session) and ``stack`` (the onion)."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, TextIO

from returns.result import Failure, Result

from fncore import (
    Agent,
    AgentError,
    ConfigError,
    Container,
    RoundStarted,
    RunCompleted,
    RunResult,
    TextDelta,
    load_container,
)
from fncore.cli._errors import CommandFailed
from fncore.cli._example import build_example_agent
from fncore.cli._sessions import open_store
from fncore.cli._trace import Trace
from fncore.middleware import trace as trace_builtin

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import TracerProvider as PrintingProvider
    from opentelemetry.trace import TracerProvider


class RunFailed(CommandFailed):
    """The run returned ``Failure``; the message is the error's text."""


def to_stderr(line: str) -> None:
    """Write one trace line to standard error."""
    print(line, file=sys.stderr, flush=True)


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
    container: Container = load_container(config, overrides=settings)
    outermost = None
    if spans is not None:
        taken = {r.name for r in container.registry().middleware}
        name = "cli_trace" if "trace" in taken else "trace"
        outermost = trace_builtin(tracer_provider=spans, name=name)
    return container, build_example_agent(container, trace, outermost)


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
        msg = "--trace needs the OpenTelemetry SDK: pip install 'fncore[otel]'"
        raise ConfigError(msg) from None
    return printing_provider(to_stderr)


def _unwrap(outcome: Result[RunResult, AgentError]) -> RunResult:
    if isinstance(outcome, Failure):
        raise RunFailed(str(outcome.failure()))
    return outcome.unwrap()


async def run_prompt(agent: Agent, prompt: str, out: TextIO, session_id: str | None = None) -> None:
    """Run ``prompt`` (in the session ``session_id``, if given) and print the final answer.

    Raises:
        RunFailed: if the run returns ``Failure``.
    """
    result = _unwrap(await agent.run(prompt, session_id=session_id))
    print(result.output, file=out, flush=True)


async def stream_prompt(
    agent: Agent, prompt: str, out: TextIO, session_id: str | None = None
) -> None:
    """Run ``prompt`` streaming (in a session, if given): print text deltas, then a newline.

    When the last round streamed no text (a middleware terminated the run, or a required
    tool call ended it) the final answer is printed instead, so stdout always ends with it.

    Raises:
        RunFailed: if the run returns ``Failure``.
    """
    streamed = ""
    printed = False
    async for event in agent.stream(prompt, session_id=session_id):
        if isinstance(event, RoundStarted):
            streamed = ""
        elif isinstance(event, TextDelta):
            streamed += event.text
            printed = True
            out.write(event.text)
            out.flush()
        elif isinstance(event, RunCompleted):
            if printed and isinstance(event.outcome, Failure):
                out.write("\n")
                out.flush()
            result = _unwrap(event.outcome)
            if not streamed:
                out.write(result.output)
            out.write("\n")
            out.flush()


def run_command(
    prompt: str,
    *,
    config: str | None,
    settings: Mapping[str, Any],
    stream: bool,
    spans: bool = False,
    session: str | None = None,
) -> None:
    """``fncore run``: build the example agent and answer ``prompt`` on stdout.

    With ``spans`` (``--trace``), the run's OpenTelemetry spans are printed to stderr too.
    With ``session``, the run continues that session of the configured store (which is
    opened first, so a store that cannot be used fails before the model is called), and
    commits the turn to it.

    Raises:
        ConfigError: for bad configuration, or ``--trace`` without the OpenTelemetry SDK.
        RegistrationError: if the stack cannot be built.
        SessionStoreError: if ``session`` is given and the store cannot be opened.
        RunFailed: if the run returns ``Failure``.
    """
    provider = span_provider() if spans else None
    container, agent = example_agent(config, settings, spans=provider)
    action = stream_prompt if stream else run_prompt

    async def run_then_close() -> None:
        async with container:  # closes the model's connections and the store at the end
            if session is not None:
                await open_store(agent.sessions)
            await action(agent, prompt, sys.stdout, session)

    try:
        asyncio.run(run_then_close())
    finally:
        if provider is not None:
            provider.shutdown()


def stack_command(*, config: str | None, settings: Mapping[str, Any]) -> None:
    """``fncore stack``: print the example agent's onion, position by position.

    Raises:
        ConfigError: for bad configuration.
        RegistrationError: if the stack cannot be built.
    """
    print(example_agent(config, settings)[1].describe())

"""Argument parsing and the entry point: one-line errors, exit codes, no tracebacks."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Mapping, Sequence
from typing import Any, NoReturn, TypeAlias

from fncore import Approve, ConfigError, RegistrationError, Reject
from fncore._distribution import installed_version
from fncore.cli._chat import chat_command
from fncore.cli._commands import (
    Waiting,
    overrides,
    resume_command,
    run_command,
    stack_command,
    tools_command,
)
from fncore.cli._durable import add_runs, add_worker, runs_command, worker_command
from fncore.cli._errors import CommandFailed
from fncore.cli._logging import cli_logging
from fncore.cli._otlp import export_from_environment
from fncore.cli._serve import serve_command
from fncore.cli._sessions import ACTIONS, list_command, session_command
from fncore.cli._text import safe
from fncore.errors import SessionStoreError

PROG = "fncore"

EXIT_OK = 0
"""Success."""
EXIT_FAILED = 1
"""Bad configuration, a stack that cannot be built, a session store that cannot be used, an
unknown session, or a run that returned ``Failure``."""
EXIT_USAGE = 2
"""A bad command line."""
EXIT_PAUSED = 3
"""The run paused for approval and nobody was at a terminal to decide: the last line of
stdout is the checkpoint id, for ``fncore resume``."""
EXIT_INTERRUPTED = 130
"""Interrupted (Ctrl-C), as a shell reports a process ended by ``SIGINT``."""

Command: TypeAlias = Callable[[argparse.Namespace, Mapping[str, Any]], int]
"""A command: the parsed arguments and the configuration overrides in, the exit status out."""


class UsageError(Exception):
    """The command line is wrong; the message says how."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and raise instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _add_shared(parser: argparse.ArgumentParser, *, top: bool, model: bool = True) -> None:
    # Accepted before and after the command; a subcommand's absent option must not reset
    # the value given before it, hence SUPPRESS there.
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=default,
        help="configuration file (.toml, .yaml or .yml); FNCORE_* variables also apply",
    )
    if not model:
        return
    parser.add_argument(
        "--provider",
        metavar="NAME",
        default=default,
        help="the model provider (configuration model.kind; default: test, offline)",
    )
    parser.add_argument(
        "--model",
        metavar="NAME",
        default=default,
        help="the model name (configuration model.name)",
    )
    parser.add_argument(
        "--base-url",
        metavar="URL",
        default=default,
        help="the provider's base URL, e.g. an OpenAI-compatible server (model.base_url)",
    )


def _add_agent(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--agent",
        metavar="MODULE:ATTR",
        help=(
            "your agent: an Agent, or a function of no arguments (perhaps async) that returns "
            "one, importable from the current directory (configuration agent.ref; default: "
            "the example agent)"
        ),
    )


def _add_durable(parser: argparse.ArgumentParser, what: str, how: str) -> None:
    parser.add_argument(
        "--durable",
        action="store_true",
        help=(
            f"make the {what} durable ([durable] url; needs fncore-agents[durable]): "
            f"{how}; 'fncore worker' finishes it if this process dies"
        ),
    )


def _agent_and_config(parser: argparse.ArgumentParser) -> None:
    _add_agent(parser)
    _add_shared(parser, top=False)


def _config_only(parser: argparse.ArgumentParser) -> None:
    _add_shared(parser, top=False, model=False)


def _session_name(text: str) -> str:
    if not text.strip():
        msg = "a session name must not be empty"
        raise argparse.ArgumentTypeError(msg)
    return text


def _add_session(parser: argparse.ArgumentParser, saving: str) -> None:
    parser.add_argument(
        "--session",
        metavar="NAME",
        type=_session_name,
        help=f"continue the session NAME (made if new) {saving}",
    )


def _add_sessions(commands: Any) -> None:
    sessions = commands.add_parser(
        "sessions",
        help="list, show or delete the sessions of the configured store",
        description=(
            "The sessions of the store that [sessions] url names (by default sessions.db in "
            "fncore's data directory: $FNCORE_HOME, else the user's data directory)."
        ),
    )
    _add_shared(sessions, top=False, model=False)
    actions = sessions.add_subparsers(dest="sessions_command", metavar="ACTION")
    listing = actions.add_parser(
        "list", help="one line per session: its name, messages and version, by name"
    )
    _add_shared(listing, top=False, model=False)
    helps = {
        "show": "print the conversation of the session NAME",
        "delete": "forget the session NAME and its messages",
    }
    for action in ACTIONS:
        one = actions.add_parser(action, help=helps[action])
        one.add_argument("name", metavar="NAME", type=_session_name, help="the session's name")
        _add_shared(one, top=False, model=False)


def _port(text: str) -> int:
    try:
        port = int(text)
    except ValueError:
        port = -1
    if not 0 <= port <= 65535:
        msg = f"a port is a number from 0 to 65535 (0: any free one), not {text!r}"
        raise argparse.ArgumentTypeError(msg)
    return port


def _add_serve(commands: Any) -> None:
    serve = commands.add_parser(
        "serve",
        help="serve the agent over HTTP with OpenAI's chat-completions API (uvicorn)",
        description=(
            "Serve your agent (--agent) or the example agent at /v1/chat/completions, "
            "/v1/models and /healthz until SIGTERM or Ctrl-C stops it (needs "
            "fncore-agents[serve]). Only a loopback address is served: API keys are needed "
            "to serve beyond this machine."
        ),
    )
    serve.add_argument(
        "--host",
        metavar="HOST",
        help="the loopback address to listen on (configuration serve.host; default 127.0.0.1)",
    )
    serve.add_argument(
        "--port",
        metavar="PORT",
        type=_port,
        help="the port to listen on, 0 for any free one (serve.port; default 8000)",
    )
    _add_agent(serve)
    _add_shared(serve, top=False)


def _add_chat(commands: Any) -> None:
    chat = commands.add_parser(
        "chat",
        help="talk with the agent at the terminal, turn after turn",
        description=(
            "Talk with your agent (--agent) or the example agent: answers stream in, tool "
            "calls show as they run, and a call waiting for approval is decided at the "
            "prompt. Ctrl-C cancels the answer coming in; Ctrl-D (or Ctrl-C twice at the "
            "prompt) leaves. Without --session the conversation lasts as long as the chat."
        ),
    )
    _add_session(chat, "saving each turn to it")
    _add_agent(chat)
    _add_shared(chat, top=False)


def build_parser() -> argparse.ArgumentParser:
    """The ``fncore`` argument parser, with its ``run``, ``stack``, ``serve``, ... commands."""
    parser = _Parser(
        prog=PROG,
        description=(
            "Run your agent (--agent) or fncore's example agent, show its middleware stack, "
            "or look after the sessions it keeps."
        ),
        epilog="The trace of what each middleware saw goes to stderr; answers go to stdout.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {installed_version()}")
    _add_shared(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="answer a prompt with the agent (--agent, else the example agent)",
        description=(
            "Answer PROMPT with your agent (--agent) or the example agent (tools add, "
            "multiply, word_count) on the configured model; the answer goes to stdout, the "
            "middleware trace to stderr."
        ),
    )
    run.add_argument("prompt", metavar="PROMPT", help="the user's message")
    run.add_argument(
        "--stream", action="store_true", help="print the answer's text as it streams in"
    )
    run.add_argument(
        "--trace",
        action="store_true",
        help="also print the run's OpenTelemetry spans to stderr (needs fncore-agents[otel])",
    )
    _add_durable(run, "run", "its id goes to stderr as 'run ID' when it starts")
    _add_session(run, "and save this turn to it")
    _add_agent(run)
    _add_shared(run, top=False)
    stack = commands.add_parser(
        "stack",
        help="print the agent's middleware, position by position",
        description="Print the agent's onion: each position's middleware, outermost first.",
    )
    _add_agent(stack)
    _add_shared(stack, top=False)
    tools = commands.add_parser(
        "tools",
        help="list the tools the agent offers, and where each comes from",
        description=(
            "List every tool the agent offers (its own functions and the tools of "
            "the MCP servers the configuration names), one per line: the name, then where "
            "it comes from (function, tool source NAME, mcp server NAME)."
        ),
    )
    _add_agent(tools)
    _add_shared(tools, top=False)
    _add_sessions(commands)
    _add_serve(commands)
    _add_chat(commands)
    add_worker(commands, _agent_and_config)
    add_runs(commands, _config_only)
    resume = commands.add_parser(
        "resume",
        help="finish a run that paused for approval",
        description=(
            "Finish a run of the agent that paused for approval (its checkpoint id "
            "was the last line 'fncore run' printed), deciding every waiting call."
        ),
    )
    resume.add_argument("checkpoint", metavar="CHECKPOINT", help="the paused run's checkpoint id")
    decision = resume.add_mutually_exclusive_group(required=True)
    decision.add_argument("--approve", action="store_true", help="run the waiting calls")
    decision.add_argument("--reject", action="store_true", help="refuse the waiting calls")
    resume.add_argument(
        "--message",
        metavar="TEXT",
        help="with --reject: what the model is told (default: the user rejected the call)",
    )
    _add_durable(resume, "rest of the run", "as a new durable run")
    _add_agent(resume)
    _add_shared(resume, top=False)
    return parser


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {safe(_one_line(message))}", file=sys.stderr)
    return code


def _run(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    if args.durable and args.stream:
        msg = "--durable runs are not streamed: leave out --stream"
        raise UsageError(msg)
    export_from_environment()
    run_command(
        args.prompt,
        config=args.config,
        settings=settings,
        stream=args.stream,
        spans=args.trace,
        session=args.session,
        ref=args.agent,
        durable=args.durable,
    )
    return EXIT_OK


def _stack(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    stack_command(config=args.config, settings=settings, ref=args.agent)
    return EXIT_OK


def _tools(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    tools_command(config=args.config, settings=settings, out=sys.stdout, ref=args.agent)
    return EXIT_OK


def _sessions(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    shared: dict[str, Any] = {"config": args.config, "settings": settings, "out": sys.stdout}
    if args.sessions_command == "list":
        list_command(**shared)
    else:
        session_command(args.sessions_command, args.name, **shared)
    return EXIT_OK


def _resume(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    if args.message is not None and not args.reject:
        msg = "--message goes with --reject"
        raise UsageError(msg)
    decision = Approve() if args.approve else Reject(*([args.message] if args.message else []))
    resume_command(
        args.checkpoint,
        decision,
        config=args.config,
        settings=settings,
        ref=args.agent,
        durable=args.durable,
    )
    return EXIT_OK


def _serve(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    export_from_environment()
    serve_command(
        config=args.config, settings=settings, host=args.host, port=args.port, ref=args.agent
    )
    return EXIT_OK


def _chat(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    chat_command(config=args.config, settings=settings, session=args.session, ref=args.agent)
    return EXIT_OK


def _worker(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    return worker_command(
        config=args.config,
        settings=settings,
        ref=args.agent,
        executor_id=args.executor_id,
        take_over=args.take_over,
        once=args.once,
    )


def _runs(args: argparse.Namespace, settings: Mapping[str, Any]) -> int:
    runs_command(
        args.runs_command,
        config=args.config,
        settings=settings,
        out=sys.stdout,
        run_id=getattr(args, "run_id", ""),
        status=getattr(args, "status", None),
        limit=getattr(args, "limit", 50),
    )
    return EXIT_OK


COMMANDS: dict[str, Command] = {
    "run": _run,
    "stack": _stack,
    "tools": _tools,
    "sessions": _sessions,
    "resume": _resume,
    "serve": _serve,
    "chat": _chat,
    "worker": _worker,
    "runs": _runs,
}
"""Each command's function, by name (a new command is a parser entry and one line here)."""


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fncore`` command line.

    Args:
        argv: The arguments, without the program name; by default ``sys.argv[1:]``.

    Returns:
        The exit status: 0 on success, 1 for bad configuration, an unusable session store,
        an unknown session or a failed run, 2 for a bad command line, 3 for a run that
        paused for approval with nobody at a terminal (stdout's last line is the
        checkpoint id).
    """
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        if args.command is None:
            parser.error(f"a command is required: {', '.join(COMMANDS)}")
        if args.command == "sessions" and args.sessions_command is None:
            parser.error("a sessions action is required: list, show NAME or delete NAME")
        if args.command == "runs" and args.runs_command is None:
            parser.error("a runs action is required: list, show ID or cancel ID")
    except UsageError as exc:
        return _fail(f"{exc} (see '{PROG} --help')", EXIT_USAGE)
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    settings = overrides(args.provider, args.model, args.base_url)
    try:
        with cli_logging():
            return COMMANDS[args.command](args, settings)
    except UsageError as exc:
        return _fail(f"{exc} (see '{PROG} --help')", EXIT_USAGE)
    except Waiting:
        return EXIT_PAUSED
    except (ConfigError, RegistrationError, SessionStoreError, CommandFailed) as exc:
        return _fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt:
        return _fail("interrupted", EXIT_INTERRUPTED)
    except Exception as exc:  # never a traceback: say what broke, on one line
        return _fail(f"{type(exc).__name__}: {exc}", EXIT_FAILED)

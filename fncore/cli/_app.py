"""Argument parsing and the entry point: one-line errors, exit codes, no tracebacks."""

from __future__ import annotations

import argparse
import importlib.metadata
import sys
from collections.abc import Sequence
from typing import Any, NoReturn

from fncore import ConfigError, RegistrationError
from fncore.cli._commands import RunFailed, overrides, run_command, stack_command

PROG = "fncore"

EXIT_OK = 0
"""Success."""
EXIT_FAILED = 1
"""Bad configuration, a stack that cannot be built, or a run that returned ``Failure``."""
EXIT_USAGE = 2
"""A bad command line."""


class UsageError(Exception):
    """The command line is wrong; the message says how."""


class _Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line and raise instead of exiting."""

    def error(self, message: str) -> NoReturn:
        raise UsageError(message)


def _version() -> str:
    try:
        return importlib.metadata.version("fncore")
    except importlib.metadata.PackageNotFoundError:
        return "unknown"


def _add_shared(parser: argparse.ArgumentParser, *, top: bool) -> None:
    # Accepted before and after the command; a subcommand's absent option must not reset
    # the value given before it, hence SUPPRESS there.
    default: Any = None if top else argparse.SUPPRESS
    parser.add_argument(
        "--config",
        metavar="FILE",
        default=default,
        help="configuration file (.toml, .yaml or .yml); FNCORE_* variables also apply",
    )
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


def build_parser() -> argparse.ArgumentParser:
    """The ``fncore`` argument parser, with its ``run`` and ``stack`` commands."""
    parser = _Parser(
        prog=PROG,
        description="Run fncore's example agent, or show its middleware stack.",
        epilog="The trace of what each middleware saw goes to stderr; answers go to stdout.",
    )
    parser.add_argument("--version", action="version", version=f"{PROG} {_version()}")
    _add_shared(parser, top=True)
    commands = parser.add_subparsers(dest="command", metavar="COMMAND")
    run = commands.add_parser(
        "run",
        help="answer a prompt with the example agent",
        description=(
            "Answer PROMPT with the example agent (tools add, multiply, word_count) on the "
            "configured model; the answer goes to stdout, the middleware trace to stderr."
        ),
    )
    run.add_argument("prompt", metavar="PROMPT", help="the user's message")
    run.add_argument(
        "--stream", action="store_true", help="print the answer's text as it streams in"
    )
    run.add_argument(
        "--trace",
        action="store_true",
        help="also print the run's OpenTelemetry spans to stderr (needs fncore[otel])",
    )
    _add_shared(run, top=False)
    stack = commands.add_parser(
        "stack",
        help="print the example agent's middleware, position by position",
        description="Print the example agent's onion: each position's middleware, outermost first.",
    )
    _add_shared(stack, top=False)
    return parser


def _one_line(text: str) -> str:
    return " ".join(line.strip() for line in text.splitlines() if line.strip())


def _fail(message: str, code: int) -> int:
    print(f"{PROG}: error: {_one_line(message)}", file=sys.stderr)
    return code


def main(argv: Sequence[str] | None = None) -> int:
    """Run the ``fncore`` command line.

    Args:
        argv: The arguments, without the program name; by default ``sys.argv[1:]``.

    Returns:
        The exit status: 0 on success, 1 for bad configuration or a failed run, 2 for a
        bad command line.
    """
    parser = build_parser()
    try:
        args, unknown = parser.parse_known_args(argv)
        if unknown:
            parser.error(f"unrecognized arguments: {' '.join(unknown)}")
        if args.command is None:
            parser.error("a command is required: run or stack")
    except UsageError as exc:
        return _fail(f"{exc} (see '{PROG} --help')", EXIT_USAGE)
    except SystemExit as exc:  # --help and --version exit through argparse
        return exc.code if isinstance(exc.code, int) else EXIT_OK
    settings = overrides(args.provider, args.model, args.base_url)
    try:
        if args.command == "run":
            run_command(
                args.prompt,
                config=args.config,
                settings=settings,
                stream=args.stream,
                spans=args.trace,
            )
        else:
            stack_command(config=args.config, settings=settings)
    except (ConfigError, RegistrationError, RunFailed) as exc:
        return _fail(str(exc), EXIT_FAILED)
    except KeyboardInterrupt:
        return _fail("interrupted", 130)
    except Exception as exc:  # never a traceback: say what broke, on one line
        return _fail(f"{type(exc).__name__}: {exc}", EXIT_FAILED)
    return EXIT_OK

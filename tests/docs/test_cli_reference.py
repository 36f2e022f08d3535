"""The command-line reference names every command, action, option and exit code the CLI has."""

from __future__ import annotations

import argparse
import re
from collections.abc import Iterator
from pathlib import Path

from fncore.cli import _app

PAGE = Path(__file__).resolve().parents[2] / "docs" / "reference" / "cli.md"


def commands(
    parser: argparse.ArgumentParser, path: str = "fncore"
) -> Iterator[tuple[str, argparse.ArgumentParser]]:
    """``parser`` and each of its sub-commands, recursively, with their command lines."""
    yield path, parser
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                yield from commands(sub, f"{path} {name}")


def test_every_command_and_option_is_on_the_page() -> None:
    """Each command's and action's heading, option and argument appears on the page."""
    text = PAGE.read_text()
    missing = []
    for path, parser in commands(_app.build_parser()):
        if path != "fncore" and path.split()[-1] not in text:
            missing.append(path)
        for action in parser._actions:
            names = action.option_strings or ([action.metavar] if action.metavar else [])
            missing += [
                f"{path}: {name}"
                for name in names
                if name not in {"-h", "COMMAND", "ACTION"}
                and f"`{name}" not in text
                and f"{name}`" not in text
            ]
    assert missing == []


def test_the_exit_codes_are_the_cli_s() -> None:
    """The exit-code table lists exactly the codes the CLI returns, each on its own row."""
    codes = {value for name, value in vars(_app).items() if name.startswith("EXIT_")}
    table = {int(code) for code in re.findall(r"^\| (\d+) \|", PAGE.read_text(), re.MULTILINE)}
    assert table == codes == {0, 1, 2, 3, 130}

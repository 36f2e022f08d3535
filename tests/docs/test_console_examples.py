"""Run the ```console blocks of README.md and docs/**/*.md, checking what they show.

Each ``$ fncore ...`` line runs in a subprocess, in the repository's root (so ``examples.*``
imports), its output compared with the lines under it.
A block runs in a fresh ``FNCORE_HOME``, its commands in order. A command that succeeds must
print the lines shown on stdout (its trace on stderr is not shown); one that fails must print
them on stderr. ``NAME=value`` words before ``fncore`` set environment variables.
"""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest
from support import run_fncore
from test_doc_examples import FENCE, ROOT, doc_files

ASSIGNMENT = re.compile(r"[A-Z_][A-Z0-9_]*=")


def console_blocks(path: Path) -> list[tuple[int, str]]:
    """The ```console blocks of ``path`` as (line number, body)."""
    text = path.read_text(encoding="utf-8")
    return [
        (text.count("\n", 0, match.start()) + 2, match["body"])
        for match in FENCE.finditer(text)
        if match["info"].strip() == "console"
    ]


def commands(body: str) -> list[tuple[str, list[str]]]:
    """Each ``$ `` line of ``body`` and the output lines under it."""
    found: list[tuple[str, list[str]]] = []
    for line in body.splitlines():
        if line.startswith("$ "):
            found.append((line[2:], []))
        else:
            assert found, f"output before any command: {line!r}"
            found[-1][1].append(line)
    return found


EXAMPLES = [(path, line, body) for path in doc_files() for line, body in console_blocks(path)]


@pytest.mark.parametrize(
    ("path", "line", "body"),
    EXAMPLES,
    ids=[f"{p.relative_to(ROOT)}:{n}".replace("/", ":") for p, n, _ in EXAMPLES],
)
def test_console_example_prints_what_it_shows(
    path: Path, line: int, body: str, tmp_path: Path
) -> None:
    """Each command of the block prints exactly the lines the page shows under it."""
    for command, expected in commands(body):
        words = shlex.split(command)
        environ = {}
        while ASSIGNMENT.match(words[0]):
            name, _, value = words.pop(0).partition("=")
            environ[name] = value
        assert words[0] == "fncore", f"{path}:{line}: only fncore commands run: {command}"
        done = run_fncore(tmp_path, *words[1:], environ=environ, cwd=ROOT)
        printed = done.stdout if done.returncode == 0 else done.stderr
        assert printed.splitlines() == expected, f"{path}:{line}: {command}\n{done.stderr}"


def test_the_console_examples_are_found() -> None:
    """The extractor finds the session examples (guards against a broken pattern)."""
    assert len(EXAMPLES) >= 3

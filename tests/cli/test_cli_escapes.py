"""Text from models, tools and stores reaches the terminal with its control characters escaped.

``hostile_factories:escapes`` makes the example agent's ``add`` answer with escape sequences
(a window title, a screen clear, a carriage return, a C1 CSI); the offline model repeats
them in its answer, and a session stores them.
"""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from hostile_factories import FAIL, HOSTILE, SHOWN

from fncore.cli import main

PROMPT = "What is 2 + 3?"


class Terminal(io.StringIO):
    """What a terminal receives: text, and ``isatty()`` says so."""

    def isatty(self) -> bool:
        return True


@pytest.fixture
def config(tmp_path: Path) -> str:
    """A configuration with the hostile middleware."""
    path = tmp_path / "hostile.toml"
    path.write_text('[[middleware]]\nuse = "hostile_factories:escapes"\n', encoding="utf-8")
    return str(path)


def unsafe(text: str) -> bool:
    """Whether ``text`` holds a control character a terminal would act on."""
    return any(c in text for c in "\x1b\x07\r\x9b")


def test_the_trace_escapes_tool_results(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """The stderr trace shows a tool result's escapes as text, on one line."""
    assert main(["run", "--config", config, PROMPT]) == 0
    err = capsys.readouterr().err
    assert not unsafe(err)
    assert f'[tool_call] add({{"a":2,"b":3}}) -> {SHOWN}\n' in err


def test_an_answer_to_a_pipe_is_exact(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A stdout that is not a terminal (a pipe, a file) gets the answer as the model gave it."""
    assert main(["run", "--config", config, PROMPT]) == 0
    assert capsys.readouterr().out == f"add: {HOSTILE}; multiply: 6; word_count: 5\n"


@pytest.mark.parametrize("stream", [False, True], ids=["run", "stream"])
def test_an_answer_to_a_terminal_is_escaped(
    config: str, monkeypatch: pytest.MonkeyPatch, stream: bool
) -> None:
    """A stdout that is a terminal gets the answer escaped, streamed or not."""
    terminal = Terminal()
    monkeypatch.setattr("sys.stdout", terminal)
    assert main(["run", "--config", config, *(["--stream"] if stream else []), PROMPT]) == 0
    assert terminal.getvalue() == f"add: {SHOWN}; multiply: 6; word_count: 5\n"


def test_an_answer_to_a_terminal_keeps_its_lines_and_tabs() -> None:
    """Line breaks and tabs of an answer are not escaped; other controls are."""
    from fncore.cli._commands import answer_text

    assert answer_text("a\tb\r\nc\x1b", Terminal()) == "a\tb\nc\\x1b"
    assert answer_text("a\tb\r\nc\x1b", io.StringIO()) == "a\tb\r\nc\x1b"


def test_sessions_show_escapes_stored_text(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """`fncore sessions show` prints a stored result and answer with their escapes as text."""
    assert main(["run", "--config", config, "--session", "s", PROMPT]) == 0
    capsys.readouterr()
    assert main(["sessions", "show", "s"]) == 0
    out = capsys.readouterr().out
    assert not unsafe(out)
    assert f"  result of add [call_0_0]: {SHOWN}\n" in out
    assert f"  add: {SHOWN}; multiply: 6; word_count: 5\n" in out


def test_an_error_line_is_escaped(config: str, capsys: pytest.CaptureFixture[str]) -> None:
    """A failed run's one error line shows the error's escapes as text."""
    assert main(["run", "--config", config, FAIL]) == 1
    err = capsys.readouterr().err
    assert not unsafe(err)
    # The line break (the CR) becomes a space, as any line break of an error message.
    assert err.splitlines()[-1] == "fncore: error: bad " + SHOWN.replace("\\r", " ")

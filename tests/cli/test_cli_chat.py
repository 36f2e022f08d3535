"""``fncore chat`` driven in a pseudo-terminal, as a person at a terminal uses it."""

from __future__ import annotations

import os
import sys
from collections.abc import Iterator
from pathlib import Path

import pexpect
import pytest
from chat_agents import BLOCK, DOWN, FAIL, STARTED, STORE
from support import run_fncore

from fncore.cli._chat import CANCELLED, HINT, PROMPT

HERE = Path(__file__).parent
APPROVAL = HERE.parents[1] / "examples" / "approval.toml"
TIMEOUT = 60
"""How long to wait for what the chat should print: generous, and only ever a bound."""


class Chat:
    """A running ``fncore chat`` in a pseudo-terminal."""

    def __init__(self, home: Path, *args: str) -> None:
        env = {k: v for k, v in os.environ.items() if not k.startswith("FNCORE_")}
        env["FNCORE_HOME"] = str(home)
        env["PYTHONPATH"] = os.pathsep.join([str(HERE), env.get("PYTHONPATH", "")])
        self.child = pexpect.spawn(
            sys.executable,
            ["-m", "fncore.cli", "chat", *args],
            cwd=str(home),
            env=env,
            encoding="utf-8",
            timeout=TIMEOUT,
            dimensions=(24, 500),
        )
        self.prompt()

    def prompt(self) -> None:
        """Wait for the prompt."""
        self.child.expect_exact(PROMPT)

    def say(self, line: str, *expected: str) -> None:
        """Type ``line``, wait for each of ``expected`` in order, then for the prompt."""
        self.child.sendline(line)
        for text in expected:
            self.child.expect_exact(text)
        self.prompt()

    def interrupt(self, typed: str) -> None:
        """Type ``typed`` and, once the terminal has echoed it, press Ctrl-C.

        At a prompt, Python's ``input`` notices a SIGINT only while it waits for a key: one
        that comes between printing the prompt and that wait is seen at the next key (and the
        terminal throws away what was typed). The echo shows the wait has begun.
        """
        self.child.send(typed)
        self.child.expect_exact(typed)
        self.child.sendintr()

    def leave(self) -> int:
        """Ctrl-D at the prompt; the exit status."""
        self.child.sendeof()
        self.child.expect(pexpect.EOF)
        self.child.close()
        status: int = self.child.exitstatus
        return status


@pytest.fixture
def chats(tmp_path: Path) -> Iterator[list[Chat]]:
    """Chats started by a test, none left running after it."""
    started: list[Chat] = []
    yield started
    for chat in started:
        chat.child.close(force=True)


def start(chats: list[Chat], home: Path, *args: str) -> Chat:
    chat = Chat(home, *args)
    chats.append(chat)
    return chat


def test_two_turns_stream_and_the_chat_remembers(tmp_path: Path, chats: list[Chat]) -> None:
    """Without --session the conversation lasts the chat's lifetime; Ctrl-D exits 0."""
    chat = start(chats, tmp_path, "--agent", "chat_agents:memory")
    chat.say("hello", "turn 1: hello\r\n")
    chat.say("again", "turn 2: again\r\n")
    assert chat.leave() == 0
    assert not (tmp_path / STORE).exists()


def test_tool_calls_show_as_they_run(tmp_path: Path, chats: list[Chat]) -> None:
    """The example agent: each call (name, arguments), each result, then the answer."""
    chat = start(chats, tmp_path)
    chat.say(
        "What is 2 + 3?",
        'call add({"a":2,"b":3}) [call_0_0]',
        'call multiply({"a":2,"b":3}) [call_0_1]',
        "result of add [call_0_0]: 5",
        "add: 5; multiply: 6; word_count: 5\r\n",
    )
    assert chat.leave() == 0


def test_an_approval_is_answered_at_the_prompt(tmp_path: Path, chats: list[Chat]) -> None:
    """The waiting call is asked about, answered (respond), and the run goes on."""
    chat = start(chats, tmp_path, "--config", str(APPROVAL))
    chat.child.sendline("What is 2 + 3?")
    chat.child.expect_exact("result of add [call_0_0]: 5")
    chat.child.expect_exact(
        'Run multiply with {"a": 2, "b": 3}? [a]pprove/[r]eject/[e]dit/re[s]pond: '
    )
    chat.child.sendline("s")
    chat.child.expect_exact("The result the model gets: ")
    chat.say("seven", "result of multiply [call_0_1]: seven", "multiply: seven;")
    chat.child.sendline("What is 2 + 3?")
    chat.child.expect_exact("[a]pprove/[r]eject/[e]dit/re[s]pond: ")
    chat.say("a", "result of multiply", "add: 5; multiply: 6; word_count: 5\r\n")
    assert chat.leave() == 0


@pytest.mark.parametrize("key", ["intr", "eof"])
def test_ctrl_c_or_ctrl_d_at_a_decision_cancels_the_turn(
    tmp_path: Path, chats: list[Chat], key: str
) -> None:
    """The run stays paused (nothing committed) and the chat asks for the next line."""
    chat = start(chats, tmp_path, "--config", str(APPROVAL), "--session", "s")
    chat.child.sendline("What is 2 + 3?")
    chat.child.expect_exact("re[s]pond: ")
    if key == "intr":
        chat.interrupt("a")
    else:
        chat.child.sendeof()
    chat.child.expect_exact(CANCELLED)
    chat.prompt()
    assert chat.leave() == 0
    listed = run_fncore(tmp_path, "sessions", "list")
    assert listed.stdout == ""  # the cancelled turn was not committed


def test_ctrl_c_cancels_the_answer_not_the_chat(tmp_path: Path, chats: list[Chat]) -> None:
    """SIGINT mid-answer cancels that turn, which leaves nothing; the next one is answered."""
    chat = start(chats, tmp_path, "--agent", "chat_agents:memory")
    chat.child.sendline(BLOCK)
    chat.child.expect_exact(STARTED)  # the answer is streaming, and will not end by itself
    chat.child.sendintr()
    chat.child.expect_exact(CANCELLED)
    chat.prompt()
    chat.say("after", "turn 1: after\r\n")  # the cancelled turn was not kept
    assert chat.leave() == 0


def test_ctrl_c_twice_at_the_prompt_leaves(tmp_path: Path, chats: list[Chat]) -> None:
    """Ctrl-C at the prompt drops the line and says how to leave; a second one leaves."""
    chat = start(chats, tmp_path, "--agent", "chat_agents:memory")
    chat.interrupt("half a line")
    chat.child.expect_exact(HINT)
    chat.prompt()
    chat.interrupt("x")
    chat.child.expect(pexpect.EOF)
    chat.child.close()
    assert chat.child.exitstatus == 0


def test_a_failed_turn_is_one_line_and_the_chat_goes_on(tmp_path: Path, chats: list[Chat]) -> None:
    chat = start(chats, tmp_path, "--agent", "chat_agents:memory")
    chat.child.sendline(FAIL)
    chat.child.expect_exact("error: ")
    chat.child.expect_exact(DOWN)
    chat.prompt()
    assert "Traceback" not in (chat.child.before or "")
    chat.say("hello", "turn 1: hello\r\n")
    assert chat.leave() == 0


def test_a_session_goes_on_after_a_restart(tmp_path: Path, chats: list[Chat]) -> None:
    """With --session, turns are committed; a cancelled one is not."""
    first = start(chats, tmp_path, "--agent", "chat_agents:stored", "--session", "s")
    first.say("hello", "turn 1: hello\r\n")
    assert first.leave() == 0
    second = start(chats, tmp_path, "--agent", "chat_agents:stored", "--session", "s")
    second.child.sendline(BLOCK)
    second.child.expect_exact(STARTED)
    second.child.sendintr()
    second.child.expect_exact(CANCELLED)
    second.prompt()
    second.say("more", "turn 2: more\r\n")
    assert second.leave() == 0


@pytest.mark.parametrize(
    ("argv", "says"),
    [
        (["--agent", "chat_agents:nope"], "agent 'chat_agents:nope': chat_agents has no attribute"),
        (["--agent", "chat_agents:memory", "--model", "x"], "--model applies to the example"),
    ],
)
def test_a_chat_that_cannot_start_fails_in_one_line(
    tmp_path: Path, argv: list[str], says: str
) -> None:
    done = run_fncore(tmp_path, "chat", *argv, environ={"PYTHONPATH": str(HERE)})
    assert done.returncode == 1
    assert done.stdout == ""
    assert len(done.stderr.splitlines()) == 1, done.stderr
    assert says in done.stderr

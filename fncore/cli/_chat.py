"""``fncore chat``: a conversation with the agent at a terminal, one turn per line typed.

Each answer streams in as it comes, each tool call is shown as it runs (its name and
arguments, then its result) and a call that waits for approval is decided at the prompt
(approve, reject, edit or respond), after which the run goes on.

The conversation:

- with ``--session NAME``, each turn continues that session of the agent's store and is
  committed to it, so a chat started again with the same name goes on where it stopped;
- without one, the chat keeps the conversation in memory for its lifetime (each turn
  sends the messages so far, and nothing is written to the session store).

Keys: Ctrl-C while an answer comes (or Ctrl-C or Ctrl-D while a decision is asked)
cancels that turn, which leaves the conversation as it was before it (the commit point:
nothing of a cancelled turn is kept), and gives the prompt back; Ctrl-C at the prompt
discards what was typed, and a second Ctrl-C in a row there leaves, as Ctrl-D (end of
input) does, with status 0. A turn that fails prints one line and the chat goes on.
"""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping
from contextlib import AsyncExitStack, suppress
from typing import Any, TextIO

from fncore import Agent, DecisionKind, Message, RunResult, RunStream
from fncore.cli._commands import (
    ask_decision,
    chosen_agent,
    end_answer,
    opened,
    show_stream,
)
from fncore.cli._errors import CommandFailed
from fncore.cli._sessions import INDENT, open_store
from fncore.cli._text import safe

PROMPT = "> "
"""What the chat asks for a line with."""

HINT = "(Ctrl-C again or Ctrl-D to leave)"
"""What a first Ctrl-C at the prompt says."""

CANCELLED = "[cancelled]"
"""What a turn cancelled with Ctrl-C leaves on the screen."""

DECISIONS: tuple[DecisionKind, ...] = ("approve", "reject", "edit", "respond")
"""The decisions the chat offers on a waiting call (where the call allows them)."""

Ask = Callable[[str], str]
"""Reads one line after printing a prompt, as ``input`` does."""


def _quiet(_line: str) -> None:
    """The example's trace is not printed: the chat shows the tool calls itself."""


async def _open(
    stack: AsyncExitStack,
    ref: str | None,
    config: str | None,
    settings: Mapping[str, Any],
    session: str | None,
) -> Agent:
    agent = await stack.enter_async_context(
        opened(*await chosen_agent(ref, config, settings, trace=_quiet))
    )
    if session is not None:
        await open_store(agent.sessions)
    return agent


class Chat:
    """One chat: the agent, the conversation so far, and the loop that runs each turn.

    Every turn runs on ``runner``'s event loop; between turns (and while a decision is
    asked) the loop is idle and the terminal is read as usual, so Ctrl-C there is a
    ``KeyboardInterrupt``, while during a turn ``asyncio.Runner`` turns it into cancelling
    the turn.
    """

    def __init__(
        self,
        runner: asyncio.Runner,
        agent: Agent,
        session: str | None,
        *,
        ask: Ask = input,
        out: TextIO = sys.stdout,
    ) -> None:
        self._runner = runner
        self._agent = agent
        self._session = session
        self._ask = ask
        self._out = out
        self.history: tuple[Message, ...] = ()
        """Without a session, the conversation so far (the turns that completed)."""

    def loop(self) -> None:
        """Read lines and answer each, until end of input or two Ctrl-C in a row."""
        interrupted = False
        while True:
            try:
                line = self._ask(PROMPT)
            except EOFError:
                self._say("")
                return
            except KeyboardInterrupt:
                if interrupted:
                    self._say("")
                    return
                interrupted = True
                self._say(f"\n{HINT}")
                continue
            interrupted = False
            if line.strip():
                self.turn(line)

    def turn(self, text: str) -> None:
        """Answer ``text``: a cancelled or failed turn prints one line and changes nothing."""
        try:
            self._answer(text)
        except (KeyboardInterrupt, EOFError):  # Ctrl-C, or Ctrl-D at a decision
            self._say(f"\n{CANCELLED}")
        except CommandFailed as exc:
            self._error(str(exc))
        except Exception as exc:  # a turn that breaks is one line; the chat goes on
            self._error(f"{type(exc).__name__}: {exc}")

    def _answer(self, text: str) -> None:
        asked = (*self.history, Message.user(text))
        prompt = text if self._session is not None else asked
        result, streamed = self._show(self._agent.stream(prompt, session_id=self._session))
        while result.paused is not None:
            paused = result.paused
            decisions = {r.call_id: ask_decision(r, self._ask, DECISIONS) for r in paused.requests}
            result, streamed = self._show(
                self._agent.resume_stream(paused.checkpoint_id, decisions)
            )
        end_answer(result, streamed, self._out)
        if self._session is None:
            self.history = (*asked, *result.messages)

    def _show(self, events: RunStream[Any]) -> tuple[RunResult, bool]:
        return self._runner.run(show_stream(events, self._out, self._tool))

    def _tool(self, line: str) -> None:
        self._say(f"{INDENT}{line}")

    def _say(self, line: str) -> None:
        print(line, file=self._out, flush=True)

    def _error(self, message: str) -> None:
        print(f"error: {safe(' '.join(message.split()))}", file=sys.stderr, flush=True)


def _line_editing() -> None:
    """Give ``input`` line editing and history at a terminal (where readline exists)."""
    if sys.stdin.isatty():
        with suppress(ImportError):  # a Python built without it: plain input still works
            import readline  # noqa: F401  (importing it is what makes ``input`` use it)


def chat_command(
    *,
    config: str | None,
    settings: Mapping[str, Any],
    session: str | None = None,
    ref: str | None = None,
) -> None:
    """``fncore chat``: talk with the chosen agent (`chosen_agent`) until end of input.

    Raises:
        ConfigError: for bad configuration, or model flags with your agent.
        RegistrationError: if the stack cannot be built.
        CommandFailed: if ``ref`` gives no agent.
        SessionStoreError: if ``session`` is given and the store cannot be opened.
    """
    with asyncio.Runner() as runner:
        stack = AsyncExitStack()
        try:
            agent = runner.run(_open(stack, ref, config, settings, session))
            _line_editing()
            Chat(runner, agent, session).loop()
        finally:
            runner.run(stack.aclose())
